"""Kernel memory model: watermarks, tiers, LRU aging, kswapd and direct reclaim, demotion,
fallback, OOM, migration, and invariants under random operations."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.lru import ACTIVE, INACTIVE, NONE, inactive_ratio
from cxlsim.mm.mempolicy import OutOfMemoryError
from cxlsim.mm.numa import Numa
from cxlsim.mm.params import KernelParams
from cxlsim.mm.placement import ANON, FILE, Placement
from cxlsim.mm.vmstat import COUNTERS
from cxlsim.mm.watermarks import (WMARK_HIGH, WMARK_LOW, WMARK_MIN, WMARK_PROMO,
                                  default_min_free_kbytes, watermarks)

MiB, GiB = 2**20, 2**30


def dram_cxl(dram: int = 64 * MiB, cxl: int = 64 * MiB) -> Numa:
    """Node 0: DRAM with CPUs; node 1: CPU-less CXL memory."""
    return Numa({"nodes": [{"cpus": 4, "memory": dram}, {"memory": cxl}],
                 "distances": [[10, 14], [14, 10]]})


def fill_to_low(mem: KernelMemory, node: int, kind: str = "anon", start: int = 0) -> np.ndarray:
    """Allocate pages bound to ``node`` until one page past its low watermark (kswapd
    woken); returns the pages, in allocation order."""
    n = int(mem.nr_free[node] - mem.wmark[node, WMARK_LOW]) + 1
    pages = np.arange(start, start + n)
    mem.alloc(pages, node, kind, allowed=[node])
    return pages


def test_watermarks_follow_setup_per_zone_wmarks():
    # One 16 GiB node = 4194304 pages: min_free_kbytes = int_sqrt(16 * 16777216 kB) = 16384
    # kB = 4096 pages, all of it this node's min; step = max(4096 / 4, 4194304 * 10 / 10000)
    # = 4194; low = 4096 + 4194 = 8290, high = 12484, promo = 16678.
    one = Numa({"nodes": [{"cpus": 4, "memory": 16 * GiB}]})
    assert KernelMemory(one, 0).wmark.tolist() == [[4096, 8290, 12484, 16678]]
    # 64 GiB + 32 GiB: int_sqrt(16 * 100663296 kB) = 40132 kB = 10033 pages, shared 2:1:
    # 10033 * 2/3 = 6688 and 3344; steps 0.1 % = 16777 and 8388 pages.
    assert KernelMemory(dram_cxl(64 * GiB, 32 * GiB), 0).wmark.tolist() == [
        [6688, 23465, 40242, 57019], [3344, 11732, 20120, 28508]]
    # The CXL node onlined movable: node 0 takes all of int_sqrt(16 * 64 GiB in kB) = 32768
    # kB = 8192 pages; node 1's min is 8388608 / 1024 clamped to 128, its step 0.1 %.
    movable = KernelMemory(dram_cxl(64 * GiB, 32 * GiB), 0, {"movable_nodes": [1]})
    assert movable.wmark.tolist() == [[8192, 24969, 41746, 58523], [128, 8516, 16904, 25292]]
    # watermark_scale_factor 200 (2 %) and an explicit min_free_kbytes.
    w = watermarks(np.array([262144]), KernelParams(min_free_kbytes=4096,
                                                    watermark_scale_factor=200), np.array([False]))
    assert w.tolist() == [[1024, 1024 + 5242, 1024 + 2 * 5242, 1024 + 3 * 5242]]


def test_min_free_kbytes_is_clamped_and_inactive_ratio_grows_with_size():
    assert default_min_free_kbytes(1024) == 128
    assert default_min_free_kbytes(16 * 2**20) == 16384
    assert default_min_free_kbytes(2**40) == 262144
    assert [inactive_ratio(n) for n in (1000, 2**18, 10 * 2**18, 2**28)] == [1, 3, 10, 101]


def test_tiers_from_abstract_distance_and_demotion_to_the_nearest_lower_node():
    slit = [[10, 21, 14, 24], [21, 10, 24, 14], [14, 24, 10, 26], [24, 14, 26, 10]]
    numa = Numa({"nodes": [{"cpus": 8, "memory": GiB}, {"cpus": 8, "memory": GiB},
                           {"memory": GiB}, {"memory": GiB}], "distances": slit})
    mem = KernelMemory(numa, 0)
    assert mem.tier.tolist() == [4, 4, 22, 22]            # memory_tier4 / memory_tier22
    assert mem.toptier.tolist() == [True, True, False, False]
    assert mem.demotion_target.tolist() == [2, 3, -1, -1]
    three = KernelMemory(numa, 0, {"adistance": [576, 576, 1000, 3000]})
    assert three.tier.tolist() == [4, 4, 7, 23]
    assert three.demotion_target.tolist() == [2, 2, 3, -1]
    with pytest.raises(ValueError, match=r"adistance must give one abstract distance per "
                                         r"node \(4\), got 2"):
        KernelMemory(numa, 0, {"adistance": [576, 576]})


def test_mark_accessed_walks_the_four_states():
    mem = KernelMemory(dram_cxl(), 4)
    mem.alloc([0, 1, 2, 3], 0, "file")
    seen = []
    for _ in range(4):
        seen.append((int(mem.lru[0]), bool(mem.referenced[0])))
        mem.mark_accessed([0])
    assert seen == [(INACTIVE, False), (INACTIVE, True), (ACTIVE, False), (ACTIVE, True)]
    assert (int(mem.lru[0]), bool(mem.referenced[0])) == (ACTIVE, True)
    assert mem.vmstat()["pgactivate"] == 1
    assert mem.lru_sizes()[0, FILE].tolist() == [3, 1]


def test_reclaim_gives_referenced_pages_a_second_chance():
    mem = KernelMemory(dram_cxl(), 40000)
    pages = fill_to_low(mem, 0, "file")
    mem.young[:] = False                        # a scan has already cleared the young bits
    hot = pages[:10]                            # the oldest pages, but touched again
    mem.touch(hot)
    assert mem.kswapd() == mem.vmstat()["pgsteal_kswapd"] > 0
    freed = pages[mem.node[pages] < 0]
    # the oldest untouched pages went, in list order; the touched ones stayed, now
    # referenced, at the head of the inactive list
    assert freed.tolist() == pages[10:10 + freed.size].tolist()
    assert (mem.lru[hot] == INACTIVE).all() and mem.referenced[hot].all()
    others = pages[(mem.node[pages] == 0) & ~np.isin(pages, hot)]
    assert mem.stamp[hot].min() > mem.stamp[others].max()
    assert mem.vmstat()["pgactivate"] == 0
    # touched again before the scan comes back to them: activated, younger pages reclaimed
    mem.touch(hot)
    mem.free(others)
    younger = fill_to_low(mem, 0, "file", start=int(pages[-1]) + 1)
    mem.young[younger] = False
    mem.kswapd()
    assert (mem.lru[hot] == ACTIVE).all() and (mem.node[hot] == 0).all()
    assert mem.vmstat()["pgactivate"] == 10


def test_inactive_list_is_refilled_from_the_active_tail():
    mem = KernelMemory(dram_cxl(), 20000)
    pages = fill_to_low(mem, 0, "file")
    mem.mark_accessed(pages)
    mem.mark_accessed(pages)                     # all active: inactive is low
    assert mem.lru_sizes()[0, FILE].tolist() == [0, pages.size]
    reclaimed = mem.kswapd()
    inactive, active = mem.lru_sizes()[0, FILE]
    # balanced (ratio 1 below 1 GiB) before each scan, which then frees inactive pages
    assert inactive_ratio(inactive + active) == 1
    assert inactive <= active <= inactive + reclaimed
    # the pages deactivated are the oldest of the active list
    deactivated = pages[mem.lru[pages] != ACTIVE]
    assert deactivated.tolist() == pages[:deactivated.size].tolist()
    assert mem.vmstat()["pgdeactivate"] > 0


def test_kswapd_reclaims_from_below_low_to_above_high():
    mem = KernelMemory(dram_cxl(), 20000)
    fill_to_low(mem, 0, "file")
    low, high = mem.wmark[0, WMARK_LOW], mem.wmark[0, WMARK_HIGH]
    assert mem.nr_free[0] == low - 1 and mem.kswapd_woken[0] and not mem.kswapd_woken[1]
    reclaimed = mem.kswapd()
    assert mem.nr_free[0] == high + 1 and reclaimed == high + 1 - (low - 1)
    stats = mem.vmstat()
    assert stats["pgsteal_kswapd"] == stats["pgsteal_file"] == reclaimed
    assert stats["kswapd_wakeup"] == 1 and stats["pgdemote_kswapd"] == 0
    assert not mem.kswapd_woken.any() and mem.kswapd() == 0


@pytest.mark.parametrize("tiering, demotion", [(False, True), (True, False), (True, True)])
def test_kswapd_balances_to_promo_whenever_tiering_mode_is_on(tiering, demotion):
    """pgdat_balanced (mm/vmscan.c) checks NUMA_BALANCING_MEMORY_TIERING alone."""
    mem = KernelMemory(dram_cxl(), 40000, {"numa_balancing_tiering": tiering,
                                           "demotion_enabled": demotion})
    fill_to_low(mem, 0, "file")
    mem.kswapd()
    mark = WMARK_PROMO if tiering else WMARK_HIGH
    assert mem.nr_free[0] == mem.wmark[0, mark] + 1


@pytest.mark.parametrize("tiering", [False, True])
def test_demotion_moves_the_coldest_inactive_pages_to_the_cxl_node(tiering):
    mem = KernelMemory(dram_cxl(), 20000, {"demotion_enabled": True,
                                           "numa_balancing_tiering": tiering})
    pages = fill_to_low(mem, 0, "anon")
    mem.young[:] = False
    hot = pages[::2][:200]
    mem.touch(hot)
    mem.kswapd()
    mark = WMARK_PROMO if tiering else WMARK_HIGH
    assert mem.nr_free[0] == mem.wmark[0, mark] + 1
    demoted = pages[mem.node[pages] == 1]
    cold = np.setdiff1d(pages, hot)
    assert demoted.tolist() == cold[:demoted.size].tolist()
    assert (mem.lru[demoted] == INACTIVE).all() and (mem.kind[demoted] == ANON).all()
    assert (mem.node[hot] == 0).all()
    stats, node0 = mem.vmstat(), mem.node_vmstat(0)
    assert node0["pgdemote_kswapd"] == stats["pgdemote_kswapd"] == demoted.size
    assert mem.node_vmstat(1)["pgmigrate_success"] == demoted.size
    assert stats["pswpout"] == 0 and stats["pgsteal_anon"] == demoted.size


def test_without_demotion_file_is_dropped_anon_stays_and_allocation_falls_back():
    # node 0 and 1: DRAM; node 2: CXL, nearer to node 0 than node 1 is
    numa = Numa({"nodes": [{"cpus": 4, "memory": 64 * MiB}, {"cpus": 4, "memory": 64 * MiB},
                           {"memory": 64 * MiB}],
                 "distances": [[10, 21, 14], [21, 10, 24], [14, 24, 10]]})
    mem = KernelMemory(numa, 60000)
    n = int(mem.nr_free[0] - mem.wmark[0, WMARK_LOW]) + 1
    anon, file = np.arange(0, n // 2), np.arange(n // 2, n)
    mem.alloc(anon, 0, allowed=[0])
    mem.alloc(file, 0, "file", allowed=[0])
    mem.young[:] = False
    mem.kswapd()
    assert (mem.node[anon] == 0).all() and (mem.node[file] < 0).sum() > 0
    assert mem.vmstat()["pgsteal_file"] == (mem.node[file] < 0).sum()
    assert mem.vmstat()["pswpout"] == mem.vmstat()["pgsteal_anon"] == 0
    # bound to node 0 past its min: direct reclaim drops more file pages
    before = int((mem.node[file] < 0).sum())
    more = np.arange(n, n + int(mem.nr_free[0] - mem.wmark[0, WMARK_MIN]) + 50)
    mem.alloc(more, 0, allowed=[0])
    assert (mem.node[more] == 0).all() and (mem.node[file] < 0).sum() >= before + 50
    assert mem.vmstat()["allocstall"] >= 1 and mem.vmstat()["pgsteal_direct"] >= 50
    # unbound: node 0 is below low, so pages go to node 2 (nearest), then node 1
    spill = np.arange(more[-1] + 1, more[-1] + 1 + 16000 + 8000)
    where = mem.alloc(spill, 0)
    assert set(np.unique(where).tolist()) == {1, 2}
    assert (where[:15000] == 2).all() and where[-1] == 1
    node2 = mem.node_vmstat(2)
    assert node2["numa_miss"] == (where == 2).sum() and node2["numa_hit"] == 0
    assert mem.node_vmstat(0)["numa_foreign"] == spill.size


def test_oom_when_every_node_is_full_of_anon_and_swap_is_off():
    mem = KernelMemory(dram_cxl(8 * MiB, 8 * MiB), 8192)
    with pytest.raises(OutOfMemoryError, match=r"out of memory: \d+ of 8192 pages found no "
                                               r"room on nodes \[0, 1\] .*the footprint "
                                               r"exceeds memory \(swap is off"):
        mem.alloc(np.arange(8192), 0)
    assert mem.vmstat()["oom_kill"] == 1
    assert (mem.nr_free == mem.wmark[:, WMARK_MIN]).all()
    # with swap the same footprint fits: the coldest anon pages are swapped out
    swapping = KernelMemory(dram_cxl(8 * MiB, 8 * MiB), 8192, {"swap": True})
    swapping.alloc(np.arange(8192), 0)
    assert swapping.vmstat()["pswpout"] > 0 and swapping.vmstat()["oom_kill"] == 0


def test_migrate_stops_at_the_high_watermark_and_counts_failures():
    # tiering with demotion: kswapd balances node 0 to promo, so a refused hint-fault
    # migration wakes it (numamigrate_isolate_folio)
    mem = KernelMemory(dram_cxl(), 40000, {"numa_balancing_tiering": True,
                                           "demotion_enabled": True})
    high = int(mem.wmark[0, WMARK_HIGH])
    mem.alloc(np.arange(int(mem.nr_free[0]) - high - 11), 0)        # 11 pages above high
    cxl = np.arange(30000, 30040)
    mem.alloc(cxl, 1)
    mem.mark_accessed(cxl[:5])
    mem.mark_accessed(cxl[:5])                                       # active on node 1
    moved, failed = mem.migrate(cxl, 0, misplaced=True)
    assert moved.tolist() == cxl[:10].tolist() and failed.tolist() == cxl[10:].tolist()
    assert mem.nr_free[0] == high + 1
    assert (mem.node[moved] == 0).all() and (mem.node[failed] == 1).all()
    assert (mem.lru[cxl[:5]] == ACTIVE).all() and (mem.lru[cxl[5:10]] == INACTIVE).all()
    stats = mem.vmstat()
    assert stats["pgpromote_success"] == stats["pgmigrate_success"] == 10
    assert stats["pgmigrate_fail_dst_node_full"] == 30 and mem.kswapd_woken[0]
    assert stats["pgmigrate_fail"] == 0
    # migrating down is not a promotion
    mem.migrate(moved[:3], 1)
    assert mem.vmstat()["pgpromote_success"] == 10


def test_without_the_promo_watermark_a_refused_promotion_wakes_nobody():
    """TPP's patch set predates WMARK_PROMO: its refused promotions just fail, and its
    kswapd balances to the high watermark (or its own WMARK_DEMOTE)."""
    mem = KernelMemory(dram_cxl(), 40000, {"numa_balancing_tiering": True,
                                           "promo_watermark": False,
                                           "demotion_enabled": True})
    assert not mem.promo_watermark
    assert mem.reclaim.kswapd_mark(0) == int(mem.wmark[0, WMARK_HIGH])
    high = int(mem.wmark[0, WMARK_HIGH])
    mem.alloc(np.arange(int(mem.nr_free[0]) - high - 11), 0)
    cxl = np.arange(30000, 30040)
    mem.alloc(cxl, 1)
    moved, failed = mem.migrate(cxl, 0, misplaced=True)
    assert moved.size == 10 and failed.size == 30
    assert not mem.kswapd_woken[0]
    upstream = KernelMemory(dram_cxl(), 40000, {"numa_balancing_tiering": True})
    assert upstream.promo_watermark
    assert upstream.reclaim.kswapd_mark(0) == int(upstream.wmark[0, WMARK_PROMO])


@pytest.mark.parametrize("call, message", [
    (lambda m: m.touch([5]), "page 5 is not resident"),
    (lambda m: m.touch([0, 10]), r"page ids must be in \[0, 10\), got 10"),
    (lambda m: m.touch([0, -1], resident_only=True), r"page ids must be in \[0, 10\), got -1"),
    (lambda m: m.alloc([0], 0), "page 0 is already resident"),
    (lambda m: m.alloc([7, 7], 0), "pages to allocate must be distinct"),
    (lambda m: m.alloc([7], 0, "slab"), "kind must be 'anon', 'file' or 'shmem', got 'slab'"),
    (lambda m: m.alloc([7], 0, allowed=[3]), r"none of the allowed nodes \[3\] has memory"),
    (lambda m: m.alloc([100], 0), r"page ids must be in \[0, 10\), got 100"),
    (lambda m: m.migrate([0], 0), "page 0 is already on node 0"),
    (lambda m: m.migrate([0, 0], 1), "pages to migrate must be distinct"),
    (lambda m: m.migrate([0], 4), r"node 4 does not exist"),
])
def test_bad_calls_are_rejected(call, message):
    mem = KernelMemory(dram_cxl(), 10)
    mem.alloc([0], 0)
    mem.young[:] = False
    with pytest.raises((ValueError, IndexError), match=message):
        call(mem)
    assert not mem.young.any()  # a refused touch touches nothing


@settings(max_examples=40, deadline=None)
@given(calls=st.lists(st.lists(st.integers(0, 19), min_size=1, max_size=12), max_size=8))
def test_migrate_refuses_repeated_pages_exactly_and_forgets_refused_calls(calls):
    """A call with a page twice is refused, however the calls before it went; one
    without is not (the distinctness marks carry nothing from call to call)."""
    mem = KernelMemory(dram_cxl(), 20)
    mem.alloc(np.arange(20), 0)
    for pages in calls:
        on_dram = [p for p in pages if mem.node[p] == 0]
        if len(set(on_dram)) < len(on_dram):
            with pytest.raises(ValueError, match="pages to migrate must be distinct"):
                mem.migrate(on_dram, 1)
        elif on_dram:
            mem.migrate(on_dram, 1)


def test_touching_only_the_resident_pages_counts_the_others():
    mem = KernelMemory(dram_cxl(), 10)
    mem.alloc([2, 5], 0)
    mem.young[:] = False
    assert mem.touch([1, 2, 5, 9], resident_only=True) == 2
    assert np.flatnonzero(mem.young).tolist() == [2, 5]


def test_bad_parameters_are_rejected():
    with pytest.raises(ValidationError, match="watermark_scale_factor"):
        KernelParams(watermark_scale_factor=0)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        KernelParams(demotion=True)
    with pytest.raises(ValueError, match="works in 4096 B pages, the machine has 2097152 B"):
        KernelMemory(Numa({"page_size": "2 MiB", "nodes": [{"cpus": 1, "memory": GiB}]}), 1)
    with pytest.raises(ValueError, match="at least one node with memory must not be movable"):
        KernelMemory(dram_cxl(), 1, {"movable_nodes": [0, 1]})


def check_invariants(mem: KernelMemory) -> None:
    nodes = mem.numa.n_nodes
    used = np.bincount(mem.node[mem.node >= 0], minlength=nodes)
    assert (mem.nr_free + used == mem.capacity).all() and (mem.nr_free >= 0).all()
    resident = mem.node >= 0
    assert ((mem.lru != NONE) == resident).all()        # on exactly one list iff resident
    sizes = np.zeros((nodes, 2, 2), dtype=np.int64)
    np.add.at(sizes, (mem.node[resident], mem.kind[resident], mem.lru[resident]), 1)
    assert (sizes == mem.lru_sizes()).all()
    assert not (mem.young[~resident] | mem.referenced[~resident]).any()
    stats = mem.vmstat()
    assert set(stats) == set(COUNTERS) and min(stats.values()) >= 0
    dropped = stats["pgsteal_anon"] + stats["pgsteal_file"] - stats["pgdemote_kswapd"] \
        - stats["pgdemote_direct"]
    assert stats["pgalloc"] - stats["pgfree"] - dropped == resident.sum()


N_PAGES = 3000
ops = st.lists(st.tuples(
    st.sampled_from(["alloc", "alloc_bound", "free", "touch", "mark", "migrate", "kswapd"]),
    st.integers(0, 1), st.sampled_from(["anon", "file"]), st.integers(1, 600),
    st.integers(0, 2**31)), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, demotion=st.booleans(), swap=st.booleans(), tiering=st.booleans())
def test_invariants_hold_under_random_operations(ops, demotion, swap, tiering):
    mem = KernelMemory(dram_cxl(4 * MiB, 2 * MiB), N_PAGES,
                       {"demotion_enabled": demotion, "swap": swap,
                        "numa_balancing_tiering": tiering})
    for op, node, kind, count, seed in ops:
        rng = np.random.default_rng(seed)
        resident = np.flatnonzero(mem.node >= 0)
        if op.startswith("alloc"):
            free = np.flatnonzero(mem.node < 0)
            pages = rng.permutation(free)[:count]
            with contextlib.suppress(OutOfMemoryError):
                mem.alloc(pages, node, kind, allowed=[node] if op == "alloc_bound" else None)
        elif op == "kswapd":
            mem.kswapd()
        elif resident.size:
            pages = rng.permutation(resident)[:count]
            if op == "free":
                mem.free(pages)
            elif op == "touch":
                mem.touch(pages)
            elif op == "mark":
                mem.mark_accessed(pages)
            else:
                pages = pages[mem.node[pages] != node]
                moved, failed = mem.migrate(pages, node)
                assert moved.size + failed.size == pages.size
        check_invariants(mem)


def test_with_no_file_pages_left_reclaim_scans_anon_whatever_the_swappiness():
    """get_scan_count's file_is_tiny: file + free at or below the high watermark forces
    anon scanning, so swappiness 0 does not stop kswapd short."""
    mem = KernelMemory(dram_cxl(), 40000, {"demotion_enabled": True, "swappiness": 0,
                                           "watermark_scale_factor": 1000})
    fill_to_low(mem, 0, "anon")
    mem.kswapd()
    assert mem.nr_free[0] > mem.wmark[0, WMARK_HIGH]
    assert mem.vmstat()["pgdemote_kswapd"] > 0


@pytest.mark.parametrize("promoted", [0, 150])
def test_cache_trim_is_decided_before_the_active_file_list_is_aged(promoted):
    """prepare_scan_control (mm/vmscan.c) reads inactive_is_low before
    shrink_active_list ages anything: with plenty of inactive file pages and the file
    list not low, kswapd trims the cache (file only); once active file pages -- TPP's
    promotions arrive active -- make it low, there is no cache trim and anon is scanned
    by swappiness too. (Aged first, the file list always looked balanced, and a DRAM
    node full of cold anon demoted only the few file pages just promoted: TPP's Cache1
    at 1:4 ping-ponged them, 15,164 ping-pongs for 16,274 promotions at --quick.)"""
    # at 64 real pages a page: 100 inactive file pages are 6,400 real, >> 12 > 0
    mem = KernelMemory(dram_cxl(), 40000, {"demotion_enabled": True}, scale=64)
    mem.alloc(np.arange(100), 0, "file")
    hot = np.arange(100, 100 + promoted)
    mem.alloc(hot, 0, "file")
    mem.mark_accessed(hot)
    mem.mark_accessed(hot)                       # on the active list, as promoted
    fill_to_low(mem, 0, "anon", start=1000)      # the rest of the node: cold anon
    mem.young[:] = False
    assert mem.lists.inactive_is_low(0, FILE) == bool(promoted)
    mem.kswapd()
    stats = mem.vmstat()
    assert stats["pgsteal_file"] > 0
    assert (stats["pgsteal_anon"] > 0) == bool(promoted)
    assert stats["pgdemote_kswapd"] == stats["pgsteal_kswapd"]


def _tail_by_scan(mem: KernelMemory, node: int, kind: int, lru: int, n: int) -> list[int]:
    """A list's ``n`` oldest pages found the plain way: scan every page, sort by stamp."""
    cand = np.flatnonzero((mem.node == node) & (mem.lru == lru) & (mem.kind == kind))
    return cand[np.argsort(mem.stamp[cand])][:n].tolist()


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["alloc", "touch", "access", "free", "move",
                                               "reclaim"]),
                              st.integers(0, 399), st.integers(1, 60)), max_size=40),
       files=st.integers(0, 400))
def test_the_list_order_finds_each_lists_tail_as_a_scan_would(ops, files):
    placement = Placement(400, page_type=(np.arange(400) < files).astype(np.int8))
    mem = KernelMemory(dram_cxl(), placement, {"demotion_enabled": True})
    for op, first, count in ops:
        pages = np.arange(first, min(first + count, 400))
        here = pages[mem.node[pages] >= 0]
        if op == "alloc" and (gone := pages[mem.node[pages] < 0]).size:
            mem.alloc(gone, first % 2)
        elif op == "touch" and here.size:
            mem.touch(here)
        elif op == "access" and here.size:
            mem.mark_accessed(here)
        elif op == "free" and here.size:
            mem.free(here)
        elif op == "move" and (up := here[mem.node[here] == 1]).size:
            mem.migrate(up, 0)
        elif op == "reclaim":
            mem.reclaim.shrink_node(first % 2, count, direct=True)
        for node, kind, lru in np.ndindex(2, 2, 2):
            want = _tail_by_scan(mem, node, kind, lru, count)
            assert mem.lists.oldest(node, kind, lru, count).tolist() == want
