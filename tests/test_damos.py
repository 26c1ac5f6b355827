"""Policy damon: DAMOS migrate_hot/migrate_cold on the monitor's regions -- access
patterns, quotas, watermarks, goal tuning -- and the Redis pressure workload."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.mm.damon import Damon, DamonParams
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.numa import Numa
from cxlsim.mm.watermarks import WMARK_MIN
from cxlsim.tiered.policies import EpochView
from cxlsim.tiered.policies.damon import (GOAL_SCORE, MIN_INPUT, Damos, DamosParams,
                                          feed_loop_next_input, hot_score)
from cxlsim.traces import generate, open_trace
from cxlsim.traces.generators.redis import COLD, OTHER, run_start

MiB = 2**20
PAGES = 4000
SAMPLE, AGGREGATE = 1e6, 20e6  # ns: 20 samples an aggregation


def _numa(dram=64 * MiB, cxl=64 * MiB) -> Numa:
    return Numa({"nodes": [{"cpus": 4, "memory": dram}, {"memory": cxl}],
                 "distances": [[10, 14], [14, 10]]})


def _setup(on_dram=0, params=None, dram=64 * MiB, seed=1):
    """``PAGES`` pages, the first ``on_dram`` on DRAM and the rest on CXL, young bits
    clear; a monitor and the policy (default: HMSDK's schemes, the test's intervals)."""
    numa = _numa(dram)
    kernel = KernelMemory(numa, PAGES)
    on_dram = min(on_dram, int(kernel.nr_free[0] - kernel.wmark[0, WMARK_MIN]))
    kernel.alloc(np.arange(on_dram), 0, allowed=[0])
    kernel.alloc(np.arange(on_dram, PAGES), 1, allowed=[1])
    kernel.young[:] = False
    params = DamosParams(**{"sample": SAMPLE, "aggregate": AGGREGATE, "min_regions": 10,
                            "max_regions": 1000, **(params or {})})
    monitor = Damon(PAGES, DamonParams(SAMPLE, AGGREGATE, 10, 1000),
                    np.random.default_rng(seed))
    return kernel, monitor, Damos(numa, PAGES, params=params)


def _round(kernel, monitor, policy, hot, migrate=True):
    """One aggregation interval with ``hot`` accessed every sample, then the policy's
    moves (applied by the kernel unless ``migrate`` is false)."""
    for _ in range(20):
        monitor.sample()
        monitor.access(hot)
        kernel.touch(hot[kernel.node[hot] >= 0])
    view = EpochView(hot, kernel, {"duration_ns": AGGREGATE}, np.empty(0, np.int64),
                     np.empty(0), monitor.aggregate())
    pages, dest = policy.moves(view)
    if migrate:
        for node in np.unique(dest):
            kernel.migrate(pages[dest == node], int(node))
    return pages, dest


def test_regions_find_the_hot_range_and_migrate_hot_promotes_it():
    kernel, monitor, policy = _setup()
    hot = np.arange(1000, 1500)
    moved = []
    for _ in range(6):
        pages, dest = _round(kernel, monitor, policy, hot)
        moved.append(pages[dest == 0])
    regions = np.array(monitor.aggregate())
    inside = (regions[:, 0] >= 1000) & (regions[:, 1] <= 1500)
    assert inside.any()
    moved = np.concatenate(moved)
    # young pages of the matching regions only: exactly the hot range, each once
    assert np.array_equal(np.sort(moved), hot)
    assert (kernel.node[hot] == 0).all() and (kernel.node[:1000] == 1).all()
    assert policy.state["migrate_hot"].applied == hot.size


def test_migrate_cold_demotes_an_old_idle_range_but_not_the_hot_one():
    kernel, monitor, policy = _setup(on_dram=PAGES, params={
        "migrate_cold": {"max_accesses": 0, "min_age": 5 * AGGREGATE, "young": "reject"}})
    hot = np.arange(0, 800)
    for _ in range(10):
        _round(kernel, monitor, policy, hot)
    assert (kernel.node[hot] == 0).all()
    assert (kernel.node[1000:] == 1).mean() > 0.9


def test_a_size_quota_stops_migration_at_its_size_and_resets():
    quota = {"quota_ms": 0, "quota_bytes": 100 * 4096, "quota_reset": 3 * AGGREGATE}
    kernel, monitor, policy = _setup(params={"migrate_hot": {"min_accesses": 5, **quota}})
    hot = np.arange(1000, 1500)
    per_round = [(_round(kernel, monitor, policy, hot)[1] == 0).sum() for _ in range(6)]
    # a reset interval is three rounds: at most 100 pages charged (and so moved) in
    # each; a region's pages are charged whether or not the young filter lets them go
    assert sum(per_round[:3]) <= 100 and sum(per_round[3:]) <= 100
    assert sum(per_round) > 0
    assert policy.state["migrate_hot"].charged <= 100 * 4096


def test_the_hot_score_ranks_by_age_as_hmsdk_weights_it():
    # weights 0/0/1 (HMSDK): among accessed regions the older scores higher; among idle
    # ones the older is colder
    scheme = DamosParams().migrate_hot
    accessed = hot_score(np.array([10, 10]), np.array([40, 1]), 20, 2e9, 1e9, scheme)
    idle = hot_score(np.array([0, 0]), np.array([40, 1]), 20, 2e9, 1e9, scheme)
    assert accessed[0] > accessed[1] and idle[0] < idle[1]
    assert idle.max() < accessed.min()


def test_a_scaled_run_scores_ages_as_the_real_system():
    """The similarity law shortens the aggregation interval and the score's second alike,
    so a region of so many intervals scores the same (not every age under a simulated
    second as 0)."""
    from cxlsim.mm.similarity import Law

    real = DamosParams()
    scaled = Law(scale=64, cores=1, threads=1).apply(real)
    assert scaled.score_second == real.score_second / 64
    nr, age = np.array([10, 10, 0, 0]), np.array([1, 40, 1, 40])
    for p in (real, scaled):
        scheme = p.migrate_hot
        score = hot_score(nr, age, 20, p.aggregate, p.score_second, scheme)
        np.testing.assert_array_equal(
            score, hot_score(nr, age, 20, real.aggregate, real.score_second, scheme))


def test_watermarks_deactivate_the_scheme():
    # free_mem_rate: system free per-mille; DRAM holds everything, CXL is empty -> ~500+
    marks = {"metric": "free_mem_rate", "high": 300, "mid": 200, "low": 100}
    kernel, monitor, policy = _setup(params={"migrate_hot": {"watermarks": marks}})
    hot = np.arange(1000, 1500)
    free = int(kernel.nr_free.sum()) * 1000 // int(kernel.capacity.sum())
    assert free > 300
    for _ in range(4):
        pages, _ = _round(kernel, monitor, policy, hot)
        assert pages.size == 0
    assert not policy.state["migrate_hot"].active
    # the same with the free rate inside [low, mid): active
    kernel, monitor, policy = _setup(params={"migrate_hot": {"watermarks": {
        **marks, "high": 1000, "mid": 1000}}})
    moved = sum(_round(kernel, monitor, policy, hot)[0].size for _ in range(4))
    assert moved == hot.size


def test_feed_loop_moves_the_input_toward_the_goal():
    assert feed_loop_next_input(100_000, GOAL_SCORE) == 100_000
    assert feed_loop_next_input(100_000, 5_000) == 150_000   # under the goal: more
    assert feed_loop_next_input(100_000, 15_000) == 50_000   # over: less
    assert feed_loop_next_input(100_000, 2 * GOAL_SCORE) == MIN_INPUT
    assert feed_loop_next_input(MIN_INPUT, 19_999) == MIN_INPUT


@pytest.mark.parametrize("dram_used, grows", [(0.99, True), (0.10, False)])
def test_goal_tuning_grows_the_quota_while_the_goal_is_missed(dram_used, grows):
    """A demotion goal of 50 % free DRAM: a nearly full DRAM (score below the goal)
    raises the effective quota each reset interval; a mostly free one keeps it least."""
    numa_dram = 8 * MiB  # 2048 pages
    on_dram = int(2048 * dram_used)
    cold = {"max_accesses": 0, "min_age": 0, "young": "any", "quota_ms": 0,
            "quota_bytes": 0, "quota_reset": AGGREGATE, "goal": "node_mem_free_bp",
            "goal_value": 5000}
    kernel, monitor, policy = _setup(on_dram=on_dram, dram=numa_dram,
                                     params={"migrate_cold": cold})
    sizes = []
    for _ in range(4):
        _round(kernel, monitor, policy, np.arange(PAGES - 10, PAGES), migrate=False)
        sizes.append(policy.state["migrate_cold"].esz)
    if grows:
        assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    else:
        assert sizes == [MIN_INPUT // GOAL_SCORE] * 4


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 1000), on_dram=st.integers(0, PAGES),
       hot_start=st.integers(0, PAGES - 1), hot_len=st.integers(1, 1500))
def test_pages_are_never_lost_or_duplicated(seed, on_dram, hot_start, hot_len):
    kernel, monitor, policy = _setup(on_dram=on_dram, dram=8 * MiB, seed=seed, params={
        "migrate_cold": {"max_accesses": 0, "min_age": 0, "young": "any"}})
    rng = np.random.default_rng(seed)
    for _ in range(4):
        hot = np.unique(np.concatenate([np.arange(hot_start, min(hot_start + hot_len, PAGES)),
                                        rng.integers(0, PAGES, 50)]))
        pages, dest = _round(kernel, monitor, policy, hot, migrate=False)
        assert np.unique(pages).size == pages.size
        assert (kernel.node[pages] != dest).all() and (kernel.node[pages] >= 0).all()
        for node in np.unique(dest):
            kernel.migrate(pages[dest == node], int(node))
        assert (kernel.node >= 0).all()
        assert int((kernel.capacity - kernel.nr_free).sum()) == PAGES


SPEC = """name: dr
kind: trace-memory
topology: hmsdk-small.yaml
cpu:
  preset: cpus/xeon6
  caches:  # small, so that Redis's values miss them
    - {name: L1D, size: 48 KiB, ways: 12, line: 64 B, latency_cycles: 5}
    - {name: L2, size: 256 KiB, ways: 16, line: 64 B, latency_cycles: 16}
    - {name: L3, size: 768 KiB, ways: 12, line: 64 B, latency_cycles: 100, shared_by: complex}
