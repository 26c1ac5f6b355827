"""An epoch's records grouped by core in one compiled pass, and prefetching epochs on a
helper thread: the same results as the plain numpy and the plain loop."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.prefetch import prefetched
from cxlsim.tiered.records import RecordGrouper
from cxlsim.traces.native import WRITE


@settings(max_examples=60, deadline=None)
@given(threads=st.lists(st.integers(0, 5), min_size=1, max_size=200),
       cores=st.integers(1, 4), seed=st.integers(0, 100), sample=st.booleans())
def test_grouping_is_the_stable_sort_by_core(threads, cores, seed, sample):
    """Every record (or, sampling, those of kept pages, renumbered) by core in order."""
    rng = np.random.default_rng(seed)
    n = len(threads)
    thread = np.array([t * 1000 + 7 for t in threads], np.uint32)  # any thread ids
    ids = rng.integers(0, 50, n)
    records = {"addr": rng.integers(0, 2**40, n).astype(np.uint64), "thread": thread,
               "op": rng.integers(0, 2, n).astype(np.uint8)}
    core_of = {int(t): i % cores for i, t in enumerate(dict.fromkeys(thread.tolist()))}
    rank = np.where(rng.random(50) < 0.5, rng.permutation(50), -1) if sample else None
    got = RecordGrouper(core_of, cores, 12, rank).group(ids, records)
    which = np.array([core_of[int(t)] for t in thread])
    assert got.records.tolist() == np.bincount(which, minlength=cores).tolist()
    pages = ids if rank is None else rank[ids]
    kept = pages >= 0
    which, pages, addr = which[kept], pages[kept], records["addr"][kept]
    order = np.argsort(which, kind="stable")
    vaddr = pages << 12 | (addr.astype(np.int64) & 4095)
    assert got.vaddr.tolist() == vaddr[order].tolist()
    assert got.bounds.tolist() == np.searchsorted(which[order], np.arange(cores + 1)).tolist()
    assert got.writes == int((records["op"] == WRITE).sum())


def test_prefetching_keeps_the_order_and_the_items():
    assert list(prefetched(iter(range(1000)), depth=3)) == list(range(1000))
    assert list(prefetched(iter([]))) == []


def test_a_producers_exception_is_raised_in_order():
    def items():
        yield 1
        yield 2
        raise ValueError("bad record")

    got = []
    with pytest.raises(ValueError, match="bad record"):
        for x in prefetched(items()):
            got.append(x)
    assert got == [1, 2]


def test_a_consumer_that_stops_stops_the_producer():
    made = []

    def endless():
        while True:
            made.append(len(made))
            yield made[-1]

    for x in prefetched(endless(), depth=2):
        if x == 5:
            break
    assert not any(t.name == "cxlsim-prefetch" for t in threading.enumerate())
    assert len(made) <= 5 + 1 + 2 + 1  # what was consumed, the queue, one in hand
