"""Epoch-level core model: cores' access streams against the nodes' loaded latency.

A :class:`MemorySystem` holds a host's memory nodes (NUMA nodes, each interleaving one
or more targets: the host's DRAM, CXL expanders) built from a topology with the same
parameters as the transaction level. Traffic is described by :class:`Demand` classes:
``threads`` identical threads, each alternating ``gap`` ns of core work (compute, or
MLC's injected delay) with a memory access, keeping up to ``mlp`` accesses in flight,
its accesses spread over the nodes by ``shares`` (the memory policy's fractions
of pages, :func:`~cxlsim.mm.placement.policy_shares`) and
``read_fraction`` of the bytes read (each access reads a line; writes follow at
``(1 - r) / r`` lines per access and do not stall the core).

Core model (Chou et al.'s epoch model of memory-level parallelism): per access a thread
spends its gap and ``L / mlp`` of the mean read latency ``L`` it sees, so its access
rate is ``x = mlp / (mlp * gap + L)``. Little's law holds by construction: the accesses
in flight are ``x L <= mlp``. With no gap, ``x = mlp / L``: the core is latency-bound.
The ``mlp`` slots are one pool whichever node a miss goes to (line fill buffers,
MSHRs): a slow or saturated node's misses hold slots longer, so the thread's rate to
every node falls, and a mix can deliver far less than its nodes do alone
(:class:`~cxlsim.devices.core.MissSlots` is the transaction-level counterpart).

Equilibrium (:meth:`MemorySystem.solve`): node bandwidths come from the rates, node
latencies from the loaded model at those bandwidths, rates from the latencies -- until
consistent. With the other nodes held, a node's latency is found by bisection (its
loaded latency falls as its own latency rises, through the rates, so the 1-D fixed
point is unique and bracketed, and every queue stays below saturation); across nodes,
that map is iterated with Newton steps (a finite-difference Jacobian, a step kept only
when it lowers the residual) until no latency moves by more than ``tol`` -- plain
sweeps crawl near saturation, where the coupling through the rates is strong.

:class:`EpochEngine` applies the same equilibrium epoch by epoch to per-core counts
(e.g. the memory references :class:`~cxlsim.memory.CoreMemory` returns for a chunk):
per-epoch bandwidth feeds loaded latency back, and cores contend for the nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cxlsim.memory import _latency
from cxlsim.memory.dram import DramParams, DramTarget
from cxlsim.memory.expander import ExpanderTarget
from cxlsim.memory.cores import access_cores
from cxlsim.memory.loaded import MemoryNode, Target, busiest
from cxlsim.units import LINE_BYTES

_FixedPoint = Callable[[str, dict[str, float], float, float], float]
#: No other host's threads; one target at the start of its own spec (a target's report).
_NO_FOREIGN = np.zeros((0, 7))
_ONE_START, _ONE_TARGET = np.zeros(1, np.int64), np.array([0, 1], np.int64)
_PoolPoint = Callable[[dict[str, float], float, float], float]


def _scale(x: np.ndarray | float) -> np.ndarray | float:
    """What a coordinate's moves are measured against: the value itself, or 1 ns for a
    wait near zero (a tracker wait; node latencies are never below their idle)."""
    return np.maximum(x, 1.0)


@dataclass(frozen=True)
class Demand:
    """``threads`` identical threads: gap, memory-level parallelism, policy, mix."""

    threads: float
    mlp: float
    shares: Mapping[str, float]
    gap: float = 0.0
    read_fraction: float = 1.0

    def __post_init__(self) -> None:
        if self.threads < 0 or self.mlp <= 0 or self.gap < 0:
            raise ValueError("threads >= 0, mlp > 0 and gap >= 0 are required")
        if not 0 < self.read_fraction <= 1:
            raise ValueError(f"read_fraction must be in (0, 1], not {self.read_fraction!r}")
        if abs(sum(self.shares.values()) - 1) > 1e-9 or min(self.shares.values()) < 0:
            raise ValueError(f"shares must be non-negative and sum to 1, not {dict(self.shares)}")

    @property
    def in_flight(self) -> float:
        """The most reads these threads can have in flight at once: threads x mlp."""
        return self.threads * self.mlp

    def rate(self, latency: float) -> float:
        """Accesses per ns of one thread seeing mean read latency ``latency`` (ns)."""
        return self.mlp / (self.mlp * self.gap + latency)

    def mean_latency(self, latencies: Mapping[str, float]) -> float:
        """Mean read latency over the nodes by share."""
        return sum(s * latencies[n] for n, s in self.shares.items() if s > 0)


@dataclass
class Equilibrium:
    """A consistent operating point: node bandwidths and latencies, thread rates."""

    latency: dict[str, float]          # mean read latency per node, ns
    read_bps: dict[str, float]         # read bandwidth per node, B/s
    write_bps: dict[str, float]
    utilisation: dict[str, float]      # busiest queue of each node
    rates: list[float]                 # accesses per ns per thread, per demand
    latencies: list[float]             # mean read latency seen by each demand, ns
    sweeps: int
    servers: dict[str, dict] = field(default_factory=dict)
    tracker_wait: float = 0.0          # a read's mean wait for a host tracker, ns
    trackers_busy: float = 0.0         # the share of the host's trackers held

    @property
    def bandwidth(self) -> float:
        """Total bandwidth, reads + writes, B/s."""
        return sum(self.read_bps.values()) + sum(self.write_bps.values())

    def node_bandwidth(self, node: str) -> float:
        return self.read_bps.get(node, 0.0) + self.write_bps.get(node, 0.0)


class MemorySystem:
    """A host's memory nodes for the epoch level, and the trackers its uncore shares
    between them (``trackers``: reads in flight to all nodes at once; None = no limit
    but the threads' own)."""

    def __init__(self, nodes: Mapping[str, MemoryNode], trackers: int | None = None) -> None:
        if trackers is not None and trackers < 1:
            raise ValueError(f"trackers must be at least 1 (or None), not {trackers!r}")
        self.nodes = dict(nodes)
        self.trackers = trackers
        self._specs: tuple | None = None  # the targets as the compiled solver reads them
        #: Other hosts' threads on this host's pooled targets, by target (id): rows of
        #: (threads, MLP, gap, weight, share, read fraction) (:meth:`set_foreign`).
        self.foreign: dict[int, list[tuple[float, ...]]] = {}
        self._idle: dict[str, float] | None = None  # each node's idle latency, likewise

    @classmethod
    def from_topology(cls, topology, host: str = "host0",
                      nodes: Mapping[str, Sequence[str]] | None = None,
                      curves: Mapping[str, Target] | None = None,
                      trackers: int | None = None) -> MemorySystem:
        """Targets from ``topology``: every ``dram`` node attached to ``host``, every
        CXL Type 2/3 device it reaches (named as in the topology) but a pooled one, and
        each logical device of a pool bound to ``host`` (``DEVICE.N``: the device's
        memory over the host's route to it); ``nodes`` groups them
        into NUMA nodes (name -> targets interleaved equally; default one node per
        target); ``curves`` replaces a target's model by a measured one; ``trackers``
        is the host's shared pool (the CPU's :attr:`~cxlsim.memory.CpuParams.trackers`)."""
        targets: dict[str, Target] = {}
        graph = topology.graph
        for name, data in graph.nodes(data=True):
            if data["type"] == "dram" and data["spec"].attached_to == host:
                spec = data["spec"]
                params = DramParams.model_validate({k: getattr(spec, k)
                                                    for k in DramParams.model_fields})
                targets[name] = DramTarget(params, name)
        for route in topology.routes:
            spec = graph.nodes[route.device]["spec"]
            if (route.host == host and graph.nodes[route.device]["type"] == "cxl_device"
                    and spec.cxl_type in (2, 3) and not spec.logical_devices):
                targets[route.device] = ExpanderTarget(topology, host, route.device)
        for ld in topology.pool.of(host):
            targets[ld.name] = ExpanderTarget(topology, host, ld.device)
        if not any(n == host for n in graph.nodes):
            raise ValueError(f"no host {host!r} in topology {topology.spec.name!r}")
        for name, target in (curves or {}).items():
            if name not in targets:
                raise ValueError(f"curve for unknown memory target {name!r}; known: "
                                 f"{', '.join(sorted(targets))}")
            targets[name] = target
        groups = nodes if nodes is not None else {t: [t] for t in targets}
        built = {}
        for node, members in groups.items():
            missing = [m for m in members if m not in targets]
            if missing:
                raise ValueError(f"node {node!r}: unknown memory target(s) {missing}; known: "
                                 f"{', '.join(sorted(targets))}")
            built[node] = MemoryNode(node, [targets[m] for m in members])
        return cls(built, trackers)

    def pooled_targets(self) -> list[tuple[str, float, ExpanderTarget]]:
        """The targets on pooled devices, which other hosts load too: (node, the node's
        share of them, target)."""
        return [(name, f, t) for name, node in self.nodes.items()
                for f, t in zip(node.fractions, node.targets)
                if getattr(t, "pooled", False)]

    def set_foreign(self, target: ExpanderTarget, rows: list[tuple[float, ...]]) -> None:
        """Other hosts' threads on ``target``'s pooled device, each row a class of them:
        (threads, MLP, gap with their wait on their other nodes, the device's weight in
        their mean latency, their share of accesses to it, read fraction). They load it
        closed-loop, at the latency this host sees (:func:`cxlsim.memory._latency.
        foreign_load`)."""
        self.foreign[id(target)] = rows

    def _foreign(self) -> np.ndarray:
        """:attr:`foreign` as the compiled solver reads it, each row led by its target's
        number (an empty array when no other host shares a device)."""
        if not self.foreign:  # (every epoch of a host with no pool: no work)
            return _NO_FOREIGN
        rows = [(k, *row) for k, t in enumerate(self._targets())
                for row in self.foreign.get(id(t), ())]
        return np.array(rows, float).reshape(-1, 7)

    def _targets(self) -> list:
        """The targets in the solver's order."""
        return [t for node in self.nodes.values() for t in node.targets]

    def _report_foreign(self, latency: Mapping[str, float]) -> None:
        """Each pooled target's foreign load at the operating point, written into the
        target's own spec by the solver's formula (its servers' report; none when the
        others have none)."""
        for name, node in self.nodes.items():
            for t in node.targets:
                rows = self.foreign.get(id(t))
                if rows is not None:
                    _latency.foreign_load(t.spec, _ONE_START, _ONE_TARGET, 0, latency[name],
                                          np.array([(0, *r) for r in rows], float)
                                          .reshape(-1, 7))

    @property
    def idle(self) -> dict[str, float]:
        """Each node's idle read latency (ns), worked out once: the solver asks for it at
        every step."""
        if self._idle is None:
            self._idle = {n: node.idle_latency for n, node in self.nodes.items()}
        return self._idle

    def _loads(self, demands: Sequence[Demand], latencies: Mapping[str, float],
               node: str | None = None, wait: float = 0.0) -> tuple[dict, dict, list[float]]:
        """Read and write bandwidth per node (B/s) and each demand's rate when the nodes
        answer in ``latencies`` and a read waits ``wait`` ns for a tracker first."""
        reads = dict.fromkeys(self.nodes, 0.0)
        writes = dict.fromkeys(self.nodes, 0.0)
        rates = []
        for d in demands:
            x = d.rate(d.mean_latency(latencies) + wait)
            rates.append(x)
            for n, s in d.shares.items():
                if node is not None and n != node:
                    continue
                line_rate = d.threads * x * s * 1e9 * LINE_BYTES  # B/s read
                reads[n] += line_rate
                writes[n] += line_rate * (1 - d.read_fraction) / d.read_fraction
        return reads, writes, rates

    def solve(self, demands: Sequence[Demand], tol: float = 1e-9,
              max_sweeps: int = 500) -> Equilibrium:
        """The consistent operating point of ``demands`` on this system."""
        latency, wait, sweeps = self._operating_point(demands, tol, max_sweeps)
        reads, writes, rates = self._loads(demands, latency, wait=wait)
        if self.foreign:
            self._report_foreign(latency)
        servers = {n: node.servers(reads[n], writes[n]) for n, node in self.nodes.items()}
        busy = 0.0
        if self.trackers is not None and demands:
            threads, mlp, gap, _, shares, order = self._arrays(demands)[-6:]
            busy = _latency.tracker_load(threads, mlp, gap, shares, order,
                                         self._vector(latency, wait), wait)[1] / self.trackers
        return Equilibrium(
            latency=dict(latency), read_bps=reads, write_bps=writes,
            utilisation={n: busiest(s) for n, s in servers.items()},
            rates=rates, latencies=[d.mean_latency(latency) + wait for d in demands],
            sweeps=sweeps, servers=servers, tracker_wait=wait, trackers_busy=busy)

    def node_latencies(self, demands: Sequence[Demand], tol: float = 1e-9,
                       max_sweeps: int = 500) -> tuple[dict[str, float], int]:
        """The node latencies of :meth:`solve`'s operating point, and its sweeps."""
        latency, _, sweeps = self._operating_point(demands, tol, max_sweeps)
        return latency, sweeps

    def pooled(self, demands: Sequence[Demand]) -> bool:
        """Whether the host's trackers can run out under ``demands``: only when the
        threads can have more reads in flight than there are trackers."""
        return self.trackers is not None and sum(d.in_flight for d in demands) > self.trackers

    def _operating_point(self, demands: Sequence[Demand], tol: float, max_sweeps: int
                         ) -> tuple[dict[str, float], float, int]:
        """The node latencies, the wait for a tracker (0 if the trackers cannot run out)
        and the sweeps of the operating point. The wait is one more coordinate of the
        Newton iteration, its own fixed point :func:`~cxlsim.memory._latency.
        tracker_fixed_point` with the nodes held."""
        for d in demands:
            unknown = set(d.shares) - set(self.nodes)
            if unknown:
                raise ValueError(f"shares name unknown node(s) {sorted(unknown)}; nodes: "
                                 f"{', '.join(self.nodes)}")
        latency = dict(self.idle)
        active = [n for n in self.nodes if any(d.shares.get(n, 0) > 0 and d.threads > 0
                                               for d in demands)]
        pooled = self.pooled(demands)
        x = np.array([latency[n] for n in active] + ([0.0] if pooled else []))
        fixed = self._fixed_points(demands)
        pool = self._tracker_fixed_point(demands) if pooled else None
        sweeps, moved = 0, math.inf
        for sweeps in range(1, max_sweeps + 1):
            p = self._psi(active, fixed, pool, x, latency, tol)
            moved = float(np.max(np.abs(p - x) / _scale(x))) if x.size else 0.0
            if moved <= tol or x.size <= 1:
                x = p
                break
            x = self._newton(active, fixed, pool, x, p, latency, tol)
        else:
            raise RuntimeError(f"no equilibrium within {max_sweeps} iterations "
                               f"(moved {moved:.3g})")
        latency.update(zip(active, x))
        return latency, float(x[-1]) if pooled else 0.0, sweeps

    def _psi(self, active: list[str], fixed: _FixedPoint, pool: _PoolPoint | None,
             x: np.ndarray, latency: dict[str, float], tol: float) -> np.ndarray:
        """Each active node's own fixed point with the other nodes (and the wait for a
        tracker, ``x``'s last entry with a ``pool``) at ``x``, then the wait's (Jacobi)."""
        base = dict(latency)
        base.update(zip(active, x))
        wait = float(x[-1]) if pool is not None else 0.0
        out = [fixed(n, base, wait, tol * 1e-2) for n in active]
        if pool is not None:
            out.append(pool(base, wait, tol * 1e-2))
        return np.array(out)

    def _newton(self, active: list[str], fixed: _FixedPoint, pool: _PoolPoint | None,
                x: np.ndarray, p: np.ndarray, latency: dict[str, float],
                tol: float) -> np.ndarray:
        """A Newton step on ``x = psi(x)`` (finite-difference Jacobian), kept only if it
        lowers the residual; else the plain iterate ``psi(x)``."""
        n = x.size
        jac = np.zeros((n, n))
        for m in range(n):
            h = 1e-6 * _scale(x[m])
            xh = x.copy()
            xh[m] += h
            jac[:, m] = (self._psi(active, fixed, pool, xh, latency, tol) - p) / h
        try:
            step = np.linalg.solve(np.eye(n) - jac, p - x)
        except np.linalg.LinAlgError:
            return p
        floor = np.array([self.idle[a] for a in active] + ([0.0] if pool is not None else []))
        cand = np.maximum(x + step, floor)
        res_cand = np.max(np.abs(self._psi(active, fixed, pool, cand, latency, tol) - cand)
                          / _scale(cand))
        res_p = np.max(np.abs(self._psi(active, fixed, pool, p, latency, tol) - p)
                       / _scale(p))
        return cand if res_cand < res_p else p

    def _vector(self, latency: Mapping[str, float], wait: float) -> np.ndarray:
        """The nodes' latencies in order, then the wait for a tracker: what the compiled
        fixed points read."""
        return np.array([latency[m] for m in self.nodes] + [wait])

    def _arrays(self, demands: Sequence[Demand]) -> tuple:
        """The targets' specs and the demands as the compiled solver reads them: specs,
        starts, fractions, node bounds, then threads, mlp, gap, read fraction, shares and
        order (each demand's nodes in the order its mean latency adds them)."""
        names = list(self.nodes)
        index = {n: k for k, n in enumerate(names)}
        if self._specs is None:
            specs, starts, fractions, bounds = [], [], [], [0]
            for node in self.nodes.values():
                for f, target in zip(node.fractions, node.targets):
                    starts.append(sum(len(sp) for sp in specs))
                    specs.append(target.spec)
                    fractions.append(f)
                bounds.append(len(starts))
            self._specs = (np.concatenate(specs), np.array(starts, np.int64),
                           np.array(fractions), np.array(bounds, np.int64))
        shares = np.zeros((len(demands), len(names)))
        order = np.full((len(demands), max((len(d.shares) for d in demands), default=1)), -1,
                        np.int64)
        for i, d in enumerate(demands):
            for k, (n, s) in enumerate(d.shares.items()):  # a mean latency adds in this order
                shares[i, index[n]], order[i, k] = s, index[n]
        return (*self._specs, *(np.array([getattr(d, a) for d in demands], float)
                                for a in ("threads", "mlp", "gap", "read_fraction")),
                shares, order)

    def _fixed_points(self, demands: Sequence[Demand]) -> _FixedPoint:
        """``fixed(n, latency, wait, tol)``: node ``n``'s latency consistent with its own
        load under ``demands``, the other nodes at ``latency`` and a read's wait for a
        tracker ``wait`` -- idle if they do not load it past idle, else the root of its
        excess by Brent's method, compiled (:func:`cxlsim.memory._latency.
        node_fixed_point`) over the targets' own compiled models."""
        index = {n: k for k, n in enumerate(self.nodes)}
        arrays = self._arrays(demands)
        foreign = self._foreign()
        if self.foreign and not foreign.size:  # the others have gone: their load goes too
            for k in index.values():  # (the solver loads a node only while there are some)
                _latency.foreign_load(arrays[0], arrays[1], arrays[3], k, 0.0, foreign)

        def fixed(n: str, latency: dict[str, float], wait: float, tol: float) -> float:
            return _latency.node_fixed_point(index[n], self.idle[n], tol, *arrays,
                                             self._vector(latency, wait), foreign)

        return fixed

    def _tracker_fixed_point(self, demands: Sequence[Demand]) -> _PoolPoint:
        """``pool(latency, wait, tol)``: the wait for a tracker consistent with the load
        the demands put on the trackers when the nodes answer in ``latency``
        (:func:`cxlsim.memory._latency.tracker_fixed_point`; ``wait`` is the last one,
        where its bracket starts)."""
        threads, mlp, gap, _, shares, order = self._arrays(demands)[-6:]

        def pool(latency: dict[str, float], wait: float, tol: float) -> float:
            return _latency.tracker_fixed_point(self.trackers, tol, threads, mlp, gap, shares,
                                                order, self._vector(latency, wait))

        return pool


class EpochEngine:
    """Per-epoch equilibrium for cores whose epochs are given as counts.

    For each epoch, core ``c`` has ``refs[c, n]`` memory references to node ``n`` (its
    cache misses and page-walk references that reached memory) and ``busy[c]`` ns of
    work that does not wait on memory (compute and cache hits). Its epoch takes
    ``busy + sum_n refs[c, n] / mlp * L_n`` with the nodes' loaded latencies ``L_n`` at
    the bandwidth all cores draw in that epoch -- the same equilibrium as
    :meth:`MemorySystem.solve`, with one demand per core (gap = busy / refs), of
    ``stands_for`` threads when each core stands for several of the real system's.
    """

    def __init__(self, system: MemorySystem, mlp: float, read_fraction: float = 1.0,
                 stands_for: float = 1.0) -> None:
        self.system = system
        self.nodes = list(system.nodes)
        self.mlp = mlp
        #: Threads of the real system each core stands for (the similarity law's
        #: real threads / cores): its demand loads the nodes that many times.
        self.stands_for = stands_for
        self.read_fraction = read_fraction
        self.time = np.zeros(0)
        self.history: list[Equilibrium] = []
        self.demands: list[Demand] = []  # the last epoch's, one per core with references

    def step(self, refs: np.ndarray, busy: np.ndarray) -> np.ndarray:
        """Run one epoch; return each core's epoch time (ns) and add it to ``time``."""
        refs = np.asarray(refs, dtype=float)
        busy = np.asarray(busy, dtype=float)
        if refs.ndim != 2 or refs.shape[1] != len(self.nodes) or busy.shape != refs.shape[:1]:
            raise ValueError(f"refs must be [cores, {len(self.nodes)} nodes] and busy [cores]")
        if self.time.size != refs.shape[0]:
            self.time = np.zeros(refs.shape[0])
        demands, index = self._demands(refs, busy)
        self.demands = demands
        times = busy.copy()
        if demands:
            eq = self.system.solve(demands)
            self.history.append(eq)
            for c, d, x in zip(index, demands, eq.rates):
                times[c] = refs[c].sum() / x
        self.time += times
        return times

    def _demands(self, refs: np.ndarray, busy: np.ndarray) -> tuple[list[Demand], list[int]]:
        """A demand per core with memory references, and those cores' numbers."""
        demands, index = [], []
        for c, (row, b) in enumerate(zip(refs, busy)):
            total = row.sum()
            if total > 0:
                shares = {n: r / total for n, r in zip(self.nodes, row) if r > 0}
                demands.append(Demand(self.stands_for, self.mlp, shares, b / total,
                                      self.read_fraction))
                index.append(c)
        return demands, index

    def loaded(self, refs: np.ndarray, busy: np.ndarray) -> dict[str, float]:
        """The node latencies ``refs`` and ``busy`` would load the nodes to, with no
        epoch run (a what-if: the time and history stay as they are)."""
        demands, _ = self._demands(np.asarray(refs, float), np.asarray(busy, float))
        return self.system.node_latencies(demands)[0] if demands else dict(self.system.idle)

    def latencies(self) -> dict[str, float]:
        """Node latencies of the last epoch (idle before the first)."""
        if self.history:
            return dict(self.history[-1].latency)
        return dict(self.system.idle)

    def run_chunks(self, cores, chunks: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
        """Drive :class:`~cxlsim.memory.CoreMemory` cores chunk by chunk.

        ``chunks[e][c]`` is core c's virtual addresses in epoch e; the page tables' node
        numbers index this system's nodes in order. Each chunk runs through the core's
        TLBs and caches with last epoch's loaded latencies; the memory references it
        counts per node and its remaining (non-memory) time make the epoch's demand.
        """
        for epoch in chunks:
            lat = self.latencies()
            node_ns = np.array([lat[n] for n in self.nodes])
            refs, busy = [], []
            n = min(len(cores), len(epoch))  # the cores one after another (see access_cores)
            for stats in access_cores(list(cores)[:n], list(epoch)[:n], node_ns):
                caches = stats.caches
                mem = (stats.data[caches:] + stats.walk_refs[caches:]).astype(float)
                mem = np.pad(mem, (0, len(self.nodes) - mem.size))
                refs.append(mem)
                busy.append(max(stats.latency_ns - float(mem @ node_ns), 0.0))
            self.step(np.array(refs), np.array(busy))
        return self.time


def saturated(eq: Equilibrium, limit: float = 0.999) -> list[str]:
    """Nodes whose busiest queue is at or above ``limit`` utilisation."""
    return [n for n, u in eq.utilisation.items() if u >= limit or math.isinf(eq.latency[n])]
