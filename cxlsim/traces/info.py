"""``cxlsim trace info``: what a native trace holds, read in one streaming pass.

Per-page access counts are kept as a step function over page numbers: each record adds
its weight (1, or its ``weight`` column) to every page from its first to its last byte,
stored as +w at the first page and -w after the last, so a record covering a whole DAMON
region costs no more than a single access. Chunks' steps are merged as they pile up,
so memory grows with the number of distinct steps, not with the records.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from cxlsim.traces.native import PAGE_TYPES, READ, Columns, open_trace

#: Shares of the hottest pages reported (the share of the accesses each holds is what a
#: measured page-heat CDF gives, so a model and a measurement compare point for point).
HOT_SHARES = (0.01, 0.05, 0.1, 0.2, 0.5)


@dataclass
class TraceInfo:
    """Summary of a trace: counts, clock span, footprint and page heat."""

    path: str
    records: int
    clock: str
    source: str
    first_time: int | None
    last_time: int | None
    reads: int
    writes: int
    accesses: int                  # the records' weights summed (= records if unweighted)
    threads: int
    lowest_addr: int | None
    highest_addr: int | None
    page_size: int
    pages: int                     # distinct pages touched
    page_types: dict[str, int] = field(default_factory=dict)   # records per page type
    regions: dict[str, int] = field(default_factory=dict)      # records per region tag
    per_page: dict[str, float] = field(default_factory=dict)   # accesses per page: stats
    hottest: dict[str, float] = field(default_factory=dict)    # share of accesses in top x
    histogram: list[tuple[int, int, int]] = field(default_factory=list)  # (lo, hi, pages)

    @property
    def footprint(self) -> int:
        return self.pages * self.page_size

    def to_dict(self) -> dict:
        return {**asdict(self), "footprint": self.footprint}


class _Steps:
    """Per-page record and access counts as steps at sorted page numbers, merged lazily.

    Each step holds the change, at its page, of the number of records covering a page
    (which makes the footprint, even where DAMON saw no access) and of their weight.
    """

    def __init__(self) -> None:
        self.merged = (np.zeros(0, np.uint64), np.zeros((0, 2)))
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.pending_size = 0

    def add(self, first: np.ndarray, last: np.ndarray, weight: np.ndarray | None) -> None:
        """Records covering pages ``first`` to ``last`` with ``weight`` (None: 1 each)."""
        single = first == last  # most accesses: count them per page before making steps
        if weight is None:
            pages, covers = np.unique(first[single], return_counts=True)
            weights = covers.astype(np.float64)
            spread = np.ones(int(np.count_nonzero(~single)))
        else:
            pages, inverse = np.unique(first[single], return_inverse=True)
            covers = np.bincount(inverse, minlength=len(pages))
            weights = np.bincount(inverse, weights=weight[single], minlength=len(pages))
            spread = weight[~single]
        one = np.uint64(1)
        where = np.concatenate([pages, pages + one, first[~single], last[~single] + one])
        cover = np.concatenate([covers, -covers, np.ones(len(spread)), -np.ones(len(spread))])
        heat = np.concatenate([weights, -weights, spread, -spread])
        self.pending.append(_combine(where, np.stack([cover, heat], axis=1)))
        self.pending_size += len(self.pending[-1][0])
        if self.pending_size > max(len(self.merged[0]), 1 << 22):
            self._merge()

    def _merge(self) -> None:
        parts = [self.merged, *self.pending]
        self.merged = _combine(np.concatenate([p[0] for p in parts]),
                               np.concatenate([p[1] for p in parts]))
        self.pending, self.pending_size = [], 0

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        """(pages, accesses per page) of each run of touched pages with one count."""
        self._merge()
        where, delta = self.merged
        if not len(where):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        level = np.cumsum(delta, axis=0)[:-1]
        length = np.diff(where).astype(np.int64)
        touched = level[:, 0] > 0.5
        return length[touched], np.rint(level[touched, 1]).astype(np.int64)


def _combine(where: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum the deltas (rows) at equal positions; drop the all-zero sums."""
    unique, inverse = np.unique(where, return_inverse=True)
    total = np.stack([np.bincount(inverse, weights=delta[:, c], minlength=len(unique))
                      for c in range(delta.shape[1])], axis=1)
    keep = np.any(total != 0, axis=1)
    return unique[keep], total[keep]


