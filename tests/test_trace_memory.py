"""kind: trace-memory — a trace through the hierarchy onto tiered memory, in simulated time."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.errors import InputError, RunWarning
from cxlsim.experiments import load_experiment
from cxlsim.memory.epoch import Demand
from cxlsim.tiered import policies
from cxlsim.tiered.policies.static import Oracle, Static
from cxlsim.traces import import_trace

BASE = """name: tm
kind: trace-memory
topology: selectel-xeon6-cxl
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0, cxl1]}
trace: {generate: %s, n: %d, params: {footprint: %s, threads: 2%s}}
epoch: %d
"""


def _spec(tmp_path, kind="uniform", n=200_000, footprint="256MiB", extra="", epoch=25_000,
          overrides=()):
    path = tmp_path / "tm.yaml"
    path.write_text(BASE % (kind, n, footprint, extra, epoch))
    return load_experiment(path, list(overrides))


def _run(tmp_path, *overrides, **kw):
    return _spec(tmp_path, overrides=overrides, **kw).run()


class PromoteAll(Static):
    """A toy policy: promote every accessed CXL page to DRAM after each epoch (a daemon's
    migrate_pages: no hint faults)."""

    name = "promote-all"

    def moves(self, epoch):
        pages = np.unique(epoch.pages)
        far = pages[epoch.kernel.node[pages] != self.local]
        far = far[epoch.kernel.node[far] >= 0]
        return far, np.full(far.size, self.local)


class PromoteAllInTask(PromoteAll):
    """The same from the task's hint-fault handler (migrate_misplaced_folio)."""

    name = "promote-all-in-task"
    in_task = True


def test_policies_bound_each_other(tmp_path):
    t = {p: _run(tmp_path, f"policy={p}").metrics["app_time_s"]
         for p in ("all-local", "static", "oracle", "all-cxl")}
    spread = _run(tmp_path, "mempolicy=--interleave=0,1").metrics["app_time_s"]
    assert t["all-local"] == t["static"] == t["oracle"]  # DRAM holds the footprint
    assert t["all-local"] < spread < t["all-cxl"]


def test_the_oracle_beats_first_touch_when_dram_is_short(tmp_path):
    short = ["topology.nodes[1].capacity=48 MiB"]  # an eighth of a 384 MiB footprint
    kw = dict(kind="zipfian", footprint="384MiB", extra=", scrambled: true")
    touch = _run(tmp_path, *short, **kw)
    oracle = _run(tmp_path, *short, "policy=oracle", **kw)
    assert oracle.metrics["app_time_s"] < touch.metrics["app_time_s"]
    nodes = {name: r.tables["nodes"].set_index("node") for name, r in
             (("touch", touch), ("oracle", oracle))}
    for t in nodes.values():
        # DRAM full either way (down to its min watermark)
        assert 48 * 256 - 64 < t.loc["dram", "resident_pages"] <= 48 * 256
    # the oracle's DRAM pages are the hot ones: DRAM serves more of the misses
    assert nodes["oracle"].loc["dram", "traffic_share"] > \
        nodes["touch"].loc["dram", "traffic_share"] + 0.1


