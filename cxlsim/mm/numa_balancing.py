"""NUMA balancing's hint-fault scanner (kernel/sched/fair.c ``task_numa_work``,
``task_numa_fault``, ``update_task_scan_period``; mm/mprotect.c ``change_pte_range``):
kernel mechanism that tells a policy which pages a task uses and from where.

After its delay, every period the scanner makes the next stretch of the task's address
space PROT_NONE (in tiering mode skipping top-tier pages) and stamps each page it
protects with the time; a page still PROT_NONE from an earlier pass is skipped and keeps
its stamp (``pte_protnone``), so an idle page's latency grows. The next access to such a
page is a hint fault (``numa_hint_faults``), which costs the task a fault's kernel time
and reaches the policy with its latency since the stamp -- what NUMA balancing's
promotion decides on -- and with the page's ``last_cpupid`` (the thread of its last hint
fault, -1 none; set again by this one: ``should_numa_migrate_memory`` exchanges it).

The period is the kernel's: a pass over the resident pages takes scan_period_min to
_max (per scan, divided by the pass's windows, at most the maximum scan rate). After
each pass :meth:`Scanner.adapt` moves it by the pass's hint faults as
``task_numa_fault`` counts them (:meth:`NumaScan.record`): local or remote (the page on
the CPUs' node or not), private or shared (the page's last fault by the same thread, or
none: "first accesses are treated as private"; by another thread of the process:
shared), and the failed migrations. Since 6.0 (``Scanner.upstream``) a fault on a slow-
tier page is not counted in tiering mode unless it promoted the page, nor in normal mode
while the page has no valid ``last_cpupid``; TPP's (5.13) and AutoTiering's (5.3) patch
sets count every fault. :class:`Scanner` holds the parameters, :class:`NumaScan` one
run's scan state.

Not modelled: a single-threaded task's pages on its own node left unscanned, the
numa_group's scaling of the longest period by its shared faults, task placement (the
CPUs are one node's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: update_task_scan_period's slots of a period, and the share (in slots) at or above
#: which scanning slows down (kernel/sched/fair.c NUMA_PERIOD_SLOTS, _THRESHOLD).
PERIOD_SLOTS, PERIOD_THRESHOLD = 10, 7


@dataclass
class PassFaults:
    """The hint faults ``task_numa_fault`` counted in a pass: on the CPUs' node or not
    (``numa_faults_locality[1]``, ``[0]``), private or shared (``fault_types``), and
    the migrations that failed (``numa_faults_locality[2]``)."""

    local: int = 0
    remote: int = 0
    private: int = 0
    shared: int = 0
    failed: int = 0


@dataclass(frozen=True)
class HintFaults:
    """An epoch's hint faults: the pages (sorted), each one's latency since its stamp
    (ns), its node when it faulted, the thread that faulted (its first access in the
    epoch) and the page's ``last_cpupid`` before the fault (-1: none)."""

    pages: np.ndarray
    latency: np.ndarray
    node: np.ndarray
    thread: np.ndarray
    last: np.ndarray

    @classmethod
    def none(cls) -> "HintFaults":
        empty = np.empty(0, np.int64)
        return cls(empty, np.empty(0), empty, empty, empty)


