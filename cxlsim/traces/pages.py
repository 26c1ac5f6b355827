"""Dense page ids for sparse address spaces.

Real traces (valgrind lackey, Pin, ``perf mem``) carry 47-bit virtual addresses: heap,
stack and libraries terabytes apart. Per-page state sized by the address range would not
fit; :class:`PageCompactor` numbers the pages a trace touches in first-seen order, chunk
by chunk, so the page table and every per-page array are sized by the footprint. The
mapping is an open-addressing hash table (Fibonacci hashing, linear probing, at most half
full, each slot's key beside its id) walked by a compiled loop, one probe sequence per record: a new page gets the next
id where it is first met. (Hashing each chunk's distinct pages with pandas and merging
them into a sorted array cost ~10x more: sorting, binary searches over the footprint.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cxlsim.memory._kernels import prefetch

#: Bytes of a base page.
PAGE_BYTES = 4096

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: Fibonacci hashing
#: Records ahead whose table slot is prefetched (the table outgrows the host's caches).
AHEAD = 16


@njit(cache=True, inline="always")
def _slot(page: np.uint64, bits: int) -> np.uint64:
    return (page * _GOLDEN) >> np.uint64(64 - bits)


@njit(cache=True, nogil=True)
def _number(addr, shift, table, order, count, bits, start, out) -> tuple[int, int]:
    """Give ``out[i]`` the id of the page of ``addr[i]`` (``addr >> shift``) from
    ``start`` on, numbering new pages from ``count`` (their page numbers appended to
    ``order``). Stops where the table would become more than half full; returns
    ``(next i, count)``."""
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    shift = np.uint64(shift)
    n = addr.shape[0]
    flat = table.reshape(-1)
    for i in range(start, n):
        if i + AHEAD < n:  # the host fetches a later record's slot meanwhile
            prefetch(flat, _slot(addr[i + AHEAD] >> shift, bits) * np.uint64(2))
        page = addr[i] >> shift
        key = page + np.uint64(1)
        s = _slot(page, bits)
        while table[s, 0] != key and table[s, 0] != 0:
            s = (s + np.uint64(1)) & mask
        if table[s, 0] == 0:
            if count == order.shape[0]:  # room for half as many ids as slots
                return i, count
            table[s, 0], table[s, 1] = key, count
            order[count] = page
            count += 1
        out[i] = table[s, 1]
    return n, count


@njit(cache=True)
def _rehash(order, count, table, bits) -> None:
    """Insert pages ``order[:count]`` (ids = positions) into an empty table."""
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    for n in range(count):
        s = _slot(order[n], bits)
        while table[s, 0] != 0:
            s = (s + np.uint64(1)) & mask
        table[s, 0], table[s, 1] = order[n] + np.uint64(1), n


def _table(bits: int) -> np.ndarray:
    """An empty table of ``2**bits`` slots: (page number + 1, id), 0 marking a free slot;
    a slot's key and id share a host cache line (one miss a probe, not two)."""
    return np.zeros((1 << bits, 2), np.uint64)


class PageCompactor:
    """Maps page numbers to dense ids 0, 1, 2, ... in the order pages are first seen."""

    def __init__(self, page_bytes: int = PAGE_BYTES) -> None:
        if page_bytes < 1 or page_bytes & (page_bytes - 1):
            raise ValueError(f"page size must be a power of two bytes, not {page_bytes!r}")
        self.shift = page_bytes.bit_length() - 1
        self._bits = 6                              # the table has 2^bits slots
        self._table = _table(self._bits)
        self._order = np.empty(1 << (self._bits - 1), np.uint64)  # page of each id
        self._count = 0

    @property
    def footprint(self) -> int:
        """Distinct pages seen so far."""
        return self._count

    def pages(self) -> np.ndarray:
        """The page number of each dense id (id order)."""
        return self._order[:self._count].copy()

    def ids(self, addr: np.ndarray) -> np.ndarray:
        """Dense page ids of byte addresses ``addr`` (new pages get the next ids, in the
        order of their first access)."""
        addr = np.ascontiguousarray(addr, dtype=np.uint64)
        out = np.empty(addr.shape[0], np.int64)
        done = 0
        while True:
            done, self._count = _number(addr, self.shift, self._table, self._order,
                                        self._count, self._bits, done, out)
            if done == addr.shape[0]:
                return out
            self._grow()

    def _grow(self) -> None:
        """Double the table (and the room for ids) and reinsert every page."""
        self._bits += 1
        self._table = _table(self._bits)
        order = np.empty(1 << (self._bits - 1), np.uint64)
        order[:self._count] = self._order[:self._count]
        self._order = order
        _rehash(self._order, self._count, self._table, self._bits)
