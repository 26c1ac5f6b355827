"""A DAMON-style access monitor: region-sampled access frequency over the address space
-- the kernel subsystem (mm/damon/); the DAMOS schemes acting on what it sees are a
placement policy (:mod:`cxlsim.tiered.policies.damon`).

As DAMON's design describes it (Documentation/mm/damon/design.rst): the monitored space
(here the run's pages in first-seen order, which keeps a trace's address locality) is a
set of regions; every sampling interval one random page per region is checked for an
access since it was last checked (DAMON checks and clears the PTE Accessed bit; here a
bit of the monitor's own, so reclaim's aging is not disturbed), and the region's
``nr_accesses`` counts the hits over an aggregation interval. At the end of each
aggregation interval the regions are published, adjacent regions whose counts differ by
at most a tenth of the highest are merged while the merged region stays within
``1/min_regions`` of the space (``kdamond_merge_regions``: counts and ages weighted by
size), every region is split in two at a random page unless there are more than
``max_regions / 2`` (``kdamond_split_regions``), the counts restart and the next pages
to check are picked at once; ``age`` counts the aggregations a region's count stayed
within that tenth of its previous one.
Defaults: sample 5 ms, aggregation 100 ms, 10-1000 regions. The trace-driven run hands
the monitor each epoch's accesses at once, so a sampling interval shorter than an epoch
sees nothing in the samples that fall inside one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DamonParams:
    """Intervals (ns) and region bounds of the monitor."""

    sample: float = 5e6
    aggregate: float = 100e6
    min_regions: int = 10
    max_regions: int = 1000


class Damon:
    """Regions ``[start[i], end[i])`` of page ids with their ``nr_accesses`` and ``age``."""

    def __init__(self, pages: int, params: DamonParams, rng: np.random.Generator) -> None:
        self.params, self.rng = params, rng
        n = max(1, min(params.min_regions, pages))
        self.start = np.linspace(0, pages, n + 1).astype(np.int64)[:-1]
        self.end = np.append(self.start[1:], pages)
        self.nr_accesses = np.zeros(n, np.int64)
        self.age = np.zeros(n, np.int64)
        self.accessed = np.zeros(pages, bool)  # accessed since last sampled
        self._last = np.zeros(n, np.int64)     # last aggregation's counts
        self.pages = pages
        self._picked = np.empty(0, np.int64)   # the page checked next, per region

    def access(self, pages: np.ndarray) -> None:
        """Pages the workload touched."""
        self.accessed[pages] = True

    def sample(self) -> None:
        """End a sampling interval: count the regions whose picked page was accessed in
        it, then pick and clear a random page per region for the next (DAMON's
        check_accesses and prepare_access_checks)."""
        if self._picked.size == self.start.size:
            self.nr_accesses += self.accessed[self._picked]
        self._prepare()

    def _prepare(self) -> None:
        """Pick and clear a random page per region (``prepare_access_checks``)."""
        width = self.end - self.start
        self._picked = self.start + (self.rng.random(width.size) * width).astype(np.int64)
        self.accessed[self._picked] = False

    def aggregate(self) -> list[tuple[int, int, int, int]]:
        """End an aggregation interval: the regions (start, end, nr_accesses, age), then
        age, merge and split them for the next."""
        out = list(zip(self.start.tolist(), self.end.tolist(), self.nr_accesses.tolist(),
                       self.age.tolist()))
        limit = int(self.nr_accesses.max()) // 10
        similar = np.abs(self.nr_accesses - self._last) <= limit
        self.age = np.where(similar, self.age + 1, 0)
        self._merge(limit)
        self._split()
        self._last = self.nr_accesses.copy()
        self.nr_accesses[:] = 0
        self._prepare()  # regions changed: pick afresh for the next interval's first sample
        return out

    def _merge(self, limit: int) -> None:
        """Adjacent regions with counts within ``limit`` become one while it stays within
        ``pages / min_regions`` (``damon_merge_two_regions``: size-weighted count and
        age)."""
        start, end, nr, age = (a.tolist() for a in (
            self.start, self.end, self.nr_accesses, self.age))
        size_limit = max(self.pages // self.params.min_regions, 1)
        keep = [0]
        for i in range(1, len(start)):
            j = keep[-1]
            a, b = end[j] - start[j], end[i] - start[i]
            if abs(nr[i] - nr[j]) <= limit and a + b <= size_limit:
                nr[j] = (nr[j] * a + nr[i] * b) // (a + b)
                age[j] = (age[j] * a + age[i] * b) // (a + b)
                end[j] = end[i]
            else:
                keep.append(i)
        self.start = np.array(start, np.int64)[keep]
        self.end = np.array(end, np.int64)[keep]
        self.nr_accesses = np.array(nr, np.int64)[keep]
        self.age = np.array(age, np.int64)[keep]

    def _split(self) -> None:
        """Each region in two at a random page unless there are more than
        ``max_regions / 2``; both halves keep the region's count and age."""
        if self.start.size > self.params.max_regions // 2:
            return
        width = self.end - self.start
        can = np.flatnonzero(width > 1)
        if not can.size:
            return
        cut = self.start[can] + 1 + (self.rng.random(can.size) * (width[can] - 1)).astype(
            np.int64)
        start = np.sort(np.concatenate([self.start, cut]))
        owner = np.searchsorted(self.start, start, side="right") - 1
        self.start, self.end = start, np.append(start[1:], self.end[-1])
        self.nr_accesses, self.age = self.nr_accesses[owner], self.age[owner]