def test_kswapd_demotes_to_cxl_when_dram_is_bound_and_short(tmp_path):
    bound = ["topology.nodes[1].capacity=48 MiB", "mempolicy=--membind=0"]
    kw = dict(kind="zipfian", footprint="128MiB", extra=", scrambled: true")
    result = _run(tmp_path, *bound, "kernel.demotion_enabled=true", **kw)
    epochs, nodes = result.tables["epochs"], result.tables["nodes"].set_index("node")
    demoted = epochs["pgdemote_kswapd"].sum() + epochs["pgdemote_direct"].sum()
    assert epochs["pgdemote_direct"].sum() > 0 and epochs["kswapd_wakeup"].sum() > 0
    # every demoted page is copied in the next epoch: 64 lines read at DRAM and 64
    # written at CXL (kswapd's last demotions, during the last epoch, have no next one)
    late = epochs["pgdemote_kswapd"].iloc[-1]
    assert 2 * 64 * (demoted - late) <= epochs["copy_lines"].sum() <= 2 * 64 * demoted
    assert nodes.loc["cxl", "resident_pages"] == demoted
    # direct reclaim stalls the allocating task: 1.1 us a page by default
    assert epochs["reclaim_stall_ns"].sum() == pytest.approx(1100 * epochs["pgdemote_direct"].sum())
    free = _run(tmp_path, *bound, "kernel.demotion_enabled=true", "migration.cost=0", **kw)
    assert free.metrics["app_time_s"] < result.metrics["app_time_s"]
    with pytest.raises(InputError, match="out of memory: .* the footprint exceeds memory "
                                         r"\(swap is off, anon pages stay resident\)"):
        _run(tmp_path, *bound, **kw)  # no demotion, no swap: anon pages cannot go


def test_halving_the_epoch_barely_moves_the_result(tmp_path):
    times = [_run(tmp_path, epoch=e).metrics["app_time_s"] for e in (50_000, 25_000, 12_500)]
    assert times[1] == pytest.approx(times[0], rel=0.02)
    assert times[2] == pytest.approx(times[1], rel=0.02)


def test_node_bandwidths_agree_with_the_equilibrium_for_the_same_demand(tmp_path):
    spec = _spec(tmp_path, overrides=["mempolicy=--interleave=0,1"])
    result = spec.run()
    epochs, nodes = result.tables["epochs"], result.tables["nodes"].set_index("node")
    refs = {n: epochs[f"refs_{n}"].sum() for n in ("dram", "cxl")}
    cores = result.metrics["cores"]
    total = sum(refs.values())
    demand = Demand(cores, spec.cpu.mlp, {n: r / total for n, r in refs.items()},
                    gap=epochs["busy_ns"].sum() / total,
                    read_fraction=1 / (1 + epochs["write_fraction"].mean()))
    eq = spec.memory().solve([demand])
    for n in refs:
        assert nodes.loc[n, "GBps"] == pytest.approx(eq.node_bandwidth(n) / 1e9, rel=0.02)
        assert nodes.loc[n, "mean_latency_ns"] == pytest.approx(eq.latency[n], rel=0.02)


def test_a_sparse_lackey_trace_runs_sized_by_its_footprint(tmp_path):
    native = tmp_path / "lackey.arrow"
    import_trace(REPO / "traces" / "samples" / "lackey.txt", native, "lackey")
    path = tmp_path / "lk.yaml"
    path.write_text((BASE % ("uniform", 1, "1MiB", "", 1)).replace(
        "trace: {generate: uniform, n: 1, params: {footprint: 1MiB, threads: 2}}",
        "trace: lackey.arrow"))
    result = load_experiment(path).run()
    assert result.metrics["accesses"] > 0
    assert result.metrics["footprint_pages"] == result.tables["nodes"]["resident_pages"].sum()
    assert result.metrics["footprint_pages"] < 1000  # 47-bit addresses, a few pages


