"""The host's trackers shared by every memory node (the CPU's ``trackers``): a closed
pool both tiers draw on, on a hand-made system of two memories of fixed latency."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, refused
from cxlsim.analytic.queues import mdc_mean_wait
from cxlsim.memory.epoch import Demand, EpochEngine, MemorySystem
from cxlsim.memory.loaded import Curve, CurveTarget, MemoryNode
from cxlsim.units import LINE_BYTES

FAST, SLOW = 100.0, 300.0  # ns, at any load


def flat(name: str, latency: float) -> MemoryNode:
    """A memory answering every read in ``latency`` ns up to 1 PB/s: no queue of its own."""
    curve = Curve(1.0, np.array([0.0, 1e15]), np.array([latency, latency]))
    return MemoryNode(name, [CurveTarget(name, [curve])])


def system(trackers: int | None) -> MemorySystem:
    return MemorySystem({"fast": flat("fast", FAST), "slow": flat("slow", SLOW)}, trackers)


def reads(eq, node: str) -> float:
    """Reads per ns of ``node``."""
    return eq.read_bps[node] / LINE_BYTES / 1e9


def test_trackers_cap_the_reads_in_flight_whatever_the_threads_issue():
    """10 threads x 100 misses would keep 1000 reads in flight; 40 trackers, each held
    for the 100 ns a read takes, carry 0.4 reads a ns (M/D/c: a little less)."""
    demand = Demand(10, 100, {"fast": 1.0})
    free = system(None).solve([demand])
    assert reads(free, "fast") == pytest.approx(1000 / FAST)
    eq = system(40).solve([demand])
    assert reads(eq, "fast") == pytest.approx(40 / FAST, rel=0.01)
    assert reads(eq, "fast") < 40 / FAST
    assert eq.trackers_busy == pytest.approx(reads(eq, "fast") * FAST / 40)
    # the threads wait for a tracker: 1000 misses in flight = rate x (wait + latency)
    assert 1000 == pytest.approx(reads(eq, "fast") * (eq.tracker_wait + FAST), rel=1e-9)
    assert eq.latencies == [pytest.approx(FAST + eq.tracker_wait)]


def test_the_slow_tier_holds_the_trackers_the_fast_one_needs():
    """Yang et al.'s mechanism: a quarter of the reads going to a memory three times as
    slow hold the shared trackers three times as long, and the fast memory's bandwidth
    halves: (0.75 x 100) / (0.75 x 100 + 0.25 x 300) of what it had alone."""
    alone = reads(system(40).solve([Demand(10, 100, {"fast": 1.0})]), "fast")
    mixed = reads(system(40).solve([Demand(10, 100, {"fast": 0.75, "slow": 0.25})]), "fast")
    assert mixed / alone == pytest.approx(0.75 * FAST / (0.75 * FAST + 0.25 * SLOW), rel=0.01)


def test_write_backs_pass_the_trackers():
    """A write-back holds no tracker (posted): at 1:1 read:write the reads are the same,
    and the writes come on top."""
    reads_only = system(40).solve([Demand(10, 100, {"fast": 1.0})])
    mixed = system(40).solve([Demand(10, 100, {"fast": 1.0}, read_fraction=0.5)])
    assert reads(mixed, "fast") == pytest.approx(reads(reads_only, "fast"), rel=1e-9)
    assert mixed.write_bps["fast"] == pytest.approx(mixed.read_bps["fast"])


def test_enough_trackers_change_nothing_to_the_bit():
    """Trackers for every miss the threads can have in flight never run out: the
    operating point is the one with no limit, float for float."""
    demands = [Demand(10, 4, {"fast": 0.6, "slow": 0.4}, gap=50.0),
               Demand(3, 8, {"slow": 1.0}, read_fraction=0.5)]
    assert not system(64).pooled(demands) and system(63).pooled(demands)
    free, enough = system(None).solve(demands), system(64).solve(demands)
    assert enough.latency == free.latency and enough.rates == free.rates
    assert enough.tracker_wait == 0.0


@settings(deadline=None, max_examples=25)
@given(trackers=st.integers(5, 400), threads=st.integers(1, 40), mlp=st.floats(1, 20),
       gap=st.floats(0, 500), share=st.floats(0, 1))
def test_the_wait_is_the_pools_own_fixed_point(trackers, threads, mlp, gap, share):
    """Whatever the load, the wait the solver finds is M/D/c's for the load it leaves:
    the trackers as servers, the reads' mean latency as the holding time."""
    shares = {n: s for n, s in (("fast", 1 - share), ("slow", share)) if s > 0}
    eq = system(trackers).solve([Demand(threads, mlp, shares, gap)])
    rate = sum(reads(eq, n) for n in shares)
    hold = sum(s * eq.latency[n] for n, s in shares.items())
    if threads * mlp <= trackers:
        assert eq.tracker_wait == 0.0
    else:
        assert eq.tracker_wait == pytest.approx(
            mdc_mean_wait(trackers, rate * hold, hold), rel=1e-6, abs=1e-9)
        assert eq.trackers_busy < 1


def test_the_epoch_engine_shares_the_trackers_between_cores():
    """Per-core demands of one epoch draw on the same pool: two cores with 40 misses in
    flight each against 20 trackers get 20 / 100 ns between them."""
    engine = EpochEngine(system(20), mlp=40)
    refs = np.array([[1e4, 0.0], [1e4, 0.0]])
    times = engine.step(refs, np.zeros(2))
    assert 2e4 / times[0] == pytest.approx(20 / FAST, rel=0.01)


def test_trackers_must_be_a_positive_count(capsys):
    nodes = {"fast": flat("fast", FAST)}
    with pytest.raises(ValueError, match="trackers must be at least 1"):
        MemorySystem(nodes, 0)
    refused(capsys, ["run", str(REPO / "experiments/weighted-interleave.yaml"), "--set",
                     "cpu.trackers=0"],
            "cpu.trackers: expected greater than or equal to 1; found 0")
    refused(capsys, ["run", str(REPO / "experiments/weighted-interleave.yaml"), "--set",
                     "cpu.trackers=many"], "cpu.trackers: expected")
