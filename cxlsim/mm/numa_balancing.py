"""NUMA balancing's hint-fault scanner (kernel/sched/fair.c ``task_numa_work``,
``update_task_scan_period``): kernel mechanism that tells a policy which pages a task
uses and from where.

After its delay, every period the scanner makes the next stretch of the task's address
space PROT_NONE (in tiering mode skipping top-tier pages); the next access to such a page
is a hint fault (``numa_hint_faults``), which costs the task a fault's kernel time and
reaches the policy with its latency since the scan -- what NUMA balancing's promotion
decides on. The period is the kernel's: a pass over the resident pages takes
scan_period_min to _max (per scan, divided by the pass's windows, at most the maximum
scan rate), lengthened after a pass of local or no faults and shortened after remote
ones. :class:`Scanner` holds the parameters, :class:`NumaScan` one run's scan state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: update_task_scan_period's slots of a period, and the local share (in slots) at or
#: above which scanning slows down (kernel/sched/fair.c NUMA_PERIOD_SLOTS, _THRESHOLD).
PERIOD_SLOTS, PERIOD_THRESHOLD = 10, 7


@dataclass(frozen=True)
class Scanner:
    """NUMA balancing's hint-fault scanner (kernel/sched/fair.c): the first scan after
    ``delay``, then ``pages`` at a time; a pass over the resident pages (``windows`` of
    ``pages``) takes between ``period`` and ``period_max`` ns, each scan at least
    ``floor`` ns (the kernel's maximum scan rate); ``tiering`` skips top-tier pages; each
    hint fault costs the faulting task ``fault_cost`` ns."""

    delay: float
    period: float
    pages: int
    tiering: bool
    fault_cost: float
    period_max: float = math.inf
    floor: float = 0.0

    def bounds(self, resident: int) -> tuple[float, float]:
        """``task_scan_min`` and ``task_scan_max``: one scan's shortest and longest
        period for ``resident`` pages."""
        windows = max(-(-resident // self.pages), 1)
        low = max(self.floor, self.period / windows)
        return low, max(low, self.period_max / windows)

    @staticmethod
    def adapt(period: float, low: float, high: float, local: int, remote: int) -> float:
        """``update_task_scan_period`` after a pass with ``local`` and ``remote`` hint
        faults (pages on the CPUs' node, or elsewhere): no faults or mostly local ones
        slow the scanning down, remote ones speed it up (every fault of a single trace is
        private, so the kernel's private/shared scaling is one)."""
        if local + remote == 0:
            return min(high, 2 * period)
        slot = math.ceil(period / PERIOD_SLOTS)
        ratio = local * PERIOD_SLOTS // (local + remote)
        diff = max(ratio - PERIOD_THRESHOLD, 1) * slot if ratio >= PERIOD_THRESHOLD \
            else -(PERIOD_THRESHOLD - ratio) * slot
        return min(max(period + diff, low), high)


class NumaScan:
    """``scanner``'s scan over a task's ``pages`` pages (ids in address order): when each
    page was made PROT_NONE (``marked``, ns; -1: not since its last fault) and whether
    it is now (``armed``), the pages marked since :meth:`take_scanned`, the hint
    faults of the current pass on the CPUs' node and elsewhere (``locality``) and the
    passes completed (``passes``)."""

    def __init__(self, scanner: Scanner, pages: int) -> None:
        self.scanner, self.pages = scanner, pages
        self.marked = np.full(pages, -1.0)
        self.armed = np.zeros(pages, bool)  # a byte a page: a fast check
        self.locality = [0, 0]
        self._scanned: list[np.ndarray] = []
        self._cursor = 0
        self._period: float | None = None
        self._progress = 0
        self.passes = 0

    def scan(self, node: np.ndarray, toptier: np.ndarray, now: float) -> float:
        """One scan at ``now`` (ns) over pages on ``node`` (-1: not resident): the next
        ``scanner.pages`` of the address space (resident ones; in tiering mode not on
        ``toptier`` nodes) become PROT_NONE; after each pass the period adapts to the
        pass's faults (:meth:`Scanner.adapt`). Returns the wait until the next scan."""
        scanner = self.scanner
        low, high = scanner.bounds(np.count_nonzero(node >= 0))  # resident
        period = low if self._period is None else min(max(self._period, low), high)
        window = (self._cursor + np.arange(min(scanner.pages, self.pages))) \
            % max(self.pages, 1)
        self._cursor = int(window[-1] + 1) if window.size else 0
        where = node[window]
        keep = where >= 0
        if scanner.tiering:
            keep &= ~toptier[np.maximum(where, 0)]
        self.marked[window[keep]], self.armed[window[keep]] = now, True
        self._scanned.append(window[keep])
        self._progress += window.size
        if self._progress >= self.pages:  # a pass ended: adapt the period
            self._progress -= self.pages
            self.passes += 1
            period = Scanner.adapt(period, low, high, *self.locality)
            self.locality = [0, 0]
        self._period = period
        return period

    def faults(self, pages: np.ndarray, node: np.ndarray, has_cpus: np.ndarray,
               now: float) -> tuple[np.ndarray, np.ndarray]:
        """The hint faults among distinct ``pages`` accessed at ``now``: the first access
        to each since a scan marked it. Returns them and their latency since the scan
        (ns); they count in the pass's locality (their node has CPUs or not) and are
        unmarked."""
        faults = pages[self.armed[pages]]
        on_cpus = has_cpus[np.maximum(node[faults], 0)]
        self.locality[0] += int(on_cpus.sum())
        self.locality[1] += int(faults.size - on_cpus.sum())
        latency = now - self.marked[faults]
        self.marked[faults], self.armed[faults] = -1.0, False
        return faults, latency

    def take_scanned(self) -> np.ndarray:
        """The pages marked since the last call, in scan order."""
        out = np.concatenate(self._scanned) if self._scanned else np.empty(0, np.int64)
        self._scanned.clear()
        return out