@dataclass(frozen=True)
class Scanner:
    """NUMA balancing's hint-fault scanner (kernel/sched/fair.c): the first scan after
    ``delay``, then ``pages`` at a time; a pass over the resident pages (``windows`` of
    ``pages``) takes between ``period`` and ``period_max`` ns, each scan at least
    ``floor`` ns (the kernel's maximum scan rate); ``tiering`` skips top-tier pages; each
    hint fault costs the faulting task ``fault_cost`` ns; ``upstream``: the 6.0+ rules
    of which faults count (False: the 5.x patch sets of TPP and AutoTiering)."""

    delay: float
    period: float
    pages: int
    tiering: bool
    fault_cost: float
    period_max: float = math.inf
    floor: float = 0.0
    upstream: bool = True

    def bounds(self, resident: int) -> tuple[float, float]:
        """``task_scan_min`` and ``task_scan_max``: one scan's shortest and longest
        period for ``resident`` pages."""
        windows = max(-(-resident // self.pages), 1)
        low = max(self.floor, self.period / windows)
        return low, max(low, self.period_max / windows)

    @staticmethod
    def adapt(period: float, low: float, high: float, faults: PassFaults) -> float:
        """``update_task_scan_period`` after a pass with ``faults``: a failed migration,
        or no local and no shared fault, doubles the period ("we are migrating too
        quickly or the local node is overloaded"); otherwise mostly private faults, then
        mostly local ones, lengthen it by the slots above the threshold (at least one),
        and else it shortens by the slots the larger share falls short of it. The
        kernel tests private faults first, under the comment of local ones: a task
        whose faults are its own slows its scanning however remote they are."""
        f = faults
        if f.local + f.shared == 0 or f.failed:
            return min(high, 2 * period)
        slot = math.ceil(period / PERIOD_SLOTS)
        lr = f.local * PERIOD_SLOTS // max(f.local + f.remote, 1)
        ps = f.private * PERIOD_SLOTS // max(f.private + f.shared, 1)
        if ps >= PERIOD_THRESHOLD:
            diff = max(ps - PERIOD_THRESHOLD, 1) * slot
        elif lr >= PERIOD_THRESHOLD:
            diff = max(lr - PERIOD_THRESHOLD, 1) * slot
        else:
            diff = -(PERIOD_THRESHOLD - max(lr, ps)) * slot
        return min(max(period + diff, low), high)


@dataclass
class NumaScan:
    """``scanner``'s scan over a task's ``pages`` pages (ids in address order): when each
    page was made PROT_NONE (``marked``, ns) and whether it still is (``armed``), each
    page's ``cpupid`` (the thread of its last hint fault, -1: none), the pages marked
    since :meth:`take_scanned`, the faults the current pass counted (``locality``) and
    the passes completed (``passes``)."""

    scanner: Scanner
    pages: int
    passes: int = 0
    locality: PassFaults = field(default_factory=PassFaults)

    def __post_init__(self) -> None:
        self.marked = np.full(self.pages, -1.0)
        self.armed = np.zeros(self.pages, bool)  # a byte a page: a fast check
        self.cpupid = np.full(self.pages, -1, np.int64)
        self._scanned: list[np.ndarray] = []
        self._cursor = 0
        self._period: float | None = None
        self._progress = 0

    def scan(self, node: np.ndarray, toptier: np.ndarray, now: float) -> float:
        """One scan at ``now`` (ns) over pages on ``node`` (-1: not resident): the next
        ``scanner.pages`` of the address space (resident ones; in tiering mode not on
        ``toptier`` nodes) become PROT_NONE, stamped ``now`` unless they still are
        (``change_pte_range`` skips a PROT_NONE entry); after each pass the period adapts
        to the pass's faults (:meth:`Scanner.adapt`). Returns the wait until the next
        scan."""
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
        fresh = window[keep & ~self.armed[window]]
        self.marked[fresh], self.armed[fresh] = now, True
        self._scanned.append(window[keep])
        self._progress += window.size
        if self._progress >= self.pages:  # a pass ended: adapt the period
            self._progress -= self.pages
            self.passes += 1
            period = Scanner.adapt(period, low, high, self.locality)
            self.locality = PassFaults()
        self._period = period
        return period

    def arm(self, pages: np.ndarray, now: float) -> None:
        """Make ``pages`` PROT_NONE at ``now`` outside a scan (TPP's demoted pages:
        ``remove_migration_pte`` maps a PG_demoted page PROT_NONE)."""
        self.marked[pages], self.armed[pages] = now, True

    def faults(self, pages: np.ndarray, node: np.ndarray, now: float,
               ids: np.ndarray | None = None, threads: np.ndarray | None = None
               ) -> HintFaults:
        """The hint faults among distinct, sorted ``pages`` (on ``node``) accessed at
        ``now``: the first access to each since it was made PROT_NONE, unmarked.
        ``ids`` and ``threads``: the epoch's accesses (page ids) and their threads,
        which name each fault's thread (none given: thread 0)."""
        faults = pages[self.armed[pages]]
        thread = np.zeros(faults.size, np.int64)
        if faults.size and ids is not None and threads is not None:
            at = np.flatnonzero(self.armed[ids])  # the accesses to faulting pages
            _, first = np.unique(ids[at], return_index=True)
            thread = np.asarray(threads)[at[first]].astype(np.int64)
        latency = now - self.marked[faults]
        self.marked[faults], self.armed[faults] = -1.0, False
        return HintFaults(faults, latency, node[faults].astype(np.int64), thread,
                          self.cpupid[faults].copy())

    def record(self, faults: HintFaults, has_cpus: np.ndarray, toptier: np.ndarray,
               moved: np.ndarray, failed: np.ndarray) -> None:
        """``task_numa_fault`` for each of ``faults``: local if its node ``has_cpus``,
        slow-tier if not on a ``toptier`` node; ``moved`` and ``failed``: masks over
        them, the migration each asked for. In the upstream tiering mode
        a slow-tier page keeps its scan time where the cpupid would be (its last cpupid
        reads as none) and a promotion resets it (``folio_migrate_flags``); any other
        fault sets the page's cpupid to its thread (``should_numa_migrate_memory``;
        TPP's gate skips that call for an inactive page: not modelled). Upstream a
        slow-tier fault counts only when it promoted (tiering mode) or the page had a
        valid cpupid (normal mode)."""
        scanner = self.scanner
        where = np.maximum(faults.node, 0)
        local, slow = has_cpus[where], (faults.node >= 0) & ~toptier[where]
        timed = scanner.tiering and scanner.upstream  # slow-tier pages hold a time
        last = np.where(slow, -1, faults.last) if timed else faults.last
        counted = np.ones(faults.pages.size, bool)
        if scanner.upstream:
            counted = ~(slow & ~moved) if scanner.tiering else ~(slow & ~moved & (last < 0))
        private = (last < 0) | (last == faults.thread)
        f = self.locality
        f.local += int((counted & local).sum())
        f.remote += int((counted & ~local).sum())
        f.private += int((counted & private).sum())
        f.shared += int((counted & ~private).sum())
        f.failed += int((counted & failed).sum())
        keep = ~slow if timed else np.ones(faults.pages.size, bool)
        self.cpupid[faults.pages[keep]] = faults.thread[keep]
        if timed:
            self.cpupid[faults.pages[slow & moved]] = -1

    def take_scanned(self) -> np.ndarray:
        """The pages marked since the last call, in scan order."""
        out = np.concatenate(self._scanned) if self._scanned else np.empty(0, np.int64)
        self._scanned.clear()
        return out