@pytest.mark.parametrize("overrides, message", [
    (["policy=no-such"],
     f"policy: unknown policy 'no-such'; expected one of {', '.join(policies.POLICIES)}"),
    (["mempolicy=--membind=7"],
     "mempolicy: node 7 is not one of the experiment's nodes (0 dram, 1 cxl)"),
    (["mempolicy={mode: weighted-interleave, nodes: [0, 1], weights: {'0': 2}}"],
     "mempolicy: weights must give one weight for each of the nodes [0, 1], got {0: 2}"),
    (["epoch=300000"], "epoch (300,000 records) is longer than the trace (200,000 records)"),
    (["topology.nodes[1].capacity=16 MiB", "topology.nodes[4].capacity=16 MiB",
      "topology.nodes[5].capacity=16 MiB"],
     "trace: the trace touches 62,430 pages (243.9 MiB) of anon memory, more than dram + cxl "
     "hold above their min watermarks: 12,068 pages (47.1 MiB) of 12,288 pages (48.0 MiB); "
     "with swap off (kernel.swap) anon pages cannot be reclaimed and the kernel would OOM: "
     "give the nodes more capacity, make the trace's footprint smaller, or turn swap on"),
    # whatever the policy: a policy that moves pages cannot make room either
    (["topology.nodes[1].capacity=16 MiB", "topology.nodes[4].capacity=16 MiB",
      "topology.nodes[5].capacity=16 MiB", "policy=tpp"],
     "the trace touches 62,430 pages (243.9 MiB) of anon memory"),
    (["trace=nothere.arrow"], "trace file"),
    (["numa_balancing={enabled: true, scan_period: 0 ns}"],
     "numa_balancing.scan_period: expected greater than 0; found 0"),
    (["numa_balancing={enabled: true, scan_size: 1 KiB}"],
     "numa_balancing.scan_size: expected greater than or equal to 4096; found 1024"),
    (["trace={generate: nope, n: 5}"], "trace.generate: unknown generator 'nope'; expected one "
                                       "of uniform, zipfian,"),
    (["trace.params.footprint=5 parsecs"], "--set trace.params.footprint=5 parsecs: "
     "trace.params.footprint: expected a size such as '64 B', '8 GiB' or '8 GB'; found "
     "'5 parsecs' (unknown unit 'parsecs')"),
    (["trace.params.theat=0.9"], "trace.params.theat: unknown parameter 'theat' for generator "
                                 "uniform; did you mean 'threads'?; known: threads,"),
    (["numa_balancing={enabled: true, scan_period: 100 ms, scan_period_max: 6 ms}"],
     "numa_balancing.scan_period_max: 6 ms is below scan_period (100 ms); expected at least "
     "that"),
    (["kernel.movable_nodes=[2]"], "kernel.movable_nodes[0]: node 2 does not exist (nodes 0-1)"),
    (["kernel.movable_nodes=[0, 1]"], "kernel.movable_nodes: at least one node with memory "
                                      "must not be movable"),
    (["kernel.adistance=[576]"], "kernel.adistance: adistance must give one abstract distance "
                                 "per node (2), got 1"),
    # the machine the kernel model needs (a traceback at run time before)
    (["nodes={cxl: [cxl0, cxl1]}"], "nodes: no NUMA node holds the host's DRAM (a dram "
                                    "target), where its CPUs would be; expected one"),
    (["nodes.cxl=[]"], "nodes.cxl: expected at least 1 item; found none"),
    (["topology.nodes[4].capacity=1 KiB", "nodes.cxl=[cxl0]"],
     "nodes.cxl: NUMA node 'cxl' holds 1024 B, less than a 4 KiB page"),
])
def test_bad_input_is_named(tmp_path, overrides, message):
    """Each mistake is one message naming the key (no traceback, no hang)."""
    with pytest.raises(InputError) as info:
        _run(tmp_path, *overrides)
    assert message in str(info.value)


def test_a_policy_that_moves_pages_is_charged_and_its_bounces_counted(tmp_path, monkeypatch):
    """A toy policy promoting every accessed CXL page to DRAM each epoch, with DRAM bound
    and short and demotion on: the kernel demotes, the policy promotes them back."""
    monkeypatch.setitem(policies.POLICIES, "promote-all-in-task", PromoteAllInTask)
    # NUMA balancing's tiering mode: a refused hint-fault promotion wakes DRAM's kswapd,
    # which demotes down to the promo watermark, making room for the next promotions
    bound = ["topology.nodes[1].capacity=48 MiB", "kernel.demotion_enabled=true",
             "kernel.numa_balancing_tiering=true"]
    kw = dict(kind="zipfian", footprint="128MiB", extra=", scrambled: true")
    epochs = _run(tmp_path, *bound, "policy=promote-all-in-task", **kw).tables["epochs"]
    assert epochs["pgpromote_success"].sum() > 0
    assert epochs["numa_pages_migrated"].sum() == epochs["pgpromote_success"].sum()
    assert (epochs["pgalloc_dram"] + epochs["pgalloc_cxl"]).sum() == epochs["pgalloc"].sum()
    assert epochs["pingpong"].sum() > 0            # demoted, promoted back, demoted again
    moves = epochs["pgmigrate_success"].sum()      # demotions and promotions, both copied
    late = epochs["pgmigrate_success"].iloc[-1]
    assert 2 * 64 * (moves - late) <= epochs["copy_lines"].sum() <= 2 * 64 * moves


