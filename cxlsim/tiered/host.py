"""One host of a run: its trace, cores and caches, kernel memory state and placement
policy, and its processes (the trace's epochs, kswapd, NUMA balancing's scanner, the
DAMON monitor) on a simulated time it may share with other hosts
(:func:`cxlsim.tiered.run.run_hosts`; the run's mechanics are described there)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy as np

from cxlsim.engine import Simulation
from cxlsim.errors import InputError
from cxlsim.fabric import Traffic
from cxlsim.memory.epoch import EpochEngine, MemorySystem
from cxlsim.memory.hierarchy import CpuParams
from cxlsim.memory.pagetable import PageTable
from cxlsim.memory.sampling import kept_pages, scaled_cpu
from cxlsim.mm.damon import Damon, DamonParams
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.migrate import MigrationParams, Migrator
from cxlsim.mm.numa_balancing import HintFaults, NumaScan, Scanner
from cxlsim.mm.placement import DEMOTED, Placement
from cxlsim.mm.reclaim import MAX_RECLAIM_RETRIES
from cxlsim.prefetch import prefetched
from cxlsim.tiered.epochs import cores_of, epoch_row, in_epochs
from cxlsim.tiered.policies import EpochView, Policy
from cxlsim.tiered.records import EpochRecords, RecordGrouper, distinct_pages
from cxlsim.tiered.trace_survey import Chunks, Survey
from cxlsim.traces.pages import PAGE_BYTES
from cxlsim.units import LINE_BYTES

#: Lines of a 4 KiB page: a page move reads them at the source and writes them at the
#: destination.
LINES_PER_PAGE = PAGE_BYTES // LINE_BYTES

T = TypeVar("T")

#: vmstat counters reported per epoch (``/proc/vmstat`` names).
VMSTAT = ("pgalloc", "pgdemote_kswapd", "pgdemote_direct", "pgpromote_success",
          "pgmigrate_success", "pgmigrate_fail", "pgmigrate_fail_dst_node_full",
          "pgsteal_kswapd", "pgsteal_direct", "numa_miss", "kswapd_wakeup", "allocstall")


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



class Host:
    """One host on ``sim``'s simulated time: its parts and state, a method per SimPy
    process (the trace's epochs, kswapd, NUMA balancing's scanner, the DAMON monitor)
    and one per step of an epoch. ``rng`` is the host's own random stream (its
    migrations' refusals, its monitor's samples), so that hosts sharing a run do not
    draw from each other's; ``seed`` picks a sample's pages; ``traffic``: the load the
    hosts of the run put on the pooled devices they share (:mod:`cxlsim.fabric.traffic`),
    which its targets on a pool publish and take.

    The host runs its trace (the second pass over ``chunks``; ``found``: the first's) on
    ``cores`` cores, ``epoch`` records an epoch, each core keeping ``mlp`` misses in
    flight (None: the CPU's); the kernel's memory state (``kernel``, over the
    footprint's placement) places and moves every page under ``policy``. Moves cost and
    are limited as ``migration`` says (:mod:`cxlsim.mm.migrate`; None: its defaults with
    no per-page cost); ``scanner`` and ``damon``: NUMA balancing's scanner and the DAMON
    monitor, when on. Each record also costs its core ``compute`` ns of work that does
    not touch memory. ``sample`` > 1 runs only a 1-in-``sample`` sample of the pages
    through cores scaled down as much (:mod:`cxlsim.memory.sampling`); the placement,
    the kernel and the policy still see every page. Each core stands for
    ``stands_for`` threads of the real system, whose demand loads the memory
    (:mod:`cxlsim.mm.similarity`); kswapd looks for work every ``kswapd_interval`` ns."""

    def __init__(self, sim: Simulation, rng: np.random.Generator, chunks: Chunks,
                 found: Survey, memory: MemorySystem, cpu: CpuParams, policy: Policy,
                 kernel: KernelMemory, cores: int, epoch: int, seed: int,
                 mlp: float | None, migration: MigrationParams | None,
                 scanner: Scanner | None, damon: DamonParams | None, compute: float,
                 sample: int, stands_for: float = 1.0, traffic: Traffic | None = None,
                 kswapd_interval: float = 1e6) -> None:
        self.sim = sim
        self.kswapd_interval = kswapd_interval
        self.traffic = traffic
        self.pooled = memory.pooled_targets() if traffic is not None else []
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
        self.hierarchy = cores_of(scaled_cpu(cpu, sample), table, cores, len(nodes))
        self.engine = EpochEngine(memory, mlp or cpu.mlp, stands_for=stands_for)
        self.result = TraceRun(nodes, placement)
        self.migration = migration or MigrationParams(cost=0.0)
        self.migrator = Migrator(self.migration, self.hierarchy, rng, rank,
                                 kernel.scale)
        self.owed_core = np.zeros(cores)  # TLB flush time each core owes the next epoch (ns)
        self.owed_task = 0.0              # kernel time the task owes: its moves, shootdowns
        self.owed_flush = 0.0             # the shootdowns' part of it
        self.copies = np.zeros(len(nodes))  # lines to copy per node (page moves), next epoch
        self.moved = _moves(kernel)          # pages moved out of / into each node so far
        self.allocs = kernel.per_node("pgalloc")  # pages allocated on each node so far
        self.hints = NumaScan(scanner, found.footprint) if scanner else None
        self.threads = np.sort(np.asarray(found.threads, np.int64))  # a thread's cpupid: its rank
        self.monitor = Damon(found.footprint, damon, rng) if damon else None
        self.regions: list[tuple[int, int, int, int]] = []  # the monitor's last aggregation
        self.new_from = 0  # the first page id no epoch has touched (ids: first-seen order)
        self.last = kernel.vmstat()
        self.bounces = placement.pingpongs
        self.ended = False  # its trace has ended: its kernel threads stop too

    def start(self, epoch_done: Callable[[], object] | None = None) -> Any:
        """Start the host's processes; returns its trace's process, which ends with the
        trace (its result is then :attr:`result`)."""
        env = self.sim.env
        done = env.process(self.trace(epoch_done))
        env.process(self.kswapd(self.kswapd_interval))
        if self.hints is not None:
            env.process(self.scan())
        if self.monitor is not None:
            env.process(self.monitor_loop())
        return done

    # --- the processes -----------------------------------------------------------------

    def trace(self, epoch_done: Callable[[], object] | None):
        """The application, epoch by epoch: its pages touched (first touches allocated),
        its records through the cores, simulated time advanced by its duration; then the
        policy's moves and the epoch's row. At its end the host's time and scan passes
        are its result's, and its kernel threads stop."""
        # the next epoch's records known with each: its private passes may run ahead
        for work, upcoming in _with_next(prefetched(self.prepare())):
            self.placement.epoch = len(self.result.epochs)
            faults, row = self.run_epoch(work, upcoming)
            yield self.sim.env.timeout(row["duration_ns"])
            self.policy_moves(work, row, faults)
            self.record(row, len(work.ids))
            if epoch_done is not None:
                epoch_done()
        self.result.time_ns = self.sim.env.now
        self.result.passes = self.hints.passes if self.hints is not None else 0
        self.ended = True
        for _, _, target in self.pooled:  # its threads no longer load the pool
            self.traffic.publish(target.name, id(target), [])

    def kswapd(self, interval: float):
        """kswapd: every ``interval`` of simulated time, after TPP's scheduler-tick check
        (when its WMARK_DEMOTE is set), the woken nodes reclaim; the pages that moved
        leave the TLBs at the kernel thread's cost. Until another process's next event
        only kswapd changes what its ticks read: when the next tick would find nothing
        to do, so would all of them, and they pass in one wait (:func:`_idle_until`)."""
        env, kernel = self.sim.env, self.kernel
        while not self.ended:
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
        while not self.ended:
            period = self.hints.scan(kernel.node, kernel.toptier, env.now)
            self.result.scans += 1
            yield env.timeout(period)

    def monitor_loop(self):
        """The DAMON-style monitor's sampling and aggregation intervals."""
        damon, env = self.damon, self.sim.env
        per = max(int(round(damon.aggregate / damon.sample)), 1)
        while not self.ended:
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
        for records in in_epochs(self.chunks, self.epoch):
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
        solved = self._share_pool()
        row = epoch_row(self.engine, self.hierarchy, work.grouped, self.nodes, self.copies,
                     stall, self.owed_core, self.compute, self.sample,
                     upcoming.grouped if upcoming else None, parts, kernel.numa.has_cpus)
        self._publish_pool(solved)
        row["reclaim_stall_ns"] = reclaim
        row["numa_hint_faults"] = int(faults.pages.size)
        row["tlb_shootdown_ns"] = float(self.owed_core.sum())
        row.update({f"hot_{n}": int(h) for n, h in zip(self.nodes, hot)})
        self.copies[:], self.owed_core[:], self.owed_task, self.owed_flush = 0, 0, 0.0, 0.0
        return faults, row

    def _share_pool(self) -> int:
        """Each target on a pooled device takes the others' last threads on it; returns
        the equilibria solved so far (the epoch's is the one after them)."""
        for _, _, target in self.pooled:
            self.engine.system.set_foreign(target, self.traffic.others(target.name,
                                                                       id(target)))
        return len(self.engine.history)

    def _publish_pool(self, solved: int) -> None:
        """Each target on a pooled device publishes the threads that reached it in the
        epoch just solved (none if the epoch reached no memory)."""
        eq = self.engine.history[-1] if len(self.engine.history) > solved else None
        for node, fraction, target in self.pooled:
            rows = []
            for d in self.engine.demands if eq else ():
                weight = d.shares.get(node, 0.0)
                if weight > 0:
                    elsewhere = eq.tracker_wait + sum(s * eq.latency[m]
                                                      for m, s in d.shares.items() if m != node)
                    rows.append((d.threads, d.mlp, d.gap + elsewhere / d.mlp, weight,
                                 weight * fraction, d.read_fraction))
            self.traffic.publish(target.name, id(target), rows)

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
    """An epoch's trace work (:meth:`Host.prepare`): its records, their page ids,
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
