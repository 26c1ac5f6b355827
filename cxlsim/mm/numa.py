"""NUMA nodes: CPUs, memory in pages, SLIT distances, fallback order, free counts.

A machine's nodes are numbered from 0 in the order given. A node has CPUs or not (CXL
memory appears as a CPU-less node), a memory capacity (0: a memory-less node) and
optionally a memory bandwidth, from which the weighted-interleave weights are derived
in auto mode. Distances form an ACPI SLIT-like matrix: 10 on the diagonal, 11..254
elsewhere, symmetric; without one every remote node is at 20.

:class:`Numa` is the machine's runtime state, shared by every process placed on it
(:class:`~cxlsim.mm.mempolicy.PagePlacement`): capacity and free pages per node,
each node's fallback order (the kernel's zonelist) and the weighted-interleave weight
table (``/sys/kernel/mm/mempolicy/weighted_interleave/nodeN``)::

    numa = Numa({"nodes": [{"cpus": 32, "memory": "64 GiB"}, {"memory": "32 GiB"}],
                 "distances": [[10, 14], [14, 10]]})
    numa.fallback(0)   # array([0, 1]): local first, then nearest
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.units import Bandwidth, Size

#: SLIT distance of a node to itself; every other distance must exceed it.
LOCAL_DISTANCE = 10
#: Distance between different nodes when no matrix is given (the kernel's default).
REMOTE_DISTANCE = 20
#: Largest SLIT distance (255 means "unreachable" and is not accepted).
MAX_DISTANCE = 254
#: Largest weighted-interleave weight (sysfs ``nodeN`` accepts 1..255).
MAX_WEIGHT = 255
#: Scale of the auto-mode weights before the GCD reduction ("weightiness" in the kernel).
WEIGHTINESS = 32


class NodeParams(StrictModel):
    """One NUMA node."""

    cpus: int = Field(0, ge=0, description="CPUs on the node (0: a CPU-less node, e.g. CXL "
                                           "memory)")
    memory: Size = Field(description="memory capacity in bytes (0: a memory-less node)")
    bandwidth: Bandwidth | None = Field(None, description="memory bandwidth in B/s, the lower "
                                                         "of read and write (none: not known); "
                                                         "sets the auto weighted-interleave "
                                                         "weights")


class NumaParams(StrictModel):
    """A machine's NUMA nodes, their distances and the weighted-interleave weights."""

    page_size: Size = Field(4096, description="page size in bytes (a power of two, at least "
                                              "4 KiB)")
    nodes: list[NodeParams] = Field(min_length=1, description="the nodes, numbered from 0 "
                                                              "in this order")
    distances: list[list[int]] | None = Field(
        None, description="SLIT distance matrix, one row per node: 10 on the diagonal, "
                          "11..254 elsewhere, symmetric (default: 20 between nodes)")
    interleave_weights: list[int] | None = Field(
        None, description="weighted-interleave weight per node, 1..255, as written to "
                          "weighted_interleave/nodeN in sysfs (default: auto mode, from the "
                          "node bandwidths)")

    @model_validator(mode="after")
    def _check(self) -> NumaParams:
        n = len(self.nodes)
        if self.page_size < 4096 or self.page_size & (self.page_size - 1):
            raise ValueError(f"page_size must be a power of two of at least 4 KiB, "
                             f"got {self.page_size} B")
        for i, node in enumerate(self.nodes):
            if node.memory % self.page_size:
                raise ValueError(f"nodes[{i}].memory must be a whole number of "
                                 f"{self.page_size} B pages, got {node.memory} B")
        if not any(node.cpus for node in self.nodes):
            raise ValueError("at least one node must have CPUs")
        if not any(node.memory for node in self.nodes):
            raise ValueError("at least one node must have memory")
        if self.distances is not None:
            _check_distances(self.distances, n)
        if self.interleave_weights is not None:
            if len(self.interleave_weights) != n:
                raise ValueError(f"interleave_weights must have one weight per node ({n}), "
                                 f"got {len(self.interleave_weights)}")
            bad = [w for w in self.interleave_weights if not 1 <= w <= MAX_WEIGHT]
            if bad:
                raise ValueError(f"interleave weights must be in 1..{MAX_WEIGHT}, got {bad[0]}")
        return self


