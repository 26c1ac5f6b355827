"""A core's path to memory: TLBs, page walker, caches, memory nodes -- one chunk at a time.

:class:`CpuParams` (a preset under ``models/cpus/``) describes the core: its clock, its
TLB levels, its cache levels (nearest first; some shared by the cores of a complex)
and the latency of local memory. :class:`CoreMemory` holds one core's state and runs
chunks of virtual addresses through the compiled kernel
(:func:`cxlsim.memory._kernels.access_chunk`), returning a :class:`ChunkStats`.

The timing model, per access:

* every TLB level reached costs its lookup time; a hit at a level stops there, a miss
  fills it and goes on to the next level;
* a miss in every TLB level walks the page table: one reference per level (4 for 4 KiB
  pages, 3 for 2 MiB, 2 for 1 GiB), one after another, each going through the data
  caches like a load and costing the latency of whichever level serves it;
* the data reference then costs the load-to-use latency of the first cache level that
  holds its line (every level missed on the way is filled: non-inclusive, fill on
  miss), or the latency of the memory node its page lives on;
* the latencies of a chunk's accesses add up, as for dependent loads (a pointer chase);
  independent loads overlap, see :func:`cxlsim.apps.pointer_chase.sequential_read`.

Not modelled: page-walk caches (Zen 2 keeps page-directory entries in its L2 DTLB; here
the upper levels' entries are read through the data caches, where they stay hot),
victim (exclusive) last-level caches (Zen 2's L3 is filled by L2 evictions, so its
capacity adds to the L2's), prefetchers, address hashing to cache slices, write-backs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
import cxlsim.memory._kernels as _kernels
from cxlsim.memory.cache import Arena, CacheParams, SetAssociative
from cxlsim.memory.pagetable import PageTable
from cxlsim.memory.tlb import TlbParams
from cxlsim.units import Frequency, Time


class CpuParams(StrictModel):
    """The memory side of a CPU's cores (``models/cpus/*.yaml``)."""

    name: str = Field(description="processor name")
    cores: int = Field(ge=1, description="cores per socket")
    cores_per_complex: int | None = Field(
        None, ge=1, description="cores of one complex (a CCX: they share the cache levels "
                                "with shared_by: complex); default: every core of the socket")
    frequency: Frequency = Field(description="core clock, converts cycle latencies to time")
    mlp: int = Field(ge=1, description="independent loads a core keeps in flight "
                                       "(outstanding L1 data-cache misses)")
    trackers: int | None = Field(None, ge=1, description=(
        "reads to memory the socket's uncore tracks at once, shared by every memory "
        "node, DRAM and CXL alike (home-agent trackers): a read holds one for its round "
        "trip, a write-back none (posted); none = no limit but the cores' mlp"))
    tlbs: list[TlbParams] = Field(min_length=1, description="data TLB levels, nearest first")
    caches: list[CacheParams] = Field(min_length=1, description="data cache levels, nearest first")
    memory_latency: Time = Field(description="load-to-use latency of an idle local memory access")

    @model_validator(mode="after")
    def _consistent(self) -> CpuParams:
        if len({c.line for c in self.caches}) > 1:
            raise ValueError("every cache level must have the same line size")
        by_complex = [c.name for c in self.caches if c.shared_by == "complex"]
        if self.cores_per_complex is not None:
            if not by_complex:
                raise ValueError(f"cores_per_complex ({self.cores_per_complex}) is set but no "
                                 "cache level has shared_by: complex; expected shared_by: "
                                 "complex on the level the complex shares (e.g. the L3), or "
                                 "cores_per_complex: null")
            n, shared = self.cores_per_complex, " and ".join(by_complex)
            if self.cores % n:
                raise ValueError(f"cores: {self.cores} is not a multiple of cores_per_complex "
                                 f"({n}, the cores sharing one {shared}); expected a multiple "
                                 f"of {n}, or set cores_per_complex too")
        for c, shared_by in zip(self.caches, self.sharing):
            if self.cores % shared_by:
                raise ValueError(f"{c.name} is shared by {shared_by} cores, which does not "
                                 f"divide the {self.cores} cores")
        return self

    @property
    def sharing(self) -> tuple[int, ...]:
        """Cores sharing one instance of each cache level, nearest first (1 = private)."""
        complex_cores = self.cores_per_complex or self.cores
        return tuple(complex_cores if c.shared_by == "complex" else c.shared_by
                     for c in self.caches)

    def cycles_to_ns(self, cycles: float) -> float:
        """A latency in core cycles as nanoseconds."""
        return cycles / self.frequency * 1e9


