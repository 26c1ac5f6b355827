"""Spatial sampling: a 1-in-``k`` sample of the pages on a core scaled down ``k`` times.

Set sampling (Kessler, Hill and Wood, "A comparison of trace-sampling techniques for
multi-megabyte caches", IEEE ToC 1994; the sampled sets of UMON and SHiP) simulates a
fraction of a cache's sets and the references that map to them. Here the unit is the
page: pages are kept when a hash of their number falls in one of ``k`` classes, every
TLB and cache has ``1/k`` of its entries (sets, or ways where a structure has fewer
sets than ``k``), and the kept pages are renumbered densely in their original order, so
the scaled core sees a footprint ``k`` times smaller with the same density of pages
per TLB set, lines per cache set and entries per page-table line. Counts and summed
latencies of the kept accesses, times ``k``, estimate the whole trace's (each page is
kept with probability ``1/k``: Horvitz-Thompson, unbiased). The hierarchy's work falls
by about ``k``; what the estimate costs in accuracy is measured, not assumed
(``benchmarks/bench_memory.py``, ``tests/test_sampling.py``, experiments/README.md).

Not exact: a set of the scaled core holds lines of ``k`` times fewer pages from a
random subset of them, so a trace whose few hottest pages carry much of its misses
varies with the sample (the seed); placement, the kernel's memory model and the
policies still see every page.
"""

from __future__ import annotations

import numpy as np

from cxlsim.memory.hierarchy import CpuParams
from cxlsim.memory.pagetable import WALK_LEVELS

#: splitmix64's constants (Steele, Lea and Flood, OOPSLA 2014): a page number's hash.
_GOLDEN, _MIX1, _MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def check_factor(k: int) -> None:
    """``k`` must be a power of two (1: no sampling)."""
    if k < 1 or k & (k - 1):
        raise ValueError(f"the sampling factor must be a power of two (1, 2, 4, ...), got {k}")


def _hash(values: np.ndarray, seed: int) -> np.ndarray:
    """splitmix64 of ``values`` (uint64) under ``seed``."""
    with np.errstate(over="ignore"):
        h = values.astype(np.uint64) + np.uint64((seed * _GOLDEN + _GOLDEN) & (2**64 - 1))
        h = (h ^ (h >> np.uint64(30))) * np.uint64(_MIX1)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(_MIX2)
        return h ^ (h >> np.uint64(31))


def kept_pages(n_pages: int, k: int, seed: int = 0,
               counts: np.ndarray | None = None) -> np.ndarray:
    """Each of pages ``0..n_pages-1``'s number on the scaled core (kept pages in their
    order), or -1 for pages left out; about ``n_pages / k`` are kept.

    Without ``counts`` a page is kept when its hash falls in one class of ``k``. With
    each page's access ``counts`` (a trace's survey), the sample is stratified by
    hotness: of the pages ranked by accesses, one of each ``k`` consecutive ones (drawn
    by the hash) is kept, so the sample's accesses per page follow the trace's -- a
    zipfian trace's few hottest pages, which carry much of its accesses, then never
    all land in, or all stay out of, the sample."""
    check_factor(k)
    if k == 1:
        return np.arange(n_pages, dtype=np.int64)
    if counts is None:
        keep = (_hash(np.arange(n_pages), seed) >> np.uint64(40)) % np.uint64(k) == 0
    else:
        order = np.argsort(-np.asarray(counts), kind="stable")
        groups = np.arange(n_pages) // k
        pick = (_hash(np.arange(-(-n_pages // k)), seed) >> np.uint64(40)) % np.uint64(k)
        keep = np.zeros(n_pages, bool)
        keep[order[np.arange(n_pages) % k == pick[groups]]] = True
    rank = np.full(n_pages, -1, dtype=np.int64)
    rank[keep] = np.arange(int(keep.sum()), dtype=np.int64)
    return rank


def one_set(entries: int, k: int, least: int = 1) -> int:
    """Entries of a structure of ``entries`` with fewer sets than ``k`` under the
    similarity law: ``entries / k`` rounded half up, at least ``least`` (and at most
    ``entries``)."""
    return min(entries, max(least, (2 * entries + k) // (2 * k)))


def least_lines(page_size: int = 4096) -> int:
    """Lines a cache keeps under the similarity law however coarse the scale: one
    access's, its page walk's entries and its data line. The walk's upper levels are a
    line or two whatever the footprint; the real cache keeps them hot beside hundreds of
    other lines, and a scaled one with fewer lines than an access touches would evict
    them at every walk (policy-compare at S = 256 with a 3-line L1D: 17 % more time a
    record than at S = 16; with 5 lines, the same time)."""
    return WALK_LEVELS[page_size] + 1


def scaled_cpu(cpu: CpuParams, k: int, page_size: int = 4096,
               keep_ways: bool = False) -> CpuParams:
    """``cpu`` with every cache and its TLB arrays for ``page_size`` at ``1/k`` of their
    entries: a set-associative structure keeps its ways and loses sets. One with fewer
    sets than ``k`` becomes one fully associative set of ``entries / k`` entries: for a
    sample that fraction must be whole; under the similarity law (``keep_ways``) it is
    rounded half up, at least one entry, and a cache at least :func:`least_lines` (a
    fully associative structure stays exactly what it was, a set-associative one keeps
    its reach but not its conflicts). ValueError names a structure that cannot be
    divided so."""
    check_factor(k)
    if k == 1:
        return cpu

    def divide(name: str, entries: int, ways: int, least: int = 1) -> tuple[int, int]:
        whole = entries // ways >= k
        if keep_ways and not whole:
            return (left := one_set(entries, k, least)), left
        if entries % k:
            what = "the scale" if keep_ways else "a sampling factor of"
            raise ValueError(f"{cpu.name}: {name} has {entries} entries, which {what} {k} "
                             f"does not divide; expected a factor that divides every TLB "
                             f"and cache")
        return (entries // k, ways) if whole else (entries // k, entries // k)

    tlbs = []
    for tlb in cpu.tlbs:
        arrays = []
        for a in tlb.arrays:
            if a.page_size == page_size:
                entries, ways = divide(tlb.name, a.entries, a.ways)
                arrays.append(a.model_copy(update={"entries": entries, "ways": ways}))
        tlbs.append(tlb.model_copy(update={"arrays": arrays or tlb.arrays}))
    caches = []
    for c in cpu.caches:
        lines, ways = divide(c.name, c.sets * c.ways, c.ways, least_lines(page_size))
        caches.append(c.model_copy(update={"size": lines * c.line, "ways": ways}))
    how = "scale" if keep_ways else "sample"
    return cpu.model_copy(update={"tlbs": tlbs, "caches": caches,
                                  "name": f"{cpu.name} (1/{k} {how})"})


def collapsed(cpu: CpuParams, k: int, page_size: int = 4096) -> list[tuple[str, str]]:
    """The caches and ``page_size`` TLB arrays of ``cpu`` with fewer sets than ``k``:
    (name, what :func:`scaled_cpu` makes of them under the similarity law)."""
    found = [(t.name, a.entries, a.ways, 1) for t in cpu.tlbs for a in t.arrays
             if a.page_size == page_size]
    found += [(c.name, c.sets * c.ways, c.ways, least_lines(page_size)) for c in cpu.caches]
    return [(name, f"{entries // ways} sets of {ways} ways -> one set of "
                   f"{one_set(entries, k, least)} (fully associative)")
            for name, entries, ways, least in found if entries // ways < k]
