"""Dense page ids for sparse address spaces.

Real traces (valgrind lackey, Pin, ``perf mem``) carry 47-bit virtual addresses: heap,
stack and libraries terabytes apart. Per-page state sized by the address range would not
fit; :class:`PageCompactor` numbers the pages a trace touches in first-seen order, chunk
by chunk, so the page table and every per-page array are sized by the footprint. The
mapping is a sorted array of the pages seen and their ids: a chunk's distinct pages are
found by hashing (``pandas.factorize``, in first-seen order) and looked up by binary
search, no Python loop per record.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Bytes of a base page.
PAGE_BYTES = 4096


class PageCompactor:
    """Maps page numbers to dense ids 0, 1, 2, ... in the order pages are first seen."""

    def __init__(self, page_bytes: int = PAGE_BYTES) -> None:
        if page_bytes < 1 or page_bytes & (page_bytes - 1):
            raise ValueError(f"page size must be a power of two bytes, not {page_bytes!r}")
        self.shift = page_bytes.bit_length() - 1
        self._pages = np.empty(0, np.uint64)   # sorted page numbers seen
        self._ids = np.empty(0, np.int64)      # their dense ids
        self._index: pd.Index | None = None    # hash of _pages, while no page is new

    @property
    def footprint(self) -> int:
        """Distinct pages seen so far."""
        return len(self._pages)

    def pages(self) -> np.ndarray:
        """The page number of each dense id (id order)."""
        out = np.empty(len(self._pages), np.uint64)
        out[self._ids] = self._pages
        return out

    def ids(self, addr: np.ndarray) -> np.ndarray:
        """Dense page ids of byte addresses ``addr`` (new pages get the next ids, in the
        order of their first access)."""
        page = np.asarray(addr, dtype=np.uint64) >> np.uint64(self.shift)
        codes, unique = pd.factorize(page, sort=False)  # hashing: first-seen order
        unique = np.asarray(unique, dtype=np.uint64)
        if self._index is not None:  # no page was new last time: a hash lookup
            at = self._index.get_indexer(unique)
            known = at >= 0
        else:
            at = np.searchsorted(self._pages, unique)
            known = at < len(self._pages)
            known[known] = self._pages[at[known]] == unique[known]
        ids = np.empty(len(unique), np.int64)
        ids[known] = self._ids[at[known]]
        new = np.flatnonzero(~known)  # already in first-seen order
        if new.size:
            ids[new] = len(self._pages) + np.arange(new.size)
            merged = np.concatenate([self._pages, unique[new]])
            keep = np.argsort(merged, kind="stable")
            self._pages = merged[keep]
            self._ids = np.concatenate([self._ids, ids[new]])[keep]
            self._index = None
        elif self._index is None:
            self._index = pd.Index(self._pages)
        return ids[codes]
