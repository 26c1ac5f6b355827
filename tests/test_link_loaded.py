"""``kind: link-loaded`` with writes: read fractions, per-operation latencies, and the
cross-check of the write latency against the epoch level's closed form."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.devices.requester import PoissonRequester
from cxlsim.engine import Simulation
from cxlsim.experiments import load_experiment
from cxlsim.memory.expander import ExpanderTarget
from cxlsim.topology import Topology, load_topology
from cxlsim.topology.elaborate import System

EXPERIMENT = REPO / "experiments" / "link-loaded.yaml"
SINGLE = REPO / "topologies" / "single-expander.yaml"
SMALL = ["flit_modes=[68B, 256B]", "widths=[8]"]


def _run(overrides: list[str]):
    spec = load_experiment(EXPERIMENT, SMALL + overrides)
    return spec, spec.run()


def _target(spec, mode: str, width: int) -> ExpanderTarget:
    """The epoch level's view of the experiment's link at ``mode`` and ``width``."""
    links = [link.model_copy(update={"flit_mode": mode, "width": width})
             if link.protocol == "cxl" else link for link in spec.topology.links]
    topo = Topology.from_spec(spec.topology.model_copy(update={"links": links}))
    return ExpanderTarget(topo, spec.host, spec.device)


def test_default_is_all_reads():
    spec, result = _run(["requests=500", "loads=[0.5]"])
    assert spec.read_fractions == [1.0]
    table = result.tables["points"]
    assert list(table["read_fraction"]) == [1.0, 1.0]
    assert (table["read_latency_mean_ns"] == table["latency_mean_ns"]).all()
    assert table["write_latency_mean_ns"].isna().all()
    assert "capacity_GBps_68B_x8" in result.metrics


def test_capacity_of_a_mix_is_the_busier_direction():
    """Offered load is a fraction of the mix's saturated bandwidth: the epoch level's
    capacity of the same link for every read fraction."""
    spec, result = _run(["requests=200", "loads=[0.1]", "read_fractions=[1, 0.7, 0.5, 0]"])
    for row in result.tables["points"].itertuples():
        target = _target(spec, row.flit_mode, row.width)
        assert row.capacity_GBps * 1e9 == pytest.approx(target.capacity(row.read_fraction),
                                                        rel=1e-9)
    assert result.metrics["capacity_GBps_68B_x8_reads0.5"] > \
        result.metrics["capacity_GBps_68B_x8"] > result.metrics["capacity_GBps_68B_x8_reads0"]


def test_unloaded_write_latency_matches_the_closed_form():
    """All writes at 1 % load: the mean write latency is the epoch level's unloaded
    write latency (RwD down, NDR up) within 0.1 %, and never below it."""
    spec, result = _run(["requests=2000", "loads=[0.01]", "read_fractions=[0]"])
    for row in result.tables["points"].itertuples():
        idle = _target(spec, row.flit_mode, row.width).idle_write_latency
        assert math.isnan(row.read_latency_mean_ns)
        assert row.write_latency_mean_ns == pytest.approx(idle, rel=1e-3)
        assert row.write_latency_mean_ns >= idle - 1e-9


@pytest.mark.parametrize("load", [0.3, 0.7])
def test_mixed_latencies_match_the_epoch_level_under_load(load):
    """Half writes: reads and writes each within 1 % of the epoch level's M/G/1 link
    directions at the offered bandwidth (which treat the upstream direction as fed by
    Poisson arrivals, so err on the high side)."""
    spec, result = _run(["requests=20000", f"loads=[{load}]", "read_fractions=[0.5]"])
    for row in result.tables["points"].itertuples():
        target = _target(spec, row.flit_mode, row.width)
        bps = row.offered_GBps * 1e9 / 2
        for op, closed in (("read", target.read_latency(bps, bps)),
                           ("write", target.write_latency(bps, bps))):
            des = getattr(row, f"{op}_latency_mean_ns")
            assert closed == pytest.approx(des, rel=1e-2), op
            assert closed >= des - 0.5, op


@settings(max_examples=15, deadline=None)
@given(write_fraction=st.sampled_from([0.0, 0.25, 0.5, 1.0]), seed=st.integers(0, 50))
def test_requester_splits_latencies_by_operation(write_fraction, seed):
    """Every completed request is in the overall tally and in exactly one of the read
    and write tallies; with no writes the random stream is that of a read-only run."""
    sim = Simulation(seed)
    system = System(sim, load_topology(SINGLE))
    req = PoissonRequester(sim, "req", system.mem_path("host0", "cxl0"), 0.05, 300,
                           write_fraction=write_fraction, parent=system)
    sim.run()
    reads, writes = (req.op_latency[op].values() for op in ("read", "write"))
    assert reads.size + writes.size == req.latency.count == 300
    assert sorted([*reads, *writes]) == sorted(req.latency.values())
    if write_fraction == 0.0:
        assert writes.size == 0
    if write_fraction == 1.0:
        assert reads.size == 0
