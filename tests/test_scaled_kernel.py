"""The kernel under the similarity law (issue 34 item 6): a node standing for ``scale``
times its pages counts what the kernel counts on the real node -- reclaim's scans, the
watermarks, a refused hint fault, a call's TLB shootdown -- so that a small node does
what the real one does, in its share (docs/model/scaling.md, "The kernel's counts of
pages")."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.migrate import MigrationParams, Migrator
from cxlsim.mm.params import KernelParams
from cxlsim.mm.watermarks import WMARK_HIGH, WMARK_LOW, WMARK_MIN, WMARK_PROMO

from test_kernel_memory import MiB, dram_cxl, fill_to_low
from test_migration import _cores, _tlb_walks


def _half_file(dram: int, scale: float) -> KernelMemory:
    """A node of ``dram`` bytes standing for ``scale`` times it, filled to its low
    watermark with cold anon and file pages in equal numbers, kswapd woken."""
    n = dram // 4096
    mem = KernelMemory(dram_cxl(dram, 4 * dram), 3 * n, KernelParams(demotion_enabled=True),
                       scale)
    anon = np.arange(n // 2)
    mem.alloc(anon, 0, "anon", allowed=[0])
    fill_to_low(mem, 0, "file", start=n // 2)
    mem.young[:] = False
    return mem


@pytest.mark.parametrize("scale", [1, 64])
def test_a_small_node_reclaims_as_the_real_node_it_stands_for(scale):
    """Cache trim: with the inactive file list not low, kswapd scans file pages alone
    (get_scan_count's SCAN_FILE) -- which a 1 GiB node does, and a 16 MiB node standing
    for it at scale 64 does too, where on its own counts (2,000 file pages, shifted to
    nothing at priority 12) it scanned anon first and demoted only anon."""
    real = _half_file(1024 * MiB, 1)
    small = _half_file(16 * MiB, scale)
    for mem in (real, small):
        mem.kswapd()
    def stolen(mem):
        s = mem.vmstat()
        return s.get("pgsteal_anon", 0), s.get("pgsteal_file", 0)
    assert stolen(real)[0] == 0 and stolen(real)[1] > 0
    anon, file = stolen(small)
    assert (anon == 0 and file > 0) if scale == 64 else (anon > 0 and file == 0)


def test_the_inactive_ratio_is_the_real_nodes():
    """A type's active list may be int_sqrt(10 x GiB) times its inactive one: 1 for
    3,000 file pages alone, 4 for them standing for 256 times as many (2.9 GiB), which
    leaves 2,400 active pages beside 600 inactive ones where they stand."""
    for scale, refilled in ((1, True), (256, False)):
        mem = KernelMemory(dram_cxl(16 * MiB, 64 * MiB), 4096, None, scale)
        pages = np.arange(3000)
        mem.alloc(pages, 0, "file", allowed=[0])
        mem.mark_accessed(pages[:2400])
        mem.mark_accessed(pages[:2400])  # 2400 active, 600 inactive: 4 to 1
        mem.lists.age_active(0, 1)
        assert (mem.total("pgdeactivate") > 0) == refilled


def test_watermarks_are_the_real_nodes_over_the_scale_and_keep_their_mean():
    """A 1,408-page node at scale 256 stands for a 1.375 GiB one, whose watermarks over
    256 are fractions of a page: held in whole pages, each kswapd run's rounding carries
    its error into the next, so that their mean over runs is exact."""
    scale, pages = 256, 1408
    small = KernelMemory(dram_cxl(pages * 4096, 64 * MiB), 10, None, scale)
    real = KernelMemory(dram_cxl(pages * 4096 * scale, 64 * MiB * scale), 10)
    exact = real.wmark[0] / scale
    assert not np.array_equal(exact, np.round(exact))  # fractions of a page
    seen = []
    for _ in range(1000):
        small.zones.requantize(0)
        seen.append(small.wmark[0].copy())
    assert np.abs(np.mean(seen, axis=0) - exact).max() < 0.01
    assert all(w[WMARK_MIN] <= w[WMARK_LOW] <= w[WMARK_HIGH] <= w[WMARK_PROMO] for w in seen)


def test_at_scale_1_the_watermarks_are_the_kernels():
    mem = KernelMemory(dram_cxl(), 10)
    before = mem.wmark.copy()
    mem.zones.requantize(0)
    assert np.array_equal(mem.wmark, before)


def test_a_refused_move_is_a_real_page():
    """Each time kswapd's room runs out a stream of hint faults refuses one page: a real
    one, a quarter of a page of a run at scale 4 (one in four of them a whole page)."""
    migrator = Migrator(MigrationParams(), [], np.random.default_rng(0), scale=4)
    assert [migrator.refusal() for _ in range(8)] == [False, False, False, True] * 2
    assert all(Migrator(MigrationParams(), [], None).refusal() for _ in range(3))


def test_a_scaled_shootdown_is_the_real_calls_share():
    """8 pages moved at scale 64 stand for 512: one batch above the flush ceiling, a full
    flush of every TLB and an IPI, of which the run pays 1/64; at scale 2 they stand for
    16, below the ceiling: each page's invlpg, as at scale 1."""
    cores, _ = _cores(2)
    pages = np.arange(40)
    for core in cores:
        core.access(pages << 12)
    cost = Migrator(MigrationParams(), cores, None, scale=64).shootdown(np.arange(8))
    assert cost.per_core.tolist() == [33 * 100 / 64] * 2 and cost.initiator == 2000 / 64
    assert _tlb_walks(cores[0], [39]) == 1  # not moved, flushed with the rest
    cores[0].access(pages << 12)
    cost = Migrator(MigrationParams(), cores, None, scale=2).shootdown(np.arange(8))
    assert cost.per_core.tolist() == [800.0] * 2 and cost.initiator == 1000.0
    assert _tlb_walks(cores[0], [39]) == 0 and _tlb_walks(cores[0], [3]) == 1
