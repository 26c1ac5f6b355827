"""One epoch of a host's trace through its cores and the memory system: the cores'
records through their hierarchies, the nodes' loaded latencies for all cores together
(:class:`~cxlsim.memory.epoch.EpochEngine`), the epoch's row and its time in parts
(its local time and each cause of loss beyond it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from cxlsim.memory.cores import access_cores
from cxlsim.memory.epoch import EpochEngine
from cxlsim.memory.hierarchy import CoreMemory, CpuParams
from cxlsim.memory.pagetable import PageTable
from cxlsim.tiered.records import EpochRecords
from cxlsim.tiered.trace_survey import Chunks
from cxlsim.units import LINE_BYTES


def cores_of(cpu: CpuParams, table: PageTable, cores: int, n_nodes: int) -> list[CoreMemory]:
    """``cores`` cores, each complex sharing the caches its CPU shares."""
    group = min((s for s in cpu.sharing if s > 1), default=1)
    out: list[CoreMemory] = []
    latencies = [cpu.memory_latency] * n_nodes
    for c in range(cores):
        first = out[c - c % group] if c % group else None
        out.append(CoreMemory(cpu, table, latencies, complex_of=first))
    return out


def in_epochs(chunks: Chunks, epoch: int) -> Iterator[dict[str, np.ndarray]]:
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


def epoch_row(engine: EpochEngine, cores: list[CoreMemory], grouped: EpochRecords,
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
