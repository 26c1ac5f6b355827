"""The Linux kernel's memory state for page placement: watermarks, LRU lists, reclaim,
demotion, memory tiers, migration and vmstat counters.

The model a tiering policy (TPP, NUMA balancing's tiering mode, ...) acts on: every page
of a footprint (dense ids ``0..n-1``) is free or resident on one node, on that node's
active or inactive list of its type (anon or file). Each page's node and type are the
footprint's :class:`~cxlsim.mm.placement.Placement` (``mem.placement``; allocation,
demotion, migration and reclaim change it there); the LRU state is kept here. State is
one numpy array per attribute, so every operation is vectorized over pages::

    mem = KernelMemory(numa, n_pages, {"demotion_enabled": True})  # or a Placement
    mem.alloc(pages, node=0)         # first touch, falling back by distance
    mem.touch(pages)                 # loads/stores: the PTE accessed ("young") bit
    mem.kswapd()                     # woken nodes reclaim up to their high watermark
    moved, failed = mem.migrate(pages, 0)
    mem.vmstat()                     # {"pgdemote_kswapd": ..., "pgpromote_success": ...}

What follows the kernel, and from where (torvalds/linux, 6.x):

* Watermarks (mm/page_alloc.c ``__setup_per_zone_wmarks``, ``calculate_min_free_kbytes``):
  one zone per node; ``min_free_kbytes = int_sqrt(16 * lowmem kB)`` clamped to
  128..262144, shared among the nodes in proportion to their size; ``step =
  max(min/4, size * watermark_scale_factor / 10000)``; low, high and promo (WMARK_PROMO,
  NUMA balancing's tiering mode) are min plus 1, 2 and 3 steps. A node onlined as
  ZONE_MOVABLE (CXL memory often is) takes no share: its min is size/1024 clamped to
  32..128 pages. Pages are the managed pages (the kernel's reserved pages are ignored).
* Allocation (``get_page_from_freelist``, ``__alloc_pages_slowpath``): the first node of
  the zonelist (:meth:`Numa.fallback`) above its low watermark; when none is, wake kswapd
  on every unbalanced node, retry down to the min watermarks, then reclaim directly; if
  that frees nothing either, out of memory. So, as in the kernel with
  ``zone_reclaim_mode`` 0, a full local node spills to the next node *before* any
  reclaim (the behaviour TPP's decoupled watermarks fix).
* Aging (mm/swap.c ``folio_mark_accessed``, mm/vmscan.c ``folio_check_references``,
  ``shrink_active_list``, ``inactive_is_low``): new pages enter the inactive list (anon
  since 5.9) with the PTE young from the instantiating fault. Reclaim scans the inactive
  tail: a young page that was already referenced is activated, a young one that was not
  gets PG_referenced and another trip round the inactive list (second chance), the rest
  are reclaimed. The active tail refills the inactive list when ``inactive * ratio <
  active``, ``ratio = int_sqrt(10 * GiB of the type)`` (1 below 1 GiB).
* Reclaim (``shrink_node``, ``get_scan_count``, ``shrink_folio_list``,
  ``demote_folio_list``): priorities 12 down to 0 scan ``size >> priority`` of each
  inactive list; file only while the inactive file list is not low (cache trim mode) or
  anon cannot be reclaimed; otherwise anon:file in swappiness:(200 - swappiness) (no
  refault costs modelled), equally at priority 0. Anon is reclaimable only with swap or a
  demotion target. A reclaimed page is demoted first when ``demotion_enabled``
  (mm/memory-tiers.c ``numa_demotion_enabled``, default false), to the preferred target,
  then the other lower-tier nodes (``alloc_demote_folio``, no reclaim on the target, down
  to its min watermark); otherwise a file page is dropped and an anon page swapped out if
  swap is on, else activated. Scanning stops as soon as the target is met (the kernel
  overshoots by up to a batch).
* kswapd (``balance_pgdat``, ``pgdat_balanced``): a woken node reclaims until free pages
  exceed the high watermark (the promo watermark whenever NUMA balancing's tiering mode
  is on, as ``pgdat_balanced`` checks ``NUMA_BALANCING_MEMORY_TIERING``, unless
  ``promo_watermark`` says otherwise: TPP's patch set predates it). The simulation
  decides when kswapd runs (:meth:`kswapd`).
* TPP's additions (LKML "[PATCH 0/5] Transparent Page Placement for Tiered-Memory",
  Nov 2021; never upstream), off by default: decoupled allocation and demotion
  watermarks (``demote_scale_factor``: a top-tier node's kswapd is woken as soon as an
  allocation or a promotion leaves fewer free pages than WMARK_DEMOTE, or the scheduler's
  periodic :meth:`check_toptier_balanced` finds it so, and balances to it, while
  allocations still need only the low watermark) and page-type-aware allocation
  (``file_on_lower_tier``, from the paper).
* Memory tiers (mm/memory-tiers.c): a node's abstract distance (DRAM 576; CPU-less nodes
  default to the dax/kmem 5 x 576) gives its tier ``adistance >> 7`` (sysfs
  ``memory_tierN``); a node's demotion target is the nearest node of the next lower tier
  (``establish_demotion_targets``; ties: lowest id, where the kernel picks at random);
  top-tier nodes are those in or above the slowest tier that has CPUs.
* Migration (mm/migrate.c ``migrate_balanced_pgdat``): a page moves only if the
  destination stays above its high watermark; promotions are pages moved from a
  non-top-tier node to a top-tier one (``pgpromote_success``).

Counters are per node, as ``/sys/devices/system/node/nodeN/vmstat`` (each event on the
node the kernel charges it to); :meth:`KernelMemory.vmstat` sums them as /proc/vmstat.
Not modelled: huge pages, MGLRU (Documentation/mm/multigen_lru.rst: generations instead
of two lists), refault/workingset costs, writeback of dirty pages, VM_EXEC protection,
memcg, and time (costs are the simulation's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from numba import njit
from pydantic import Field

from cxlsim.config.base import ProblemAt, StrictModel
from cxlsim.mm.mempolicy import OutOfMemoryError
from cxlsim.mm.numa import Numa
from cxlsim.mm.placement import ANON, DEMOTED, FILE, PAGE_TYPES, PROMOTED, Placement

# An LRU list pair per page type (``enum lru_list``): ANON, FILE.
#: LRU list of a resident page; NONE: the page is not resident.
NONE, INACTIVE, ACTIVE = -1, 0, 1
#: Watermark indices (``enum zone_watermarks``, WMARK_PROMO from NUMA balancing tiering).
WMARK_MIN, WMARK_LOW, WMARK_HIGH, WMARK_PROMO = 0, 1, 2, 3

PAGE_SIZE = 4096
#: Reclaim priorities run from DEF_PRIORITY down to 0 (mm/vmscan.c).
DEF_PRIORITY = 12
#: Reclaim batch (include/linux/swap.h); also the least a movable zone's min watermark.
SWAP_CLUSTER_MAX = 32
#: Abstract distance of DRAM and the width of a tier (include/linux/memory-tiers.h).
MEMTIER_CHUNK_BITS = 7
MEMTIER_ADISTANCE_DRAM = (4 << MEMTIER_CHUNK_BITS) + (1 << (MEMTIER_CHUNK_BITS - 1))
#: Abstract distance dax/kmem gives CPU-less memory when no performance data is known.
MEMTIER_DEFAULT_DAX_ADISTANCE = 5 * MEMTIER_ADISTANCE_DRAM

#: Counters kept per node. pgsteal_* count every page reclaim freed from its node,
#: demoted ones included (``shrink_folio_list`` adds them to nr_reclaimed); numa_hit and
#: numa_miss are charged to the node allocated on, numa_foreign to the preferred node;
#: pgpromote_success and pgmigrate_success to the destination.
COUNTERS = (
    "pgalloc", "numa_hit", "numa_miss", "numa_foreign", "pgfree", "allocstall",
    "pgactivate", "pgdeactivate", "pgrefill", "pgscan_kswapd", "pgscan_direct",
    "pgsteal_kswapd", "pgsteal_direct", "pgsteal_anon", "pgsteal_file", "pswpout",
    "pgdemote_kswapd", "pgdemote_direct", "pgpromote_success", "pgmigrate_success",
    "pgmigrate_fail", "kswapd_wakeup", "oom_kill",
)

Kind = Literal["anon", "file", "shmem"]


#: Direct-reclaim rounds without progress before the allocator gives up (mm/page_alloc.c
#: ``should_reclaim_retry``, MAX_RECLAIM_RETRIES): a round that only ages the lists
#: (referenced pages activated, the active tail deactivated) frees its pages on the next.
MAX_RECLAIM_RETRIES = 16


class KernelParams(StrictModel):
    """Kernel tunables of the memory model (sysctls and boot-time defaults)."""

    min_free_kbytes: int | None = Field(
        None, ge=128, description="vm.min_free_kbytes in KiB (none: the boot default, "
                                  "int_sqrt(16 * lowmem KiB) clamped to 128..262144, "
                                  "mm/page_alloc.c calculate_min_free_kbytes)")
    watermark_scale_factor: int = Field(
        10, ge=1, le=3000, description="vm.watermark_scale_factor in 1/10000 of a node "
                                       "(10 = 0.1 %, mm/page_alloc.c)")
    demotion_enabled: bool = Field(
        False, description="/sys/kernel/mm/numa/demotion_enabled: reclaim migrates pages "
                           "to the next lower tier before dropping or swapping them "
                           "(mm/memory-tiers.c numa_demotion_enabled, default false)")
    numa_balancing_tiering: bool = Field(
        False, description="kernel.numa_balancing bit 2 (NUMA_BALANCING_MEMORY_TIERING): "
                           "hint faults on lower-tier pages only, and (promo_watermark) "
                           "kswapd balances to WMARK_PROMO, a promotion refused for lack "
                           "of room waking the target's kswapd")
    promo_watermark: bool | None = Field(
        None, description=(
            "the upstream tiering mode's promotion watermark (mm/vmscan.c pgdat_balanced, "
            "mm/migrate.c numamigrate_isolate_folio, since 5.18/6.0): kswapd balances to "
            "WMARK_PROMO and a promotion refused for lack of room wakes the target's "
            "kswapd. None: with numa_balancing_tiering (upstream); TPP's patch set "
            "(5.13) has neither: its refused promotions just fail (dst_node_full)"))
    swap: bool = Field(False, description="a swap device exists: anon pages can be reclaimed "
                                          "by swapping them out")
    swappiness: int = Field(60, ge=0, le=200, description="vm.swappiness: relative reclaim "
                                                          "pressure on anon vs file (0..200)")
    movable_nodes: list[int] = Field(
        default_factory=list, description="nodes whose memory is onlined as ZONE_MOVABLE "
                                          "(e.g. CXL memory via dax/kmem, online_movable)")
    adistance: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="abstract distance per node (memory-tiers.c; none: 576 for nodes "
                          "with CPUs, 2880 for CPU-less nodes)")
    demote_scale_factor: int | None = Field(
        None, ge=1, le=10000, description=(
            "vm.demote_scale_factor in 1/10000 of a node (TPP, LKML '[PATCH 0/5] Transparent "
            "Page Placement for Tiered-Memory', Nov 2021, patch 3; default there 200 = 2 %; "
            "never upstream): a top-tier node with a demotion target gets WMARK_DEMOTE = "
            "size * factor / 10000 clamped to [2 * high, size]; an allocation or promotion "
            "leaving it below, or the scheduler tick finding it so, wakes kswapd, which "
            "reclaims until free pages exceed it. None: off"))
    file_on_lower_tier: bool = Field(
        False, description=(
            "TPP's page-type-aware allocation (the paper, not the LKML patches): file "
            "pages aimed at a top-tier node are allocated on its demotion target first"))

    def check_nodes(self, memory: Sequence[int]) -> None:
        """Raise :class:`ProblemAt` (a ValueError) unless the node numbers and per-node
        lists fit the machine whose nodes have ``memory`` pages each."""
        n = len(memory)
        for i, node in enumerate(self.movable_nodes):
            if not 0 <= node < n:
                raise ProblemAt(f"node {node} does not exist (nodes 0-{n - 1})",
                                ("movable_nodes", i))
        if all(node in self.movable_nodes for node in range(n) if memory[node]):
            raise ProblemAt("at least one node with memory must not be movable "
                            "(min_free_kbytes is shared among the other nodes)",
                            ("movable_nodes",))
        if self.adistance is not None and len(self.adistance) != n:
            raise ProblemAt(f"adistance must give one abstract distance per node ({n}), "
                            f"got {len(self.adistance)}", ("adistance",))


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


def inactive_ratio(total_pages: int) -> int:
    """``inactive_is_low``'s ratio for a type with ``total_pages`` on a node's lists."""
    gib = total_pages >> (30 - 12)
    return math.isqrt(10 * gib) if gib else 1


class _ListOrder:
    """Every LRU list's pages in the order they were put at its head, for finding a
    list's tail without scanning the footprint (reclaim asks for it thousands of times).

    A list's entries are (page, stamp) appended as pages are linked, so stamps rise
    along it; an entry is current while its page still carries that stamp (relinking
    stamps a page anew, freeing zeroes it), so a list's current entries are exactly its
    pages, oldest first. Stale entries are skipped, dropped from the front as they are
    met and compacted away once they outnumber the current ones.
    """

    def __init__(self, lists: int) -> None:
        self._pages = [np.empty(64, np.int64) for _ in range(lists)]
        self._stamps = [np.empty(64, np.int64) for _ in range(lists)]
        self._start = [0] * lists
        self._end = [0] * lists

    def push(self, lists: np.ndarray, pages: np.ndarray, stamps: np.ndarray) -> None:
        """Append ``pages`` (stamped ``stamps``, rising) to their lists ``lists``."""
        if lists.size and lists.min() == lists.max():  # the usual case: one list
            self.push_one(int(lists[0]), pages, stamps)
            return
        for i in np.flatnonzero(np.bincount(lists)).tolist():
            mine = lists == i
            self.push_one(i, pages[mine], stamps[mine])

    def push_one(self, i: int, pages: np.ndarray, stamps: np.ndarray) -> None:
        """Append ``pages`` (stamped ``stamps``, rising) to list ``i``."""
        start, end = self._start[i], self._end[i]
        if end + pages.size > self._pages[i].size:
            live = end - start
            size = max(2 * (live + pages.size), 64)
            for store in (self._pages, self._stamps):
                grown = np.empty(size, np.int64)
                grown[:live] = store[i][start:end]
                store[i] = grown
            start, end = 0, live
        self._pages[i][end:end + pages.size] = pages
        self._stamps[i][end:end + pages.size] = stamps
        self._start[i], self._end[i] = start, end + pages.size

    def oldest(self, i: int, n: int, stamp: np.ndarray, length: int) -> np.ndarray:
        """The first ``n`` current pages of list ``i`` (``length`` of them in all), given
        every page's current ``stamp``."""
        start, end = self._start[i], self._end[i]
        pages, stamps = self._pages[i], self._stamps[i]
        if end - start > 2 * length + 64:  # mostly stale: keep the current entries only
            keep = stamp[pages[start:end]] == stamps[start:end]
            live = int(keep.sum())
            pages[:live] = pages[start:end][keep]
            stamps[:live] = stamps[start:end][keep]
            start, end = 0, live
            self._start[i], self._end[i] = start, end
        out, at, want = [np.zeros(0, np.int64)], start, min(n, length)
        while want > 0 and at < end:
            block = slice(at, min(end, at + max(2 * want, 256)))
            current = pages[block][stamp[pages[block]] == stamps[block]]
            if want == min(n, length) and not current.size:
                self._start[i] = block.stop  # all stale so far: never current again
            out.append(current[:want])
            want -= min(want, current.size)
            at = block.stop
        return np.concatenate(out)


