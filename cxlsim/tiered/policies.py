"""Page-placement policies of the trace-driven run, by name: where each page goes.

A policy sees the run's pages as dense ids (first-seen order) and the machine's NUMA
nodes. At a page's first touch it names the node the allocation aims at (and, for a bind
policy, the nodes allowed); the kernel's allocator (:class:`~cxlsim.memory.kernel.
KernelMemory`) decides where it lands -- falling back by distance, reclaiming, demoting.
Where every page is, its type, when it was allocated and last accessed, its accesses and
how it last moved are the run's :class:`~cxlsim.memory.placement.Placement`
(``EpochView.placement``). After each epoch a policy may ask for pages to move (none for the static policies here;
the tiering policies of the kernel plug in through the same methods). The registry
:data:`POLICIES` maps names to classes:

* ``static``: first touch by a memory policy (numactl's: local, bind, preferred,
  interleave, weighted interleave), never moving -- default Linux without tiering;
* ``oracle``: the best static placement for the whole trace, known in advance: the most
  accessed pages aimed at the local node until it is full, the rest at the next node;
* ``all-local`` and ``all-cxl``: every page on the local node, or interleaved over the
  CPU-less nodes, with those nodes' capacity taken as unbounded -- the bounds a policy
  lies between.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cxlsim.errors import InputError
from cxlsim.memory.mempolicy import MemPolicy, PagePlacement
from cxlsim.memory.kernel import KernelMemory
from cxlsim.memory.numa import Numa
from cxlsim.memory.placement import Placement


@dataclass
class EpochView:
    """What a policy sees after an epoch: the pages accessed (dense ids, with repeats),
    the kernel's memory state (LRU lists, counters, and every page's placement), the epoch's
    statistics, the pages that took a NUMA hint fault with their fault latency (ns since
    the scanner marked them), and the access monitor's latest regions."""

    pages: np.ndarray
    kernel: KernelMemory
    stats: dict
    hint_faults: np.ndarray
    fault_latency: np.ndarray
    regions: list[tuple[int, int, int, int]]  # the DAMON monitor's last: start, end,
                                              # nr_accesses, age

    @property
    def placement(self) -> Placement:
        """Every page's node, type, allocation and access epochs, accesses and flags."""
        return self.kernel.placement


class Policy:
    """First-touch targets and moves; subclasses register under a name."""

    name = ""
    needs_counts = False   # True: wants every page's access count before the run
    unbounded = False      # True: the nodes it uses are given room for every page
    in_task = False        # True: its moves are made in the task's context (a hint-fault
                           # handler), so the task pays them (cxlsim.tiered.migration)

    def __init__(self, numa: Numa, footprint: int, mempolicy: MemPolicy | str = "",
                 counts: np.ndarray | None = None, room: np.ndarray | None = None) -> None:
        self.numa = numa
        self.footprint = footprint
        self.local = int(np.flatnonzero(numa.has_cpus)[0])

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        """The node each of ``pages`` aims at, and the nodes allowed (None: any)."""
        raise NotImplementedError

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        """Pages to move after an epoch and their destinations (static: none)."""
        return np.empty(0, np.int64), np.empty(0, np.int64)


class Static(Policy):
    """First touch by ``mempolicy`` (a MemPolicy or numactl text; empty: local), never moving."""

    name = "static"

    def __init__(self, numa: Numa, footprint: int, mempolicy: MemPolicy | str = "",
                 counts: np.ndarray | None = None, room: np.ndarray | None = None) -> None:
        super().__init__(numa, footprint)
        self.first_touch = PagePlacement(numa, mempolicy, self.local)

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        return self.first_touch.preferred(pages)


class Oracle(Policy):
    """The hottest pages of the whole trace aimed at the local node, as many as it holds
    (``room``: pages above its min watermark, where allocation stops; default its
    capacity); the rest at the nearest other node (the static placement no online
    policy beats)."""

    name = "oracle"
    needs_counts = True

    def __init__(self, numa: Numa, footprint: int, mempolicy: MemPolicy | str = "",
                 counts: np.ndarray | None = None, room: np.ndarray | None = None) -> None:
        super().__init__(numa, footprint)
        if counts is None or len(counts) != footprint:
            raise ValueError("the oracle needs every page's access count")
        fits = numa.capacity if room is None else room
        hot = np.argsort(-counts, kind="stable")[:int(fits[self.local])]
        order = numa.fallback(self.local)
        far = int(order[1]) if order.size > 1 else self.local
        self.target = np.full(footprint, far, np.int64)
        self.target[hot] = self.local

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        return self.target[pages], None


class AllLocal(Policy):
    """Every page on the local node (a bound)."""

    name = "all-local"
    unbounded = True

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        return np.full(len(pages), self.local, np.int64), [self.local]


class AllCxl(Policy):
    """Pages interleaved over the CPU-less nodes (a bound)."""

    name = "all-cxl"
    unbounded = True

    def __init__(self, numa: Numa, footprint: int, mempolicy: MemPolicy | str = "",
                 counts: np.ndarray | None = None, room: np.ndarray | None = None) -> None:
        super().__init__(numa, footprint)
        self.far = np.flatnonzero(~numa.has_cpus & (numa.capacity > 0))
        if not self.far.size:
            raise InputError("policy all-cxl needs a CPU-less (CXL) memory node")

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        target = self.far[np.asarray(pages) % self.far.size].astype(np.int64)
        return target, self.far.tolist()


#: Policy name -> class.
POLICIES: dict[str, type[Policy]] = {p.name: p for p in (Static, Oracle, AllLocal, AllCxl)}
