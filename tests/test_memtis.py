"""``memtis`` (cxlsim.tiered.policies.memtis): sampled counts, the log2 histogram, the hot
and warm thresholds fitted to the fast tier, cooling, kmigrated -- hand cases."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.errors import InputError
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.numa import Numa
from cxlsim.mm.watermarks import WMARK_HIGH
from cxlsim.tiered.policies import EpochView
from cxlsim.tiered.policies.memtis import Memtis, MemtisParams

import test_trace_memory as tm


def _machine(**params):
    numa = Numa({"nodes": [{"cpus": 4, "memory": "1 MiB"}, {"cpus": 0, "memory": "16 MiB"}]})
    kernel = KernelMemory(numa, 4096)
    return kernel, Memtis(numa, 4096, params=MemtisParams(**params))


def _epoch(kernel, policy, pages, now=0.0):
    view = EpochView(np.asarray(pages, np.int64), kernel, {}, np.empty(0, np.int64),
                     np.empty(0), [], now)
    return policy.moves(view)


def test_every_sample_period_th_access_counts_across_epochs():
    kernel, policy = _machine(sample_period=3, migration_period=1e12)
    kernel.alloc(np.arange(10), 0)
    _epoch(kernel, policy, [0, 1, 2, 3, 4])          # samples accesses 0 and 3
    _epoch(kernel, policy, [5, 6, 7, 8])             # then access 6 of the trace (page 6)
    _epoch(kernel, policy, [9, 9])                   # and access 9 (the first here)
    assert np.flatnonzero(policy.count).tolist() == [0, 3, 6, 9]
    assert policy.count[9] == 1


def test_bins_are_log2_of_counts_capped_at_fifteen():
    kernel, policy = _machine()
    policy.count[:5] = [0, 1, 3, 4, 1 << 20]
    assert policy.bins(np.arange(5)).tolist() == [0, 1, 2, 2, 15]


def test_the_hot_threshold_fits_the_fast_tier_and_cooling_halves():
    # the fast tier: 256 pages, 97 % of it 248.32; pages: 200 in bin 3 (count 7),
    # 100 in bin 1 (count 1): bins >= 3 hold 200 (fit), >= 1 hold 300 (not): hot = 2,
    # and 200 fill more than 75 % of 248: no warm bin below
    kernel, policy = _machine(sample_period=1, adaptation_period=1, cooling_period=10**9,
                              migration_period=1e12)
    kernel.alloc(np.arange(300), 1)
    policy.count[:200], policy.count[200:300] = 7, 1
    _epoch(kernel, policy, [])
    assert (policy.hot, policy.warm) == (2, 2)
    # cooling: every count halves and both thresholds step down a bin
    policy.params = policy.params.model_copy(update={"cooling_period": 1,
                                                     "adaptation_period": 10**9})
    policy.count[:200] = 15
    _epoch(kernel, policy, [0])
    assert policy.count[1] == 7 and policy.count[0] == 8
    assert (policy.hot, policy.warm) == (1, 1)


def test_kmigrated_promotes_hot_pages_and_demotes_cold_ones_for_room():
    kernel, policy = _machine(migration_period=1e6)
    high = int(kernel.wmark[0, WMARK_HIGH])
    fill = int(kernel.nr_free[0]) - high - 1
    kernel.alloc(np.arange(fill), 0)                   # DRAM full to its high watermark
    kernel.alloc(np.arange(1000, 1010), 1)
    policy.count[1000:1010] = 100                      # bin 6: hot
    policy.hot, policy.warm = 6, 5                     # DRAM's pages (count 0) are cold
    pages, dest = _epoch(kernel, policy, [], now=0.0)
    up, down = pages[dest == 0], pages[dest == 1]
    assert sorted(up.tolist()) == list(range(1000, 1010))
    keep = max(int(0.02 * 256), high + 1)
    assert down.size == keep + 10 - int(kernel.nr_free[0])
    assert (kernel.node[down] == 0).all()
    pages, _ = _epoch(kernel, policy, [], now=0.5e6)   # within the period: nothing
    assert pages.size == 0


def test_memtis_runs_and_bad_tunables_are_named(tmp_path):
    result = tm._run(tmp_path, "policy={name: memtis, time_scale: 0.0001, "
                     "adaptation_period: 100, cooling_period: 2000}",
                     "topology.nodes[1].capacity=48 MiB", footprint="64MiB", n=60_000,
                     epoch=5_000)
    assert result.metrics["accesses"] == 60_000
    with pytest.raises(InputError, match=r"policy\.hot_threshold_min: expected less than or "
                                         r"equal to 15; found 16"):
        tm._spec(tmp_path, overrides=["policy={name: memtis, hot_threshold_min: 16}"])


def test_the_migration_period_is_a_time_in_the_kernels_milliseconds():
    assert MemtisParams(migration_period="5 ms").migration_period == 5e6
    assert MemtisParams().model_dump(mode="json")["migration_period"] == "500 ms"