class KernelMemory:
    """Pages of one footprint on a machine's nodes, as the kernel keeps them.

    ``pages`` is the footprint's :class:`Placement` or its number of pages (a new
    all-anon one). Per page: ``node`` (-1 when not resident) and ``kind`` (ANON, FILE),
    the placement's arrays; ``lru`` (INACTIVE, ACTIVE, NONE), ``young`` (PTE accessed bit),
    ``referenced`` (PG_referenced) and ``stamp`` (list position: larger is nearer the
    head; a list's tail is its smallest stamps). Per node: ``capacity``, ``nr_free``,
    ``wmark`` (nodes x 4, see :func:`watermarks`), ``wmark_demote`` (TPP's WMARK_DEMOTE,
    0: none), ``tier`` (memory_tierN id, -1 without memory), ``toptier``,
    ``demotion_target`` (-1: none) and ``kswapd_woken``.
    """

    def __init__(self, numa: Numa, pages: int | Placement,
                 params: KernelParams | Mapping[str, Any] | None = None) -> None:
        if not isinstance(params, KernelParams):
            params = KernelParams.model_validate(params or {})
        if numa.page_size != PAGE_SIZE:
            raise ValueError(f"the kernel memory model works in {PAGE_SIZE} B pages, the "
                             f"machine has {numa.page_size} B pages")
        self.placement = pages if isinstance(pages, Placement) else Placement(pages)
        if self.placement.page_size != PAGE_SIZE:
            raise ValueError(f"the kernel memory model works in {PAGE_SIZE} B pages, the "
                             f"placement has {self.placement.page_size} B pages")
        n_pages = self.placement.n_pages
        self.numa, self.params = numa, params
        n = numa.n_nodes
        params.check_nodes(numa.capacity)
        self.capacity = numa.capacity.copy()
        movable = np.isin(np.arange(n), params.movable_nodes)
        self.wmark = watermarks(self.capacity, params, movable)
        self._init_tiers(params)
        self.wmark_demote = self._demote_watermarks(params)
        self.lru = np.full(n_pages, NONE, dtype=np.int8)
        self.young = np.zeros(n_pages, dtype=bool)
        self.referenced = np.zeros(n_pages, dtype=bool)
        self.stamp = np.zeros(n_pages, dtype=np.int64)      # 0: on no list
        self._marks = np.zeros(n_pages, dtype=np.int64)     # migrate's distinctness check
        self._mark = 0
        self._clock = 0
        self._nr = np.zeros((n, 2, 2), dtype=np.int64)       # node, kind, lru
        self._order = _ListOrder(self._nr.size)
        self.kswapd_woken = np.zeros(n, dtype=bool)
        self._stat = {name: np.zeros(n, dtype=np.int64) for name in COUNTERS}

    # --- tiers -------------------------------------------------------------------------

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
        self._demotion_order: list[np.ndarray] = []
        for node in range(n):
            lower = tiers[tiers > self.tier[node]] if has_mem[node] else tiers[:0]
            if lower.size == 0:
                self._demotion_order.append(np.zeros(0, dtype=np.int64))
                continue
            nxt = np.flatnonzero(self.tier == lower[0])
            target = int(nxt[np.argmin(numa.distance[node, nxt])])
            self.demotion_target[node] = target
            allowed = np.isin(self.tier, lower)
            order = numa.fallback(target)
            self._demotion_order.append(order[allowed[order]])

    def _demote_watermarks(self, params: KernelParams) -> np.ndarray:
        """TPP's WMARK_DEMOTE per node (0: none): on top-tier nodes that demote,
        ``size * demote_scale_factor / 10000`` clamped to [2 * high, size]."""
        n = self.numa.n_nodes
        if params.demote_scale_factor is None or not params.demotion_enabled:
            return np.zeros(n, dtype=np.int64)
        tmp = self.capacity * params.demote_scale_factor // 10000
        mark = np.clip(tmp, 2 * self.wmark[:, WMARK_HIGH], self.capacity)
        return np.where(self.toptier & (self.demotion_target >= 0), mark, 0)

    # --- state -------------------------------------------------------------------------

    @property
    def node(self) -> np.ndarray:
        """Every page's node, -1 when not resident (the placement's array)."""
        return self.placement.node

    @property
    def promo_watermark(self) -> bool:
        """Whether the upstream tiering mode's WMARK_PROMO rules apply (see
        :attr:`KernelParams.promo_watermark`)."""
        p = self.params
        return p.numa_balancing_tiering if p.promo_watermark is None else p.promo_watermark

    @property
    def kind(self) -> np.ndarray:
        """Every page's LRU type: FILE, or ANON for anon and shmem pages (swap-backed)."""
        return self._lru_type(slice(None))

    def _lru_type(self, pages: Any) -> np.ndarray:
        """The LRU type (ANON or FILE) of ``pages`` from their page types."""
        return (self.placement.page_type[pages] == FILE).astype(np.int64)

    @property
    def nr_free(self) -> np.ndarray:
        """Free pages per node (NR_FREE_PAGES)."""
        return self.capacity - self._nr.sum(axis=(1, 2))

    def lru_sizes(self) -> np.ndarray:
        """Pages per node, type and list: shape (nodes, 2 [ANON, FILE], 2 [INACTIVE,
        ACTIVE])."""
        return self._nr.copy()

    def vmstat(self) -> dict[str, int]:
        """The counters summed over nodes (/proc/vmstat)."""
        return {name: self.total(name) for name in self._stat}

    def total(self, name: str) -> int:
        """One counter summed over nodes (one line of :meth:`vmstat`)."""
        return int(self._stat[name].sum())

    def per_node(self, name: str) -> np.ndarray:
        """One counter on every node (a copy)."""
        return self._stat[name].copy()

    def node_vmstat(self, node: int) -> dict[str, int]:
        """One node's counters (/sys/devices/system/node/nodeN/vmstat)."""
        self.numa.check_node(node)
        return {name: int(v[node]) for name, v in self._stat.items()}

    def _count(self, name: str, node: int | np.ndarray, n: int | np.ndarray = 1) -> None:
        if isinstance(node, (int, np.integer)) and isinstance(n, (int, np.integer)):
            self._stat[name][node] += n  # one node: no scatter (reclaim counts often)
        else:
            np.add.at(self._stat[name], node, n)

    def _unlink(self, pages: np.ndarray) -> None:
        """Take resident ``pages`` off their lists (counts only)."""
        idx = (self.node[pages].astype(np.int64) * 2 + self._lru_type(pages)) * 2 \
            + self.lru[pages]
        self._nr -= np.bincount(idx, minlength=self._nr.size).reshape(self._nr.shape)

    def _link(self, pages: np.ndarray, lru: int | np.ndarray) -> None:
        """Put resident ``pages`` at the head of ``lru`` on their node, the last one
        nearest the head."""
        stamps = self._head(pages, lru)
        idx = (self.node[pages].astype(np.int64) * 2 + self._lru_type(pages)) * 2 \
            + self.lru[pages]
        self._nr += np.bincount(idx, minlength=self._nr.size).reshape(self._nr.shape)
        self._order.push(idx, pages, stamps)

    def _head(self, pages: np.ndarray, lru: int | np.ndarray) -> np.ndarray:
        """Mark ``pages`` on ``lru`` and stamp them as its newest, the last one nearest
        the head; returns their stamps (the list counts and order are the caller's)."""
        self.lru[pages] = lru
        stamps = self._clock + np.arange(1, pages.size + 1)
        self.stamp[pages] = stamps
        self._clock += pages.size
        return stamps

    def _move(self, pages: np.ndarray, lru: int | np.ndarray, dest: int | None = None,
              flag: int | np.ndarray = 0, src: tuple[int, int, int] | None = None) -> None:
        """Put resident ``pages`` at the head of ``lru``, on node ``dest`` if given (a
        move the placement records with ``flag``), else on their own node. ``src``:
        the one list (node, type, lru) all of them are on, when the caller knows it
        (reclaim takes its pages from one list's tail): counted without a pass over
        them (reclaim was a third of a tpp run's time, mostly such passes)."""
        if not pages.size:  # reclaim's moves are empty a third of the time
            return
        if src is None:
            self._unlink(pages)
            if dest is not None:
                self.placement.move(pages, dest, flag)
            self._link(pages, lru)
            return
        node, kind, old = src
        self._nr[node, kind, old] -= pages.size
        if dest is not None:
            self.placement.move(pages, dest, flag)
            node = dest
        stamps = self._head(pages, lru)
        self._nr[node, kind, lru] += pages.size
        self._order.push_one((node * 2 + kind) * 2 + lru, pages, stamps)

    def _drop(self, pages: np.ndarray, src: tuple[int, int, int] | None = None) -> None:
        """Free resident ``pages`` (off their lists, flags cleared); ``src`` as for
        :meth:`_move`."""
        if not pages.size:
            return
        if src is None:
            self._unlink(pages)
        else:
            self._nr[src] -= pages.size
        self.placement.free(pages)
        self.lru[pages] = NONE
        self.stamp[pages] = 0
        self.young[pages] = False
        self.referenced[pages] = False

    def _pages(self, pages: Any, *, resident: bool | None) -> np.ndarray:
        """``pages`` as a unique int64 array of valid ids, resident or not if asked."""
        pages = np.asarray(pages, dtype=np.int64).ravel()
        if pages.size and (pages.min() < 0 or pages.max() >= self.node.size):
            raise IndexError(f"page ids must be in [0, {self.node.size}), got "
                             f"{pages.min() if pages.min() < 0 else pages.max()}")
        if resident is not None and pages.size:
            wrong = (self.node[pages] >= 0) != resident
            if wrong.any():
                state = "not resident (allocate it first)" if resident else "already resident"
                raise ValueError(f"page {pages[np.argmax(wrong)]} is {state}")
        return pages

    # --- allocation --------------------------------------------------------------------

    def _avail(self, node: int, mark: int) -> int:
        """Pages an allocation may take from ``node`` before it reaches watermark
        ``mark`` (``zone_watermark_ok``: free pages must exceed the mark)."""
        return max(int(self.nr_free[node] - self.wmark[node, mark]), 0)

    def alloc(self, pages: Any, node: int, kind: Kind | None = None,
              allowed: Sequence[int] | None = None) -> np.ndarray:
        """Allocate (first touch) ``pages`` for a task preferring ``node``; returns the
        node of each page. ``kind`` (anon, file, shmem) sets the pages' type; None keeps
        the placement's (anon unless a trace said otherwise). With
        ``file_on_lower_tier`` file pages aimed at a top-tier node aim at its demotion
        target instead.

        ``allowed`` restricts the zonelist (a bind policy's nodes). A page that direct
        reclaim already took back within this call reads -1. Raises
        :class:`OutOfMemoryError` when no allowed node has room even after direct reclaim;
        the pages placed before that stay allocated.
        """
        pages = self._pages(pages, resident=False)
        if np.unique(pages).size != pages.size:
            raise ValueError("pages to allocate must be distinct")
        self.numa.check_node(node)
        if kind not in (*PAGE_TYPES, None):
            raise ValueError(f"kind must be 'anon', 'file' or 'shmem', got {kind!r}")
        zonelist = self.numa.fallback(node)
        if allowed is not None:
            zonelist = zonelist[np.isin(zonelist, list(allowed))]
            if zonelist.size == 0:
                raise ValueError(f"none of the allowed nodes {list(allowed)} has memory")
        if kind is not None:
            self.placement.page_type[pages] = PAGE_TYPES.index(kind)
        file = self.placement.page_type[pages] == FILE
        if self.params.file_on_lower_tier and self.toptier[node] \
                and self.demotion_target[node] >= 0 and file.any():
            out = np.empty(pages.size, dtype=np.int64)  # file pages aim at the lower tier
            out[file] = self.alloc(pages[file], int(self.demotion_target[node]),
                                   allowed=allowed)
            if not file.all():
                out[~file] = self.alloc(pages[~file], node, allowed=allowed)
            return out
        done = self._take(pages, 0, node, zonelist, WMARK_LOW)
        if done < pages.size:
            for m in zonelist:
                self.wake_kswapd(int(m))
            done = self._take(pages, done, node, zonelist, WMARK_MIN)
        stalls = 0  # direct reclaim rounds in a row that freed nothing
        while done < pages.size and stalls < MAX_RECLAIM_RETRIES:
            self._count("allocstall", node)
            progress = False
            for m in zonelist:
                short = pages.size - done - self._avail(int(m), WMARK_MIN)
                if short > 0:
                    progress |= self._shrink_node(int(m), short, direct=True) > 0
                done = self._take(pages, done, node, zonelist[zonelist == m], WMARK_MIN)
            stalls = 0 if progress else stalls + 1
        if done < pages.size:
            self._count("oom_kill", node)
            raise OutOfMemoryError(
                f"out of memory: {pages.size - done} of {pages.size} pages found no room on "
                f"nodes {zonelist.tolist()} (free {self.nr_free[zonelist].tolist()}, min "
                f"watermarks {self.wmark[zonelist, WMARK_MIN].tolist()}) and reclaim freed "
                f"nothing: the footprint exceeds memory"
                + ("" if self.params.swap else " (swap is off, anon pages stay resident)"))
        return self.node[pages].astype(np.int64)

    def _take(self, pages: np.ndarray, done: int, preferred: int, zonelist: np.ndarray,
              mark: int) -> int:
        """Place ``pages[done:]`` on the zonelist's nodes in order while they stay above
        watermark ``mark``; returns how many of ``pages`` are placed."""
        for m in zonelist:
            m = int(m)
            k = min(self._avail(m, mark), pages.size - done)
            if k == 0:
                continue
            batch = pages[done:done + k]
            self.young[batch] = True
            self.referenced[batch] = False
            self.placement.place(batch, m)
            self._link(batch, INACTIVE)
            self._count("pgalloc", m, k)
            self._check_demote(m)
            if m == preferred:
                self._count("numa_hit", m, k)
            else:
                self._count("numa_miss", m, k)
                self._count("numa_foreign", preferred, k)
            done += k
        return done

    def free(self, pages: Any) -> None:
        """Free resident ``pages`` (munmap, exit, truncate)."""
        pages = np.unique(self._pages(pages, resident=True))
        np.add.at(self._stat["pgfree"], self.node[pages].astype(np.int64), 1)
        self._drop(pages)

    # --- references --------------------------------------------------------------------

    def touch(self, pages: Any, resident_only: bool = False) -> int:
        """Loads and stores to resident ``pages``: set their PTE accessed (young) bits.
        A page that is not resident is an error, or with ``resident_only`` left out;
        returns how many were left out. One compiled pass (a trace run touches each
        epoch's distinct pages twice)."""
        pages = np.ascontiguousarray(pages, dtype=np.int64).ravel()
        skipped, bad = _touch(pages, self.node, self.young, resident_only)
        if bad >= 0:
            page = int(pages[bad])
            if not 0 <= page < self.node.size:
                raise IndexError(f"page ids must be in [0, {self.node.size}), got {page}")
            raise ValueError(f"page {page} is not resident (allocate it first)")
        return int(skipped)

    def mark_accessed(self, pages: Any) -> None:
        """``folio_mark_accessed`` (mm/swap.c) on resident ``pages``, one step each:
        inactive,unreferenced -> inactive,referenced -> active,unreferenced ->
        active,referenced. Used by read()/write() on file pages and by hint faults."""
        pages = np.unique(self._pages(pages, resident=True))
        activate = pages[self.referenced[pages] & (self.lru[pages] == INACTIVE)]
        self.referenced[pages] = True
        self.referenced[activate] = False
        self._count("pgactivate", self.node[activate].astype(np.int64))
        self._move(activate, ACTIVE)

    # --- reclaim -----------------------------------------------------------------------

    def wake_kswapd(self, node: int) -> None:
        """``wakeup_kswapd``: wake ``node``'s kswapd unless the node is balanced."""
        self.numa.check_node(node, memory=True)
        if not self.kswapd_woken[node] and self.nr_free[node] <= self._kswapd_mark(node):
            self.kswapd_woken[node] = True
            self._count("kswapd_wakeup", node)

    def _check_demote(self, node: int) -> None:
        """TPP's check after a page is taken from ``node`` (``rmqueue``; promotions
        allocate there too): below WMARK_DEMOTE, wake its kswapd."""
        if self.nr_free[node] < self.wmark_demote[node]:
            self.wake_kswapd(node)

    def check_toptier_balanced(self) -> None:
        """TPP's ``check_toptier_balanced`` (called from the scheduler's load-balance
        tick): wake the kswapd of every top-tier node below its WMARK_DEMOTE."""
        for node in np.flatnonzero(self.wmark_demote):
            self._check_demote(int(node))

    def _kswapd_mark(self, node: int) -> int:
        """The watermark kswapd balances ``node`` to (``pgdat_balanced``: the promo
        watermark in the upstream memory-tiering mode, else high; TPP's
        WMARK_DEMOTE where it is set, which lies above both)."""
        promo = self.promo_watermark
        return max(int(self.wmark[node, WMARK_PROMO if promo else WMARK_HIGH]),
                   int(self.wmark_demote[node]))

    def kswapd(self) -> int:
        """Run every woken kswapd once, fastest tier first (demotions may wake the
        kswapd of a lower tier, which then runs too); returns the pages reclaimed."""
        total = 0
        for node in np.argsort(self.tier, kind="stable"):
            node = int(node)
            if not self.kswapd_woken[node]:
                continue
            need = self._kswapd_mark(node) + 1 - int(self.nr_free[node])
            if need > 0:
                total += self._shrink_node(node, need, direct=False)
            self.kswapd_woken[node] = False
        return total

    def _can_demote(self, node: int) -> bool:
        return self.params.demotion_enabled and self.demotion_target[node] >= 0

    def _oldest(self, node: int, kind: int, lru: int, n: int) -> np.ndarray:
        """The ``n`` pages nearest the tail of a list, tail first."""
        if n <= 0:
            return np.zeros(0, dtype=np.int64)
        return self._order.oldest((node * 2 + kind) * 2 + lru, n, self.stamp,
                                  int(self._nr[node, kind, lru]))

    def _age_active(self, node: int, kind: int) -> None:
        """``shrink_active_list`` while ``inactive_is_low``: move pages from the active
        tail to the inactive head until ``inactive * ratio >= active``; their young bits
        are cleared (``folio_referenced``)."""
        inactive, active = (int(x) for x in self._nr[node, kind])
        ratio = inactive_ratio(inactive + active)
        if inactive * ratio >= active:
            return
        k = -(-(active - inactive * ratio) // (ratio + 1))
        pages = self._oldest(node, kind, ACTIVE, k)
        self.young[pages] = False
        self._move(pages, INACTIVE, src=(node, kind, ACTIVE))
        self._count("pgrefill", node, k)
        self._count("pgdeactivate", node, k)

    def _shrink_node(self, node: int, target: int, *, direct: bool) -> int:
        """Reclaim up to ``target`` pages from ``node`` (``shrink_node`` over the
        priorities); returns the pages freed from the node."""
        anon_ok = self.params.swap or self._can_demote(node)
        reclaimed = 0
        for priority in range(DEF_PRIORITY, -1, -1):
            if reclaimed >= target:
                break
            self._age_active(node, FILE)
            if anon_ok:
                self._age_active(node, ANON)
            inactive = self._nr[node, :, INACTIVE].copy()
            if inactive.sum() == 0:
                break
            f_inactive, f_active = (int(x) for x in self._nr[node, FILE])
            trim = f_inactive >> priority > 0 and \
                f_inactive * inactive_ratio(f_inactive + f_active) >= f_active
            swappiness = self.params.swappiness
            # almost out of file pages: force-scan anon (get_scan_count's file_is_tiny)
            tiny = f_inactive + f_active + int(self.nr_free[node]) \
                <= self.wmark[node, WMARK_HIGH] and int(inactive[ANON]) >> priority > 0
            if not anon_ok:
                share = {FILE: 1.0}
            elif priority == 0 and swappiness:
                share = {ANON: 1.0, FILE: 1.0}
            elif tiny:
                share = {ANON: 1.0}
            elif trim:
                share = {FILE: 1.0}
            else:
                share = {ANON: swappiness / 200, FILE: (200 - swappiness) / 200}
            for kind, fraction in share.items():
                budget = max(int((int(inactive[kind]) >> priority) * fraction),
                             SWAP_CLUSTER_MAX)
                reclaimed += self._shrink_inactive(node, kind, budget, target - reclaimed,
                                                   direct)
                if reclaimed >= target:
                    break
        return reclaimed

    def _shrink_inactive(self, node: int, kind: int, budget: int, want: int,
                         direct: bool) -> int:
        """Scan up to ``budget`` pages from the inactive tail, stopping once ``want`` are
        freed (``shrink_inactive_list``, ``shrink_folio_list``); returns pages freed."""
        pages = self._oldest(node, kind, INACTIVE, budget)
        if pages.size == 0 or want <= 0:
            return 0
        young = self.young[pages]
        room = sum(self._avail(int(t), WMARK_MIN) for t in self._demotion_order[node]) \
            if self._can_demote(node) else 0
        evictable = kind == FILE or self.params.swap
        freed = ~young & ((np.cumsum(~young) <= room) | evictable)
        cut = min(int(np.searchsorted(np.cumsum(freed), want)) + 1, pages.size)
        pages, young = pages[:cut], young[:cut]
        how = "direct" if direct else "kswapd"
        self._count(f"pgscan_{how}", node, cut)

        activate = pages[young & self.referenced[pages]]
        keep = pages[young & ~self.referenced[pages]]
        cold = pages[~young]
        self.young[pages] = False
        self.referenced[keep] = True
        self.referenced[cold] = False
        tail = (node, kind, INACTIVE)  # where every page scanned comes from
        self._move(keep, INACTIVE, src=tail)

        demoted = cold[:room]
        rest = cold[room:]
        start = 0
        for target in self._demotion_order[node] if room else ():
            k = min(self._avail(int(target), WMARK_MIN), demoted.size - start)
            if k:
                self._move(demoted[start:start + k], INACTIVE, int(target), DEMOTED, tail)
                self._count("pgmigrate_success", int(target), k)
                self._wake_if_low(int(target))
                start += k
        self._count(f"pgdemote_{how}", node, demoted.size)

        if evictable:
            self._drop(rest, tail)
            if kind == ANON:
                self._count("pswpout", node, rest.size)
        else:
            activate = np.concatenate([activate, rest])
            rest = rest[:0]
        self._count("pgactivate", node, activate.size)
        self._move(activate, ACTIVE, src=tail)
        n_freed = demoted.size + rest.size
        self._count(f"pgsteal_{how}", node, n_freed)
        self._count("pgsteal_file" if kind == FILE else "pgsteal_anon", node, n_freed)
        return n_freed

    def _wake_if_low(self, node: int) -> None:
        """Wake ``node``'s kswapd if an allocation left it at or below its low watermark
        (the allocator's fast path failing there, as a demotion target's does)."""
        if self.nr_free[node] <= self.wmark[node, WMARK_LOW]:
            self.wake_kswapd(node)

    # --- migration ---------------------------------------------------------------------

    def migrate(self, pages: Any, dest: int, busy: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Move resident ``pages`` to node ``dest``, in order, while ``dest`` stays above
        its high watermark (``migrate_balanced_pgdat``); returns (moved, failed) page ids.
        Pages flagged in ``busy`` (a mask over ``pages``) fail without moving.

        Moved pages keep their list and flags and go to its head. In tiering mode a
        refusal for lack of room wakes ``dest``'s kswapd, as ``numamigrate_isolate_folio``
        does.
        """
        pages = self._pages(pages, resident=True)
        self.numa.check_node(dest, memory=True)
        self._mark += 1  # a new mark: no page carries it yet
        if _first_repeat(pages, self._marks, self._mark) >= 0:
            raise ValueError("pages to migrate must be distinct")
        if (self.node[pages] == dest).any():
            raise ValueError(f"page {pages[np.argmax(self.node[pages] == dest)]} is already "
                             f"on node {dest}")
        # A page needs free > high + 1 before it moves (zone_watermark_ok, high + nr_pages).
        stuck = pages[busy] if busy is not None else pages[:0]
        pages = pages[~busy] if busy is not None else pages
        room = max(int(self.nr_free[dest] - self.wmark[dest, WMARK_HIGH]) - 1, 0)
        moved, failed = pages[:room], pages[room:]
        promoted = ~self.toptier[self.node[moved]] & self.toptier[dest]
        self._move(moved, self.lru[moved], dest, np.where(promoted, PROMOTED, 0))
        self._count("pgmigrate_success", dest, moved.size)
        self._count("pgpromote_success", dest, int(promoted.sum()))
        self._count("pgmigrate_fail", dest, failed.size + stuck.size)
        if moved.size:
            self._check_demote(dest)
        if failed.size and self.promo_watermark:
            self.wake_kswapd(dest)
        return moved, np.concatenate([stuck, failed])


@njit(cache=True, nogil=True)
def _touch(pages, node, young, resident_only):
    """:meth:`KernelMemory.touch`: (pages skipped, index of the first invalid page or
    -1); nothing changes when one is invalid."""
    skipped = 0
    for i in range(pages.shape[0]):
        p = pages[i]
        if p < 0 or p >= node.shape[0] or (node[p] < 0 and not resident_only):
            return 0, i
    for i in range(pages.shape[0]):
        p = pages[i]
        if node[p] >= 0:
            young[p] = True
        else:
            skipped += 1
    return skipped, -1


@njit(cache=True, nogil=True)
def _first_repeat(pages, marks, mark) -> int:
    """Index of the first of ``pages`` seen before in it, or -1; ``marks[p] = mark`` for
    each page on the way (``mark`` new to ``marks``: no clearing between calls, where
    ``np.unique`` took a sixth of a policy run's time)."""
    for i in range(pages.shape[0]):
        p = pages[i]
        if marks[p] == mark:
            return i
        marks[p] = mark
    return -1
