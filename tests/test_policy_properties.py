"""Properties every registered policy keeps, on small traces with memory pressure: pages
are conserved (each page on one node or none; the kernel's free counts and the
placement agree at every node), the trace's pages are all accounted for, and a run is
determined by its seed. New policies are covered by registering them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cxlsim.experiments import load_experiment
from cxlsim.tiered.policies import POLICIES

SPEC = """name: props
kind: trace-memory
topology: single-expander
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0]}
trace: {generate: %s, n: 24000, seed: %d, params: {footprint: 32MiB, threads: 2}}
epoch: 2000
policy: %s
kswapd_interval: 20 us
"""
#: DRAM holds a quarter of the footprint: first touch spills, reclaim and moves happen.
PRESSURE = ["topology.nodes[1].capacity=8 MiB", "numa_balancing.scan_delay=10 us",
            "numa_balancing.scan_period=20 us", "numa_balancing.max_scan_rate=1000 TB/s"]
#: Policies whose own tunables set their daemons' intervals: scaled to the short runs.
SCALED = {"damon": "{name: damon, time_scale: 0.0001}",
          "memtis": "{name: memtis, time_scale: 0.0001, adaptation_period: 100, "
                    "cooling_period: 2000}"}


def _run(tmp_path, policy: str, kind: str, seed: int):
    path = tmp_path / f"{policy}-{kind}-{seed}.yaml"
    path.write_text(SPEC % (kind, seed, SCALED.get(policy, policy)))
    return load_experiment(path, PRESSURE).run()


@pytest.mark.parametrize("policy", sorted(POLICIES))
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["uniform", "zipfian", "hotspot", "anon-file-mix"]), seed=st.integers(0, 1000))
def test_pages_are_conserved(tmp_path, policy, kind, seed):
    result = _run(tmp_path, policy, kind, seed)
    pages, nodes, epochs = (result.tables[k] for k in ("pages", "nodes", "epochs"))
    assert int(pages["pages"].sum()) == result.metrics["footprint_pages"]
    resident = pages[pages["node"] != "none"].groupby("node")["pages"].sum()
    for row in nodes.itertuples():
        assert row.resident_pages == resident.get(row.node, 0)
        # the kernel's free-page counts say the same as the placement
        assert row.resident_pages == epochs[f"pages_{row.node}"].iloc[-1]
    assert result.metrics["accesses"] == 24000


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_run_is_determined_by_its_seed(tmp_path, policy):
    first = _run(tmp_path, policy, "zipfian", 3)
    second = _run(tmp_path / "..", policy, "zipfian", 3)
    assert first.metrics == second.metrics
    assert first.tables["epochs"].equals(second.tables["epochs"])