def test_the_scanner_marks_pages_and_their_next_access_faults(tmp_path):
    fast = ["numa_balancing={enabled: true, scan_delay: 20 us, scan_period: 20 us, "
            "scan_size: 64 MiB, max_scan_rate: 1000 TB/s}", "mempolicy=--interleave=0,1"]
    plain = _run(tmp_path, "mempolicy=--interleave=0,1")
    tiering = _run(tmp_path, *fast, "kernel.numa_balancing_tiering=true")
    everywhere = _run(tmp_path, *fast)
    assert plain.metrics["numa_hint_faults"] == 0
    # in tiering mode only the CXL half of the pages is scanned
    assert 0 < tiering.metrics["numa_hint_faults"] < everywhere.metrics["numa_hint_faults"]
    # each fault costs the task 1 us by default
    assert tiering.metrics["app_time_s"] > plain.metrics["app_time_s"]


def test_the_access_monitor_finds_the_hot_region(tmp_path):
    # sampling intervals longer than an epoch (about 30 us here), as DAMON's 5 ms are
    monitor = ["damon={enabled: true, sample: 100 us, aggregate: 1 ms}"]
    result = _run(tmp_path, *monitor, kind="hotspot", n=400_000, footprint="64MiB",
                  extra=", hot_fraction: 0.1, hot_ops: 0.9", epoch=2500)
    regions = result.tables["damon_regions"]
    last = regions[regions["time_ns"] == regions["time_ns"].max()]
    assert 10 <= len(last) <= 1000
    hottest = last.loc[last["nr_accesses"].idxmax()]
    # the hot tenth of the pages, 90 % of the accesses: its regions outscore the rest
    width = hottest["end_page"] - hottest["start_page"]
    assert width < 0.5 * result.metrics["footprint_pages"]
    assert hottest["nr_accesses"] > 2 * last["nr_accesses"].median()


def test_the_server_app_on_the_trace_engine_agrees_with_the_app_model():
    """T4.3/T4.4 redone on the trace engine (experiments/server-db-trace.yaml) against the
    equilibrium app model they are validated on (app-cxl-vs-ram): the same ordering, and
    CXL's loss only a little smaller -- each traced access also pays its TLB miss and page
    walk (cache hits), which the app model of LLC misses leaves out."""
    trace = REPO / "experiments" / "server-db-trace.yaml"
    rate = {mode: load_experiment(trace, ["trace.n=300000", f"mempolicy={mp}"]).run()
            .metrics["accesses_per_s"]
            for mode, mp in (("ram", "--membind=0"), ("cxl", "--membind=1"),
                             ("interleave", "--interleave=0,1"))}
    app = load_experiment(REPO / "experiments" / "app-cxl-vs-ram.yaml").run() \
        .tables["modes"].set_index("mode")["throughput_rps"]
    for mode in ("cxl", "interleave"):
        traced, modelled = rate[mode] / rate["ram"] - 1, app[mode] / app["ram"] - 1
        assert modelled < traced < 0
        assert traced - modelled < 0.015


