"""End-to-end throughput of a trace-driven tiered-memory run (``kind: trace-memory``).

The workload: a zipfian trace (YCSB-like, scrambled keys, 2 threads, 4 GiB footprint
by default) written to a native file, then run from that file on two Xeon 6 cores (full
hierarchy: L1/L2 TLBs, L1/L2/shared L3, page walks) over DRAM + one CXL expander
(``topologies/single-expander.yaml``), static first-touch placement, 65,536 records per
epoch. The reference, in the same process: what a capable user would otherwise write --
the same compiled hierarchy kernel (``cxlsim.memory.CoreMemory``) on the CPU the run
uses (its caches and TLBs scaled by the similarity law under ``scale``) over the same
trace file with fixed node latencies and no loaded-latency feedback, no placement and no
epochs. The last line is one JSON object, with the peak resident memory.

    python benchmarks/bench_trace_memory.py [--records N] [--footprint SIZE]
                                            [--policy NAME] [--set K=V]
    # issue targets at 10**8 records: >= 8 M/s static, >= 6 M/s with tpp or damon
    # a policy acting (issue 26 item 8: >= 0.8x the kernel alone), DRAM below the hot set:
    python benchmarks/bench_trace_memory.py --policy tpp --footprint 1GiB \
        --records 100000000 --set scale=16 --set 'topology.nodes[dram0].capacity=35 %'
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from cxlsim.experiments import load_experiment
from cxlsim.memory import CoreMemory, PageTable
from cxlsim.traces import generate, open_trace
from cxlsim.traces.pages import PageCompactor

EXPERIMENT = """name: bench
kind: trace-memory
topology: single-expander
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0]}
trace: %s
epoch: 65536
policy: %s
"""


def run_cxlsim(trace: Path, folder: Path, policy: str = "static",
               overrides: list[str] | None = None) -> tuple[float, dict]:
    """Wall seconds of the whole experiment (both passes) and its metrics."""
    path = folder / "bench.yaml"
    path.write_text(EXPERIMENT % (trace, policy))
    spec = load_experiment(path, overrides or [])
    start = time.perf_counter()
    result = spec.run()
    return time.perf_counter() - start, result.metrics


def run_reference(trace: Path, spec) -> float:
    """Wall seconds of the hierarchy kernel alone over the trace, fixed latencies, on
    the CPU the run of ``spec`` uses (scaled by its similarity law)."""
    start = time.perf_counter()
    pc = PageCompactor()
    for chunk in open_trace(trace).chunks(["addr"]):
        pc.ids(chunk["addr"])
    cpu = spec._law(2, pc.footprint).cpu(spec.cpu)
    table = PageTable(4096, 0, pc.footprint * 4096)
    table.map(0, table.va_size)
    cores = [CoreMemory(cpu, table)]
    cores.append(CoreMemory(cpu, table, complex_of=cores[0]))
    for chunk in open_trace(trace).chunks(["addr", "thread"]):
        vaddr = pc.ids(chunk["addr"]) << 12 | (chunk["addr"].astype(np.int64) & 4095)
        for c, core in enumerate(cores):
            core.access(vaddr[chunk["thread"] % 2 == c])
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=4_000_000)
    ap.add_argument("--footprint", default="4GiB", help="the trace's footprint (default 4GiB)")
    ap.add_argument("--policy", default="static", help="placement policy (issue 13: tpp, "
                                                        "damon at >= 6 M accesses/s)")
    ap.add_argument("--set", dest="overrides", action="append", default=[],
                    metavar="KEY=VALUE", help="experiment override, e.g. a scan period")
    ap.add_argument("--sample", type=int, default=1, help="also run the sampled mode, one "
                                                          "page in K (a power of two)")
    args = ap.parse_args()
    sampled: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trace = generate("zipfian", args.records, 1, folder / "zipf.arrow",
                         ["threads=2", f"footprint={args.footprint}", "scrambled=true"])
        seconds, metrics = run_cxlsim(trace, folder, args.policy, args.overrides)
        if args.sample > 1:
            wall, est = run_cxlsim(trace, folder, args.policy,
                                   [*args.overrides, f"sample={args.sample}"])
            sampled = {"sample": args.sample, "sampled_accesses_per_s": args.records / wall,
                       "sampled_app_time_error": est["app_time_s"] / metrics["app_time_s"] - 1}
        ref = run_reference(trace, load_experiment(folder / "bench.yaml", args.overrides))
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    acted = {k: metrics[k] for k in ("numa_scan_passes", "numa_pages_migrated",
                                     "pgdemote_kswapd", "pgpromote_success")}
    print(f"trace-memory ({args.policy}, {args.footprint}): {args.records:,} records in "
          f"{seconds:.1f} s ({args.records / seconds / 1e6:.2f} M accesses/s end to end); "
          f"kernel alone {args.records / ref / 1e6:.2f} M/s (end to end / alone: "
          f"{ref / seconds:.2f}); simulated app time {metrics['app_time_s']:.3f} s; "
          + ", ".join(f"{k} {v:,}" for k, v in acted.items()) + f"; peak RSS {rss_mib:.0f} MiB")
    if sampled:
        print(f"sampled (1 page in {args.sample}): {sampled['sampled_accesses_per_s'] / 1e6:.2f} "
              f"M accesses/s end to end; app time {sampled['sampled_app_time_error']:+.2%} "
              f"against the exact run")
    print(json.dumps({"accesses_per_s": args.records / seconds,
                      "reference_accesses_per_s": args.records / ref,
                      "ratio": ref / seconds, "records": args.records,
                      "policy": args.policy, "footprint": args.footprint, **acted, **sampled,
                      "peak_rss_mib": round(rss_mib, 1)}))


if __name__ == "__main__":
    main()
