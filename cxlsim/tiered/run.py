"""A trace through cores, caches and memory nodes, epoch by epoch, in simulated time.

The trace is read twice, chunk by chunk, in bounded memory. The first pass numbers its
pages densely in first-seen order (:class:`~cxlsim.traces.pages.PageCompactor`), so the
page table and every per-page array are sized by the footprint, counts each page's
accesses (what an offline policy needs) and takes each page's type (anon or file) from
the trace's ``page_type`` column (anon without one). Every page's placement -- node,
type, allocation and last-access epochs, accesses, how it last moved -- is one
:class:`~cxlsim.mm.placement.Placement`, which the kernel's memory model changes
and the page table, the scanner, the monitor and the policies read. The second pass is
the simulation, a SimPy process on the project's :class:`~cxlsim.engine.Simulation`:

* an epoch is ``epoch`` consecutive records; each record's thread runs on a core (threads
  in first-seen order, folded onto ``cores``), each core with its own TLBs and private
  caches and the shared ones of its complex, over one page table;
* at a page's first touch the placement policy (:mod:`cxlsim.tiered.policies`) names the
  node it aims at and the kernel's allocator (:class:`~cxlsim.mm.kernel.
  KernelMemory`) places it -- falling back by distance, waking kswapd, reclaiming
  directly; a page reclaim took back is allocated again at its next epoch (a refault);
* each core's share of the epoch runs through its hierarchy with the last epoch's loaded
  latencies; the memory references it counts per node and its other time are its
  demand, and :class:`~cxlsim.memory.epoch.EpochEngine` finds the nodes' loaded
  latencies for all cores together; the epoch lasts as long as its slowest core, and
  simulated time advances by that much;
* NUMA balancing's scanner, when on, is another: after its delay, every period it makes
  the next stretch of the address space PROT_NONE (in tiering mode skipping top-tier
  pages); the next access to such a page is a hint fault (``numa_hint_faults``), costs
  the task a fault's kernel time, and reaches the policy with its latency since the
  scan -- what NUMA balancing's promotion decides on. The period is the kernel's: a
  pass over the resident pages takes scan_period_min to _max (per scan, divided by the
  pass's windows, at most the maximum scan rate), adapted after each pass to its
  faults as ``task_numa_fault`` counts them, with the outcome of the moves they asked
  for: failed migrations slow it (:mod:`cxlsim.mm.numa_balancing`);
* a DAMON-style monitor, when on, is another (:mod:`cxlsim.mm.damon`): regions of
  pages sampled every sample interval, their access counts published to the policy
  every aggregation interval;
* kswapd is a SimPy process too: every ``kswapd_interval`` of simulated time (after
  TPP's scheduler-tick check, when its WMARK_DEMOTE is set) it runs the woken nodes'
  reclaim (demoting to the next tier when the kernel allows it); every page that moved
  is copied -- its lines read at the source and written at the destination in the next
  epoch, loading the same nodes and links as the application (a stream of its own,
  whose time is the kernel thread's, not the application's).

After each epoch the policy may move pages (``moves``): each move is a kernel migration
by its rules, copied like a demotion; a page moving back where it left within the
placement's ``pingpong`` epochs counts as a ping-pong. Moving costs as
:mod:`cxlsim.mm.migrate` says: a page demoted by direct reclaim, or moved by a
policy working in the task's context, costs the task its kernel time (unmap, copy,
remap) and the shootdown's IPI wait; kswapd's demotions cost its own thread; every page
unmapped (moved, or reclaimed) leaves every core's TLBs, and each core pays its flushes.
A policy's promotions and demotions pass the rate limits first (``migrate_rate_limited``
counts the refused).

Writes: every access brings its line in (a store reads for ownership), and a written
line goes back once, so an epoch whose records write a fraction ``w`` reads
``1 / (1 + w)`` of its memory bytes. Not modelled yet: write-backs as cache evictions,
DAMON's interval auto-tuning, per-record time stamps (cores are in step at epoch
boundaries).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cxlsim.engine import Simulation
from cxlsim.errors import InputError
from cxlsim.memory.cores import access_cores
from cxlsim.memory.epoch import EpochEngine, MemorySystem
from cxlsim.memory.hierarchy import CoreMemory, CpuParams
from cxlsim.memory.pagetable import PageTable
from cxlsim.memory.sampling import kept_pages, scaled_cpu
from cxlsim.mm.damon import Damon, DamonParams
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.migrate import MigrationParams, Migrator
from cxlsim.mm.numa_balancing import HintFaults, NumaScan, Scanner
from cxlsim.mm.placement import DEMOTED, Placement
from cxlsim.mm.reclaim import MAX_RECLAIM_RETRIES
from cxlsim.tiered.policies import EpochView, Policy
from cxlsim.prefetch import prefetched
from cxlsim.tiered.records import EpochRecords, RecordGrouper, distinct_pages
from cxlsim.traces.pages import PAGE_BYTES, PageCompactor
from cxlsim.units import LINE_BYTES

#: Lines of a 4 KiB page: a page move reads them at the source and writes them at the
#: destination.
LINES_PER_PAGE = PAGE_BYTES // LINE_BYTES

T = TypeVar("T")

#: vmstat counters reported per epoch (``/proc/vmstat`` names).
VMSTAT = ("pgalloc", "pgdemote_kswapd", "pgdemote_direct", "pgpromote_success",
          "pgmigrate_success", "pgmigrate_fail", "pgmigrate_fail_dst_node_full",
          "pgsteal_kswapd", "pgsteal_direct", "numa_miss", "kswapd_wakeup", "allocstall")

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


@dataclass
class TraceRun:
    """The second pass's results: per-epoch rows, the totals and every page's placement."""

    nodes: list[str]
    placement: Placement
    epochs: list[dict] = field(default_factory=list)
    time_ns: float = 0.0
    accesses: int = 0
    regions: list[tuple] = field(default_factory=list)  # (ns, start, end, nr_accesses, age)
    scans: int = 0         # NUMA balancing's scans
    passes: int = 0        # its passes over the task's address space completed
    aggregations: int = 0  # the DAMON monitor's aggregation intervals ended


def simulate(chunks: Chunks, found: Survey, memory: MemorySystem, cpu: CpuParams,
             policy: Policy, kernel: KernelMemory, cores: int, epoch: int, seed: int = 1,
             kswapd_interval: float = 1e6, mlp: float | None = None,
             migration: MigrationParams | None = None, scanner: Scanner | None = None,
             damon: DamonParams | None = None, compute: float = 0.0,
             sample: int = 1, epoch_done: Callable[[], object] | None = None,
             stands_for: float = 1.0) -> TraceRun:
    """Run the trace (second pass) on ``cores`` cores, ``epoch`` records per epoch, each
    core keeping ``mlp`` misses in flight (default: the CPU's); the kernel's memory state
    (``kernel``, over the footprint's placement) places and moves every page. Moves cost
    and are limited as ``migration`` says (:mod:`cxlsim.mm.migrate`; default: its
    defaults with no per-page cost). Each record also costs its core ``compute`` ns of
    work that does not touch memory (the application's time between traced accesses).
    ``sample`` > 1 runs only the pages of a 1-in-``sample`` sample through cores scaled
    down as much (:mod:`cxlsim.memory.sampling`); the placement, the kernel and the
    policy still see every page. ``epoch_done`` is called after each epoch (a progress
    bar's update). Each core stands for ``stands_for`` threads of the real system, whose
    demand (and the page copies') loads the memory system (:mod:`cxlsim.mm.similarity`)."""
    return _Run(chunks, found, memory, cpu, policy, kernel, cores, epoch, seed, mlp,
                migration, scanner, damon, compute, sample, stands_for
                ).run(kswapd_interval, epoch_done)


class _Run:
    """One :func:`simulate`: the run's parts and state, a method per SimPy process (the
    trace's epochs, kswapd, NUMA balancing's scanner, the DAMON monitor) and one per step
    of an epoch."""

    def __init__(self, chunks: Chunks, found: Survey, memory: MemorySystem, cpu: CpuParams,
                 policy: Policy, kernel: KernelMemory, cores: int, epoch: int, seed: int,
                 mlp: float | None, migration: MigrationParams | None,
                 scanner: Scanner | None, damon: DamonParams | None, compute: float,
                 sample: int, stands_for: float = 1.0) -> None:
        self.chunks, self.found, self.policy, self.kernel = chunks, found, policy, kernel
        self.epoch, self.compute, self.sample = epoch, compute, sample
        self.scanner, self.damon = scanner, damon
        self.nodes = nodes = list(memory.nodes)
        self.placement = placement = kernel.placement
        # the hierarchy's pages: every page, or the sample's, whose nodes mirror the
        # placement's for the pages each epoch touches (the kernel reads no others)
        self.rank = rank = kept_pages(found.footprint, sample, seed, found.counts) \
            if sample > 1 else None
        self.kept = placement if rank is None \
            else Placement(max(int(rank.max(initial=-1)) + 1, 1))
        table = PageTable(page_size=PAGE_BYTES, va_size=self.kept.n_pages * PAGE_BYTES,
                          placement=self.kept)
        table.map(0, table.va_size, node=None)  # frames in first-touch order; the kernel places
        table.max_node = len(nodes) - 1
        self.grouper = RecordGrouper({t: i % cores for i, t in enumerate(found.threads)},
                                     cores, PAGE_BYTES.bit_length() - 1, rank)
        self.hierarchy = _cores(scaled_cpu(cpu, sample), table, cores, len(nodes))
        self.engine = EpochEngine(memory, mlp or cpu.mlp, stands_for=stands_for)
        self.result = TraceRun(nodes, placement)
        self.sim = Simulation(seed)
        self.migration = migration or MigrationParams(cost=0.0)
        self.migrator = Migrator(self.migration, self.hierarchy, self.sim.rng, rank,
                                 kernel.scale)
        self.owed_core = np.zeros(cores)  # TLB flush time each core owes the next epoch (ns)
        self.owed_task = 0.0              # kernel time the task owes: its moves, shootdowns
        self.owed_flush = 0.0             # the shootdowns' part of it
        self.copies = np.zeros(len(nodes))  # lines to copy per node (page moves), next epoch
        self.moved = _moves(kernel)          # pages moved out of / into each node so far
        self.allocs = kernel.per_node("pgalloc")  # pages allocated on each node so far
        self.hints = NumaScan(scanner, found.footprint) if scanner else None
        self.threads = np.sort(np.asarray(found.threads, np.int64))  # a thread's cpupid: its rank
        self.monitor = Damon(found.footprint, damon, self.sim.rng) if damon else None
        self.regions: list[tuple[int, int, int, int]] = []  # the monitor's last aggregation
        self.new_from = 0  # the first page id no epoch has touched (ids: first-seen order)
        self.last = kernel.vmstat()
        self.bounces = placement.pingpongs

    def run(self, kswapd_interval: float, epoch_done: Callable[[], object] | None
            ) -> TraceRun:
        """Run the processes until the trace ends."""
        env = self.sim.env
        done = env.process(self.trace(epoch_done))
        env.process(self.kswapd(kswapd_interval))
        if self.hints is not None:
            env.process(self.scan())
        if self.monitor is not None:
            env.process(self.monitor_loop())
        env.run(until=done)
        self.result.time_ns = env.now
        self.result.passes = self.hints.passes if self.hints is not None else 0
        return self.result

    # --- the processes -----------------------------------------------------------------

    def trace(self, epoch_done: Callable[[], object] | None):
        """The application, epoch by epoch: its pages touched (first touches allocated),
        its records through the cores, simulated time advanced by its duration; then the
        policy's moves and the epoch's row."""
        # the next epoch's records known with each: its private passes may run ahead
        for work, upcoming in _with_next(prefetched(self.prepare())):
            self.placement.epoch = len(self.result.epochs)
            faults, row = self.run_epoch(work, upcoming)
            yield self.sim.env.timeout(row["duration_ns"])
            self.policy_moves(work, row, faults)
            self.record(row, len(work.ids))
            if epoch_done is not None:
                epoch_done()

    def kswapd(self, interval: float):
        """kswapd: every ``interval`` of simulated time, after TPP's scheduler-tick check
        (when its WMARK_DEMOTE is set), the woken nodes reclaim; the pages that moved
        leave the TLBs at the kernel thread's cost. Until another process's next event
        only kswapd changes what its ticks read: when the next tick would find nothing
        to do, so would all of them, and they pass in one wait (:func:`_idle_until`)."""
        env, kernel = self.sim.env, self.kernel
        while True:
            yield env.timeout(interval)
            kernel.check_toptier_balanced()
            if kernel.kswapd_woken.any() and kernel.kswapd():
                self.shootdown(by_task=False)
            if kernel.reclaim.idle():
                last = _idle_until(env.now, interval, env.peek())
                if last > env.now:
                    yield env.timeout(last - env.now)

    def scan(self):
        """NUMA balancing's scanner: after ``delay``, a scan every period
        (:meth:`NumaScan.scan`)."""
        env, kernel = self.sim.env, self.kernel
        yield env.timeout(self.scanner.delay)
        while True:
            period = self.hints.scan(kernel.node, kernel.toptier, env.now)
            self.result.scans += 1
            yield env.timeout(period)

    def monitor_loop(self):
        """The DAMON-style monitor's sampling and aggregation intervals."""
        damon, env = self.damon, self.sim.env
        per = max(int(round(damon.aggregate / damon.sample)), 1)
        while True:
            for _ in range(per):
                yield env.timeout(damon.sample)
                self.monitor.sample()
            self.regions[:] = self.monitor.aggregate()
            self.result.aggregations += 1
            self.result.regions += [(env.now, *r) for r in self.regions]

    # --- an epoch's steps --------------------------------------------------------------

    def prepare(self) -> Iterator[_Prepared]:
        """Each epoch's trace work, which depends on the trace alone (prefetched): page
        ids, distinct pages and their accesses, records by core, the sampled pages."""
        rank = self.rank
        for records in _epochs(self.chunks, self.epoch):
            ids = self.found.compactor.ids(records["addr"])
            distinct, counts = distinct_pages(ids, self.found.footprint)
            seen = distinct[rank[distinct] >= 0] if rank is not None else distinct[:0]
            yield _Prepared(records, ids, distinct, counts, self.grouper.group(ids, records),
                            seen, rank[seen] if rank is not None else seen)

    def run_epoch(self, work: _Prepared, upcoming: _Prepared | None
                  ) -> tuple[np.ndarray, np.ndarray, dict]:
        """An epoch until its time passes: its pages touched, first touches allocated,
        hint faults taken, the kernel's page moves copied, its records through the cores.
        Returns the hint faults and the epoch's row so far."""
        kernel, distinct = self.kernel, work.distinct
        direct = kernel.total("pgdemote_direct")
        # the epoch's resident pages are referenced before its new ones allocate, so
        # direct reclaim does not take back pages the epoch is using
        if kernel.touch(distinct, resident_only=True):  # else all were, all touched
            _allocate(kernel, self.policy, work.ids, distinct, self.new_from)
            self.shootdown(by_task=True)  # direct reclaim's
            kernel.touch(distinct)
        self.new_from = max(self.new_from, int(distinct[-1]) + 1)
        hot = self.placement.access(distinct, work.counts, len(self.nodes))
        if self.monitor is not None:
            self.monitor.access(distinct)
        # first touch since the scanner marked a page: a hint fault
        faults = self.hints.faults(
            distinct, kernel.node, self.sim.env.now, work.ids,
            np.searchsorted(self.threads, work.records["thread"])) \
            if self.hints else HintFaults.none()
        reclaim = (kernel.total("pgdemote_direct") - direct) * self.migration.cost
        hinted = faults.pages.size * (self.scanner.fault_cost if self.scanner else 0.0)
        stall = reclaim + hinted + self.owed_task
        parts = {"hint_faults": hinted, "shootdowns": self.owed_flush,
                 "migration": reclaim + self.owed_task - self.owed_flush}
        # every page the kernel moved since the last epoch (its counters say from and
        # to where) is copied: its lines read at the source, written at the destination
        now = _moves(kernel)
        self.copies[:] += (now - self.moved).sum(axis=0) * LINES_PER_PAGE
        self.moved = now
        self.kept.node[work.seen_as] = kernel.node[work.seen]  # the sample's (none: exact)
        row = _epoch(self.engine, self.hierarchy, work.grouped, self.nodes, self.copies,
                     stall, self.owed_core, self.compute, self.sample,
                     upcoming.grouped if upcoming else None, parts, kernel.numa.has_cpus)
        row["reclaim_stall_ns"] = reclaim
        row["numa_hint_faults"] = int(faults.pages.size)
        row["tlb_shootdown_ns"] = float(self.owed_core.sum())
        row.update({f"hot_{n}": int(h) for n, h in zip(self.nodes, hot)})
        self.copies[:], self.owed_core[:], self.owed_task, self.owed_flush = 0, 0, 0.0, 0.0
        return faults, row

    def policy_moves(self, work: _Prepared, row: dict, faults: HintFaults) -> None:
        """After the epoch: the policy sees it and moves pages, within the rate limits;
        the moved pages leave the TLBs; the scanner counts each hint fault with the
        outcome of the move it asked for (:meth:`NumaScan.record`)."""
        now, kernel = self.sim.env.now, self.kernel
        scanned = self.hints.take_scanned() if self.hints else np.empty(0, np.int64)
        view = EpochView(work.ids, kernel, row, faults.pages, faults.latency, self.regions,
                         now, self.migration, scanned,
                         self.scanner.period_max if self.scanner else math.inf, faults.last)
        limited = self.migrator.rate_limited
        moved, failed = _migrate(kernel, self.migrator, self.policy.moves(view), self.copies,
                                 now, row["duration_ns"], misplaced=self.policy.in_task)
        row["numa_pages_migrated"] = moved.size
        row["migrate_rate_limited"] = self.migrator.rate_limited - limited
        self.owed_task += moved.size * self.migration.cost if self.policy.in_task else 0.0
        self.shootdown(by_task=self.policy.in_task)
        if self.hints is not None:
            self.hints.record(faults, kernel.numa.has_cpus, kernel.toptier,
                              np.isin(faults.pages, moved), np.isin(faults.pages, failed))

    def record(self, row: dict, accesses: int) -> None:
        """The epoch's row: the kernel's counters since the last, pages per node, page
        ping-pongs, its end."""
        kernel, nodes, placement = self.kernel, self.nodes, self.placement
        now = kernel.vmstat()
        row.update({k: now[k] - self.last[k] for k in VMSTAT})
        row.update({f"pages_{n}": int(c) for n, c in zip(
            nodes, kernel.capacity - kernel.nr_free)})
        allocated = kernel.per_node("pgalloc")
        row.update({f"pgalloc_{n}": int(c) for n, c in zip(nodes, allocated - self.allocs)})
        self.allocs[:] = allocated
        row["pingpong"], self.bounces = placement.pingpongs - self.bounces, placement.pingpongs
        self.last = now
        row["end_ns"] = self.sim.env.now
        # the policies' clocks so far: a judged window counts the periods it covers
        row["numa_scan_passes"] = self.hints.passes if self.hints is not None else 0
        row["damon_aggregations"] = self.result.aggregations
        self.result.epochs.append(row)
        self.result.accesses += accesses

    def shootdown(self, by_task: bool) -> None:
        """Every page unmapped since the last shootdown leaves every core's TLBs; the
        initiator's wait is the task's when ``by_task``. Under a policy whose kernel maps
        demoted pages PROT_NONE (:attr:`Policy.demoted_protnone`) the demoted ones among
        them will hint-fault at their next access."""
        unmapped = np.unique(self.placement.take_unmapped())
        if self.hints is not None and self.policy.demoted_protnone:
            placement = self.placement
            self.hints.arm(unmapped[(placement.flags[unmapped] == DEMOTED)
                                    & (placement.node[unmapped] >= 0)], self.sim.env.now)
        flushes = self.migrator.shootdown(unmapped)
        self.owed_core[:] += flushes.per_core
        self.owed_task += flushes.initiator if by_task else 0.0
        self.owed_flush += flushes.initiator if by_task else 0.0


class _Prepared(NamedTuple):
    """An epoch's trace work (:meth:`_Run.prepare`): its records, their page ids,
    its distinct pages and their accesses, the records by core, and the sampled pages
    among the distinct ones with their numbers on the scaled cores (none when exact)."""

    records: dict[str, np.ndarray]
    ids: np.ndarray
    distinct: np.ndarray
    counts: np.ndarray
    grouped: EpochRecords
    seen: np.ndarray
    seen_as: np.ndarray


def _with_next(items: Iterator[T]) -> Iterator[tuple[T, T | None]]:
    """Each of ``items`` with the one after it (None after the last)."""
    it = iter(items)
    current = next(it, _END)
    while current is not _END:
        after = next(it, _END)
        yield current, None if after is _END else after
        current = after


_END: Any = object()


def _idle_until(now: float, interval: float, event: float) -> float:
    """The last tick of a clock of period ``interval`` ticking at ``now`` (each tick the
    last plus ``interval``, as SimPy adds) that falls before ``event``; ``now`` if
    none does, if no event is due, or if one wait of the difference would not land on
    the tick exactly. At that tick the clock's next wait is made when it would have
    been, so the order of events is unchanged."""
    if not math.isfinite(event):
        return now
    last = now
    while (after := last + interval) < event and after > last:
        last = after
    return last if now + (last - now) == last else now


def _allocate(kernel: KernelMemory, policy: Policy, ids: np.ndarray,
              distinct: np.ndarray, new_from: int) -> None:
    """First touch of an epoch's non-resident pages (``ids``: its accesses, ``distinct``:
    its pages, sorted), in the order of their first access: each group aiming at one node
    is allocated there by the kernel, falling back as its allocator does. Pages direct
    reclaim took back meanwhile are allocated again, until every page of the epoch is
    resident; ``MAX_RECLAIM_RETRIES`` rounds in a row without fewer pages missing mean
    reclaim keeps pace with the epoch (an InputError). Page ids number the trace's
    pages in first-seen order, so pages from ``new_from`` on (never touched before this
    epoch) are in first-access order when sorted; only refaults need the search."""
    missing, stuck = ids.size + 1, 0
    while True:
        fresh = distinct[kernel.node[distinct] < 0]
        if not fresh.size:
            return
        if fresh[0] < new_from:  # a refault among them
            fresh = ids[kernel.node[ids] < 0]
            _, first = np.unique(fresh, return_index=True)
            fresh = fresh[np.sort(first)]
        stuck = stuck + 1 if fresh.size >= missing else 0
        if stuck >= MAX_RECLAIM_RETRIES:
            raise InputError(f"an epoch touches more pages than memory keeps: reclaim takes "
                             f"back {fresh.size} of its pages as fast as they are allocated "
                             f"(make the epoch shorter)", key="epoch")
        missing = min(missing, fresh.size)
        target, allowed = policy.preferred(fresh)
        for node in dict.fromkeys(target.tolist()):
            kernel.alloc(fresh[target == node], int(node), allowed=allowed)


def _migrate(kernel: KernelMemory, migrator: Migrator,
             moves: tuple[np.ndarray, np.ndarray], copies: np.ndarray, now: float,
             span: float, misplaced: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A policy's moves that the rate limits admit, by destination and in order; each
    page moved is read at its source (the destination's writes come with the kernel's
    pgmigrate_success). ``misplaced``: they are hint faults'
    (:meth:`KernelMemory.migrate`). Returns the pages moved (``numa_pages_migrated``)
    and those that failed.

    The moves stand for a stream of faults spread over the epoch's ``span`` ns. A page
    that finds the destination at its high watermark fails and is not tried again (its
    fault is over: the next comes after the scanner marks it anew); that page is a real
    one, a whole page of a scaled run only now and then (:meth:`Migrator.refusal`),
    though the refusal wakes what it wakes each time. When the
    destination's kswapd is awake -- a refusal woke it (tiering mode,
    ``numamigrate_isolate_folio``), or TPP's WMARK_DEMOTE did -- it demotes while the
    stream goes on: it runs after each refusal and the later pages find its room, as
    long as kswapd, demoting a page per ``migrator.params.cost`` ns, could have kept up
    within the span and freed something; otherwise every later page fails too."""
    pages, dest = (np.asarray(a, dtype=np.int64) for a in moves)
    ok = migrator.admit(kernel, pages, dest, now)
    pages, dest = pages[ok], dest[ok]
    cost = migrator.params.cost
    budget = span / cost if cost else np.inf  # pages kswapd can demote meanwhile
    moved, failed = [pages[:0]], [pages[:0]]

    def move(group: np.ndarray, node: int) -> None:
        done, fail = kernel.migrate(group, node, migrator.busy(group.size), misplaced)
        # each is read on the node it left (whole numbers of lines: sums exact)
        copies[:] += np.bincount(kernel.placement.left[done], minlength=copies.size) \
            * float(LINES_PER_PAGE)
        moved.append(done)
        failed.append(fail)

    for node in dict.fromkeys(dest.tolist()):
        group = pages[dest == node]
        while group.size:
            room = kernel.migrate_room(node)
            refused = group.size > room and migrator.refusal()
            take = group[:room + refused]  # those that fit, and the one refused
            move(take, node)
            group = group[take.size:]
            if group.size and not refused:
                kernel.refused(node, misplaced)
            if group.size and kernel.kswapd_woken[node] and budget > 0:
                before = kernel.total("pgdemote_kswapd")
                freed = kernel.kswapd()
                budget -= kernel.total("pgdemote_kswapd") - before
                if freed or kernel.migrate_room(node):  # (its watermarks may have moved)
                    continue
            if group.size:
                move(group, node)
            break
    return np.concatenate(moved), np.concatenate(failed)


def _moves(kernel: KernelMemory) -> np.ndarray:
    """Pages moved so far: [out of each node (demoted), into each node (migrated)]."""
    return np.array([kernel.per_node("pgdemote_kswapd") + kernel.per_node("pgdemote_direct"),
                     kernel.per_node("pgmigrate_success")], dtype=float)


def _cores(cpu: CpuParams, table: PageTable, cores: int, n_nodes: int) -> list[CoreMemory]:
    """``cores`` cores, each complex sharing the caches its CPU shares."""
    group = min((s for s in cpu.sharing if s > 1), default=1)
    out: list[CoreMemory] = []
    latencies = [cpu.memory_latency] * n_nodes
    for c in range(cores):
        first = out[c - c % group] if c % group else None
        out.append(CoreMemory(cpu, table, latencies, complex_of=first))
    return out


def _epochs(chunks: Chunks, epoch: int) -> Iterator[dict[str, np.ndarray]]:
    """The trace regrouped into epochs of ``epoch`` records (the last may be shorter)."""
    pending: list[dict[str, np.ndarray]] = []
    held = 0
    for chunk in chunks():
        pending.append(chunk)
        held += len(chunk["addr"])
        while held >= epoch:  # an epoch within one chunk is a view of it, not a copy
            merged = pending[0] if len(pending) == 1 else \
                {k: np.concatenate([c[k] for c in pending]) for k in pending[0]}
            yield {k: v[:epoch] for k, v in merged.items()}
            rest = {k: v[epoch:] for k, v in merged.items()}
            pending, held = [rest], held - epoch
    if held:
        yield {k: np.concatenate([c[k] for c in pending]) for k in pending[0]}


def _epoch(engine: EpochEngine, cores: list[CoreMemory], grouped: EpochRecords,
           nodes: list[str], copies: np.ndarray, stall: float, core_ns: np.ndarray,
           compute: float = 0.0, sample: int = 1,
           upcoming: EpochRecords | None = None, parts: dict[str, float] | None = None,
           local: np.ndarray | None = None) -> dict:
    """One epoch: each core's records through its hierarchy (each record after
    ``compute`` ns of other work), then the nodes' equilibrium with the kernel's page
    copies as one more stream (its time is not the app's); the task's kernel ``stall``
    (ns) falls on the cores by their share of the records, and ``core_ns[c]`` (its TLB
    flushes) on core ``c``. With a 1-in-``sample`` page sample, the sampled records'
    latencies and memory references count ``sample`` times. ``upcoming``: the next
    epoch's records, whose private passes may run ahead (:mod:`cxlsim.memory.cores`).
    ``parts``: the ``stall``'s parts by cause, ``local``: the nodes holding the CPUs
    (the row's time in parts, :func:`_losses`)."""
    latency = engine.latencies()
    node_ns = np.array([latency[n] for n in nodes])
    records = grouped.records
    refs = np.zeros((len(cores), len(nodes)))
    busy = compute * records.astype(float)
    # the cores' chunks one after another (a shared cache sees core 0's, then core 1's)
    active, chunks = grouped.chunks
    after = None
    if upcoming is not None:
        next_active, next_chunks = upcoming.chunks
        after = ([cores[c] for c in next_active], next_chunks)
    for c, stats in zip(active, access_cores([cores[c] for c in active], chunks, node_ns,
                                             after)):
        mem = (stats.data[stats.caches:] + stats.walk_refs[stats.caches:]).astype(float)
        refs[c, :mem.size] = mem * sample
        busy[c] += max(stats.latency_ns * sample - float(refs[c] @ node_ns), 0.0)
    n = int(records.sum())
    writes = grouped.writes / n if n else 0.0
    engine.read_fraction = 1.0 / (1.0 + writes)
    if copies.any():
        times = engine.step(np.vstack([refs, copies]), np.append(busy, 0.0))[:len(cores)]
    else:
        times = engine.step(refs, busy)
    times = times + stall * records / max(n, 1) + core_ns
    eq = engine.history[-1] if engine.history and (refs.sum() or copies.sum()) else None
    row = {"accesses": n, "duration_ns": float(times.max()), "write_fraction": writes,
           "busy_ns": float(busy.sum()), "copy_lines": float(copies.sum()),
           "task_kernel_ns": stall}
    for k, name in enumerate(nodes):
        row[f"refs_{name}"] = float(refs[:, k].sum())
        row[f"latency_ns_{name}"] = eq.latency[name] if eq else latency[name]
        row[f"GBps_{name}"] = (eq.node_bandwidth(name) / 1e9) if eq else 0.0
    row["memory_bytes"] = float(refs.sum()) * LINE_BYTES / engine.read_fraction
    if parts is not None:
        row.update(_losses(engine, refs, busy, copies, times, records / max(n, 1), parts,
                           core_ns, local, eq, nodes))
    return row


#: The parts of an epoch's time beyond its local time (:func:`_losses`), as row keys.
LOSSES = ("loss_cxl_latency_ns", "loss_copy_traffic_ns", "loss_hint_faults_ns",
          "loss_migration_ns", "loss_shootdowns_ns")


def _losses(engine: EpochEngine, refs: np.ndarray, busy: np.ndarray, copies: np.ndarray,
            times: np.ndarray, share: np.ndarray, parts: dict[str, float],
            core_ns: np.ndarray, local: np.ndarray, eq: Any, nodes: list[str]
            ) -> dict[str, float]:
    """The epoch's time (its slowest core's) in parts that add up to it: ``local_ns``,
    the core's work with every reference at the local (CPU) nodes' latency, and the
    losses beyond it -- CXL latency (the other nodes' latency above the local one),
    copy traffic (the nodes' latency the page copies' stream added, found by solving
    the epoch again without it), and the task's kernel time by cause (``parts``, the
    core's ``share`` of it by records; shootdowns with the core's own TLB flushes)."""
    c = int(np.argmax(times))
    out = {f"loss_{k}_ns": v * float(share[c]) for k, v in parts.items()}
    out["loss_shootdowns_ns"] += float(core_ns[c])
    lat = np.array([eq.latency[k] for k in nodes]) if eq else np.zeros(len(nodes))
    if eq and copies.any() and refs.sum():
        loaded = engine.loaded(refs, busy)
        alone = np.array([loaded[k] for k in nodes])
    else:
        alone = lat
    weights = refs[c] * local
    here = weights @ alone / weights.sum() if weights.sum() else alone[local].mean()
    out["loss_cxl_latency_ns"] = float(refs[c] @ (alone - here)) / engine.mlp
    out["loss_copy_traffic_ns"] = float(refs[c] @ (lat - alone)) / engine.mlp
    out["local_ns"] = float(busy[c] + refs[c].sum() * here / engine.mlp)
    return out
