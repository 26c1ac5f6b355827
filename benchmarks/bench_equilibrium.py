"""Epochs per second of the epoch level's equilibrium (``EpochEngine.step``).

The system: ``topologies/single-expander.yaml``'s DRAM and CXL expander as two nodes,
two cores whose epochs reach both nodes in random proportions with random compute
between misses (as a trace run's epochs do). cxlsim solves each node's own fixed point
with compiled code (:func:`cxlsim.memory._latency.node_fixed_point`); the reference, in
the same run, is the same Jacobi/Newton iteration with each node's fixed point found
the way a capable Python user would: ``scipy.optimize.brentq`` on the node's excess,
evaluated through the targets' Python API (``MemoryNode.read_latency``). Both must give
the same latencies; the last line is one JSON object.

    python benchmarks/bench_equilibrium.py [--epochs N]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

from cxlsim.memory.epoch import EpochEngine, MemorySystem
from cxlsim.topology import load_topology

TOPOLOGY = Path(__file__).resolve().parents[1] / "topologies" / "single-expander.yaml"


def python_fixed_points(system: MemorySystem, demands):
    """Each node's fixed point by brentq over the Python-level models."""
    def fixed(n: str, latency: dict[str, float], wait: float, tol: float) -> float:
        node, trial = system.nodes[n], dict(latency)

        def excess(x: float) -> float:
            trial[n] = x
            reads, writes, _ = system._loads(demands, trial, n, wait)
            return x - node.read_latency(reads[n], writes[n])

        lo = node.idle_latency
        if excess(lo) >= 0:
            return lo
        hi = max(2 * lo, latency[n])
        while excess(hi) < 0:
            lo, hi = hi, 2 * hi
        return brentq(excess, lo, hi, xtol=tol * lo, rtol=4 * np.finfo(float).eps)

    return fixed


def epochs(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random epochs of two cores: references to each node, busy ns."""
    rng = np.random.default_rng(1)
    refs = rng.integers(1000, 40_000, size=(n, 2, 2)).astype(float)
    busy = rng.uniform(1e4, 4e5, size=(n, 2))
    return list(zip(refs, busy))


def run(system: MemorySystem, work) -> tuple[float, list[dict]]:
    engine = EpochEngine(system, mlp=16)
    start = time.perf_counter()
    for refs, busy in work:
        engine.step(refs, busy)
    return time.perf_counter() - start, [eq.latency for eq in engine.history]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=2000)
    args = ap.parse_args()
    system = MemorySystem.from_topology(load_topology(TOPOLOGY), "host0",
                                        nodes={"dram": ["dram0"], "cxl": ["cxl0"]})
    work = epochs(args.epochs)
    run(system, work[:10])  # compile (or load) outside the timing
    ours, latencies = run(system, work)
    compiled = system._fixed_points
    system._fixed_points = lambda demands: python_fixed_points(system, demands)
    try:
        ref, ref_latencies = run(system, work)
    finally:
        system._fixed_points = compiled
    if latencies != ref_latencies:
        raise AssertionError("the compiled and the Python fixed points disagree")
    print(f"cxlsim    : {args.epochs / ours:>10,.0f} epochs/s ({ours / args.epochs * 1e3:.3f} ms "
          f"an epoch)")
    print(f"reference : {args.epochs / ref:>10,.0f} epochs/s ({ref / args.epochs * 1e3:.3f} ms "
          f"an epoch; brentq over the Python models; same latencies to the bit)")
    print(f"ratio     : {ref / ours:.1f}x")
    print(json.dumps({"epochs_per_s": round(args.epochs / ours),
                      "reference_epochs_per_s": round(args.epochs / ref),
                      "ratio": round(ref / ours, 1)}))


if __name__ == "__main__":
    main()
