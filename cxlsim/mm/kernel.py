"""The Linux kernel's memory state for page placement: one object a tiering policy (TPP,
NUMA balancing's tiering mode, ...) acts on, composed of the kernel's parts.

Every page of a footprint (dense ids ``0..n-1``) is free or resident on one node, on that
node's active or inactive list of its type (anon or file). Each page's node and type are
the footprint's :class:`~cxlsim.mm.placement.Placement` (``mem.placement``; allocation,
demotion, migration and reclaim change it there). State is one numpy array per
attribute, so every operation is vectorized over pages::

    mem = KernelMemory(numa, n_pages, {"demotion_enabled": True})  # or a Placement
    mem.alloc(pages, node=0)         # first touch, falling back by distance
    mem.touch(pages)                 # loads/stores: the PTE accessed ("young") bit
    mem.kswapd()                     # woken nodes reclaim up to their high watermark
    moved, failed = mem.migrate(pages, 0)
    mem.vmstat()                     # {"pgdemote_kswapd": ..., "pgpromote_success": ...}

The parts, a module each: zones with their watermarks and memory tiers
(:mod:`~cxlsim.mm.watermarks`), the LRU lists with second chance (:mod:`~cxlsim.mm.lru`),
reclaim and kswapd with demotion (:mod:`~cxlsim.mm.reclaim`), the counters
(:mod:`~cxlsim.mm.vmstat`), the tunables (:mod:`~cxlsim.mm.params`). Here, what uses them
all, following the kernel (torvalds/linux, 6.x):

* Allocation (mm/page_alloc.c ``get_page_from_freelist``, ``__alloc_pages_slowpath``):
  the first node of the zonelist (:meth:`Numa.fallback`) above its low watermark; when
  none is, wake kswapd on every unbalanced node, retry down to the min watermarks, then
  reclaim directly; if that frees nothing either, out of memory. So, as in the kernel
  with ``zone_reclaim_mode`` 0, a full local node spills to the next node *before* any
  reclaim (the behaviour TPP's decoupled watermarks fix). TPP's page-type-aware
  allocation (``file_on_lower_tier``, from the paper; off by default) sends file pages
  aimed at a top-tier node to its demotion target.
* Migration (mm/migrate.c ``migrate_balanced_pgdat``): a page moves only if the
  destination stays above its high watermark; promotions are pages moved from a
  non-top-tier node to a top-tier one (``pgpromote_success``). A NUMA hint fault's
  refused move (``numamigrate_isolate_folio``) wakes the destination's kswapd in tiering
  mode only: in normal mode (``kernel.numa_balancing=1``) nothing makes room for it.
  What a move costs the cores is :mod:`cxlsim.mm.migrate`'s.

Not modelled: huge pages, memcg, and time (costs are the simulation's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numba import njit

from cxlsim.mm.lru import INACTIVE, LruLists
from cxlsim.mm.mempolicy import OutOfMemoryError
from cxlsim.mm.numa import Numa
from cxlsim.mm.params import KernelParams
from cxlsim.mm.placement import FILE, PAGE_TYPES, PROMOTED, Placement
from cxlsim.mm.reclaim import MAX_RECLAIM_RETRIES, Reclaim
from cxlsim.mm.vmstat import VmStat
from cxlsim.mm.watermarks import PAGE_SIZE, WMARK_HIGH, WMARK_LOW, WMARK_MIN, Zones

Kind = Literal["anon", "file", "shmem"]


class KernelMemory:
    """Pages of one footprint on a machine's nodes, as the kernel keeps them.

    ``pages`` is the footprint's :class:`Placement` or its number of pages (a new
    all-anon one). The parts: ``zones`` (:class:`~cxlsim.mm.watermarks.Zones`),
    ``lists`` (:class:`~cxlsim.mm.lru.LruLists`), ``reclaim``
    (:class:`~cxlsim.mm.reclaim.Reclaim`), ``stat`` (:class:`~cxlsim.mm.vmstat.VmStat`).
    Their arrays are this object's too (the same arrays): per page ``node`` (-1 when not
    resident) and ``kind`` (ANON, FILE), the placement's; ``lru``, ``young``,
    ``referenced`` and ``stamp``, the lists'. Per node: ``capacity``, ``nr_free``,
    ``wmark``, ``wmark_demote``, ``tier``, ``toptier``, ``demotion_target``, the zones';
    ``kswapd_woken``, reclaim's.

    ``scale``: the real system's pages per page of the run (the similarity law's S,
    :mod:`cxlsim.mm.similarity`); the heuristics that count pages -- reclaim's scan
    sizes, the inactive ratio, a movable node's min watermark -- count the real node's.
    """

    def __init__(self, numa: Numa, pages: int | Placement,
                 params: KernelParams | Mapping[str, Any] | None = None,
                 scale: float = 1.0) -> None:
        if not isinstance(params, KernelParams):
            params = KernelParams.model_validate(params or {})
        if numa.page_size != PAGE_SIZE:
            raise ValueError(f"the kernel memory model works in {PAGE_SIZE} B pages, the "
                             f"machine has {numa.page_size} B pages")
        self.placement = pages if isinstance(pages, Placement) else Placement(pages)
        if self.placement.page_size != PAGE_SIZE:
            raise ValueError(f"the kernel memory model works in {PAGE_SIZE} B pages, the "
                             f"placement has {self.placement.page_size} B pages")
        self.numa, self.params, self.scale = numa, params, scale
        self.stat = VmStat(numa.n_nodes)
        self.lists = LruLists(self.placement, numa.n_nodes, self.stat, scale)
        self.zones = Zones(numa, params, self.lists, scale)
        self.reclaim = Reclaim(self.zones, self.lists, self.stat, params, scale)
        z, lists = self.zones, self.lists  # their arrays change in place, never rebound
        self.capacity, self.wmark, self.wmark_demote = z.capacity, z.wmark, z.wmark_demote
        self.tier, self.toptier, self.demotion_target = z.tier, z.toptier, z.demotion_target
        self.lru, self.young, self.referenced = lists.lru, lists.young, lists.referenced
        self.stamp, self.kswapd_woken = lists.stamp, self.reclaim.woken
        self._marks = np.zeros(self.placement.n_pages, dtype=np.int64)  # migrate's check
        self._mark = 0

    # --- state -------------------------------------------------------------------------

    @property
    def node(self) -> np.ndarray:
        """Every page's node, -1 when not resident (the placement's array)."""
        return self.placement.node

    @property
    def kind(self) -> np.ndarray:
        """Every page's LRU type: FILE, or ANON for anon and shmem pages (swap-backed)."""
        return self.lists.kind

    @property
    def promo_watermark(self) -> bool:
        """Whether the upstream tiering mode's WMARK_PROMO rules apply (see
        :attr:`KernelParams.promo_watermark`)."""
        return self.reclaim.promo_watermark

    @property
    def nr_free(self) -> np.ndarray:
        """Free pages per node (NR_FREE_PAGES)."""
        return self.zones.nr_free

    def lru_sizes(self) -> np.ndarray:
        """Pages per node, type and list: shape (nodes, 2 [ANON, FILE], 2 [INACTIVE,
        ACTIVE])."""
        return self.lists.nr.copy()

    def vmstat(self) -> dict[str, int]:
        """The counters summed over nodes (/proc/vmstat)."""
        return self.stat.summary()

    def total(self, name: str) -> int:
        """One counter summed over nodes (one line of :meth:`vmstat`)."""
        return self.stat.total(name)

    def per_node(self, name: str) -> np.ndarray:
        """One counter on every node (a copy)."""
        return self.stat.per_node(name)

    def node_vmstat(self, node: int) -> dict[str, int]:
        """One node's counters (/sys/devices/system/node/nodeN/vmstat)."""
        self.numa.check_node(node)
        return self.stat.node(node)

    # --- allocation --------------------------------------------------------------------

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
        pages = self.lists.checked(pages, resident=False)
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
                self.reclaim.wake_kswapd(int(m))
            done = self._take(pages, done, node, zonelist, WMARK_MIN)
        done = self._direct_reclaim(pages, done, node, zonelist)
        if done < pages.size:
            self.stat.count("oom_kill", node)
            raise OutOfMemoryError(
                f"out of memory: {pages.size - done} of {pages.size} pages found no room on "
                f"nodes {zonelist.tolist()} (free {self.nr_free[zonelist].tolist()}, min "
                f"watermarks {self.wmark[zonelist, WMARK_MIN].tolist()}) and reclaim freed "
                f"nothing: the footprint exceeds memory"
                + ("" if self.params.swap else " (swap is off, anon pages stay resident)"))
        return self.node[pages].astype(np.int64)

    def _direct_reclaim(self, pages: np.ndarray, done: int, preferred: int,
                        zonelist: np.ndarray) -> int:
        """The allocator's slow path: reclaim on the zonelist's nodes and place
        ``pages[done:]`` down to the min watermarks, until all are placed or
        ``MAX_RECLAIM_RETRIES`` rounds in a row free nothing (``should_reclaim_retry``: a
        round that only ages the lists -- referenced pages activated, the active tail
        deactivated -- frees its pages on the next); returns how many are placed."""
        stalls = 0  # direct reclaim rounds in a row that freed nothing
        while done < pages.size and stalls < MAX_RECLAIM_RETRIES:
            self.stat.count("allocstall", preferred)
            progress = False
            for m in zonelist:
                short = pages.size - done - self.zones.avail(int(m), WMARK_MIN)
                if short > 0:
                    progress |= self.reclaim.shrink_node(int(m), short, direct=True) > 0
                done = self._take(pages, done, preferred, zonelist[zonelist == m], WMARK_MIN)
            stalls = 0 if progress else stalls + 1
        return done

    def _take(self, pages: np.ndarray, done: int, preferred: int, zonelist: np.ndarray,
              mark: int) -> int:
        """Place ``pages[done:]`` on the zonelist's nodes in order while they stay above
        watermark ``mark``; returns how many of ``pages`` are placed."""
        for m in zonelist:
            m = int(m)
            k = min(self.zones.avail(m, mark), pages.size - done)
            if k == 0:
                continue
            batch = pages[done:done + k]
            self.young[batch] = True
            self.referenced[batch] = False
            self.placement.place(batch, m)
            self.lists.link(batch, INACTIVE)
            self.stat.count("pgalloc", m, k)
            self.reclaim.check_demote(m)
            if m == preferred:
                self.stat.count("numa_hit", m, k)
            else:
                self.stat.count("numa_miss", m, k)
                self.stat.count("numa_foreign", preferred, k)
            done += k
        return done

    def free(self, pages: Any) -> None:
        """Free resident ``pages`` (munmap, exit, truncate)."""
        pages = np.unique(self.lists.checked(pages, resident=True))
        self.stat.count("pgfree", self.node[pages].astype(np.int64))
        self.lists.drop(pages)

    # --- references and reclaim: the lists' and reclaim's --------------------------------

    def touch(self, pages: Any, resident_only: bool = False) -> int:
        """Loads and stores to resident ``pages`` (:meth:`LruLists.touch`)."""
        return self.lists.touch(pages, resident_only)

    def mark_accessed(self, pages: Any) -> None:
        """``folio_mark_accessed`` on resident ``pages`` (:meth:`LruLists.mark_accessed`)."""
        self.lists.mark_accessed(pages)

    def wake_kswapd(self, node: int) -> None:
        """Wake ``node``'s kswapd unless the node is balanced (:meth:`Reclaim.wake_kswapd`)."""
        self.reclaim.wake_kswapd(node)

    def check_toptier_balanced(self) -> None:
        """TPP's scheduler-tick check (:meth:`Reclaim.check_toptier_balanced`)."""
        self.reclaim.check_toptier_balanced()

    def kswapd(self) -> int:
        """Run every woken kswapd once (:meth:`Reclaim.kswapd`); returns the pages
        reclaimed."""
        return self.reclaim.kswapd()

    # --- migration ---------------------------------------------------------------------

    def migrate_room(self, dest: int) -> int:
        """Pages that can move to ``dest`` now: a page needs free > high + 1 before it
        moves (``migrate_balanced_pgdat``: ``zone_watermark_ok`` at high + nr_pages)."""
        return max(int(self.nr_free[dest] - self.wmark[dest, WMARK_HIGH]) - 1, 0)

    def migrate(self, pages: Any, dest: int, busy: np.ndarray | None = None,
                misplaced: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Move resident ``pages`` to node ``dest``, in order, while ``dest`` stays above
        its high watermark (:meth:`migrate_room`); returns (moved, failed) page ids.
        Pages flagged in ``busy`` (a mask over ``pages``) fail without moving
        (``-EAGAIN`` in ``migrate_pages``: ``pgmigrate_fail``).

        Moved pages keep their list and flags and go to its head. ``misplaced``: the
        moves are NUMA hint faults' (``migrate_misplaced_folio``), whose refusal for lack
        of room comes before ``migrate_pages`` (``numamigrate_isolate_folio``): it is no
        ``pgmigrate_fail`` but ``pgmigrate_fail_dst_node_full`` (TPP's counter; upstream
        counts it nowhere), and in tiering mode (:attr:`promo_watermark`) it wakes
        ``dest``'s kswapd; in normal mode nothing wakes. Other moves (``migrate_pages``
        for a policy's daemon) count a refusal as a failure to allocate
        (``pgmigrate_fail``).
        """
        pages = self.lists.checked(pages, resident=True)
        self.numa.check_node(dest, memory=True)
        self._mark += 1  # a new mark: no page carries it yet
        if _first_repeat(pages, self._marks, self._mark) >= 0:
            raise ValueError("pages to migrate must be distinct")
        if (self.node[pages] == dest).any():
            raise ValueError(f"page {pages[np.argmax(self.node[pages] == dest)]} is already "
                             f"on node {dest}")
        stuck = pages[busy] if busy is not None else pages[:0]
        pages = pages[~busy] if busy is not None else pages
        room = self.migrate_room(dest)
        moved, failed = pages[:room], pages[room:]
        promoted = ~self.toptier[self.node[moved]] & self.toptier[dest]
        self.lists.move(moved, self.lru[moved], dest, np.where(promoted, PROMOTED, 0))
        self.stat.count("pgmigrate_success", dest, moved.size)
        self.stat.count("pgpromote_success", dest, int(promoted.sum()))
        self.stat.count("pgmigrate_fail", dest, stuck.size + (0 if misplaced else failed.size))
        if misplaced:
            self.stat.count("pgmigrate_fail_dst_node_full", dest, failed.size)
        if moved.size:
            self.reclaim.check_demote(dest)
        if failed.size:
            self.refused(dest, misplaced)
        return moved, np.concatenate([stuck, failed])

    def refused(self, dest: int, misplaced: bool = False) -> None:
        """A move to ``dest`` refused for lack of room: a hint fault's
        (``misplaced``) wakes ``dest``'s kswapd in tiering mode
        (``numamigrate_isolate_folio``, :attr:`promo_watermark`)."""
        if misplaced and self.promo_watermark:
            self.reclaim.wake_kswapd(dest)


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
