"""The trace's first pass: its pages numbered densely in first-seen order
(:class:`~cxlsim.traces.pages.PageCompactor`), so the page table and every per-page array
are sized by the footprint, each page's accesses counted (what an offline policy needs)
and its type (anon or file) taken from the trace's ``page_type`` column (anon without
one)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cxlsim.prefetch import prefetched
from cxlsim.traces.pages import PageCompactor

#: A source of trace chunks: a callable returning a fresh iterator of column dicts
#: (``addr``, ``op``, ``thread``, optionally ``page_type``), so the trace can be read twice.
Chunks = Callable[[], Iterator[dict[str, np.ndarray]]]


@dataclass
class Survey:
    """The first pass: pages in first-seen order, their access counts and types (the
    page's first record's), the threads."""

    compactor: PageCompactor
    counts: np.ndarray
    page_type: np.ndarray
    threads: list[int]
    records: int

    @property
    def footprint(self) -> int:
        return self.compactor.footprint


def survey(chunks: Chunks) -> Survey:
    """Read the trace once: dense page ids, accesses and type per page, threads in order."""
    pc, counts, threads, records = PageCompactor(), np.zeros(0, np.int64), {}, 0
    types = np.zeros(0, np.int8)
    for chunk in prefetched(chunks()):  # the next chunk is read while this one is hashed
        known = counts.size
        ids = pc.ids(chunk["addr"])
        if pc.footprint > known:
            counts = np.concatenate([counts, np.zeros(pc.footprint - known, np.int64)])
            types = np.concatenate([types, np.zeros(pc.footprint - known, np.int8)])
            if "page_type" in chunk:  # a new page's type is its first record's
                # new ids come in order of first access: a first access is a record
                # whose id exceeds every id before it (no sort needed)
                before = np.maximum.accumulate(np.maximum(ids, known - 1))
                first = np.flatnonzero(ids > np.concatenate([[known - 1], before[:-1]]))
                types[ids[first]] = chunk["page_type"][first]
        counts += np.bincount(ids, minlength=counts.size)
        for t in np.sort(pd.unique(chunk["thread"])).tolist():  # hashing: no sort of all
            threads.setdefault(int(t), len(threads))
        records += len(ids)
    return Survey(pc, counts, types, sorted(threads, key=threads.get), records)
