"""The static policies: pages stay where first touch put them.

* ``static``: first touch by a memory policy (numactl's: local, bind, preferred,
  interleave, weighted interleave), never moving -- default Linux without tiering;
* ``oracle``: the best static placement for the whole trace, known in advance: the most
  accessed pages aimed at the local node until it is full, the rest at the next node;
* ``all-local`` and ``all-cxl``: every page on the local node, or interleaved over the
  CPU-less nodes, with those nodes' capacity taken as unbounded -- the bounds a policy
  lies between.
"""

from __future__ import annotations

import numpy as np

from cxlsim.errors import InputError
from cxlsim.mm.mempolicy import MemPolicy, PagePlacement
from cxlsim.mm.numa import Numa
from cxlsim.tiered.policies.base import Policy, PolicyParams


class Static(Policy):
    """First touch by ``mempolicy`` (a MemPolicy or numactl text; empty: local), never moving."""

    name = "static"

    def __init__(self, numa: Numa, footprint: int, mempolicy: MemPolicy | str = "",
                 counts: np.ndarray | None = None, room: np.ndarray | None = None,
                 params: PolicyParams | None = None) -> None:
        super().__init__(numa, footprint, params=params)
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
                 counts: np.ndarray | None = None, room: np.ndarray | None = None,
                 params: PolicyParams | None = None) -> None:
        super().__init__(numa, footprint, params=params)
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
                 counts: np.ndarray | None = None, room: np.ndarray | None = None,
                 params: PolicyParams | None = None) -> None:
        super().__init__(numa, footprint, params=params)
        self.far = np.flatnonzero(~numa.has_cpus & (numa.capacity > 0))
        if not self.far.size:
            raise InputError("policy all-cxl needs a CPU-less (CXL) memory node")

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        target = self.far[np.asarray(pages) % self.far.size].astype(np.int64)
        return target, self.far.tolist()


#: The static policies, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (Static, Oracle, AllLocal, AllCxl)