def test_the_run_records_page_types_and_allocation_epochs(tmp_path):
    # a 32 MiB file read uniformly by a fifth of the accesses, beside zipfian anon memory
    result = _run(tmp_path, kind="anon-file-mix", footprint="64MiB",
                  extra=", file_size: 32MiB, file_ops: 0.2")
    pages, metrics = result.tables["pages"], result.metrics
    by_type = pages.groupby("page_type")["pages"].sum()
    assert by_type["file"] == metrics["pages_file"] > 0
    assert by_type["anon"] == metrics["pages_anon"] > 0
    assert metrics["pages_anon"] + metrics["pages_file"] == metrics["footprint_pages"]
    # every page allocated once (DRAM holds them all), in the epoch of its first access
    assert pages["alloc_epoch"].between(0, metrics["epochs"] - 1).all()
    per_epoch = pages.groupby("alloc_epoch")["pages"].sum()
    assert per_epoch.tolist() == result.tables["epochs"]["pgalloc"].tolist()
    assert pages["accesses"].sum() == metrics["accesses"]


def test_with_swap_a_footprint_above_memory_runs(tmp_path):
    small = ["topology.nodes[1].capacity=16 MiB", "topology.nodes[4].capacity=16 MiB",
             "topology.nodes[5].capacity=16 MiB"]
    result = _run(tmp_path, *small, "kernel.swap=true", n=50_000, epoch=5_000)
    assert result.metrics["footprint_pages"] > 3 * 4096            # above the 48 MiB
    assert result.tables["epochs"]["pgsteal_kswapd"].sum() + \
        result.tables["epochs"]["pgsteal_direct"].sum() > 0        # anon pages swapped out


def test_the_oracle_aims_only_as_many_hot_pages_at_dram_as_fit_above_its_min_watermark():
    from cxlsim.mm.numa import Numa
    numa = Numa({"nodes": [{"cpus": 2, "memory": "40 KiB"}, {"memory": "1 MiB"}]})
    counts = np.array([5, 9, 1, 7, 3, 8, 2, 6, 4, 0])       # 10 pages, DRAM holds 10
    oracle = Oracle(numa, 10, counts=counts, room=np.array([4, 250]))
    target, _ = oracle.preferred(np.arange(10))
    assert np.flatnonzero(target == 0).tolist() == [1, 3, 5, 7]   # the 4 hottest


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 50), max_size=8), epoch=st.integers(1, 30))
def test_epochs_regroup_the_chunks_in_order(sizes, epoch):
    import numpy as np

    from cxlsim.tiered.epochs import in_epochs

    starts = np.cumsum([0] + sizes)
    chunks = [{"addr": np.arange(a, b), "op": np.arange(a, b) % 2}
              for a, b in zip(starts[:-1], starts[1:])]
    got = list(in_epochs(lambda: iter(chunks), epoch))
    assert [len(e["addr"]) for e in got[:-1]] == [epoch] * (len(got) - 1)
    assert np.concatenate([e["addr"] for e in got] or [np.arange(0)]).tolist() == \
        list(range(starts[-1]))
    assert all((e["op"] == e["addr"] % 2).all() for e in got)


def test_the_scanners_period_follows_the_kernels_rules():
    """task_scan_min/max: a pass over the resident pages in 1-60 s, per scan divided by
    the pass's windows, never faster than the maximum scan rate; update_task_scan_period
    (hand-computed; the order of its tests: tests/test_linux_behaviour.py): no counted
    fault doubles it, local shared faults slow it, remote shared ones speed it up."""
    from cxlsim.mm.numa_balancing import PassFaults, Scanner

    # 256 MiB scans (65536 pages), 2560 MB/s: a scan takes at least 100 ms
    scanner = Scanner(1e9, 1e9, 65536, True, 1000.0, 60e9, 256 / 2560 * 1e9)
    assert scanner.bounds(65536) == (1e9, 60e9)             # one window
    assert scanner.bounds(4 * 65536) == (0.25e9, 15e9)      # four windows
    assert scanner.bounds(16 * 65536)[0] == pytest.approx(1e8)  # floored at 100 ms
    adapt = Scanner.adapt
    assert adapt(1e9, 1e9, 60e9, PassFaults()) == 2e9        # no faults: doubles
    assert adapt(40e9, 1e9, 60e9, PassFaults()) == 60e9      # ... up to the max
    # all remote: 7 slots of a tenth down; all local: 3 slots up
    assert adapt(10e9, 1e9, 60e9, PassFaults(remote=50, shared=50)) == pytest.approx(3e9)
    assert adapt(10e9, 1e9, 60e9, PassFaults(local=50, shared=50)) == pytest.approx(13e9)
    # 70 % local: one slot up; 50 %: two slots down
    assert adapt(2e9, 1e9, 60e9, PassFaults(7, 3, 0, 10)) == pytest.approx(2.2e9)
    assert adapt(2e9, 1e9, 60e9, PassFaults(1, 1, 0, 2)) == pytest.approx(1.6e9)


