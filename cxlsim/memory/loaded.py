"""Loaded latency: queueing primitives, memory targets, NUMA nodes, measured curves.

A *target* is one memory the host reaches: its DRAM (:class:`~cxlsim.memory.dram.
DramTarget`), a CXL expander (:class:`~cxlsim.memory.expander.ExpanderTarget`) or a
measured curve (:class:`CurveTarget`). Every target answers, for offered read and write
bandwidths (B/s), the queues a read crosses (:class:`Server`: utilisation and mean
wait) and so its mean read latency = unloaded latency + waits. A *node*
(:class:`MemoryNode`, a NUMA node) interleaves lines over one or more targets (a host
bridge or HDM decoder interleaving expanders).

The queueing model is Pollaczek-Khinchine's M/G/1 mean wait, ``W = lambda E[S^2] /
(2 (1 - rho))`` (M/D/1 for one message size): flat at low load, unbounded as the
utilisation nears 1. Poisson arrivals are an assumption -- many independent cores --
and tandem queues are treated as independent (a queue fed by another's departures
sees smoother arrivals, so the sum slightly over-estimates the wait; the cross-check
against the transaction level bounds the error).

Measured curves calibrate a target instead (:class:`CurveTarget`, read from a curve
file by :mod:`cxlsim.memory.curvefile`); :func:`model_curves` samples any target into
curves of the same form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cxlsim.units import format_bandwidth, format_time


@dataclass(frozen=True)
class Server:
    """One queue a read crosses: its utilisation and the read's mean wait there (ns)."""

    name: str
    utilisation: float
    wait: float


class Target(Protocol):
    """What the epoch level needs of a memory the host reaches."""

    name: str
    idle_latency: float

    def capacity(self, read_fraction: float = 1.0) -> float:
        """Largest total bandwidth (B/s, reads + writes) at this read fraction."""

    def servers(self, read_bps: float, write_bps: float) -> list[Server]:
        """The queues a read crosses at these offered bandwidths."""

    def read_latency(self, read_bps: float, write_bps: float = 0.0) -> float:
        """Mean read latency, ns (``idle_latency`` plus the waits)."""


class MemoryNode:
    """A NUMA node: lines interleaved over ``targets`` in the given ``fractions``
    (default equal, as an HDM decoder's interleave ways)."""

    def __init__(self, name: str, targets: Sequence[Target],
                 fractions: Sequence[float] | None = None) -> None:
        if not targets:
            raise ValueError(f"node {name!r} needs at least one memory target")
        fractions = [1.0] * len(targets) if fractions is None else list(fractions)
        if len(fractions) != len(targets) or min(fractions) <= 0:
            raise ValueError(f"node {name!r}: one positive fraction per target expected")
        total = sum(fractions)
        self.name = name
        self.targets = list(targets)
        self.fractions = [f / total for f in fractions]

    @property
    def idle_latency(self) -> float:
        """Mean unloaded read latency over the interleaved targets."""
        return sum(f * t.idle_latency for f, t in zip(self.fractions, self.targets))

    def capacity(self, read_fraction: float = 1.0) -> float:
        """Node bandwidth at which its first target saturates (B/s)."""
        return min(t.capacity(read_fraction) / f for f, t in zip(self.fractions, self.targets))

    def read_latency(self, read_bps: float, write_bps: float = 0.0) -> float:
        """Mean read latency over the targets at these node bandwidths."""
        return sum(f * t.read_latency(f * read_bps, f * write_bps)
                   for f, t in zip(self.fractions, self.targets))

    def servers(self, read_bps: float, write_bps: float) -> dict[str, list[Server]]:
        """Each target's queues at its share of the node's bandwidths."""
        return {t.name: t.servers(f * read_bps, f * write_bps)
                for f, t in zip(self.fractions, self.targets)}

    def utilisation(self, read_bps: float, write_bps: float) -> float:
        """Utilisation of the busiest queue of the node."""
        return busiest(self.servers(read_bps, write_bps))


def busiest(servers: dict[str, list[Server]]) -> float:
    """Utilisation of the busiest of a node's queues (:meth:`MemoryNode.servers`)."""
    return max((s.utilisation for ss in servers.values() for s in ss), default=0.0)


# --- measured curves -------------------------------------------------------------------

def monotone_problem(points: Sequence[tuple[float, float]], first: int = 0) -> str:
    """What is wrong with the order of (B/s, ns) points numbered from ``first``, or ''."""
    for i in range(1, len(points)):
        (b0, l0), (b1, l1) = points[i - 1], points[i]
        if b1 <= b0:
            return (f"bandwidth must increase from point to point; point {first + i} "
                    f"({format_bandwidth(b1)}) does not exceed point {first + i - 1} "
                    f"({format_bandwidth(b0)})")
        if l1 < l0:
            return (f"latency must not fall as bandwidth rises; point {first + i} "
                    f"({format_time(l1)}) is below point {first + i - 1} ({format_time(l0)})")
    return ""


@dataclass(frozen=True)
class Curve:
    """Latency (ns) against total bandwidth (B/s) at one read fraction."""

    read_fraction: float
    bandwidth: np.ndarray
    latency: np.ndarray

    def __post_init__(self) -> None:
        problem = ("at least two points are needed" if self.bandwidth.size < 2 else
                   monotone_problem(list(zip(self.bandwidth, self.latency))))
        if problem:
            raise ValueError(f"curve at read fraction {self.read_fraction:g}: {problem}")


class CurveTarget:
    """A target whose loaded latency is read off measured curves (one per read fraction).

    Between two read fractions the latency is interpolated linearly (outside the range
    the nearest curve is used); the capacity is the last point's bandwidth.
    """

    def __init__(self, name: str, curves: Sequence[Curve]) -> None:
        if not curves:
            raise ValueError("a curve target needs at least one curve")
        self.name = name
        self.curves = sorted(curves, key=lambda c: c.read_fraction)
        self.idle_latency = min(float(c.latency[0]) for c in self.curves)
        from cxlsim.memory import _latency  # numba: only once a model is built
        #: The model as the compiled formulas read it (:mod:`cxlsim.memory._latency`).
        self.spec = np.concatenate([[_latency.CURVES, self.idle_latency, len(self.curves)],
                                    *([c.read_fraction, c.bandwidth.size, *c.bandwidth,
                                       *c.latency] for c in self.curves)]).astype(float)

    def capacity(self, read_fraction: float = 1.0) -> float:
        from cxlsim.memory import _latency
        return _latency.curves_capacity(self.spec, 0, read_fraction)

    def read_latency(self, read_bps: float, write_bps: float = 0.0) -> float:
        from cxlsim.memory import _latency
        return _latency.curves_latency(self.spec, 0, read_bps, write_bps)

    def servers(self, read_bps: float, write_bps: float) -> list[Server]:
        total = read_bps + write_bps
        mix = read_bps / total if total > 0 else 1.0
        latency = self.read_latency(read_bps, write_bps)
        return [Server(self.name, total / self.capacity(mix), latency - self.idle_latency)]


def model_curves(target: Target, read_fractions: Sequence[float] = (1.0, 0.75, 2 / 3, 0.5),
                 points: int = 24, top: float = 0.98) -> list[Curve]:
    """Sample ``target``'s loaded latency into curves (up to ``top`` of its capacity)."""
    out = []
    for r in read_fractions:
        cap = target.capacity(r)
        bw = np.linspace(0.0, top * cap, points)
        lat = np.array([target.read_latency(b * r, b * (1 - r)) for b in bw])
        out.append(Curve(r, bw, lat))
    return out
