"""Memory policies, per-region policies, and the node of every virtual page.

Linux's mempolicy (mm/mempolicy.c) decides a page's node when the page is first
touched:

=========================  =========================================================
mode (numactl option)      where a page goes
=========================  =========================================================
``default`` (none)         the local node (the node of the process's CPUs); when it
                           is full, the other nodes, nearest first
``bind`` (``-m 1,2``)      only the listed nodes, nearest to the local node first;
                           when all are full the allocation fails
                           (:class:`OutOfMemoryError`; the kernel would OOM-kill)
``preferred`` (``-p 1``)   the node; when it is full, the others nearest to it first
``interleave``             the listed nodes in turn: interleave index ``i`` goes to
(``-i 1,2``)               ``nodes[i mod n]`` (ascending node numbers), falling back
                           from there as ``preferred`` does
``weighted-interleave``    as interleave, but each round gives ``w`` consecutive
(``-w 1,2``)               indices to a node of weight ``w``: the policy's weights or
                           the machine's table (:class:`~cxlsim.mm.numa.Numa`)
=========================  =========================================================

"Full" means every page of the node is taken (watermarks and reclaim are not
modelled); "nearest" is the node's fallback order, :meth:`Numa.fallback`.

The interleave index of a page fault is the page's offset in its mapping
(``get_vma_policy``: ``vm_pgoff`` plus the page's index in the VMA), and the
``vm_pgoff`` of a private anonymous mapping is its virtual page number; so the index
is the virtual page number. Touching a range front to back advances it by one per
allocated page, and of any ``sum(w)`` consecutive pages a node of weight ``w`` gets
exactly ``w`` (while it has room). The per-task counter the kernel advances instead
(``interleave_nodes``, ``il_prev``) serves allocations outside a mapping only.

Per-region policies: :meth:`PagePlacement.mmap` lays regions out one after another
from virtual page 0. A region mapped with a policy follows it (``mbind``, which is how
hmalloc's arena applies the ``hmctl`` policy); the others follow the process policy::

    proc = PagePlacement(numa, "-i 1,2", cpu_node=0)   # numactl -i 1,2 (numa: a Numa)
    heap = proc.mmap(65536, name="malloc")              # follows the process policy
    area = proc.mmap(131072, "-m 2", name="hmalloc")    # hmctl -m 2
    proc.touch(heap)                                    # first touch: the heap,
    proc.touch(area)                                    # then the area
    proc.counts(area)                                   # pages per node: all on node 2
    proc.node_of(vpages)                                # node per page, -1 untouched

The pages live in a :class:`~cxlsim.mm.placement.Placement` (``proc.placement``):
this class is the first-touch allocator that places them; the interleave round is the
placement module's :func:`~cxlsim.mm.placement.interleave_round`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.errors import InputError
from cxlsim.mm.numa import MAX_WEIGHT, Numa
from cxlsim.mm.placement import Placement, interleave_round

Mode = Literal["default", "bind", "preferred", "interleave", "weighted-interleave"]

#: numactl options -> policy mode.
_OPTIONS: dict[str, Mode] = {
    "-m": "bind", "--membind": "bind", "-p": "preferred", "--preferred": "preferred",
    "-i": "interleave", "--interleave": "interleave",
    "-w": "weighted-interleave", "--weighted-interleave": "weighted-interleave",
}
_OPTION = re.compile(r"(--?[a-z-]+)(?:=|\s*)(\S+)")
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")


def parse_numactl(text: str) -> dict[str, Any]:
    """``"-m 2"``, ``"--interleave=0-2"``, ``""``... -> ``{"mode": ..., "nodes": [...]}``."""
    text = text.strip()
    if not text:
        return {"mode": "default"}
    match = _OPTION.fullmatch(text)
    if not match or match[1] not in _OPTIONS:
        raise ValueError(f"expected one numactl policy option ('', '-m 2', '-p 1', "
                         f"'-i 0,1', '-w 0,2'), got {text!r}")
    nodes = []
    for part in match[2].split(","):
        span = _RANGE.fullmatch(part)
        if not span or (span[2] and int(span[2]) < int(span[1])):
            raise ValueError(f"expected a node list such as 0,2-3, got {match[2]!r}")
        nodes.extend(range(int(span[1]), int(span[2] or span[1]) + 1))
    return {"mode": _OPTIONS[match[1]], "nodes": nodes}


class MemPolicy(StrictModel):
    """A memory policy. Also read from numactl-style text (:func:`parse_numactl`)."""

    mode: Mode = Field("default", description="the policy (see cxlsim.mm.mempolicy)")
    nodes: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, description="the policy's nodes, a set (order and repeats "
                                          "do not matter); none for default")
    weights: dict[int, Annotated[int, Field(ge=1, le=MAX_WEIGHT)]] | None = Field(
        None, description="weighted-interleave only: weight per node, 1..255 (default: the "
                          "machine's weight table)")

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        return parse_numactl(data) if isinstance(data, str) else data

    @field_validator("nodes")
    @classmethod
    def _as_set(cls, nodes: list[int]) -> list[int]:
        return sorted(set(nodes))

    @model_validator(mode="after")
    def _check(self) -> MemPolicy:
        if self.mode == "default" and self.nodes:
            raise ValueError(f"the default policy takes no nodes, got {self.nodes}")
        if self.mode != "default" and not self.nodes:
            raise ValueError(f"the {self.mode} policy needs at least one node")
        if self.mode == "preferred" and len(self.nodes) != 1:
            raise ValueError(f"the preferred policy takes one node, got {self.nodes}")
        if self.weights is not None:
            if self.mode != "weighted-interleave":
                raise ValueError("weights are for the weighted-interleave policy only")
            if sorted(self.weights) != self.nodes:
                raise ValueError(f"weights must give one weight for each of the nodes "
                                 f"{self.nodes}, got {dict(self.weights)}")
        return self

    def __str__(self) -> str:
        """numactl's form: ``default``, ``--membind=2``, ``--interleave=0,1``... (with
        ``(weights 2:1)`` after explicit weights)."""
        if self.mode == "default":
            return "default"
        option = next(o for o, m in _OPTIONS.items() if m == self.mode and o.startswith("--"))
        text = f"{option}={','.join(map(str, self.nodes))}"
        if self.weights is None:
            return text
        return f"{text} (weights {':'.join(str(self.weights[n]) for n in self.nodes)})"


class OutOfMemoryError(InputError):
    """No node the policy allows has a free page (the kernel would OOM-kill)."""


@dataclass(frozen=True)
class Region:
    """Virtual pages ``[start, stop)`` of one mapping; ``policy`` None: the process's."""

    name: str
    start: int
    stop: int
    policy: MemPolicy | None

    @property
    def pages(self) -> int:
        """Number of virtual pages."""
        return self.stop - self.start


