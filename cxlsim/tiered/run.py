"""A trace through cores, caches and memory nodes, epoch by epoch, in simulated time.

The trace is read twice, chunk by chunk, in bounded memory. The first pass numbers its
pages densely in first-seen order (:class:`~cxlsim.traces.pages.PageCompactor`), so the
page table and every per-page array are sized by the footprint, and counts each page's
accesses (what an offline policy needs). The second pass is the simulation, a SimPy
process on the project's :class:`~cxlsim.engine.Simulation`:

* an epoch is ``epoch`` consecutive records; each record's thread runs on a core (threads
  in first-seen order, folded onto ``cores``), each core with its own TLBs and private
  caches and the shared ones of its complex, over one page table;
* a page's node is set by the placement policy at its first touch
  (:mod:`cxlsim.tiered.policies`), and pages the policy moves after an epoch change node;
* each core's share of the epoch runs through its hierarchy with the last epoch's loaded
  latencies; the memory references it counts per node and its other time are its
  demand, and :class:`~cxlsim.memory.epoch.EpochEngine` finds the nodes' loaded
  latencies for all cores together; the epoch lasts as long as its slowest core, and
  simulated time advances by that much.

Writes: every access brings its line in (a store reads for ownership), and a written
line goes back once, so an epoch whose records write a fraction ``w`` reads
``1 / (1 + w)`` of its memory bytes. Not modelled yet: write-backs as cache evictions,
kernel daemons and migrations (the policies here do not move pages), per-record time
stamps (cores are in step at epoch boundaries).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from cxlsim.engine import Simulation
from cxlsim.memory.epoch import EpochEngine, MemorySystem
from cxlsim.memory.hierarchy import CoreMemory, CpuParams
from cxlsim.memory.pagetable import PageTable
from cxlsim.tiered.policies import Policy
from cxlsim.traces.native import WRITE
from cxlsim.traces.pages import PAGE_BYTES, PageCompactor
from cxlsim.units import LINE_BYTES

#: A source of trace chunks: a callable returning a fresh iterator of column dicts
#: (``addr``, ``op``, ``thread``), so the trace can be read twice.
Chunks = Callable[[], Iterator[dict[str, np.ndarray]]]


@dataclass
class Survey:
    """The first pass: pages in first-seen order, their access counts, the threads."""

    compactor: PageCompactor
    counts: np.ndarray
    threads: list[int]
    records: int

    @property
    def footprint(self) -> int:
        return self.compactor.footprint


def survey(chunks: Chunks) -> Survey:
    """Read the trace once: dense page ids, accesses per page, threads in order."""
    pc, counts, threads, records = PageCompactor(), np.zeros(0, np.int64), {}, 0
    for chunk in chunks():
        ids = pc.ids(chunk["addr"])
        if pc.footprint > counts.size:
            counts = np.concatenate([counts, np.zeros(pc.footprint - counts.size, np.int64)])
        counts += np.bincount(ids, minlength=counts.size)
        for t in np.unique(chunk["thread"]).tolist():
            threads.setdefault(int(t), len(threads))
        records += len(ids)
    return Survey(pc, counts, sorted(threads, key=threads.get), records)


@dataclass
class TraceRun:
    """The second pass's results: per-epoch rows and the totals."""

    nodes: list[str]
    epochs: list[dict] = field(default_factory=list)
    time_ns: float = 0.0
    accesses: int = 0
    resident: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # node per page


