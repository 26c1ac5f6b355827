"""Memory accesses per second through one core's TLBs, L3 and page table.

The model: an AMD EPYC 7452 core (``models/cpus/epyc-7452.yaml``) with its two data
TLB levels, its 16 MiB L3 and a 4-level page table for 4 KiB pages; the workload: a
pointer-chase lap over a 16 MiB block -- every load to a random line, half of them
missing the L2 DTLB and walking the page table (the hardest point of study T3). The
compiled kernel (``cxlsim.memory.CoreMemory``) runs warmed-up laps; the plain-Python
reference of the same model (``cxlsim.memory.ReferenceCore``) runs a smaller sample,
in the same process, and must agree with the kernel access for access on it. The last
line is one JSON object.

    python benchmarks/bench_memory.py [--block-mib N] [--laps N] [--repeat N] [--reference N]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from cxlsim.apps.pointer_chase import BLOCK_VA, chase_lap
from cxlsim.config import load_document, validate_document
from cxlsim.memory import CoreMemory, CpuParams, PageTable, ReferenceCore

PRESET = Path(__file__).resolve().parents[1] / "models" / "cpus" / "epyc-7452.yaml"


def model(block: int) -> tuple[CpuParams, PageTable]:
    """The EPYC 7452 core reduced to its TLBs and L3, and the block's 4 KiB page table."""
    cpu = validate_document(CpuParams, load_document(PRESET))
    cpu = cpu.model_copy(update={"caches": [c for c in cpu.caches if c.name == "L3"]})
    table = PageTable(4096, BLOCK_VA, block)
    table.map(BLOCK_VA, block)
    return cpu, table


def run_cxlsim(cpu: CpuParams, table: PageTable, lap: np.ndarray, laps: int) -> tuple[float, float]:
    """(accesses/s of wall time, walks per access) over ``laps`` laps after one warm-up lap."""
    core = CoreMemory(cpu, table)
    core.access(lap)
    start = time.perf_counter()
    walks = sum(core.access(lap).walks for _ in range(laps))
    return laps * lap.size / (time.perf_counter() - start), walks / (laps * lap.size)


def run_reference(cpu: CpuParams, table: PageTable, sample: np.ndarray) -> float:
    """Accesses/s of the plain-Python reference from cold; checks it against the kernel."""
    ref, core = ReferenceCore(cpu, table), CoreMemory(cpu, table)
    start = time.perf_counter()
    records = [ref.access(int(va)) for va in sample]
    elapsed = time.perf_counter() - start
    stats = core.access(sample)
    latency = sum(r.latency_ns for r in records)
    walks = sum(r.tlb_level is None for r in records)
    if walks != stats.walks or not np.isclose(latency, stats.latency_ns, rtol=1e-9):
        raise AssertionError(f"reference and kernel disagree: {walks} vs {stats.walks} walks, "
                             f"{latency} vs {stats.latency_ns} ns")
    return sample.size / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-mib", type=int, default=16)
    parser.add_argument("--laps", type=int, default=8, help="laps timed per repetition")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (the best counts)")
    parser.add_argument("--reference", type=int, default=100_000, help="reference accesses")
    args = parser.parse_args()
    cpu, table = model(args.block_mib * 2**20)
    lap = chase_lap(args.block_mib * 2**20, 64, np.random.default_rng(1))
    ours, walks = max(run_cxlsim(cpu, table, lap, args.laps) for _ in range(args.repeat))
    ref = run_reference(cpu, table, lap[:args.reference])
    print(f"model     : EPYC 7452 TLBs + L3 + 4-level page table, 4 KiB pages, random loads "
          f"over {args.block_mib} MiB ({walks:.2f} page walks per access)")
    print(f"cxlsim    : {ours:>12,.0f} accesses/s")
    print(f"reference : {ref:>12,.0f} accesses/s (plain Python, agrees with the kernel)")
    print(f"ratio     : {ours / ref:.1f}x")
    print(json.dumps({"cxlsim_aps": round(ours), "reference_aps": round(ref),
                      "ratio": round(ours / ref, 1)}))


if __name__ == "__main__":
    main()
