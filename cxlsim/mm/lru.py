"""The LRU lists: every resident page on its node's active or inactive list of its type,
with the PTE accessed ("young") bit and PG_referenced -- the kernel's record of which
pages were used lately, which reclaim reads from the lists' tails.

What follows the kernel (torvalds/linux, 6.x; mm/swap.c ``folio_mark_accessed``,
mm/vmscan.c ``folio_check_references``, ``shrink_active_list``, ``inactive_is_low``):
new pages enter the inactive list (anon since 5.9) with the PTE young from the
instantiating fault. Reclaim (:mod:`cxlsim.mm.reclaim`) scans the inactive tail: a young
page that was already referenced is activated, a young one that was not gets
PG_referenced and another trip round the inactive list (second chance), the rest are
reclaimed. The active tail refills the inactive list when ``inactive * ratio < active``,
``ratio = int_sqrt(10 * GiB of the type)`` (1 below 1 GiB). Not modelled: MGLRU
(Documentation/mm/multigen_lru.rst: generations instead of two lists), VM_EXEC
protection.

State is one numpy array per attribute, so every operation is vectorized over pages.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from cxlsim.mm.placement import FILE, Placement
from cxlsim.mm.vmstat import VmStat

# An LRU list pair per page type (``enum lru_list``): ANON, FILE.
#: LRU list of a resident page; NONE: the page is not resident.
NONE, INACTIVE, ACTIVE = -1, 0, 1


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
        want = min(n, length)
        if want <= 0:
            return np.zeros(0, np.int64)
        out = np.empty(want, np.int64)
        found, self._start[i] = _current(pages, stamps, start, end, stamp, out)
        return out[:found]


@njit(cache=True, nogil=True)
def _current(pages, stamps, start, end, stamp, out):
    """The first current entries of ``pages[start:end]`` (those whose page still has
    the entry's stamp) into ``out``, until it is full; returns how many, and where the
    first of them is (every entry before it is stale, never current again)."""
    found, first = 0, end
    for j in range(start, end):
        if stamp[pages[j]] == stamps[j]:
            if found == 0:
                first = j
            out[found] = pages[j]
            found += 1
            if found == out.shape[0]:
                break
    return found, first


class LruLists:
    """The lists of ``placement``'s pages on ``n_nodes`` nodes, counting events in
    ``stat``, on nodes standing for ``scale`` times as many pages (the similarity law's
    S: the inactive ratio is the real node's). Per page: ``lru`` (INACTIVE, ACTIVE, NONE), ``young`` (PTE accessed bit),
    ``referenced`` (PG_referenced) and ``stamp`` (list position: larger is nearer the
    head; a list's tail is its smallest stamps); its node and type are the placement's.
    ``nr``: pages per node, type (ANON, FILE) and list."""

    def __init__(self, placement: Placement, n_nodes: int, stat: VmStat,
                 scale: float = 1.0) -> None:
        n_pages = placement.n_pages
        self.placement, self.stat, self.scale = placement, stat, scale
        self.lru = np.full(n_pages, NONE, dtype=np.int8)
        self.young = np.zeros(n_pages, dtype=bool)
        self.referenced = np.zeros(n_pages, dtype=bool)
        self.stamp = np.zeros(n_pages, dtype=np.int64)      # 0: on no list
        self._clock = 0
        self.nr = np.zeros((n_nodes, 2, 2), dtype=np.int64)   # node, kind, lru
        self._order = _ListOrder(self.nr.size)

    @property
    def kind(self) -> np.ndarray:
        """Every page's LRU type: FILE, or ANON for anon and shmem pages (swap-backed)."""
        return self.lru_type(slice(None))

    def lru_type(self, pages: Any) -> np.ndarray:
        """The LRU type (ANON or FILE) of ``pages`` from their page types."""
        return (self.placement.page_type[pages] == FILE).astype(np.int64)

    def checked(self, pages: Any, *, resident: bool | None) -> np.ndarray:
        """``pages`` as an int64 array of valid ids, resident or not if asked."""
        node = self.placement.node
        pages = np.asarray(pages, dtype=np.int64).ravel()
        if pages.size and (pages.min() < 0 or pages.max() >= node.size):
            raise IndexError(f"page ids must be in [0, {node.size}), got "
                             f"{pages.min() if pages.min() < 0 else pages.max()}")
        if resident is not None and pages.size:
            wrong = (node[pages] >= 0) != resident
            if wrong.any():
                state = "not resident (allocate it first)" if resident else "already resident"
                raise ValueError(f"page {pages[np.argmax(wrong)]} is {state}")
        return pages

    def unlink(self, pages: np.ndarray) -> None:
        """Take resident ``pages`` off their lists (counts only)."""
        idx = (self.placement.node[pages].astype(np.int64) * 2 + self.lru_type(pages)) * 2 \
            + self.lru[pages]
        self.nr -= np.bincount(idx, minlength=self.nr.size).reshape(self.nr.shape)

    def link(self, pages: np.ndarray, lru: int | np.ndarray) -> None:
        """Put resident ``pages`` at the head of ``lru`` on their node, the last one
        nearest the head."""
        stamps = self._head(pages, lru)
        idx = (self.placement.node[pages].astype(np.int64) * 2 + self.lru_type(pages)) * 2 \
            + self.lru[pages]
        self.nr += np.bincount(idx, minlength=self.nr.size).reshape(self.nr.shape)
        self._order.push(idx, pages, stamps)

    def _head(self, pages: np.ndarray, lru: int | np.ndarray) -> np.ndarray:
        """Mark ``pages`` on ``lru`` and stamp them as its newest, the last one nearest
        the head; returns their stamps (the list counts and order are the caller's)."""
        self.lru[pages] = lru
        stamps = self._clock + np.arange(1, pages.size + 1)
        self.stamp[pages] = stamps
        self._clock += pages.size
        return stamps

    def move(self, pages: np.ndarray, lru: int | np.ndarray, dest: int | None = None,
             flag: int | np.ndarray = 0, src: tuple[int, int, int] | None = None) -> None:
        """Put resident ``pages`` at the head of ``lru``, on node ``dest`` if given (a
        move the placement records with ``flag``), else on their own node. ``src``:
        the one list (node, type, lru) all of them are on, when the caller knows it
        (reclaim takes its pages from one list's tail): counted without a pass over
        them (reclaim was a third of a tpp run's time, mostly such passes)."""
        if not pages.size:  # reclaim's moves are empty a third of the time
            return
        if src is None:
            self.unlink(pages)
            if dest is not None:
                self.placement.move(pages, dest, flag)
            self.link(pages, lru)
            return
        node, kind, old = src
        self.nr[node, kind, old] -= pages.size
        if dest is not None:
            self.placement.move(pages, dest, flag)
            node = dest
        stamps = self._head(pages, lru)
        self.nr[node, kind, lru] += pages.size
        self._order.push_one((node * 2 + kind) * 2 + lru, pages, stamps)

    def drop(self, pages: np.ndarray, src: tuple[int, int, int] | None = None) -> None:
        """Free resident ``pages`` (off their lists, flags cleared); ``src`` as for
        :meth:`move`."""
        if not pages.size:
            return
        if src is None:
            self.unlink(pages)
        else:
            self.nr[src] -= pages.size
        self.placement.free(pages)
        self.lru[pages] = NONE
        self.stamp[pages] = 0
        self.young[pages] = False
        self.referenced[pages] = False

    def oldest(self, node: int, kind: int, lru: int, n: int) -> np.ndarray:
        """The ``n`` pages nearest the tail of a list, tail first."""
        if n <= 0:
            return np.zeros(0, dtype=np.int64)
        return self._order.oldest((node * 2 + kind) * 2 + lru, n, self.stamp,
                                  int(self.nr[node, kind, lru]))

    def _to_deactivate(self, node: int, kind: int) -> int:
        """Active pages to move for ``inactive * ratio >= active`` on a list pair (the
        real node's ratio); 0 when the inactive list is not low."""
        inactive, active = (int(x) for x in self.nr[node, kind])
        ratio = inactive_ratio(int((inactive + active) * self.scale))
        return max(-(-(active - inactive * ratio) // (ratio + 1)), 0)

    def inactive_is_low(self, node: int, kind: int) -> bool:
        """``inactive_is_low``: whether ``inactive * ratio < active`` on a list pair."""
        return self._to_deactivate(node, kind) > 0

    def age_active(self, node: int, kind: int) -> None:
        """``shrink_active_list`` while ``inactive_is_low``: move pages from the active
        tail to the inactive head until ``inactive * ratio >= active`` (the real node's
        ratio); their young bits are cleared (``folio_referenced``)."""
        k = self._to_deactivate(node, kind)
        if not k:
            return
        pages = self.oldest(node, kind, ACTIVE, k)
        self.young[pages] = False
        self.move(pages, INACTIVE, src=(node, kind, ACTIVE))
        self.stat.count("pgrefill", node, k)
        self.stat.count("pgdeactivate", node, k)

    def touch(self, pages: Any, resident_only: bool = False) -> int:
        """Loads and stores to resident ``pages``: set their PTE accessed (young) bits.
        A page that is not resident is an error, or with ``resident_only`` left out;
        returns how many were left out. One compiled pass (a trace run touches each
        epoch's distinct pages twice)."""
        node = self.placement.node
        pages = np.ascontiguousarray(pages, dtype=np.int64).ravel()
        skipped, bad = _touch(pages, node, self.young, resident_only)
        if bad >= 0:
            page = int(pages[bad])
            if not 0 <= page < node.size:
                raise IndexError(f"page ids must be in [0, {node.size}), got {page}")
            raise ValueError(f"page {page} is not resident (allocate it first)")
        return int(skipped)

    def mark_accessed(self, pages: Any) -> None:
        """``folio_mark_accessed`` (mm/swap.c) on resident ``pages``, one step each:
        inactive,unreferenced -> inactive,referenced -> active,unreferenced ->
        active,referenced. Used by read()/write() on file pages and by hint faults."""
        pages = self.checked(pages, resident=True)
        if not (pages[1:] > pages[:-1]).all():  # (a policy's are sorted and distinct)
            pages = np.unique(pages)
        activate = pages[self.referenced[pages] & (self.lru[pages] == INACTIVE)]
        self.referenced[pages] = True
        self.referenced[activate] = False
        self.stat.count("pgactivate", self.placement.node[activate].astype(np.int64))
        self.move(activate, ACTIVE)


@njit(cache=True, nogil=True)
def _touch(pages, node, young, resident_only):
    """:meth:`LruLists.touch`: (pages skipped, index of the first invalid page or -1);
    nothing changes when one is invalid."""
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
