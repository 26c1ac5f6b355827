"""``colloid`` (cxlsim.tiered.policies.colloid): hot pages move toward the tier with the
lower loaded latency, as much access probability as balances the tiers -- hand cases."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.errors import InputError
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.numa import Numa
from cxlsim.mm.watermarks import WMARK_HIGH
from cxlsim.tiered.policies import EpochView
from cxlsim.tiered.policies.colloid import Colloid, ColloidParams

import test_trace_memory as tm


def _machine(dram: str = "16 MiB"):
    """Pages 0-99 on DRAM (node 0), 100-199 on CXL (node 1); no smoothing."""
    numa = Numa({"nodes": [{"cpus": 4, "memory": dram}, {"cpus": 0, "memory": "16 MiB"}]})
    kernel = KernelMemory(numa, 8192)
    kernel.alloc(np.arange(100), 0)
    kernel.alloc(np.arange(100, 200), 1)
    return kernel, Colloid(numa, 8192, params=ColloidParams(ewma=1.0))


def _round(kernel, policy, accesses: dict[int, int], dram_ns: float, cxl_ns: float,
           refs=(1000.0, 1000.0)):
    pages = np.repeat(np.array(list(accesses)), list(accesses.values()))
    stats = {"duration_ns": 1000.0, "refs_dram": refs[0], "refs_cxl": refs[1],
             "latency_ns_dram": dram_ns, "latency_ns_cxl": cxl_ns}
    view = EpochView(pages, kernel, stats, np.empty(0, np.int64), np.empty(0), [], 0.0)
    return policy.moves(view), stats


def test_an_idle_dram_takes_the_cxl_page_that_fits_the_probability_to_shift():
    # R = 1/ns on each tier; O_d = 100, O_a = 200, beta = 1: dp = 100 / (2 x 300) = 1/6.
    # CXL pages by share: 150 (0.3), 151 (0.2), 152 (0.1): only 152 fits within 1/6.
    kernel, policy = _machine()
    (pages, dest), stats = _round(kernel, policy, {10: 40, 150: 30, 151: 20, 152: 10},
                                  dram_ns=100.0, cxl_ns=200.0)
    assert stats["colloid_dp"] == pytest.approx(1 / 6)
    assert pages.tolist() == [152] and dest.tolist() == [0]


def test_a_loaded_dram_sends_hot_pages_down_not_cold_ones():
    # DRAM loaded past CXL: O_d = 300, O_a = 150, beta = 1: dp = 150 / (2 x 450) = 1/6.
    # DRAM pages by share: 10 (0.4), 11 (0.15), 12 (0.05); 11 fits, then nothing does
    # (0.05 > 1/6 - 0.15); the never-accessed DRAM pages stay.
    kernel, policy = _machine()
    (pages, dest), stats = _round(kernel, policy, {10: 40, 11: 15, 12: 5, 150: 40},
                                  dram_ns=300.0, cxl_ns=150.0)
    assert stats["colloid_dp"] == pytest.approx(1 / 6)
    assert pages.tolist() == [11] and dest.tolist() == [1]


def test_balanced_tiers_move_nothing():
    kernel, policy = _machine()
    (pages, _), stats = _round(kernel, policy, {10: 50, 150: 50}, 150.0, 150.0)
    assert pages.size == 0 and stats["colloid_dp"] == 0.0


def test_a_round_moves_at_most_max_pages_and_swaps_when_full():
    kernel, policy = _machine()
    policy.params = ColloidParams(ewma=1.0, max_pages=3)
    many = {150 + i: 1 for i in range(40)} | {10: 60}
    (pages, _), _ = _round(kernel, policy, many, dram_ns=100.0, cxl_ns=400.0)
    assert pages.size == 3
    # DRAM without room: each promotion swaps with DRAM's coldest (never accessed) page
    kernel, policy = _machine(dram="1 MiB")
    kernel.alloc(np.arange(200, 200 + int(kernel.nr_free[0] - kernel.wmark[0, WMARK_HIGH])),
                 0, allowed=[0])                    # DRAM at its high watermark: no room
    (pages, dest), _ = _round(kernel, policy, {10: 40, 150: 30, 151: 20, 152: 10},
                              dram_ns=100.0, cxl_ns=200.0)
    down = pages[dest == 1]
    assert pages[dest == 0].tolist() == [152] and down.size == 1
    assert kernel.node[down[0]] == 0 and down[0] != 10  # a cold page, not the hot one


def test_colloid_runs_and_bad_tunables_are_named(tmp_path):
    result = tm._run(tmp_path, "policy=colloid", "topology.nodes[1].capacity=48 MiB",
                     footprint="64MiB", n=60_000, epoch=5_000)
    assert result.metrics["accesses"] == 60_000
    with pytest.raises(InputError, match=r"policy\.ewma: expected less than or equal to 1; "
                                         r"found 2"):
        tm._spec(tmp_path, overrides=["policy={name: colloid, ewma: 2}"])
