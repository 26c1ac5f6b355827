"""Page-placement policies of the trace-driven run, by name: where each page goes.

A policy sees the run's pages as dense ids (first-seen order) and the machine's NUMA
nodes, and answers two questions: the node of each page at its first touch, and after
each epoch, which pages move where (none for the static policies here; the tiering
policies of the kernel plug in through the same two methods). The registry
:data:`POLICIES` maps names to classes:

* ``static``: first touch by a memory policy (numactl's: local, bind, preferred,
  interleave, weighted interleave), falling back by distance when a node is full, never
  moving -- default Linux without tiering when the local node is big enough;
* ``oracle``: the best static placement for the whole trace, known in advance: the most
  accessed pages on the local node up to its capacity, the rest by distance;
* ``all-local`` and ``all-cxl``: every page on the local node, or interleaved over the
  CPU-less nodes, capacity ignored -- the bounds a policy lies between.
"""

from __future__ import annotations

import numpy as np

from cxlsim.errors import InputError
from cxlsim.memory.mempolicy import PagePlacement
from cxlsim.memory.numa import Numa


class Policy:
    """First-touch placement and moves; subclasses register under a name."""

    name = ""
    needs_counts = False  # True: wants every page's access count before the run

    def __init__(self, numa: Numa, footprint: int, mempolicy: str = "",
                 counts: np.ndarray | None = None) -> None:
        self.numa = numa
        self.footprint = footprint
        self.local = int(np.flatnonzero(numa.has_cpus)[0])

    def first_touch(self, pages: np.ndarray) -> np.ndarray:
        """Nodes of ``pages`` (distinct, untouched, in first-touch order)."""
        raise NotImplementedError

    def moves(self, epoch: dict) -> tuple[np.ndarray, np.ndarray]:
        """Pages to move after an epoch and their destinations (static: none)."""
        return np.empty(0, np.int64), np.empty(0, np.int64)


class Static(Policy):
    """First touch by ``mempolicy`` (numactl text; empty: local), never moving."""

    name = "static"

    def __init__(self, numa: Numa, footprint: int, mempolicy: str = "",
                 counts: np.ndarray | None = None) -> None:
        super().__init__(numa, footprint)
        self.placement = PagePlacement(numa, mempolicy, self.local)
        self.placement.mmap(footprint, name="trace")

    def first_touch(self, pages: np.ndarray) -> np.ndarray:
        return self.placement.touch(pages).astype(np.int64)


class Oracle(Static):
    """The hottest pages of the whole trace on the local node, up to its capacity; the
    rest, in falling heat, by distance (the static placement no online policy beats)."""

    name = "oracle"
    needs_counts = True

    def __init__(self, numa: Numa, footprint: int, mempolicy: str = "",
                 counts: np.ndarray | None = None) -> None:
        super().__init__(numa, footprint)
        if counts is None or len(counts) != footprint:
            raise ValueError("the oracle needs every page's access count")
        self.placement.touch(np.argsort(-counts, kind="stable"))
        self.nodes = self.placement.node_of(np.arange(footprint)).astype(np.int64)

    def first_touch(self, pages: np.ndarray) -> np.ndarray:
        return self.nodes[pages]


class AllLocal(Policy):
    """Every page on the local node, its capacity ignored (a bound)."""

    name = "all-local"

    def first_touch(self, pages: np.ndarray) -> np.ndarray:
        return np.full(len(pages), self.local, np.int64)


class AllCxl(Policy):
    """Pages interleaved over the CPU-less nodes, capacity ignored (a bound)."""

    name = "all-cxl"

    def __init__(self, numa: Numa, footprint: int, mempolicy: str = "",
                 counts: np.ndarray | None = None) -> None:
        super().__init__(numa, footprint)
        self.far = np.flatnonzero(~numa.has_cpus & (numa.capacity > 0))
        if not self.far.size:
            raise InputError("policy all-cxl needs a CPU-less (CXL) memory node")

    def first_touch(self, pages: np.ndarray) -> np.ndarray:
        return self.far[np.asarray(pages) % self.far.size].astype(np.int64)


#: Policy name -> class.
POLICIES: dict[str, type[Policy]] = {p.name: p for p in (Static, Oracle, AllLocal, AllCxl)}
