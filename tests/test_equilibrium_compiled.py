"""The compiled equilibrium (cxlsim.memory._latency) against the straightforward path.

Random demands of random cores on DRAM, a CXL expander and a node read off measured
curves: each node's compiled fixed point, and so every epoch's latencies, equal to the
bit those of ``scipy.optimize.brentq`` over the targets' Python API -- the reference
``benchmarks/bench_equilibrium.py`` measures against.
"""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.memory import CurveTarget, Demand, MemorySystem
from cxlsim.memory.loaded import MemoryNode, model_curves
from cxlsim.topology import load_topology

sys.path.insert(0, str(REPO / "benchmarks"))
from bench_equilibrium import python_fixed_points  # noqa: E402

TOPOLOGY = load_topology(REPO / "topologies" / "single-expander.yaml")
BASE = MemorySystem.from_topology(TOPOLOGY, "host0", nodes={"dram": ["dram0"], "cxl": ["cxl0"]})
CURVES = CurveTarget("measured", model_curves(BASE.nodes["cxl"].targets[0], points=12))
SYSTEM = MemorySystem({**BASE.nodes, "curves": MemoryNode("curves", [CURVES])})

demand = st.builds(
    lambda threads, mlp, gap, reads, weights: Demand(
        threads, mlp, {n: w / sum(weights) for n, w in zip(SYSTEM.nodes, weights) if w},
        gap, reads),
    st.integers(1, 48), st.integers(1, 32), st.floats(0.0, 400.0), st.floats(0.4, 1.0),
    st.lists(st.integers(0, 5), min_size=3, max_size=3).filter(any))


@settings(max_examples=80, deadline=None)
@given(st.lists(demand, min_size=1, max_size=3))
def test_compiled_fixed_points_equal_brentq_over_the_python_models(demands):
    compiled = SYSTEM.solve(demands)
    fast = SYSTEM._fixed_points
    SYSTEM._fixed_points = lambda d: python_fixed_points(SYSTEM, d)
    try:
        reference = SYSTEM.solve(demands)
    finally:
        SYSTEM._fixed_points = fast
    assert compiled.latency == reference.latency
    assert compiled.rates == reference.rates and compiled.sweeps == reference.sweeps
    assert np.isfinite(list(compiled.latency.values())).all()
