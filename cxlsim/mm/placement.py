"""Where every page of a footprint is: the one placement object every policy reads and
changes.

A :class:`Placement` holds, per page (dense ids ``0..n-1``, one numpy array per
attribute so every operation is vectorized):

=================  ========================================================================
``node``           the node holding the page; -1 while it is not resident (never touched,
                   or reclaimed: dropped, swapped out)
``page_type``      :data:`ANON`, :data:`FILE` or :data:`SHMEM` (the codes of a trace's
                   ``page_type`` column, :data:`PAGE_TYPES`); anon unless the trace says
                   otherwise. The kernel keeps shmem (tmpfs, shared anonymous memory) on
                   the anon LRU lists: it is swap-backed
``alloc_epoch``    the epoch of the page's latest allocation (first touch or refault); -1
``last_access``    the epoch of its latest access; -1 never
``accesses``       its accesses so far
``flags``          how its latest move went: :data:`DEMOTED` (by reclaim, to a lower
                   tier), :data:`PROMOTED` (to a top-tier node from a lower one); 0 after
                   any other move and at allocation
``left``           the node its latest move left (-1: it never moved), ``moved_epoch``
                   the epoch of that move
=================  ========================================================================

and ``page_size`` (bytes, the same for every page: one page table maps them) and
``epoch``, the clock its owner advances (the trace run: the epoch being run).

Who changes it: at first touch a memory policy -- :class:`~cxlsim.mm.mempolicy.
PagePlacement` (numactl's rules, for a process's regions) or the kernel's allocator
:class:`~cxlsim.mm.kernel.KernelMemory` (watermarks, fallback, reclaim; it keeps its
LRU lists beside the placement) -- calls :meth:`Placement.place`; the kernel's
demotions and migrations call :meth:`move`, reclaim :meth:`free`.
:class:`~cxlsim.memory.pagetable.PageTable` reads ``node`` -- the same array object,
so the compiled walk sees every move without a copy. A page moving back to the node it
left within ``pingpong`` epochs is a ping-pong (:attr:`pingpongs` counts them).

Interleaving (one rule for the page level and the epoch level): a (weighted) interleave
round gives ``w`` consecutive interleave indices to a node of weight ``w``
(:func:`interleave_round`, what ``PagePlacement`` places by); over whole rounds a node
holds ``w / sum(w)`` of the pages, which is :func:`policy_shares` -- the fractions the
epoch-level experiments (MLC, server apps, weighted interleave) spread accesses by,
for any non-negative weights (fractional ones are the same rule with the weights scaled
to whole numbers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np
from numba import njit

#: Page types (a trace's ``page_type`` codes; ANON and FILE also index the kernel's LRU
#: list pairs, where shmem pages go with anon).
ANON, FILE, SHMEM = 0, 1, 2
#: Names of the page types, in code order.
PAGE_TYPES = ("anon", "file", "shmem")
#: ``flags`` bits.
DEMOTED, PROMOTED = 1, 2

K = TypeVar("K")


def interleave_round(weights: Sequence[int]) -> np.ndarray:
    """One interleave round: the position (in ``weights``) of the node each index goes
    to; index ``i`` of a mapping goes to ``round[i % len(round)]``."""
    return np.repeat(np.arange(len(weights)), np.asarray(weights, dtype=np.int64))


def policy_shares(weights: Mapping[K, float]) -> dict[K, float]:
    """Fraction of pages (and so of accesses, for uniform access) on each node: a
    round's ``w / sum(w)``. Interleave is all weights 1, bind one node of weight 1."""
    total = float(sum(weights.values()))
    if total <= 0 or any(w < 0 for w in weights.values()):
        raise ValueError(f"weights must be non-negative with a positive sum, not {dict(weights)}")
    return {n: w / total for n, w in weights.items() if w > 0}