nodes: {dram: [dram0], cxl: [cmm0]}
trace: {generate: redis, n: 60000, seed: 1,
        params: {keys: 2000, cold: 7.5 MiB, settle: 20000}}
mlp: 1
compute: 200 ns
epoch: 1000
warmup: 24000
%s
"""

TOPOLOGY = """name: hmsdk-small
nodes:
  - {name: host0, type: host, sockets: 1, cores: 48, frequency: 2.7 GHz, dram_channels: 8}
  - {name: dram0, type: dram, attached_to: host0, preset: memory/ddr5-4800, channels: 8,
     capacity: 8 MiB, latency: 110 ns}
  - {name: rp0, preset: devices/root-port, host: host0}
  - {name: cmm0, preset: devices/cmm-ddr5}
  - {name: cmm0_dram, type: dram, attached_to: cmm0, preset: memory/ddr5-4800, channels: 1,
     capacity: 256 MiB}
links:
  - {from: rp0, to: cmm0, preset: links/cxl-gen5-x8}
"""


def _load(tmp_path, text, overrides=()):
    (tmp_path / "hmsdk-small.yaml").write_text(TOPOLOGY)
    path = tmp_path / "dr.yaml"
    path.write_text(SPEC % text)
    return load_experiment(path, list(overrides))


DAMON = "policy: {name: damon, time_scale: 0.0001}"


def test_the_policy_turns_the_monitor_on_at_its_intervals(tmp_path):
    spec = _load(tmp_path, DAMON)
    assert spec.damon.enabled
    assert spec.damon.sample == pytest.approx(100e6 * 1e-4)
    assert spec.damon.aggregate == pytest.approx(2e9 * 1e-4)
    assert spec.damon.min_regions == 100 and spec.damon.max_regions == 10_000


def test_same_seed_same_counters_and_damon_beats_no_tiering(tmp_path):
    a, b = (_load(tmp_path, DAMON).run().metrics for _ in range(2))
    assert a == b
    assert a["measured_accesses"] == 60_000 - 24_000  # the run phase after the warmup
    assert a["numa_pages_migrated"] > 0
    static = _load(tmp_path, "policy: static").run().metrics
    assert a["measured_time_s"] < static["measured_time_s"]


@pytest.mark.parametrize("text, message", [
    ("policy: {name: damon, migrate_hot: {min_accesses: 50, max_accesses: 5}}",
     "policy.migrate_hot.max_accesses: min_accesses (50 %) > max_accesses (5 %): no region "
     "can match the access pattern"),
    ("policy: {name: damon, migrate_cold: {min_age: 2 s, max_age: 1 s}}",
     "policy.migrate_cold.max_age: min_age (2 s) > max_age (1 s): no region can match the "
     "access pattern"),
    ("policy: {name: damon, migrate_cold: {watermarks: {metric: free_mem_rate, low: 500, "
     "mid: 400, high: 900}}}", "policy.migrate_cold.watermarks.mid: watermarks must be "
     "low <= mid <= high; found low 500, mid 400, high 900"),
    ("policy: {name: damon, sample: 3 s}",
     "policy.sample: sample (3 s) is longer than aggregate (2 s)"),
    # damon_set_attrs (mm/damon/core.c) refuses fewer than 3 regions and min > max
    ("policy: {name: damon, min_regions: 2}",
     "policy.min_regions: expected greater than or equal to 3; found 2"),
    ("policy: {name: damon, min_regions: 50, max_regions: 40}",
     "policy.max_regions: 40 is below min_regions (50); expected at least that"),
    ("policy: static\ndamon: {enabled: true, min_regions: 50, max_regions: 40}",
     "damon.max_regions: 40 is below min_regions (50); expected at least that"),
    ("policy: static\ndamon: {enabled: true, sample: 2 ms, aggregate: 1 ms}",
     "damon.sample: sample (2 ms) is longer than aggregate (1 ms)"),
    ("policy: damon\ndamon: {enabled: false}",
     "damon.enabled: policy damon needs true (it sets damon.enabled from its own tunables); "
     "the file sets false"),
    ("policy: damon\ndamon: {sample: 10 us}",
     "damon.sample: policy damon needs 100 ms (it sets damon.sample from its own tunables); "
     "the file sets 10 us"),
])
def test_bad_settings_are_named(tmp_path, text, message):
    """Each at the line of the key it names."""
    with pytest.raises(InputError) as info:
        _load(tmp_path, text)
    assert str(info.value).endswith(f": {message}")
    line = int(str(info.value).split(":")[1])
    assert message.split(":")[0].split(".")[-1] in (tmp_path / "dr.yaml").read_text(
        ).splitlines()[line - 1]


def test_a_warmup_past_the_trace_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"warmup \(60,000 records\) leaves nothing of the "
                                         r"trace \(60,000 records\) to measure"):
        _load(tmp_path, "policy: static", ["warmup=60000"]).run()


def test_redis_trace_phases(tmp_path):
    path = generate("redis", 30_000, 1, tmp_path / "r.arrow",
                    ["keys=2000", "cold=1MiB", "settle=5000"])
    t = open_trace(path).read(["addr", "op", "region"])
    region = t["region"]
    assert (region[:256] == COLD).all() and (t["op"][:256] == 1).all()
    assert (region[256:5000] == OTHER).all()
    start = run_start({"settle": 5000, "keys": 2000})
    assert start == 9000
    assert (t["op"][5000:start] == 1).all() and set(region[5000:start]) == {0, 1}
    assert (t["op"][start:] == 0).all() and set(region[start:]) == {0, 1}  # C: reads
    assert np.unique(t["addr"][:256] >> 12).size == 256


@pytest.mark.parametrize("params, message", [
    (["cold=1MiB", "settle=100"], r"settle \(100 records\) must cover the cold filler's 256"),
    (["keys=2000", "settle=5000"], r"n \(6,000\) must exceed the records before the run"),
])
def test_redis_bad_parameters(tmp_path, params, message):
    with pytest.raises(InputError, match=message):
        generate("redis", 6000, 1, tmp_path / "r.arrow", params)


def test_presets_fill_what_is_not_given():
    tier = DamosParams(setup="mem_tier", migrate_hot={"min_accesses": 10})
    assert tier.sample == 5e6 and tier.aggregate == 100e6
    assert tier.migrate_cold.goal == "node_mem_free_bp" and tier.migrate_cold.goal_value == 50
    assert tier.migrate_hot.goal == "node_mem_used_bp" and tier.migrate_hot.min_accesses == 10
    assert tier.migrate_hot.young == "only"
    hmsdk = DamosParams(aggregate=1e9, migrate_cold={"quota_ms": 0})
    assert hmsdk.sample == 100e6 and hmsdk.aggregate == 1e9
    assert hmsdk.migrate_cold.min_age == 30e9 and hmsdk.migrate_cold.quota_ms == 0


def test_a_file_names_the_damon_setup(tmp_path):
    """``setup`` is the tunable's name: ``preset`` in a file's mapping is taken for a preset
    file, so a file could not reach mem_tier."""
    text = (REPO / "experiments" / "trace-memory.yaml").read_text()
    text = text.replace("../topologies/", str(REPO / "topologies") + "/")
    text = text.replace("policy: tpp", "policy: {name: damon, setup: mem_tier}")
    (tmp_path / "e.yaml").write_text(text)
    spec = load_experiment(tmp_path / "e.yaml")
    assert spec.policy_params == {"setup": "mem_tier"}
