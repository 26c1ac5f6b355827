"""Page migration as work (cxlsim.mm.migrate): TLB shootdowns that really drop the
moved pages' entries, the promotion rate limit's one-second window, busy pages, and who
pays for a move."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.experiments import trace_setup
from cxlsim.memory import CoreMemory, PageTable
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.migrate import MigrationParams, Migrator
from cxlsim.mm.numa import Numa
from cxlsim.mm.params import KernelParams
from cxlsim.mm.watermarks import WMARK_HIGH, WMARK_PROMO
from cxlsim.tiered import policies

import test_trace_memory as tm
from test_memory_hierarchy import _preset


def _cores(n=2):
    cpu = _preset("xeon6")
    table = PageTable(4096, 0, 2**26)
    table.map(0, table.va_size)
    first = CoreMemory(cpu, table)
    return [first] + [CoreMemory(cpu, table, complex_of=first) for _ in range(n - 1)], table


def _tlb_walks(core, pages):
    """Page walks taken by one access to each of ``pages``."""
    return core.access(np.asarray(pages, np.int64) << 12).walks


def test_a_shootdown_drops_the_moved_pages_from_every_core_and_costs_the_flushes():
    cores, _ = _cores(2)
    pages = np.arange(40)
    for core in cores:
        core.access(pages << 12)
        assert _tlb_walks(core, pages) == 0                   # all in the TLBs now
    migrator = Migrator(MigrationParams(), cores, np.random.default_rng(0))
    cost = migrator.shootdown(np.array([3, 7]))
    assert cost.per_core.tolist() == [200.0, 200.0]          # 2 invlpg of 100 ns each
    assert cost.initiator == 2000.0                          # one IPI round trip
    for core in cores:
        assert _tlb_walks(core, [3, 7]) == 2                 # gone: each walks once
        assert _tlb_walks(core, [4, 5, 6, 8]) == 0           # the others stay
    # above the ceiling (33) a batch flushes whole TLBs, at the ceiling's cost
    cost = migrator.shootdown(np.arange(34))
    assert cost.per_core.tolist() == [3300.0, 3300.0]
    assert _tlb_walks(cores[0], [39]) == 1                   # not moved, flushed anyway
    # batches of 512: 1025 pages are three flushes and three IPIs
    assert migrator.shootdown(np.arange(1025)).initiator == 3 * 2000.0


def test_one_core_sends_no_ipi():
    cores, _ = _cores(1)
    assert Migrator(MigrationParams(), cores, None).shootdown(np.array([1])).initiator == 0


def _kernel():
    numa = Numa({"nodes": [{"cpus": 4, "memory": "64 MiB"}, {"cpus": 0, "memory": "64 MiB"}]})
    kernel = KernelMemory(numa, 8192, KernelParams(demotion_enabled=True))
    kernel.alloc(np.arange(4096), 1)
    return kernel


def test_promotions_stop_at_the_rate_limit_until_the_next_second():
    kernel = _kernel()
    limit = MigrationParams(promote_rate_limit=400 * 4096)   # 400 pages a second
    migrator = Migrator(limit, [], np.random.default_rng(0))
    pages = np.arange(300)
    to_dram = np.zeros(300, np.int64)
    assert migrator.admit(kernel, pages, to_dram, 0.0).all()
    ok = migrator.admit(kernel, pages + 300, to_dram, 0.5e9)  # same window: 99 left (the
    assert ok.sum() == 99 and ok[:99].all()                   # 400th candidate reaches it)
    assert migrator.rate_limited == 201
    assert migrator.admit(kernel, pages + 600, to_dram, 1.6e9).all()  # a new window
    # moves that are not promotions are not counted against it
    assert migrator.admit(kernel, pages, np.ones(300, np.int64), 1.7e9).all()


def test_busy_pages_fail_and_count_as_migration_failures():
    kernel = _kernel()
    busy = np.array([True, False, True, False])
    moved, failed = kernel.migrate(np.arange(4), 0, busy)
    assert moved.tolist() == [1, 3] and sorted(failed.tolist()) == [0, 2]
    assert kernel.vmstat()["pgmigrate_fail"] == 2
    assert Migrator(MigrationParams(busy_fraction=1.0), [], np.random.default_rng(0)) \
        .busy(5).all()


SHORT = ["topology.nodes[1].capacity=48 MiB", "kernel.demotion_enabled=true",
         "kernel.numa_balancing_tiering=true"]
ZIPF = dict(kind="zipfian", footprint="128MiB", extra=", scrambled: true")


@pytest.fixture
def promoters(monkeypatch):
    for kind in (tm.PromoteAll, tm.PromoteAllInTask):
        monkeypatch.setitem(policies.POLICIES, kind.name, kind)


def test_the_rate_limit_caps_a_policys_promotions_in_a_run(tmp_path, promoters):
    free = tm._run(tmp_path, *SHORT, "policy=promote-all-in-task", **ZIPF)
    capped = tm._run(tmp_path, *SHORT, "policy=promote-all-in-task",
                     "migration.promote_rate_limit=4 MB/s", **ZIPF)
    assert capped.metrics["migrate_rate_limited"] > 0 == free.metrics["migrate_rate_limited"]
    promoted = capped.metrics["pgpromote_success"]
    seconds = capped.metrics["app_time_s"]
    assert promoted * 4096 <= 4e6 * np.ceil(seconds)          # one window's worth a second
    assert promoted < free.metrics["pgpromote_success"]


def test_moves_in_the_tasks_context_cost_the_task(tmp_path, promoters):
    # TPP's WMARK_DEMOTE keeps DRAM free for the daemon's moves too (no hint faults)
    room = [*SHORT, "kernel.demote_scale_factor=200"]
    thread = tm._run(tmp_path, *room, "policy=promote-all", **ZIPF)
    task = tm._run(tmp_path, *room, "policy=promote-all-in-task", **ZIPF)
    assert thread.metrics["pgpromote_success"] > 0
    assert task.metrics["pgpromote_success"] > 0
    assert task.metrics["app_time_s"] > thread.metrics["app_time_s"]
    assert thread.metrics["tlb_shootdown_ns"] > 0


def test_bad_migration_parameters_are_named(tmp_path):
    from cxlsim.errors import InputError
    with pytest.raises(InputError) as info:
        tm._spec(tmp_path, overrides=["migration.busy_fraction=1.5"])
    assert "migration.busy_fraction: expected less than or equal to 1; found 1.5" \
        in str(info.value)


def test_every_unmapped_page_is_journalled_once_for_the_next_shootdown():
    from cxlsim.mm.placement import Placement
    p = Placement(10)
    p.place(np.arange(6), 0)
    assert p.take_unmapped().size == 0                       # first touch maps, no flush
    p.move(np.array([1, 2]), 1)
    p.free(np.array([4]))
    assert sorted(p.take_unmapped().tolist()) == [1, 2, 4]
    assert p.take_unmapped().size == 0


def test_in_tiering_mode_kswapd_makes_room_while_promotions_go_on(tmp_path, promoters):
    """A refused hint-fault promotion wakes DRAM's kswapd, which demotes while the faults
    go on: an epoch promotes more than one watermark gap's worth, as far as kswapd (a
    page per migration.cost) keeps up."""
    fast = tm._run(tmp_path, *SHORT, "policy=promote-all-in-task", **ZIPF)
    slow = tm._run(tmp_path, *SHORT, "policy=promote-all-in-task", "migration.cost=100 us",
                   **ZIPF)
    spec = tm._spec(tmp_path, overrides=SHORT, **ZIPF)
    numa = trace_setup.numa_of(spec)
    mem = KernelMemory(numa, 1, spec.kernel)
    gap = int(mem.wmark[0, WMARK_PROMO] - mem.wmark[0, WMARK_HIGH])
    assert fast.tables["epochs"]["pgpromote_success"].max() > gap
    assert slow.metrics["pgpromote_success"] < fast.metrics["pgpromote_success"]