@dataclass(frozen=True)
class ChunkStats:
    """What a chunk of accesses did on one core.

    ``data`` and ``walk_refs`` count the data and page-walk references served by each
    cache level (the first ``caches`` entries, nearest first), then by each memory node.
    """

    accesses: int
    latency_ns: float          # summed over the chunk's accesses
    tlb_hits: np.ndarray       # hits per TLB level
    walks: int                 # misses in every TLB level
    data: np.ndarray
    walk_refs: np.ndarray
    caches: int

    @property
    def memory(self) -> np.ndarray:
        """Data references served by each memory node."""
        return self.data[self.caches:]


class Complex:
    """What the cores of a complex share besides their caches: the list of them, and
    their private passes run ahead (:mod:`cxlsim.memory.cores`), which anything else
    that changes a core's TLBs or caches first cancels."""

    def __init__(self) -> None:
        self.members: list[CoreMemory] = []
        self.ahead: Any = None  # cxlsim.memory.cores.Lookahead, or None
        self.scratch: list[tuple[np.ndarray, np.ndarray]] = []  # kept between calls
        self.backoff = 0  # calls not to run ahead after an undo: doubles, up to 16
        self.skip = 0     # calls left before running ahead again

    def cancel(self) -> None:
        """Undo the private passes run ahead, if any (waiting for them to stop), and
        run ahead less often: a caller that changes the TLBs between every two calls
        (a policy moving pages each epoch) would waste them."""
        if self.ahead is not None:
            ahead, self.ahead = self.ahead, None
            ahead.undo()
            self.backoff = min(2 * self.backoff or 1, 16)
            self.skip = self.backoff