class Placement:
    """Every page's node, type, allocation and access epochs, counters and flags (see
    the module docstring); ``page_type`` per page or None (all anon)."""

    def __init__(self, n_pages: int = 0, page_size: int = 4096,
                 page_type: np.ndarray | None = None, pingpong: int = 16) -> None:
        if n_pages < 0:
            raise ValueError(f"n_pages must be at least 0, got {n_pages}")
        self.page_size = page_size
        self.pingpong = pingpong
        self.epoch = 0
        self.pingpongs = 0
        self.node = np.empty(0, np.int64)
        self.page_type = np.empty(0, np.int8)
        self.alloc_epoch = np.empty(0, np.int64)
        self.last_access = np.empty(0, np.int64)
        self.accesses = np.empty(0, np.int64)
        self.flags = np.empty(0, np.uint8)
        self.left = np.empty(0, np.int64)
        self.moved_epoch = np.empty(0, np.int64)
        self._unmapped: list[np.ndarray] = []  # moved or freed since take_unmapped()
        self.grow(n_pages, page_type)

    @property
    def n_pages(self) -> int:
        """Pages of the footprint."""
        return self.node.size

    def grow(self, n: int, page_type: np.ndarray | None = None) -> range:
        """Add ``n`` pages, not resident, of ``page_type`` (None: anon); returns their
        ids. The arrays are replaced: hold the Placement, not its arrays."""
        if page_type is None:
            types = np.full(n, ANON, np.int8)
        else:
            types = np.asarray(page_type)
            if types.shape != (n,) or (types.size and not np.isin(types, (ANON, FILE, SHMEM))
                                        .all()):
                raise ValueError(f"page_type must give one of the codes {ANON} (anon), {FILE} "
                                 f"(file), {SHMEM} (shmem) for each of the {n} pages")
        start = self.n_pages
        for name, fill in (("node", -1), ("alloc_epoch", -1), ("last_access", -1),
                           ("accesses", 0), ("flags", 0), ("left", -1), ("moved_epoch", 0)):
            old = getattr(self, name)
            setattr(self, name, np.concatenate([old, np.full(n, fill, old.dtype)]))
        self.page_type = np.concatenate([self.page_type, types.astype(np.int8)])
        return range(start, start + n)

    def place(self, pages: np.ndarray, node: int | np.ndarray) -> None:
        """Allocate the non-resident ``pages`` on ``node`` (one, or one per page) in
        this epoch."""
        placed = self.node[pages] >= 0
        if placed.any():
            page = pages[np.argmax(placed)]
            raise ValueError(f"page {page} is already on node {self.node[page]}")
        self.node[pages] = node
        self.alloc_epoch[pages] = self.epoch
        self.flags[pages] = 0

    def move(self, pages: np.ndarray, dest: int, flag: int = 0) -> None:
        """Move resident ``pages`` (distinct, none on ``dest``) to ``dest``; ``flag``
        says how (:data:`DEMOTED`, :data:`PROMOTED` or 0)."""
        back = (self.left[pages] == dest) & (self.epoch - self.moved_epoch[pages] <= self.pingpong)
        self.pingpongs += int(back.sum())
        self.left[pages] = self.node[pages]
        self.moved_epoch[pages] = self.epoch
        self.node[pages] = dest
        self.flags[pages] = flag
        self._unmapped.append(np.asarray(pages))

    def free(self, pages: np.ndarray) -> None:
        """The resident ``pages`` leave memory (reclaimed, unmapped)."""
        self.node[pages] = -1
        self.flags[pages] = 0
        self._unmapped.append(np.asarray(pages))

    def take_unmapped(self) -> np.ndarray:
        """The pages moved or freed since the last call (with repeats): each was unmapped,
        so its translations must leave every TLB (a shootdown)."""
        out = np.concatenate(self._unmapped) if self._unmapped else np.empty(0, np.int64)
        self._unmapped = []
        return out

    def access(self, pages: np.ndarray, counts: np.ndarray | None = None,
               n_nodes: int = 0) -> np.ndarray:
        """Accesses to ``pages`` in this epoch: ids with repeats, or distinct ids and
        their ``counts``. Returns how many of the (distinct) pages are resident on each
        of nodes ``0..n_nodes-1`` -- one compiled pass over them."""
        if counts is None:
            pages, counts = np.unique(pages, return_counts=True)
        pages = np.ascontiguousarray(pages, dtype=np.int64)
        per_node = np.zeros(n_nodes, np.int64)
        bad = _access(pages, np.ascontiguousarray(counts, dtype=np.int64), self.epoch,
                      self.accesses, self.last_access, self.node, per_node)
        if bad >= 0:
            raise IndexError(f"page ids must be in [0, {self.n_pages}), got {pages[bad]}")
        return per_node

    def counts(self, pages: slice | np.ndarray = slice(None), n_nodes: int = 0) -> np.ndarray:
        """Resident pages per node (at least ``n_nodes`` entries), of ``pages`` or all."""
        node = self.node[pages]
        return np.bincount(node[node >= 0], minlength=n_nodes)

    def shares(self, pages: slice | np.ndarray = slice(None)) -> dict[int, float]:
        """Fraction of the resident ``pages`` (or all) on each node that holds any."""
        counts = self.counts(pages)
        return policy_shares({n: int(c) for n, c in enumerate(counts.tolist()) if c})


@njit(cache=True, nogil=True)
def _access(pages, counts, epoch, accesses, last_access, node, per_node) -> int:
    """:meth:`Placement.access` on distinct ``pages``: the index of the first page out of
    range (nothing changed), or -1."""
    for i in range(pages.shape[0]):
        if pages[i] < 0 or pages[i] >= node.shape[0]:
            return i
    for i in range(pages.shape[0]):
        p = pages[i]
        accesses[p] += counts[i]
        last_access[p] = epoch
        if 0 <= node[p] < per_node.shape[0]:
            per_node[node[p]] += 1
    return -1