class _Local:
    """First touch on node 0 (the allocator falls back from there)."""

    def preferred(self, pages):
        return np.zeros(pages.size, np.int64), None


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3000), epoch=st.integers(50, 800),
       free=st.lists(st.integers(0, 400), max_size=60))
def test_new_pages_allocate_in_first_access_order_without_the_search(seed, n, epoch, free):
    """Page ids number the trace's pages in first-seen order, so the sorted new pages of
    an epoch are its first-access order: the same placement as searching every epoch,
    refaults (pages freed between epochs) included, with DRAM filling up mid-run."""
    from cxlsim.mm.kernel import KernelMemory
    from cxlsim.mm.numa import Numa
    from cxlsim.tiered.host import _allocate

    trace = np.random.default_rng(seed).integers(0, 400, n)  # 400 pages, DRAM holds ~220
    ids = np.unique(trace, return_inverse=True)[1]             # any numbering, then
    first = np.unique(ids, return_index=True)[1]               # renumbered first-seen
    ids = np.argsort(np.argsort(first))[ids]
    numa = Numa({"nodes": [{"cpus": 1, "memory": 1 << 20}, {"memory": 4 << 20}],
                 "distances": [[10, 14], [14, 10]]})
    runs = [KernelMemory(numa, int(ids.max()) + 1) for _ in range(2)]
    for mem, search in zip(runs, (False, True)):
        new_from = 0
        for e, start in enumerate(range(0, ids.size, epoch)):
            chunk = ids[start:start + epoch]
            distinct = np.unique(chunk)
            _allocate(mem, _Local(), chunk, distinct, ids.size if search else new_from)
            new_from = max(new_from, int(distinct[-1]) + 1)
            gone = np.unique(np.array([p for p in free[e::7] if p < mem.node.size], np.int64))
            mem.free(gone[mem.node[gone] >= 0])  # reclaimed: refaults next time
    assert runs[0].node.tolist() == runs[1].node.tolist()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2000))
def test_the_pages_table_is_the_groupby_of_every_page(seed, n):
    """The result's ``pages`` table, counted with numpy, equals pandas' groupby of a
    frame of every page."""
    import pandas as pd

    from cxlsim.experiments.trace_results import pages_table as _pages
    from cxlsim.mm.placement import DEMOTED, PAGE_TYPES, PROMOTED, Placement

    rng = np.random.default_rng(seed)
    p = Placement(n, page_type=rng.integers(0, 3, n).astype(np.int8))
    p.node[:], p.alloc_epoch[:] = rng.integers(-1, 3, n), rng.integers(-1, 40, n)
    p.accesses[:], p.flags[:] = rng.integers(0, 1000, n), rng.integers(0, 4, n)
    names = ["dram", "cxl", "cxl2"]
    frame = pd.DataFrame({"page_type": np.asarray(PAGE_TYPES)[p.page_type],
                          "node": np.asarray(names + ["none"])[p.node],
                          "alloc_epoch": p.alloc_epoch, "accesses": p.accesses,
                          "demoted": (p.flags & DEMOTED) > 0,
                          "promoted": (p.flags & PROMOTED) > 0,
                          "order": p.page_type * 10 + p.node})
    want = frame.groupby(["order", "page_type", "node", "alloc_epoch"]).agg(
        pages=("accesses", "size"), accesses=("accesses", "sum"),
        demoted=("demoted", "sum"), promoted=("promoted", "sum")).reset_index()
    got = _pages(p, names)
    for column in got:
        assert got[column].tolist() == want[column].tolist(), column


