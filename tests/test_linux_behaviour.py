"""Linux as it is when DRAM sits at or below its high watermark: NUMA balancing's normal
and tiering modes, TPP's promotion path, kswapd's demotion and the migration path, each
on a hand-made machine (a few pages on a DRAM node and a CXL node) and each naming the
kernel function it mirrors (torvalds/linux 6.x; TPP's 5.13 patch set)."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.lru import ACTIVE
from cxlsim.mm.migrate import MigrationParams, Migrator
from cxlsim.mm.numa_balancing import HintFaults, NumaScan, PassFaults, Scanner
from cxlsim.mm.reclaim import MAX_RECLAIM_RETRIES
from cxlsim.mm.watermarks import WMARK_HIGH, WMARK_LOW, WMARK_PROMO
from cxlsim.tiered import policies
from cxlsim.tiered.policies import EpochView
from cxlsim.tiered.policies.numab import NumaBalancing
from cxlsim.tiered.policies.tpp import Tpp
from cxlsim.tiered.host import _migrate

import test_trace_memory as tm
from test_kernel_memory import dram_cxl

N = 40000  # page ids: DRAM's from 0, CXL's from 30000


def _machine(free_above: int, mark: int = WMARK_HIGH, **params) -> KernelMemory:
    """DRAM filled by first touch to ``free_above`` pages above watermark ``mark``; 40
    CXL pages (ids 30000-30039), cold and inactive."""
    mem = KernelMemory(dram_cxl(), N, params)
    mem.alloc(np.arange(int(mem.nr_free[0] - mem.wmark[0, mark]) - free_above), 0)
    mem.alloc(np.arange(30000, 30040), 1)
    mem.young[:] = False
    return mem


CXL = np.arange(30000, 30040)


def test_get_page_from_freelist_falls_back_to_cxl_without_waking_kswapd():
    """mm/page_alloc.c get_page_from_freelist (zone_reclaim_mode 0): a first touch finding
    DRAM at its low watermark takes CXL's next page; only the slow path wakes kswapd, so
    nothing ever reclaims DRAM while CXL has room."""
    mem = _machine(0, WMARK_LOW)
    assert mem.nr_free[0] == mem.wmark[0, WMARK_LOW]
    assert mem.alloc([20000], 0).tolist() == [1]
    assert not mem.kswapd_woken.any() and mem.vmstat()["kswapd_wakeup"] == 0
    assert mem.node_vmstat(1)["numa_miss"] == 1


def test_migrate_balanced_pgdat_wants_free_above_high_plus_the_page():
    """mm/migrate.c migrate_balanced_pgdat: zone_watermark_ok at high + nr_pages, so a
    page moves only while free pages exceed high + 1."""
    mem = _machine(2)
    assert mem.migrate_room(0) == 1
    moved, failed = mem.migrate(CXL[:2], 0, misplaced=True)
    assert moved.tolist() == [30000] and failed.tolist() == [30001]
    assert mem.nr_free[0] == mem.wmark[0, WMARK_HIGH] + 1 and mem.migrate_room(0) == 0
    stats = mem.vmstat()
    assert stats["pgpromote_success"] == 1 and stats["pgmigrate_fail_dst_node_full"] == 1
    assert stats["pgmigrate_fail"] == 0     # refused before migrate_pages: not counted


def test_in_normal_mode_a_refused_hint_fault_migration_wakes_nobody():
    """mm/migrate.c numamigrate_isolate_folio: without NUMA_BALANCING_MEMORY_TIERING a
    refusal just returns; DRAM stays at its low watermark and every later attempt is
    refused too -- nothing but freed memory ever makes room."""
    mem = _machine(0, WMARK_LOW)
    for _ in range(3):
        moved, failed = mem.migrate(CXL, 0, misplaced=True)
        assert moved.size == 0 and failed.size == CXL.size
        mem.kswapd()
    assert not mem.kswapd_woken.any() and mem.vmstat()["kswapd_wakeup"] == 0
    mem.free(np.arange(100))                # the service frees memory: room at last
    moved, _ = mem.migrate(CXL, 0, misplaced=True)
    assert moved.size == CXL.size


def test_in_tiering_mode_a_refusal_wakes_kswapd_which_demotes_to_wmark_promo():
    """numamigrate_isolate_folio -> wakeup_kswapd(ZONE_MOVABLE); kswapd's pgdat_balanced
    uses WMARK_PROMO in tiering mode and demote_folio_list moves cold inactive pages to
    CXL, so the next promotions find promo - high - 1 pages of room."""
    mem = _machine(0, WMARK_LOW, numa_balancing_tiering=True, demotion_enabled=True)
    moved, failed = mem.migrate(CXL[:1], 0, misplaced=True)
    assert moved.size == 0 and mem.kswapd_woken[0]
    mem.kswapd()
    assert mem.nr_free[0] == mem.wmark[0, WMARK_PROMO] + 1
    assert mem.vmstat()["pgdemote_kswapd"] > 0
    room = int(mem.wmark[0, WMARK_PROMO] - mem.wmark[0, WMARK_HIGH])
    assert mem.migrate_room(0) == room
    # a policy's own migrate_pages (not a hint fault) wakes nobody and counts a failure
    other = _machine(0, WMARK_LOW, numa_balancing_tiering=True, demotion_enabled=True)
    other.migrate(CXL[:1], 0)
    assert not other.kswapd_woken[0] and other.vmstat()["pgmigrate_fail"] == 1


def test_with_nothing_reclaimable_kswapd_fails_until_the_node_is_hopeless():
    """mm/vmscan.c balance_pgdat counts a run that reclaims nothing in kswapd_failures,
    and wakeup_kswapd leaves a node with MAX_RECLAIM_RETRIES of them asleep: DRAM full of
    anon pages with neither swap nor a demotion target refuses every promotion, and
    after 16 futile wakeups nobody wakes kswapd for them. Reclaim that frees pages
    (shrink_node) makes the node hopeful again."""
    mem = _machine(0, WMARK_LOW, numa_balancing_tiering=True)   # demotion off, no swap
    for _ in range(MAX_RECLAIM_RETRIES + 5):
        mem.migrate(CXL[:1], 0, misplaced=True)
        mem.kswapd()
    assert mem.vmstat()["kswapd_wakeup"] == MAX_RECLAIM_RETRIES
    assert mem.reclaim.failures[0] == MAX_RECLAIM_RETRIES and not mem.kswapd_woken[0]
    assert mem.vmstat()["pgsteal_kswapd"] == 0
    mem.alloc(np.arange(20000, 20010), 0, "file", allowed=[0])  # reclaimable file pages
    mem.young[:] = False
    assert mem.reclaim.shrink_node(0, 5, direct=True) > 0
    assert mem.reclaim.failures[0] == 0
    mem.migrate(CXL[:1], 0, misplaced=True)
    assert mem.kswapd_woken[0]


def _view(mem, faults, cpupid, now=0.0):
    faults = np.asarray(faults, np.int64)
    return EpochView(faults, mem, {}, faults, np.zeros(faults.size), [], now,
                     fault_cpupid=np.asarray(cpupid, np.int64))


def test_should_numa_migrate_memory_records_a_slow_pages_first_fault_and_moves_the_next():
    """kernel/sched/fair.c should_numa_migrate_memory in normal mode (6.x): a fault on a
    slow-tier page whose last_cpupid is unset only records the thread; a page with one
    (the two-stage filter passes: every CPU is on DRAM's node) asks mpol_misplaced's
    move to the faulting CPU's node; a fault on DRAM moves nothing."""
    mem = _machine(100)
    policy = NumaBalancing(mem.numa, N)
    pages, dest = policy.moves(_view(mem, [5, 30000, 30001], [-1, -1, 1]))
    assert pages.tolist() == [30001] and dest.tolist() == [0]


def test_the_scanner_keeps_a_still_protected_pages_stamp_and_exchanges_the_cpupid():
    """mm/mprotect.c change_pte_range skips a PTE that is still PROT_NONE, so an idle
    page's hint-fault latency counts from the scan that first protected it;
    should_numa_migrate_memory exchanges the page's last_cpupid with the faulting
    thread's."""
    scan = NumaScan(Scanner(0.0, 1.0, 4, False, 0.0), 4)
    node = np.array([1, 1, 1, 1])
    scan.scan(node, np.array([True, False]), 10.0)         # one pass: pages 0-3 stamped
    scan.faults(np.array([1]), node, 15.0)                 # page 1 faults, others stay
    scan.scan(node, np.array([True, False]), 30.0)         # page 1 stamped anew only
    faults = scan.faults(np.array([0, 1]), node, 40.0, np.array([0, 1, 1]),
                         np.array([3, 2, 2]))
    assert faults.latency.tolist() == [30.0, 10.0] and faults.thread.tolist() == [3, 2]
    assert faults.last.tolist() == [-1, -1]
    scan.record(faults, np.array([True, False]), np.array([True, False]),
                np.zeros(2, bool), np.zeros(2, bool))
    assert scan.cpupid[:2].tolist() == [3, 2]


def _record(upstream, tiering, node, last, thread, moved=(), failed=()):
    scan = NumaScan(Scanner(0.0, 1.0, 8, tiering, 0.0, upstream=upstream), 8)
    pages = np.arange(len(node))
    scan.cpupid[pages] = last
    faults = HintFaults(pages, np.zeros(pages.size), np.asarray(node), np.asarray(thread),
                        np.asarray(last))
    scan.record(faults, np.array([True, False]), np.array([True, False]),
                np.isin(pages, moved), np.isin(pages, failed))
    return scan


def test_task_numa_fault_counts_what_the_kernel_counts():
    """kernel/sched/fair.c task_numa_fault (6.x): in tiering mode a fault on a slow-tier
    page counts only if it promoted the page (then private, as its cpupid held a time:
    "first accesses are treated as private"), and the promotion resets the cpupid
    (folio_migrate_flags); in normal mode a slow-tier fault counts once the page has a
    cpupid, private when the same thread faulted last, and its failed migration counts
    too; TPP's 5.13 kernel counts every fault."""
    f = _record(True, True, [1, 1, 1], [-1, 4, 4], [4, 4, 5], moved=[2]).locality
    assert (f.local, f.remote, f.private, f.shared, f.failed) == (0, 1, 1, 0, 0)
    scan = _record(True, True, [1, 1, 1], [-1, 4, 4], [4, 4, 5], moved=[2])
    assert scan.cpupid[:3].tolist() == [-1, 4, -1]          # slow pages keep their time
    f = _record(True, False, [1, 1, 1, 0], [-1, 4, 5, -1], [4, 4, 4, 4], failed=[1, 2]).locality
    assert (f.local, f.remote, f.private, f.shared, f.failed) == (1, 2, 2, 1, 2)
    f = _record(False, True, [1, 1, 1], [-1, 4, 4], [4, 4, 5], failed=[0]).locality
    assert (f.local, f.remote, f.private, f.shared, f.failed) == (0, 3, 2, 1, 1)


@pytest.mark.parametrize("faults, period", [
    (PassFaults(local=5, remote=5, private=5, shared=5, failed=1), 20e9),   # a failure
    (PassFaults(remote=9, private=9), 20e9),       # neither local nor shared: slower
    (PassFaults(local=1, remote=9, private=9, shared=1), 12e9),   # private: 2 slots up
    (PassFaults(remote=10, shared=10), 3e9),       # remote and shared: 7 slots down
    (PassFaults(local=8, remote=2, shared=10), 11e9),  # local and shared: one slot up
])
def test_update_task_scan_period_follows_the_kernels_order_of_tests(faults, period):
    """kernel/sched/fair.c update_task_scan_period: a failed migration, or no local and
    no shared fault, doubles the period; otherwise private faults (ps_ratio) are tested
    before local ones (lr_ratio) -- mostly private faults slow the scan however remote
    they are -- and only remote shared faults speed it up."""
    assert Scanner.adapt(10e9, 1e9, 60e9, faults) == pytest.approx(period)


def test_tpps_gate_marks_an_inactive_pages_faults_accessed_and_promotes_at_the_third():
    """TPP patch 5 (do_numa_page): a fault on an inactive CXL page only calls
    mark_page_accessed (mm/swap.c: inactive -> referenced -> active), so a page is
    promoted at its third hint fault; the promotion keeps it on the active list."""
    mem = _machine(100, numa_balancing_tiering=True, promo_watermark=False,
                   demotion_enabled=True)
    policy = Tpp(mem.numa, N)
    for fault in range(3):
        pages, _ = policy.moves(_view(mem, [30000], [-1]))
        if fault < 2:
            assert pages.size == 0
    assert mem.lru[30000] == ACTIVE and pages.tolist() == [30000]
    mem.migrate(pages, 0, misplaced=True)
    assert mem.node[30000] == 0 and mem.lru[30000] == ACTIVE


def test_tpp_without_decoupled_watermarks_stalls_and_with_them_makes_room():
    """TPP's 5.13 kernel: numamigrate_isolate_page refuses at the high watermark and
    wakes nobody, and first touches leave DRAM at its low watermark, so without WMARK_DEMOTE
    promotion stalls; with it (patches 3-4) check_toptier_balanced wakes kswapd below
    WMARK_DEMOTE and kswapd demotes until free pages reach it."""
    kw = dict(numa_balancing_tiering=True, promo_watermark=False, demotion_enabled=True)
    stalled = _machine(0, WMARK_LOW, **kw)
    for _ in range(3):
        stalled.check_toptier_balanced()
        stalled.kswapd()
        assert stalled.migrate(CXL, 0, misplaced=True)[0].size == 0
    assert stalled.vmstat()["kswapd_wakeup"] == 0
    decoupled = _machine(0, WMARK_LOW, demote_scale_factor=200, **kw)
    decoupled.check_toptier_balanced()
    decoupled.kswapd()
    assert decoupled.nr_free[0] == decoupled.wmark_demote[0] + 1
    assert decoupled.migrate(CXL, 0, misplaced=True)[0].size == CXL.size


def test_a_refused_fault_is_not_retried_but_kswapd_makes_room_for_the_later_ones():
    """The migration path over an epoch's faults: a refused page's fault is over (its
    next comes after the next scan); in tiering mode the refusal woke kswapd, which
    demotes while the later faults come, so they move; in normal mode they fail too."""
    migrator = Migrator(MigrationParams(cost=0.0), [], np.random.default_rng(0))
    tiering = _machine(1, numa_balancing_tiering=True, demotion_enabled=True)
    copies = np.zeros(2)
    moved, failed = _migrate(tiering, migrator, (CXL[:5], np.zeros(5, np.int64)), copies,
                             0.0, 1e6, misplaced=True)
    assert failed.tolist() == [30000] and moved.tolist() == CXL[1:5].tolist()
    assert copies.tolist() == [0.0, 4 * 64.0]               # read where they left
    normal = _machine(1)
    moved, failed = _migrate(normal, migrator, (CXL[:5], np.zeros(5, np.int64)),
                             np.zeros(2), 0.0, 1e6, misplaced=True)
    assert moved.size == 0 and failed.tolist() == CXL[:5].tolist()


SHORT = ["topology.nodes[1].capacity=48 MiB", "numa_balancing.scan_delay=10 s"]
ZIPF = dict(kind="zipfian", footprint="128MiB", extra=", scrambled: true")


@pytest.mark.filterwarnings("ignore:.*never acted")
def test_tpps_demoted_pages_fault_at_their_next_access_without_a_scan(tmp_path, monkeypatch):
    """TPP patch 1 (mm/migrate.c remove_migration_pte): a page demoted by reclaim carries
    PG_demoted and is mapped PROT_NONE, so its next access is a hint fault even before
    the scanner's first pass; upstream has no such flag."""
    run = tm._run(tmp_path, *SHORT, "policy=tpp", **ZIPF).metrics
    assert run["numa_scans"] == 0 and run["pgdemote_kswapd"] > 0
    assert run["numa_hint_faults"] > 0
    monkeypatch.setattr(policies.POLICIES["tpp"], "demoted_protnone", False)
    assert tm._run(tmp_path, *SHORT, "policy=tpp", **ZIPF).metrics["numa_hint_faults"] == 0


FAST = ["topology.nodes[1].capacity=48 MiB", "numa_balancing.scan_delay=20 us",
        "numa_balancing.scan_period=20 us", "numa_balancing.scan_size=16 MiB",
        "numa_balancing.max_scan_rate=1000 TB/s"]


def test_normal_mode_on_a_full_dram_moves_nothing_and_says_why(tmp_path):
    """kernel.numa_balancing=1 once first touches have filled DRAM: the second fault on
    each CXL page asks to migrate it and numamigrate_isolate_folio refuses (nothing wakes
    kswapd, nothing demotes), so the run moves no page and says why."""
    from cxlsim.errors import RunWarning

    with pytest.warns(RunWarning, match="hint-fault migrations found DRAM at its high "
                                        "watermark and nothing made room"):
        run = tm._run(tmp_path, *FAST, "policy=numa-balancing", **ZIPF).metrics
    assert run["numa_pages_migrated"] == 0 and run["pgmigrate_fail_dst_node_full"] > 0
    assert run["pgmigrate_fail"] == 0 and run["kswapd_wakeup"] == 0
    assert "pgmigrate_fail_dst_node_full" in run["policy_idle_reason"]


def test_tpps_kswapd_counts_a_tiny_file_list_against_wmark_demote():
    """TPP patch 4 (mm/vmscan.c shrink_node): on a top-tier node the free pages a small
    file list is weighed with are WMARK_DEMOTE's, not the high watermark's, so when file
    + free pages stay below it get_scan_count's file_is_tiny scans anon only: kswapd
    demotes anon pages and leaves the few file pages alone."""
    mem = KernelMemory(dram_cxl(), N, dict(numa_balancing_tiering=True, promo_watermark=False,
                                           demotion_enabled=True, demote_scale_factor=2000))
    demote = int(mem.wmark_demote[0])
    assert demote > 4 * mem.wmark[0, WMARK_HIGH]
    file = np.arange(20000, 20020)
    mem.alloc(file, 0, "file")
    anon = np.arange(int(mem.nr_free[0]) - demote + 100)
    mem.alloc(anon, 0)
    mem.young[:] = False
    mem.check_toptier_balanced()
    mem.kswapd()
    assert mem.nr_free[0] == demote + 1
    assert (mem.node[file] == 0).all() and (mem.node[anon] == 1).sum() >= 100