def simulate(chunks: Chunks, found: Survey, memory: MemorySystem, cpu: CpuParams,
             policy: Policy, cores: int, epoch: int, seed: int = 1,
             progress: Callable[[int], None] | None = None) -> TraceRun:
    """Run the trace (second pass) on ``cores`` cores, ``epoch`` records per epoch."""
    nodes = list(memory.nodes)
    table = PageTable(page_size=PAGE_BYTES, va_size=max(found.footprint, 1) * PAGE_BYTES)
    table.map(0, table.va_size)
    touched = np.zeros(found.footprint, bool)
    core_of = {t: i % cores for i, t in enumerate(found.threads)}
    hierarchy = _cores(cpu, table, cores, len(nodes))
    engine = EpochEngine(memory, cpu.mlp)
    run = TraceRun(nodes)
    sim = Simulation(seed)

    def process():
        for records in _epochs(chunks, epoch):
            ids = found.compactor.ids(records["addr"])
            fresh = ids[~touched[ids]]
            if fresh.size:
                _, first = np.unique(fresh, return_index=True)
                fresh = fresh[np.sort(first)]
                table.nodes[fresh] = policy.first_touch(fresh)
                touched[fresh] = True
                table.max_node = max(table.max_node, int(table.nodes[fresh].max()))
            vaddr = ids << 12 | (records["addr"].astype(np.int64) & (PAGE_BYTES - 1))
            row = _epoch(engine, hierarchy, core_of, vaddr, records, nodes)
            yield sim.env.timeout(row["duration_ns"])
            row["end_ns"] = sim.env.now
            run.epochs.append(row)
            run.accesses += len(ids)
            pages, dest = policy.moves(row)
            table.nodes[pages] = dest
            if progress is not None:
                progress(len(ids))

    sim.env.process(process())
    sim.run()
    run.time_ns = sim.env.now
    run.resident = table.nodes[touched]
    return run


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
        while held >= epoch:
            merged = {k: np.concatenate([c[k] for c in pending]) for k in pending[0]}
            yield {k: v[:epoch] for k, v in merged.items()}
            rest = {k: v[epoch:] for k, v in merged.items()}
            pending, held = [rest], held - epoch
    if held:
        yield {k: np.concatenate([c[k] for c in pending]) for k in pending[0]}


def _epoch(engine: EpochEngine, cores: list[CoreMemory], core_of: dict[int, int],
           vaddr: np.ndarray, records: dict[str, np.ndarray], nodes: list[str]) -> dict:
    """One epoch: each core's records through its hierarchy, then the nodes' equilibrium."""
    latency = engine.latencies()
    node_ns = np.array([latency[n] for n in nodes])
    keys = np.fromiter(core_of, np.int64, len(core_of))
    order = np.argsort(keys)
    which = np.fromiter(core_of.values(), np.int64, len(core_of))[order][
        np.searchsorted(keys[order], records["thread"].astype(np.int64))]
    by_core = np.argsort(which, kind="stable")          # each core's records, in order
    bounds = np.searchsorted(which[by_core], np.arange(len(cores) + 1))
    refs = np.zeros((len(cores), len(nodes)))
    busy = np.zeros(len(cores))
    for c, core in enumerate(cores):
        mine = vaddr[by_core[bounds[c]:bounds[c + 1]]]
        if not mine.size:
            continue
        stats = core.access(mine, memory_ns=node_ns)
        mem = (stats.data[stats.caches:] + stats.walk_refs[stats.caches:]).astype(float)
        refs[c, :mem.size] = mem
        busy[c] = max(stats.latency_ns - float(refs[c] @ node_ns), 0.0)
    writes = float(np.mean(records["op"] == WRITE)) if len(vaddr) else 0.0
    engine.read_fraction = 1.0 / (1.0 + writes)
    times = engine.step(refs, busy)
    eq = engine.history[-1] if engine.history and refs.sum() else None
    row = {"accesses": len(vaddr), "duration_ns": float(times.max()), "write_fraction": writes,
           "busy_ns": float(busy.sum())}
    for k, n in enumerate(nodes):
        row[f"refs_{n}"] = float(refs[:, k].sum())
        row[f"latency_ns_{n}"] = eq.latency[n] if eq else latency[n]
        row[f"GBps_{n}"] = (eq.node_bandwidth(n) / 1e9) if eq else 0.0
    row["memory_bytes"] = float(refs.sum()) * LINE_BYTES / engine.read_fraction
    return row