FAST_SCAN = ("numa_balancing={enabled: true, scan_delay: 20 us, scan_period: 20 us, "
             "scan_size: 64 MiB, max_scan_rate: 1000 TB/s}")
PARTS = ("local_ns", "loss_cxl_latency_ns", "loss_copy_traffic_ns", "loss_hint_faults_ns",
         "loss_migration_ns", "loss_shootdowns_ns")


def test_the_app_time_is_its_local_time_and_the_losses_by_cause(tmp_path):
    """The parts add up to the app time; all-CXL's local part is all-local's time, its
    loss is CXL latency alone; a promoting policy also pays hint faults, migrations,
    shootdowns and its copies' traffic, and bounces pages."""
    kw = dict(kind="zipfian", footprint="128MiB", extra=", scrambled: true")
    local = _run(tmp_path, "policy=all-local", **kw).metrics
    cxl = _run(tmp_path, "policy=all-cxl", **kw).metrics
    tpp = _run(tmp_path, "policy=tpp", "topology.nodes[1].capacity=48 MiB", FAST_SCAN,
               **kw).metrics
    for m in (local, cxl, tpp):
        assert sum(m[k] for k in PARTS) == pytest.approx(m["app_time_s"] * 1e9, rel=1e-9)
        assert sum(m[k.removesuffix("_ns") + "_share"] for k in PARTS) == pytest.approx(1)
    assert cxl["local_ns"] == pytest.approx(local["app_time_s"] * 1e9, rel=0.01)
    assert cxl["loss_cxl_latency_share"] > 0.1
    assert cxl["loss_hint_faults_ns"] == cxl["loss_migration_ns"] == 0
    for part in PARTS[1:]:
        assert tpp[part] > 0, part
    assert tpp["pingpong"] > 0 and tpp["policy_acted"] and not tpp["policy_idle_reason"]


@pytest.mark.parametrize("overrides, reason", [
    # the kernel's 1 s scan delay: no scan in a run of milliseconds
    (["policy=tpp"], "no NUMA scan before the end: numa_balancing.scan_delay 1 s is not "
                     "shorter than the run's"),
    (["policy=damon"], "the DAMON monitor never aggregated: damon.aggregate 2 s is "
                       "longer than the run's"),
    # the clocks the run used: scaled by the similarity law (1 s / 16)
    (["policy=tpp", "scale=16"], "numa_balancing.scan_delay 62.5 ms is not shorter"),
    # scans and hint faults, but DRAM holds every page: nothing to promote
    (["policy=tpp", FAST_SCAN], "it moved no page"),
])
def test_a_policy_that_never_acted_says_why(tmp_path, overrides, reason):
    with pytest.warns(RunWarning, match="tm: policy .* never acted: ") as caught:
        metrics = _run(tmp_path, *overrides).metrics
    assert len(caught) == 1 and reason in str(caught[0].message)
    assert metrics["policy_acted"] is False and reason in metrics["policy_idle_reason"]