class CoreMemory:
    """One core's TLBs and caches over one page table.

    ``memory_ns`` gives the latency of each memory node (default: one node at the CPU's
    ``memory_latency``). Pass ``complex_of=core`` to build another core of the same
    complex: it gets its own TLBs and private caches and the very same instances of the
    shared ones (:attr:`CpuParams.sharing` > 1), up to that many cores; all of them live in
    one :class:`~cxlsim.memory.cache.Arena`. Chunks of different cores interleave in a
    shared cache at chunk granularity.
    """

    def __init__(self, cpu: CpuParams, page_table: PageTable,
                 memory_ns: Sequence[float] | None = None,
                 complex_of: CoreMemory | None = None) -> None:
        self.cpu = cpu
        self.page_table = page_table
        self.arena = Arena() if complex_of is None else complex_of.arena
        self.tlbs = tuple(t.build(page_table.page_size, self.arena) for t in cpu.tlbs)
        if complex_of is None:
            self.complex = Complex()
            caches = [c.build(self.arena) for c in cpu.caches]
        else:
            if complex_of.cpu != cpu:
                raise ValueError("cores of one complex must have the same CPU parameters")
            self.complex = complex_of.complex
            limit = min((n for n in cpu.sharing if n > 1), default=1)
            if len(self.complex.members) >= limit:
                raise ValueError(f"a complex of {cpu.name} has at most {limit} cores")
            caches = [theirs if n > 1 else c.build(self.arena)
                      for c, n, theirs in zip(cpu.caches, cpu.sharing, complex_of.caches)]
        self.complex.members.append(self)
        self.caches: tuple[SetAssociative, ...] = tuple(caches)
        self._line_shift = cpu.caches[0].line.bit_length() - 1
        # The largest keys this page table yields: its last page, and the line of its
        # last page-table entry (the tables lie above every data frame).
        last_va = page_table.va_base + page_table.va_size - 1
        for tlb in self.tlbs:
            tlb.fit(last_va >> page_table.page_shift)
        for cache in self.caches:
            cache.fit(page_table.entry_address(last_va, page_table.levels - 1) >> self._line_shift)
        self._tlb_geometry = np.array([t.geometry for t in self.tlbs])
        self._cache_geometry = np.array([c.geometry for c in self.caches])
        self.memory_ns = self._node_latencies(
            [cpu.memory_latency] if memory_ns is None else memory_ns)
        self._tlb_ns = np.array([cpu.cycles_to_ns(t.latency_cycles) for t in cpu.tlbs])
        self._cache_ns = np.array([cpu.cycles_to_ns(c.latency_cycles) for c in cpu.caches])

    def _node_latencies(self, memory_ns: Sequence[float]) -> np.ndarray:
        out = np.array(memory_ns, dtype=np.float64)
        if out.ndim != 1 or out.size <= self.page_table.max_node or (out < 0).any():
            raise ValueError(f"memory_ns must give a non-negative latency for each of nodes "
                             f"0..{self.page_table.max_node}, got {list(memory_ns)}")
        return out

    def flush_tlbs(self) -> None:
        """Empty every TLB level (a full TLB flush)."""
        self.complex.cancel()
        for tlb in self.tlbs:
            tlb.flush()

    def invalidate_pages(self, vpns: np.ndarray) -> None:
        """Drop virtual page numbers ``vpns`` from every TLB level (``invlpg`` each)."""
        self.complex.cancel()
        for tlb in self.tlbs:
            tlb.invalidate(vpns)

    @property
    def private_rows(self) -> np.ndarray:
        """Geometry rows of this core's own structures: its TLBs and private caches."""
        own = [c.geometry for c, n in zip(self.caches, self.cpu.sharing) if n == 1]
        return np.array([t.geometry for t in self.tlbs] + own)

    def access(self, vaddrs: np.ndarray, memory_ns: Sequence[float] | None = None) -> ChunkStats:
        """Run a chunk of virtual addresses (dependent loads) through the core.

        ``memory_ns`` overrides the node latencies for this chunk (e.g. loaded latencies
        of the current epoch).
        """
        nodes_ns = self._nodes_ns(memory_ns)
        self.complex.cancel()
        pt = self.page_table
        vaddrs = np.ascontiguousarray(vaddrs, dtype=np.int64)
        n_cache = len(self.caches)
        tlb_counts = np.zeros(len(self.tlbs) + 1, dtype=np.int64)
        counts = np.zeros((2, n_cache + nodes_ns.size), dtype=np.int64)
        held = self.arena.buffer.nbytes + pt.frames.nbytes + pt.nodes.nbytes
        total = _kernels.access_chunk(
            vaddrs, pt.frames, pt.nodes, pt.va_base, pt.page_shift, pt.table_base, pt.table_node,
            self.arena.buffer, self._tlb_geometry, self._tlb_ns,
            self._cache_geometry, self._cache_ns, self._line_shift, nodes_ns,
            tlb_counts, counts, _kernels.AHEAD if held >= _kernels.PREFETCH_BYTES else 0)
        return ChunkStats(vaddrs.size, float(total), tlb_counts[:-1], int(tlb_counts[-1]),
                          counts[0], counts[1], n_cache)

    def _nodes_ns(self, memory_ns: Sequence[float] | None) -> np.ndarray:
        nodes_ns = self.memory_ns if memory_ns is None else self._node_latencies(memory_ns)
        if self.page_table.max_node >= nodes_ns.size:  # mapped to a new node since built
            raise ValueError(f"pages live on node {self.page_table.max_node} but there are "
                             f"latencies for {nodes_ns.size} nodes")
        return nodes_ns
