"""Zones: one per node, with its watermarks and its memory tier -- what every allocation,
reclaim and migration decision of the kernel model checks free pages against.

What follows the kernel, and from where (torvalds/linux, 6.x):

* Watermarks (mm/page_alloc.c ``__setup_per_zone_wmarks``, ``calculate_min_free_kbytes``):
  one zone per node; ``min_free_kbytes = int_sqrt(16 * lowmem kB)`` clamped to
  128..262144, shared among the nodes in proportion to their size; ``step =
  max(min/4, size * watermark_scale_factor / 10000)``; low, high and promo (WMARK_PROMO,
  NUMA balancing's tiering mode) are min plus 1, 2 and 3 steps. A node onlined as
  ZONE_MOVABLE (CXL memory often is) takes no share: its min is size/1024 clamped to
  32..128 pages. Pages are the managed pages (the kernel's reserved pages are ignored).
* Memory tiers (mm/memory-tiers.c): a node's abstract distance (DRAM 576; CPU-less nodes
  default to the dax/kmem 5 x 576) gives its tier ``adistance >> 7`` (sysfs
  ``memory_tierN``); a node's demotion target is the nearest node of the next lower tier
  (``establish_demotion_targets``; ties: lowest id, where the kernel picks at random);
  top-tier nodes are those in or above the slowest tier that has CPUs.
* TPP's decoupled demotion watermark (LKML "[PATCH 0/5] Transparent Page Placement for
  Tiered-Memory", Nov 2021; never upstream), off by default: WMARK_DEMOTE
  (``demote_scale_factor``) on top-tier nodes that demote; :mod:`cxlsim.mm.reclaim`
  wakes and balances kswapd to it.
"""

from __future__ import annotations

import math

import numpy as np

from cxlsim.mm.lru import LruLists
from cxlsim.mm.numa import Numa
from cxlsim.mm.params import KernelParams

#: Watermark indices (``enum zone_watermarks``, WMARK_PROMO from NUMA balancing tiering).
WMARK_MIN, WMARK_LOW, WMARK_HIGH, WMARK_PROMO = 0, 1, 2, 3

PAGE_SIZE = 4096
#: Reclaim batch (include/linux/swap.h); also the least a movable zone's min watermark.
SWAP_CLUSTER_MAX = 32
#: Abstract distance of DRAM and the width of a tier (include/linux/memory-tiers.h).
MEMTIER_CHUNK_BITS = 7
MEMTIER_ADISTANCE_DRAM = (4 << MEMTIER_CHUNK_BITS) + (1 << (MEMTIER_CHUNK_BITS - 1))
#: Abstract distance dax/kmem gives CPU-less memory when no performance data is known.
MEMTIER_DEFAULT_DAX_ADISTANCE = 5 * MEMTIER_ADISTANCE_DRAM


def default_min_free_kbytes(lowmem_kbytes: int) -> int:
    """``calculate_min_free_kbytes``: int_sqrt(16 * lowmem kB), clamped to 128..262144."""
    return min(max(math.isqrt(16 * lowmem_kbytes), 128), 262144)