def trace_info(path: str | Path, page_size: int = 4096) -> TraceInfo:
    """Read the native trace at ``path`` once and summarise it."""
    if page_size < 1:
        raise ValueError("page_size must be at least 1")
    trace = open_trace(path)
    info = TraceInfo(path=str(path), records=trace.count, clock=trace.meta.clock,
                     source=trace.meta.source, first_time=None, last_time=None, reads=0,
                     writes=0, accesses=0, threads=0, lowest_addr=None, highest_addr=None,
                     page_size=page_size, pages=0)
    steps = _Steps()
    threads: set[int] = set()
    types = np.zeros(len(PAGE_TYPES), np.int64)
    regions: dict[int, int] = {}
    page = np.uint64(page_size)
    for chunk in trace.chunks():
        if not len(chunk["addr"]):
            continue
        _counts(info, chunk)
        threads.update(np.unique(chunk["thread"]).tolist())
        if "page_type" in chunk:
            types += np.bincount(chunk["page_type"], minlength=len(PAGE_TYPES))[:len(types)]
        if "region" in chunk:
            tags, counts = np.unique(chunk["region"], return_counts=True)
            for tag, count in zip(tags.tolist(), counts.tolist()):
                regions[tag] = regions.get(tag, 0) + count
        end = chunk["addr"] + np.maximum(chunk["size"], 1).astype(np.uint64) - np.uint64(1)
        weight = chunk["weight"].astype(np.float64) if "weight" in chunk else None
        steps.add(chunk["addr"] // page, end // page, weight)
    info.threads = len(threads)
    if "page_type" in trace.fields:
        info.page_types = dict(zip(PAGE_TYPES, types.tolist()))
    names = trace.meta.regions
    info.regions = {f"{tag} {names[tag]}" if tag in names else str(tag): count
                    for tag, count in sorted(regions.items())}
    _heat(info, *steps.segments())
    return info


def _counts(info: TraceInfo, chunk: Columns) -> None:
    """Add one chunk's operation counts, time span and address range to ``info``."""
    reads = int(np.count_nonzero(chunk["op"] == READ))
    info.reads += reads
    info.writes += len(chunk["op"]) - reads
    info.accesses += int(chunk["weight"].sum()) if "weight" in chunk else len(chunk["op"])
    time = chunk["time"]
    if info.first_time is None:
        info.first_time = int(time[0])
    info.last_time = int(time[-1])
    low, high = int(chunk["addr"].min()), int(chunk["addr"].max())
    info.lowest_addr = low if info.lowest_addr is None else min(info.lowest_addr, low)
    info.highest_addr = high if info.highest_addr is None else max(info.highest_addr, high)


def _heat(info: TraceInfo, pages: np.ndarray, count: np.ndarray) -> None:
    """Per-page statistics from runs of ``pages`` pages with ``count`` accesses each
    (0 for pages a record covers without an access, e.g. DAMON's idle regions)."""
    info.pages = int(pages.sum())
    if not info.pages:
        return
    order = np.argsort(-count, kind="stable")
    pages, count = pages[order], count[order]
    top = np.cumsum(pages)
    held = np.cumsum(pages * count)
    total = held[-1]

    def share(fraction: float) -> float:
        """Accesses held by the hottest ``fraction`` of the pages (a run's pages are alike)."""
        want = fraction * info.pages
        i = int(np.searchsorted(top, want))
        before = (top[i - 1], held[i - 1]) if i else (0, 0)
        return float((before[1] + (want - before[0]) * count[i]) / total) if total else 0.0

    def quantile(q: float) -> int:
        """Accesses of the page at quantile ``q``, coldest first ('lower' interpolation)."""
        rank = int(q * (info.pages - 1))
        coldest_first = np.cumsum(pages[::-1])
        return int(count[::-1][np.searchsorted(coldest_first, rank, side="right")])

    info.per_page = {"mean": float(total / info.pages), "min": int(count[-1]),
                     "median": quantile(0.5), "p90": quantile(0.9), "p99": quantile(0.99),
                     "max": int(count[0])}
    info.hottest = {f"{f * 100:g} %": share(f) for f in HOT_SHARES}
    # Buckets 0, 1, 2-3, 4-7, ...: bucket b > 0 holds counts 2^(b-1) .. 2^b - 1.
    bucket = np.where(count > 0, np.floor(np.log2(np.maximum(count, 1))) + 1, 0).astype(int)
    per_bucket = np.bincount(bucket, weights=pages)
    info.histogram = [((1 << b) >> 1, (1 << b) - 1, int(n))
                      for b, n in enumerate(per_bucket) if n]