class PagePlacement:
    """One process's virtual pages and the node each one lives on.

    ``policy`` is the process policy (numactl's, as a :class:`MemPolicy` or its text),
    ``cpu_node`` the node whose CPUs run the process (its local node). Pages are taken
    from ``numa.free`` at first touch and placed in ``placement`` (virtual page ``v`` is
    its page ``v``; node -1 until it is touched).
    """

    def __init__(self, numa: Numa, policy: MemPolicy | str = "", cpu_node: int = 0) -> None:
        numa.check_node(cpu_node, cpus=True)
        self.numa = numa
        self.cpu_node = cpu_node
        self.policy = self._checked(policy)
        self.regions: list[Region] = []
        self.placement = Placement(page_size=numa.page_size)
        self._starts = np.empty(0, dtype=np.int64)

    def _checked(self, policy: MemPolicy | str) -> MemPolicy:
        """``policy`` as a MemPolicy whose nodes exist on this machine and have memory."""
        if not isinstance(policy, MemPolicy):
            policy = MemPolicy.model_validate(policy)
        for node in policy.nodes:
            self.numa.check_node(node, memory=True)
        return policy

    def mmap(self, pages: int, policy: MemPolicy | str | None = None, name: str = "") -> Region:
        """Map ``pages`` more virtual pages, with their own ``policy`` if given (a
        default policy, like ``mbind(MPOL_DEFAULT)``, means the process policy)."""
        if pages < 1:
            raise ValueError(f"a region needs at least one page, got {pages}")
        if policy is not None:
            policy = self._checked(policy)
            if policy.mode == "default":
                policy = None
        added = self.placement.grow(pages)
        region = Region(name or f"region{len(self.regions)}", added.start, added.stop, policy)
        self.regions.append(region)
        self._starts = np.append(self._starts, added.start)
        return region

    def _vpages(self, vpages: Region | range | np.ndarray) -> np.ndarray:
        """Virtual page numbers as an int64 array, checked to be mapped."""
        if isinstance(vpages, Region):
            return np.arange(vpages.start, vpages.stop, dtype=np.int64)
        v = np.asarray(vpages, dtype=np.int64)
        if v.size and (v.min() < 0 or v.max() >= self.placement.n_pages):
            raise IndexError(f"virtual pages must be mapped, in [0, {self.placement.n_pages})")
        return v

    def node_of(self, vpages: Region | range | np.ndarray) -> np.ndarray:
        """The node of each virtual page (-1: not touched yet)."""
        return self.placement.node[self._vpages(vpages)]

    def counts(self, region: Region | None = None) -> np.ndarray:
        """Touched pages per node, of ``region`` or of the whole process."""
        pages = slice(None) if region is None else slice(region.start, region.stop)
        return self.placement.counts(pages, self.numa.n_nodes)

    def touch(self, vpages: Region | range | np.ndarray) -> np.ndarray:
        """First-touch the untouched pages among ``vpages``, in the order given; return
        the node of every page of ``vpages``.

        Raises :class:`OutOfMemoryError` at the first page no allowed node has room
        for; the pages before it keep their nodes.
        """
        v = self._vpages(vpages)
        fresh = v[self.placement.node[v] < 0]
        if fresh.size > 1 and not (np.diff(fresh) > 0).all():  # keep first occurrences
            _, first = np.unique(fresh, return_index=True)
            fresh = fresh[np.sort(first)]
        if fresh.size:
            self._allocate(fresh)
        return self.placement.node[v]

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        """The node each of ``pages`` (of the process policy) aims at before any fallback,
        and the nodes a bind policy allows (None: any) -- what the kernel's allocator is
        asked for (:class:`~cxlsim.mm.kernel.KernelMemory` decides where they land)."""
        pages = np.asarray(pages, dtype=np.int64)
        routes, index = self._routes(self.policy, pages)
        first = np.array([r[0] for r in routes], dtype=np.int64)
        allowed = list(self.policy.nodes) if self.policy.mode == "bind" else None
        return first[index], allowed

    def _allocate(self, pages: np.ndarray) -> None:
        """Give distinct untouched ``pages`` their nodes, one after another in order.

        Each page has a *route*: the nodes it may go to, in order (its target node's
        fallback order, or for bind the local order restricted to the bound nodes). A
        page goes to the first node of its route with a free page. That is fixed until
        some node fills up, so the pages are placed in runs: each run ends where a node
        fills (or no node of a page's route has room), and the routes' first open nodes
        are recomputed -- at most one run per node, plus one.
        """
        region = np.searchsorted(self._starts, pages, side="right") - 1
        routes: list[np.ndarray] = []
        route = np.empty(pages.size, dtype=np.int64)
        for r in np.flatnonzero(np.bincount(region)):
            here = region == r
            targets, index = self._routes(self._policy_of(self.regions[r]), pages[here])
            route[here] = len(routes) + index
            routes += targets
        table = np.full((len(routes), max(map(len, routes))), -1, dtype=np.int64)
        for i, nodes in enumerate(routes):
            table[i, :len(nodes)] = nodes
        free, done = self.numa.free, 0
        while done < pages.size:
            open_ = (table >= 0) & (free[table] > 0)
            first = np.where(open_.any(axis=1),
                             table[np.arange(len(table)), open_.argmax(axis=1)], -1)
            dest = first[route[done:]]
            blocked = np.flatnonzero(dest < 0)
            oom = int(blocked[0]) if blocked.size else None
            stop = dest.size if oom is None else oom
            for node in np.flatnonzero(free > 0):
                hits = np.flatnonzero(dest[:stop] == node)
                if hits.size > free[node]:
                    stop = int(hits[free[node]])
            self.placement.place(pages[done:done + stop], dest[:stop])
            free -= np.bincount(dest[:stop], minlength=free.size)
            done += stop
            if stop == oom:
                self._out_of_memory(int(pages[done]), table[route[done]])

    def _routes(self, policy: MemPolicy, pages: np.ndarray) -> tuple[list[np.ndarray],
                                                                     np.ndarray]:
        """The routes of ``policy`` and the index of each page's route among them."""
        numa, same = self.numa, np.zeros(pages.size, dtype=np.int64)
        if policy.mode == "default":
            return [numa.fallback(self.cpu_node)], same
        if policy.mode == "preferred":
            return [numa.fallback(policy.nodes[0])], same
        if policy.mode == "bind":
            local = numa.fallback(self.cpu_node)
            return [local[np.isin(local, policy.nodes)]], same
        if policy.mode == "interleave":
            weights = np.ones(len(policy.nodes), dtype=np.int64)
        elif policy.weights is not None:
            weights = np.array([policy.weights[n] for n in policy.nodes])
        else:
            weights = numa.interleave_weights[policy.nodes]
        slot = interleave_round(weights)
        return [numa.fallback(n) for n in policy.nodes], slot[pages % slot.size]

    def _out_of_memory(self, page: int, route: np.ndarray) -> None:
        """Raise the OutOfMemoryError of ``page``, whose route (padded with -1) is full."""
        region = self.regions[int(np.searchsorted(self._starts, page, side="right")) - 1]
        allowed = route[route >= 0].tolist()
        which = (f"node {allowed[0]} is" if len(allowed) == 1
                 else f"nodes {','.join(map(str, allowed))} are")
        raise OutOfMemoryError(
            f"out of memory at virtual page {page} (region {region.name!r}, policy "
            f"{self._policy_of(region)}): {which} full")

    def _policy_of(self, region: Region) -> MemPolicy:
        """The policy ``region``'s pages follow."""
        return self.policy if region.policy is None else region.policy