def test_a_policy_that_never_acted_is_one_line_on_stderr(tmp_path):
    path = tmp_path / "tm.yaml"
    path.write_text(BASE % ("uniform", 200_000, "256MiB", "", 25_000) + "policy: tpp\n")
    proc = subprocess.run([sys.executable, "-m", "cxlsim.cli", "run", str(path), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0
    lines = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert lines == [f"cxlsim: warning: tm: policy tpp never acted: no NUMA scan before the "
                     f"end: numa_balancing.scan_delay 1 s is not shorter than the run's "
                     f"{lines[0].split('run' + chr(39) + 's ')[-1]}"]


def test_dram_capacity_as_a_share_of_the_footprint_is_that_size(tmp_path):
    """``capacity: 35 %`` on a memory node: 35 % of the pages the trace touches."""
    kw = dict(n=100_000, footprint="64MiB")
    share = _spec(tmp_path, overrides=["topology.nodes[dram0].capacity=35 %"], **kw)
    assert share.capacity_shares == {"dram0": 0.35}
    metrics = share.run().metrics
    pages = int(0.35 * metrics["footprint_pages"])
    assert metrics == _run(tmp_path, f"topology.nodes[dram0].capacity={pages * 4096}",
                           **kw).metrics


def test_a_capacity_share_is_refused_where_it_cannot_resolve(tmp_path):
    with pytest.raises(InputError, match=r"--set topology.nodes\[dram0\].capacity=135 %: "
                                         r"topology.nodes\[dram0\].capacity: expected a "
                                         r"percentage"):
        _spec(tmp_path, overrides=["topology.nodes[dram0].capacity=135 %"])


def test_the_cpu_preset_and_the_topology_are_swapped_by_name(tmp_path):
    """As ``cpu: {preset: cpus/epyc-7452}`` and ``topology: tpp-2to1`` in the file."""
    spec = _spec(tmp_path, overrides=["cpu.preset=cpus/epyc-7452", "topology=tpp-2to1",
                                      "topology.nodes[cxl0].capacity=64 MiB",
                                      "nodes={dram: [dram0], cxl: [cxl0]}"])
    path = tmp_path / "epyc.yaml"
    path.write_text((BASE % ("uniform", 200_000, "256MiB", "", 25_000)).replace(
        "cpus/xeon6", "cpus/epyc-7452").replace("selectel-xeon6-cxl", "tpp-2to1").replace(
        "cxl: [cxl0, cxl1]", "cxl: [cxl0]"))
    written = load_experiment(path, ["topology.nodes[3].capacity=64 MiB"])
    assert spec.cpu == written.cpu and spec.cpu != _spec(tmp_path).cpu
    assert spec.topology == written.topology


def test_a_topology_set_by_an_unknown_name_is_named(tmp_path):
    with pytest.raises(InputError, match=r"--set topology=nope: topology: topology file "
                                         r".*nope' not found .*shipped topologies: "):
        _spec(tmp_path, overrides=["topology=nope"])


def test_the_metrics_count_how_far_the_policies_clocks_got(tmp_path):
    """Scans, passes over the address space and DAMON aggregations, counted as they run:
    a pass is ``pages / scan_size`` scans; none of them without their mechanism."""
    scanned = _run(tmp_path, "policy=numa-balancing", FAST_SCAN, footprint="16MiB").metrics
    assert scanned["numa_scans"] > 8 and scanned["damon_aggregations"] == 0
    pages, per_scan = scanned["footprint_pages"], 64 * 2**20 // 4096
    assert scanned["numa_scan_passes"] == scanned["numa_scans"] * min(per_scan, pages) // pages
    monitored = _run(tmp_path, "policy={name: damon, sample: 10 us, aggregate: 100 us}").metrics
    assert monitored["damon_aggregations"] > 0 and monitored["numa_scans"] == 0
    assert monitored["numa_scan_passes"] == 0


def test_a_service_trace_out_of_step_with_the_run_says_so(tmp_path):
    """The TPP services' records stand for ``span`` of real time; a run standing for far
    less or more (simulated time x time_compression, ``real_time_s``) warns, naming both;
    a span within a factor of two of it does not."""
    from cxlsim.errors import RunWarning

    def run(span):
        return _run(tmp_path, "scale=4", kind="cache1", n=100_000, footprint="16MiB",
                    extra=f", span: {span}", epoch=10_000)

    with pytest.warns(RunWarning, match=r"tm: the trace's span \(600 s\) is not the real "
                                        r"time the run stands for \(\d"):
        result = run("600 s")
    real = result.metrics["real_time_s"]
    assert result.metrics["time_compression"] == 4
    assert real == pytest.approx(result.metrics["app_time_s"] * 4)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*span", category=RunWarning)
        run(f"{real * 1e3:.3f} ms")
