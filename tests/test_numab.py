"""``numab-tiering`` (cxlsim.tiered.policies.numab): NUMA balancing's tiering mode, with
hand-computed cases for the hot threshold, its adjustment and the rate limit."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.errors import InputError
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.migrate import MigrationParams
from cxlsim.mm.numa import Numa
from cxlsim.mm.params import KernelParams
from cxlsim.tiered.policies import EpochView
from cxlsim.tiered.policies.numab import NumabParams, NumabTiering

import test_trace_memory as tm

#: 400 pages a second; adjustment every second: 400 candidates a period is the reference.
LIMIT = MigrationParams(promote_rate_limit=400 * 4096)


def _setup(**params):
    numa = Numa({"nodes": [{"cpus": 4, "memory": "64 MiB"}, {"cpus": 0, "memory": "64 MiB"}]})
    kernel = KernelMemory(numa, 4096, KernelParams(demotion_enabled=True,
                                                   numa_balancing_tiering=True))
    kernel.alloc(np.arange(2048), 0)
    kernel.alloc(np.arange(2048, 4096), 1)
    policy = NumabTiering(numa, 4096, params=NumabParams(**params))
    return kernel, policy


def _faults(kernel, policy, now, pages, latency):
    """The policy's moves after ``pages`` faulted with ``latency``, at ``now``; the
    scanner's scan_period_max (the threshold's adjustment period) is 1 s."""
    view = EpochView(np.asarray(pages), kernel, {}, np.asarray(pages, np.int64),
                     np.asarray(latency, float), [], now, LIMIT, scan_period_max=1e9)
    return view, policy.moves(view)


def test_a_fault_sooner_than_the_threshold_promotes_a_later_one_does_not():
    kernel, policy = _setup()
    view, (pages, dest) = _faults(kernel, policy, 0.5e9, [2048, 2049, 2050, 5],
                                  [0.5e9, 0.999e9, 1.0e9, 0.0])
    assert pages.tolist() == [2048, 2049]       # 1.0 s is not below 1000 ms; page 5 is DRAM's
    assert dest.tolist() == [0, 0]
    assert view.stats["pgpromote_candidate"] == 2
    assert view.stats["hot_threshold_ns"] == 1e9


def test_the_threshold_falls_when_candidates_exceed_the_rate_limit_and_rises_when_short():
    kernel, policy = _setup()
    unit = 2 * 1e9 / 16                                     # 125 ms
    _faults(kernel, policy, 0.5e9, np.arange(2048, 3048), np.zeros(1000))  # 1000 candidates
    assert policy.hot_threshold == 1e9                      # within the first period
    # next period: 1000 > 1.1 x 400 -> threshold 875 ms, so 900 ms is no longer hot
    _, (pages, _) = _faults(kernel, policy, 1.5e9, [3048], [0.9e9])
    assert policy.hot_threshold == 1e9 - unit and pages.size == 0
    # the period since: 0 candidates < 0.9 x 400 -> back up by a unit, 900 ms hot again
    _, (pages, _) = _faults(kernel, policy, 2.6e9, [3048], [0.9e9])
    assert policy.hot_threshold == 1e9 and pages.tolist() == [3048]
    for k in range(20):                                     # at most twice the default
        _faults(kernel, policy, 3.7e9 + 1.1e9 * k, [3049], [3e9])
    assert policy.hot_threshold == 2e9
    for k in range(40):                                     # at least one unit
        _faults(kernel, policy, 30e9 + 1.1e9 * k, np.arange(2048, 3048), np.zeros(1000))
    assert policy.hot_threshold == unit


def test_without_adjustment_the_threshold_stays():
    kernel, policy = _setup(adjust_threshold=False)
    for now in (0.5e9, 1.6e9, 2.7e9):
        _faults(kernel, policy, now, np.arange(2048, 3048), np.zeros(1000))
    assert policy.hot_threshold == 1e9


def test_plenty_of_free_dram_promotes_unconditionally_and_resets_the_threshold():
    kernel, policy = _setup(enough_free=0)
    policy.threshold = 0.5e9
    # DRAM: 16384 pages, 2048 used; enough = free - promo - 16384 / 16 is far above 3
    _, (pages, _) = _faults(kernel, policy, 0.5e9, [2048, 2049, 2050], [5e9, 5e9, 0.0])
    assert pages.tolist() == [2048, 2049, 2050] and policy.threshold == 0.0


def test_the_policy_implies_the_tiering_mode_demotion_and_the_scanner(tmp_path):
    spec = tm._spec(tmp_path, overrides=["policy={name: numab-tiering, hot_threshold: 10 ms}"])
    assert spec.kernel.numa_balancing_tiering and spec.kernel.demotion_enabled
    assert spec.numa_balancing.enabled and spec._params.hot_threshold == 1e7
    assert NumabTiering.in_task


SHORT = ["topology.nodes[1].capacity=48 MiB", "numa_balancing.scan_delay=100 us",
         "numa_balancing.scan_period=100 us", "numa_balancing.scan_size=16 MiB",
         "numa_balancing.max_scan_rate=1000 TB/s"]
ZIPF = dict(kind="zipfian", footprint="128MiB", extra=", scrambled: true")


def test_the_rate_limit_caps_the_promoted_megabytes_per_second(tmp_path):
    """100 pages a second: the window's 100th candidate reaches the limit, so at most 99
    pages a second are promoted (the run lasts well under one second)."""
    free = tm._run(tmp_path, *SHORT, "policy=numab-tiering", **ZIPF).metrics
    capped = tm._run(tmp_path, *SHORT, "policy=numab-tiering",
                     "migration.promote_rate_limit=409600 B/s", **ZIPF).metrics
    assert free["pgpromote_success"] > 99 and free["migrate_rate_limited"] == 0
    assert capped["app_time_s"] < 1
    assert 0 < capped["pgpromote_success"] <= 99 < capped["migrate_rate_limited"]


def test_in_a_run_a_threshold_below_every_fault_latency_promotes_nothing(tmp_path):
    """Faults come at least one epoch boundary after their scan: a 1 ns threshold leaves
    every fault cold, the default (1000 ms) every fault hot."""
    hot = tm._run(tmp_path, *SHORT, "policy=numab-tiering", **ZIPF)
    cold = tm._run(tmp_path, *SHORT, "policy={name: numab-tiering, hot_threshold: 1 ns}",
                   **ZIPF)
    assert cold.metrics["numa_hint_faults"] > 0 == cold.metrics["pgpromote_success"]
    epochs = hot.tables["epochs"]
    assert hot.metrics["pgpromote_success"] > 0
    assert epochs["pgpromote_candidate"].sum() >= hot.metrics["pgpromote_success"]
    assert (epochs["hot_threshold_ns"] == 1e9).all()


@pytest.mark.parametrize("override, message", [
    ("policy={name: numab-tiering, hot_treshold: 1 s}",
     "policy.hot_treshold: unknown tunable 'hot_treshold'; did you mean 'hot_threshold'?"),
    ("policy={name: numab-tiering, hot_threshold: 0 s}",
     "policy.hot_threshold: expected greater than 0; found 0"),
    ("policy={name: numab-tiering, hot_threshold: -1 s}",
     "policy.hot_threshold: expected a time such as"),
    ("migration.promote_rate_limit=-1 MB/s",
     "migration.promote_rate_limit: expected a bandwidth such as"),
])
def test_bad_tunables_are_one_line_naming_the_key(tmp_path, override, message):
    with pytest.raises(InputError) as info:
        tm._spec(tmp_path, overrides=[override])
    assert message in str(info.value) and "\n" not in str(info.value)


def test_normal_numa_balancing_promotes_into_room_and_never_demotes():
    """numa-balancing (kernel.numa_balancing=1): every node scanned, no demotion; a
    faulting CXL page with a cpupid asks to move to DRAM, and the kernel moves it while
    DRAM has room above its high watermark (the rest are refused: nothing makes room)."""
    from cxlsim.mm.kernel import KernelMemory
    from cxlsim.mm.numa import Numa
    from cxlsim.mm.watermarks import WMARK_HIGH
    from cxlsim.tiered.policies import POLICIES, EpochView

    kind = POLICIES["numa-balancing"]
    switches = kind.switches(kind.Params())
    assert switches.kernel == {"numa_balancing_tiering": False, "demotion_enabled": False}
    assert switches.numa_balancing == {"enabled": True}
    assert kind.in_task and not kind.kernel_5x
    numa = Numa({"nodes": [{"cpus": 4, "memory": "16 MiB"}, {"cpus": 0, "memory": "16 MiB"}]})
    kernel = KernelMemory(numa, 8192)
    room = int(kernel.nr_free[0] - kernel.wmark[0, WMARK_HIGH]) - 1
    kernel.alloc(np.arange(room - 2), 0)             # two pages of room left
    cxl = np.arange(room, room + 4)
    kernel.alloc(cxl, 1)
    policy = kind(numa, 8192)
    faults = np.concatenate([[0], cxl])              # a DRAM page faults too: it stays
    view = EpochView(faults, kernel, {}, faults, np.zeros(faults.size), [], 0.0,
                     scanned=faults, fault_cpupid=np.ones(faults.size, np.int64))
    pages, dest = policy.moves(view)
    assert pages.tolist() == cxl.tolist() and dest.tolist() == [0] * 4
    moved, failed = kernel.migrate(pages, 0, misplaced=True)
    assert moved.tolist() == cxl[:2].tolist() and failed.tolist() == cxl[2:].tolist()
    assert not kernel.kswapd_woken.any()