def _check_distances(d: list[list[int]], n: int) -> None:
    """Raise ValueError unless ``d`` is an n x n SLIT: 10 on the diagonal, 11..254 off it,
    symmetric."""
    if len(d) != n or any(len(row) != n for row in d):
        raise ValueError(f"distances must be a {n} x {n} matrix, one row per node")
    for i in range(n):
        for j in range(n):
            if i == j and d[i][j] != LOCAL_DISTANCE:
                raise ValueError(f"distances[{i}][{i}] must be {LOCAL_DISTANCE} (a node's "
                                 f"distance to itself), got {d[i][j]}")
            if i != j and not LOCAL_DISTANCE < d[i][j] <= MAX_DISTANCE:
                raise ValueError(f"distances[{i}][{j}] must be in {LOCAL_DISTANCE + 1}.."
                                 f"{MAX_DISTANCE}, got {d[i][j]}")
            if d[i][j] != d[j][i]:
                raise ValueError(f"distances must be symmetric: distances[{i}][{j}] is "
                                 f"{d[i][j]} but distances[{j}][{i}] is {d[j][i]}")


def auto_weights(bandwidth: Sequence[float], memory: Sequence[bool]) -> np.ndarray:
    """Weighted-interleave weights from node bandwidths, as the kernel's auto mode.

    ``reduce_interleave_weights`` (mm/mempolicy.c, weighted-interleave auto-tuning,
    2025): with bandwidths in MB/s (as HMAT reports them) and ``total`` their sum over
    the nodes with memory, a node's weight is ``32 * bw // total``, or 1 if that share
    is at most 1/32 or the bandwidth is unknown (0); the weights of the nodes with
    memory are then divided by their GCD ("1:2 is strictly better than 16:32").
    Memory-less nodes get 1. So weights are in 1..32 and only approximately
    proportional: bandwidths 2:1 give 21:10.
    """
    bw = np.rint(np.asarray(bandwidth, dtype=float) / 1e6).astype(np.int64)
    mem = np.asarray(memory, dtype=bool)
    total = int(bw[mem].sum())
    scaled = WEIGHTINESS * bw
    weights = np.where(mem & (bw > 0) & (total < scaled), scaled // max(total, 1), 1)
    weights[mem] //= np.gcd.reduce(weights[mem])
    return weights


class Numa:
    """A machine's nodes at run time: capacities, free counts, fallback orders, weights.

    ``capacity`` and ``free`` are pages per node (int64 arrays); ``free`` is what the
    placements on this machine have not yet taken. ``distance`` is the full distance
    matrix, ``has_cpus`` a boolean per node, ``interleave_weights`` the weight table of
    weighted interleave (the ``interleave_weights`` given, or :func:`auto_weights`).
    """

    def __init__(self, params: NumaParams | Mapping[str, Any]) -> None:
        if not isinstance(params, NumaParams):
            params = NumaParams.model_validate(params)
        self.params = params
        self.page_size = params.page_size
        self.n_nodes = n = len(params.nodes)
        self.capacity = np.array([node.memory // params.page_size for node in params.nodes],
                                 dtype=np.int64)
        self.free = self.capacity.copy()
        self.has_cpus = np.array([node.cpus > 0 for node in params.nodes])
        if params.distances is None:
            self.distance = np.full((n, n), REMOTE_DISTANCE, dtype=np.int64)
            np.fill_diagonal(self.distance, LOCAL_DISTANCE)
        else:
            self.distance = np.array(params.distances, dtype=np.int64)
        if params.interleave_weights is None:
            self.interleave_weights = auto_weights([node.bandwidth or 0.0 for node in params.nodes],
                                                   self.capacity > 0)
        else:
            self.interleave_weights = np.array(params.interleave_weights, dtype=np.int64)
        self._fallback = [self._order(i) for i in range(n)]

    def _order(self, node: int) -> np.ndarray:
        """The nodes with memory, nearest to ``node`` first.

        Among equally distant nodes CPU-less ones come first, then those numbered above
        ``node``, then by number: the kernel's find_next_best_node adds these preferences
        to the distance as +1 penalties; here they only break ties.
        """
        candidates = np.flatnonzero(self.capacity > 0)
        keys = sorted(candidates, key=lambda m: (self.distance[node, m], bool(self.has_cpus[m]),
                                                 m < node, m))
        return np.array(keys, dtype=np.int64)

    def fallback(self, node: int) -> np.ndarray:
        """Where an allocation aimed at ``node`` goes, in order: its zonelist."""
        return self._fallback[node]

    def check_node(self, node: int, *, memory: bool = False, cpus: bool = False) -> None:
        """Raise ValueError unless ``node`` exists (and has memory / CPUs if asked)."""
        if not 0 <= node < self.n_nodes:
            raise ValueError(f"node {node} does not exist (nodes 0-{self.n_nodes - 1})")
        if memory and self.capacity[node] == 0:
            raise ValueError(f"node {node} has no memory")
        if cpus and not self.has_cpus[node]:
            raise ValueError(f"node {node} has no CPUs")
