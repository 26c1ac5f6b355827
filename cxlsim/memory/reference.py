"""A plain pure-Python reference of :class:`~cxlsim.memory.hierarchy.CoreMemory`.

The same model written the textbook way -- one ``OrderedDict`` per set, one access at a
time, every outcome recorded -- so the compiled kernels can be checked against it
access by access (tests) and timed against it (``benchmarks/bench_memory.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

from cxlsim.memory.hierarchy import CpuParams
from cxlsim.memory.pagetable import PageTable


class LruSets:
    """A set-associative LRU structure: ``sets`` ordered dicts, least recent first."""

    def __init__(self, sets: int, ways: int) -> None:
        self.ways = ways
        self.sets = [OrderedDict() for _ in range(sets)]

    def lookup(self, key: int) -> bool:
        """True on a hit; the key becomes the most recent entry of its set either way."""
        entries = self.sets[key % len(self.sets)]
        if key in entries:
            entries.move_to_end(key)
            return True
        entries[key] = None
        if len(entries) > self.ways:
            entries.popitem(last=False)
        return False


class Access(NamedTuple):
    """One access: the TLB level that hit (None: a walk), who served each walk reference
    and the data (a cache level, or ``len(caches) + node`` for memory), and its latency."""

    tlb_level: int | None
    walk: tuple[int, ...]
    data: int
    latency_ns: float


class ReferenceCore:
    """One core's TLBs and caches (all its own) over a page table, one access at a time."""

    def __init__(self, cpu: CpuParams, page_table: PageTable,
                 memory_ns: Sequence[float] | None = None) -> None:
        self.page_table = page_table
        self.tlbs = []
        for t in cpu.tlbs:
            geometry = t.build(page_table.page_size)
            self.tlbs.append(LruSets(geometry.sets, geometry.ways))
        self.caches = [LruSets(c.sets, c.ways) for c in cpu.caches]
        self.tlb_ns = [cpu.cycles_to_ns(t.latency_cycles) for t in cpu.tlbs]
        self.cache_ns = [cpu.cycles_to_ns(c.latency_cycles) for c in cpu.caches]
        self.memory_ns = list(memory_ns) if memory_ns is not None else [cpu.memory_latency]
        self.line = cpu.caches[0].line

    def _load(self, address: int, node: int) -> tuple[int, float]:
        line = address // self.line
        for level, cache in enumerate(self.caches):
            if cache.lookup(line):
                return level, self.cache_ns[level]
        return len(self.caches) + node, self.memory_ns[node]

    def access(self, va: int) -> Access:
        """Translate and load ``va``."""
        pt = self.page_table
        vpn = va // pt.page_size
        latency, hit_level = 0.0, None
        for level, tlb in enumerate(self.tlbs):
            latency += self.tlb_ns[level]
            if tlb.lookup(vpn):
                hit_level = level
                break
        walk = []
        if hit_level is None:
            for level in range(pt.levels):
                served, ns = self._load(pt.entry_address(va, level), pt.table_node)
                walk.append(served)
                latency += ns
        address, node = pt.translate(va)
        served, ns = self._load(address, node)
        return Access(hit_level, tuple(walk), served, latency + ns)