def watermarks(capacity: np.ndarray, params: KernelParams, movable: np.ndarray) -> np.ndarray:
    """Min, low, high and promo watermarks per node in pages, shape (nodes, 4).

    ``__setup_per_zone_wmarks`` with one zone per node of ``capacity`` managed pages;
    ``movable`` marks ZONE_MOVABLE nodes, which take no share of min_free_kbytes.
    """
    capacity = np.asarray(capacity, dtype=np.int64)
    normal = np.where(movable, 0, capacity)
    lowmem = int(normal.sum())
    kbytes = params.min_free_kbytes or default_min_free_kbytes(lowmem * (PAGE_SIZE // 1024))
    pages_min = kbytes // (PAGE_SIZE // 1024)
    share = pages_min * capacity // max(lowmem, 1)
    movable_min = np.clip(capacity // 1024, SWAP_CLUSTER_MAX, 128)
    wmin = np.where(capacity == 0, 0, np.where(movable, movable_min, share))
    step = np.maximum(share >> 2, capacity * params.watermark_scale_factor // 10000)
    return np.stack([wmin, wmin + step, wmin + 2 * step, wmin + 3 * step], axis=1)


class Zones:
    """The machine's zones, one per node of ``numa``. Per node: ``capacity``,
    ``nr_free`` (the pages not on ``lists``), ``wmark`` (nodes x 4, see
    :func:`watermarks`), ``wmark_demote`` (TPP's WMARK_DEMOTE, 0: none), ``tier``
    (memory_tierN id, -1 without memory), ``toptier``, ``demotion_target`` (-1: none)
    and ``demotion_order`` (the lower-tier nodes a demotion tries, in order).

    Each node stands for ``scale`` times its pages (the similarity law's S): its
    watermarks are the real node's (``params.min_free_kbytes`` the run's, S times
    smaller) over S, fractions of a page at a coarse scale, held in whole pages by
    :meth:`requantize`."""

    def __init__(self, numa: Numa, params: KernelParams, lists: LruLists,
                 scale: float = 1.0) -> None:
        self.numa, self.lists = numa, lists
        n = numa.n_nodes
        params.check_nodes(numa.capacity)
        self.capacity = numa.capacity.copy()
        movable = np.isin(np.arange(n), params.movable_nodes)
        real = np.rint(self.capacity * scale).astype(np.int64)
        if scale != 1 and params.min_free_kbytes is not None:
            params = params.model_copy(
                update={"min_free_kbytes": round(params.min_free_kbytes * scale)})
        marks = watermarks(real, params, movable)
        self._init_tiers(params)
        # the real node's min and step, and WMARK_DEMOTE, in the run's pages
        self._exact = np.column_stack([marks[:, WMARK_MIN], marks[:, WMARK_LOW]
                                       - marks[:, WMARK_MIN],
                                       self._demote_watermarks(params, real, marks)]) / scale
        self._residual = np.zeros_like(self._exact)
        self.wmark = np.zeros((n, 4), dtype=np.int64)
        self.wmark_demote = np.zeros(n, dtype=np.int64)
        for node in range(n):
            self.requantize(node)

    def requantize(self, node: int) -> None:
        """``node``'s watermarks in whole pages for what follows (kswapd's run):
        the exact ones rounded, each rounding's error carried into the next (error
        diffusion), so that their mean over runs is exact. A node of whole real pages
        per page (scale 1) keeps them as they are. (The step between watermarks is
        0.1 % of a node, 1.4 pages of a 1,408-page node at S = 256: rounded down once
        and for all it was 1, and numab-tiering, which promotes into it at each kswapd
        run, promoted 19 % less than at S = 16.)"""
        whole = np.rint(self._exact[node] + self._residual[node])
        self._residual[node] += self._exact[node] - whole
        wmin, step, demote = (int(x) for x in whole)
        self.wmark[node] = [wmin, wmin + step, wmin + 2 * step, wmin + 3 * step]
        self.wmark_demote[node] = demote

    def _init_tiers(self, params: KernelParams) -> None:
        """Tiers from abstract distances, top tier and demotion targets (memory-tiers.c)."""
        numa, n = self.numa, self.numa.n_nodes
        if params.adistance is None:
            adist = np.where(numa.has_cpus, MEMTIER_ADISTANCE_DRAM,
                             MEMTIER_DEFAULT_DAX_ADISTANCE)
        else:
            adist = np.array(params.adistance, dtype=np.int64)
        has_mem = self.capacity > 0
        self.tier = np.where(has_mem, adist >> MEMTIER_CHUNK_BITS, -1)
        top = self.tier[has_mem & numa.has_cpus].max() if (has_mem & numa.has_cpus).any() \
            else self.tier[has_mem].min()
        self.toptier = has_mem & (self.tier <= top)
        tiers = np.unique(self.tier[has_mem])
        self.demotion_target = np.full(n, -1, dtype=np.int64)
        self.demotion_order: list[np.ndarray] = []
        for node in range(n):
            lower = tiers[tiers > self.tier[node]] if has_mem[node] else tiers[:0]
            if lower.size == 0:
                self.demotion_order.append(np.zeros(0, dtype=np.int64))
                continue
            nxt = np.flatnonzero(self.tier == lower[0])
            target = int(nxt[np.argmin(numa.distance[node, nxt])])
            self.demotion_target[node] = target
            allowed = np.isin(self.tier, lower)
            order = numa.fallback(target)
            self.demotion_order.append(order[allowed[order]])

    def _demote_watermarks(self, params: KernelParams, capacity: np.ndarray,
                           marks: np.ndarray) -> np.ndarray:
        """TPP's WMARK_DEMOTE per node of ``capacity`` pages and watermarks ``marks``
        (0: none): on top-tier nodes that demote, ``size * demote_scale_factor / 10000``
        clamped to [2 * high, size]."""
        n = self.numa.n_nodes
        if params.demote_scale_factor is None or not params.demotion_enabled:
            return np.zeros(n, dtype=np.int64)
        tmp = capacity * params.demote_scale_factor // 10000
        mark = np.clip(tmp, 2 * marks[:, WMARK_HIGH], capacity)
        return np.where(self.toptier & (self.demotion_target >= 0), mark, 0)

    @property
    def nr_free(self) -> np.ndarray:
        """Free pages per node (NR_FREE_PAGES): every resident page is on a list."""
        return self.capacity - self.lists.nr.sum(axis=(1, 2))

    def avail(self, node: int, mark: int) -> int:
        """Pages an allocation may take from ``node`` before it reaches watermark
        ``mark`` (``zone_watermark_ok``: free pages must exceed the mark)."""
        return max(int(self.nr_free[node] - self.wmark[node, mark]), 0)
