"""A process's page table: virtual pages to physical frames and memory nodes.

One :class:`PageTable` maps a virtual region with one page size (4 KiB, 2 MiB or
1 GiB: an x86-64 radix tree of 4, 3 or 2 levels). Pages are mapped with :meth:`map`,
which hands out consecutive physical frames in the order the pages are first touched --
what a freshly booted kernel's buddy allocator gives a process that initialises its
buffer front to back. The node each page lives on is the operating system's to say:
the table reads it from a :class:`PageNodes` -- in a trace run the OS's
:class:`~cxlsim.mm.placement.Placement`, shared with the kernel's memory model (the
same array, so the walk sees every migration without a copy); on its own, a
:class:`OwnNodes`. The interface is defined here, so the dependency runs from the OS
layer (``cxlsim.mm``) down to the hardware's, never up.

The page tables themselves live in physical memory ``TABLE_OFFSET`` above the data
frames; :meth:`entry_address` gives the physical address of the entry read at each
level of a walk, so the walk's references can go through the data caches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

import cxlsim.memory._kernels as _kernels

#: Page sizes and their names.
PAGE_SIZES = {4096: "4 KiB", 2**21: "2 MiB", 2**30: "1 GiB"}
#: Levels of the x86-64 (4-level) radix tree walked for each page size.
WALK_LEVELS = {4096: 4, 2**21: 3, 2**30: 2}
#: Distance from a page table's first data frame to its page-table pages (bytes).
TABLE_OFFSET = 1 << 40


class PageNodes(Protocol):
    """What a page table reads of where its pages are: one node per page (-1: none),
    and places pages it maps. :class:`cxlsim.mm.placement.Placement` is one."""

    node: np.ndarray
    page_size: int

    @property
    def n_pages(self) -> int: ...

    def place(self, pages: np.ndarray, node: int) -> None: ...


@dataclass
class OwnNodes:
    """The nodes of a page table's pages when no OS placement is shared: the table
    alone places them (:meth:`PageTable.map`)."""

    node: np.ndarray
    page_size: int

    @property
    def n_pages(self) -> int:
        return self.node.size

    def place(self, pages: np.ndarray, node: int) -> None:
        self.node[pages] = node


class PageTable:
    """Virtual region ``[va_base, va_base + va_size)`` mapped with ``page_size`` pages.

    ``frames[i]`` is the physical frame number (in pages; -1 while unmapped) of the
    region's page ``i``, ``nodes[i]`` its node: page ``i`` of ``placement`` (given: one
    page per page of the region, of the same size; none: an :class:`OwnNodes`). Data frames are numbered
    from ``phys_base`` up; page tables of processes that share a cache should be given
    disjoint physical ranges (``phys_base`` at least ``2 * TABLE_OFFSET`` apart).
    """

    def __init__(self, page_size: int = 4096, va_base: int = 0, va_size: int = 2**30,
                 phys_base: int = 0, table_node: int = 0,
                 placement: PageNodes | None = None) -> None:
        if page_size not in PAGE_SIZES:
            raise ValueError(f"page size must be 4 KiB, 2 MiB or 1 GiB, got {page_size} B")
        for name, value in (("va_base", va_base), ("va_size", va_size), ("phys_base", phys_base)):
            if value < 0 or value % page_size:
                raise ValueError(f"{name} must be a non-negative multiple of the "
                                 f"{PAGE_SIZES[page_size]} page size, got {value}")
        if va_size == 0 or va_base + va_size > 2**48:
            raise ValueError("the region must be non-empty and below 2^48 (48-bit addresses)")
        self.page_size = page_size
        self.page_shift = page_size.bit_length() - 1
        self.va_base = va_base
        self.va_size = va_size
        self.table_node = table_node
        self.max_node = table_node  # highest node holding a page or the page tables
        pages = va_size // page_size
        self.frames = np.full(pages, -1, dtype=np.int64)
        if placement is None:
            placement = OwnNodes(np.full(pages, -1, np.int64), page_size)
        elif placement.n_pages != pages or placement.page_size != page_size:
            raise ValueError(f"the placement holds {placement.n_pages} pages of "
                             f"{placement.page_size} B, the region {pages} of {page_size} B")
        self.placement = placement
        self._next_frame = phys_base // page_size
        self._frame_limit = (phys_base + TABLE_OFFSET) // page_size
        # Level l's tables, one after another, each level starting on a page boundary.
        levels = WALK_LEVELS[page_size]
        base, bases = phys_base + TABLE_OFFSET, []
        for level in range(levels):
            shift = self.page_shift + _kernels.LEVEL_BITS * (levels - 1 - level)
            bases.append(base)
            entries = ((va_base + va_size - 1) >> shift) + 1
            base += -(-entries * _kernels.PTE_BYTES // 4096) * 4096
        self.table_base = np.array(bases, dtype=np.int64)

    @property
    def nodes(self) -> np.ndarray:
        """The node of each page of the region, -1 when it has none (the placement's)."""
        return self.placement.node

    @property
    def levels(self) -> int:
        """Levels of the radix tree read by a walk."""
        return self.table_base.shape[0]

    def map(self, va: int, size: int, node: int | None = 0) -> None:
        """Give the not-yet-mapped pages of ``[va, va + size)`` the next frames, placed on
        ``node`` (None: frames only; the placement's owner places the pages)."""
        first = (va - self.va_base) >> self.page_shift
        last = (va + size - 1 - self.va_base) >> self.page_shift
        if va < self.va_base or size <= 0 or last >= self.frames.shape[0]:
            raise ValueError(f"[{va:#x}, {va + size:#x}) is not inside the page table's region "
                             f"[{self.va_base:#x}, {self.va_base + self.va_size:#x})")
        if node is not None and node < 0:
            raise ValueError(f"node must be non-negative, got {node}")
        pages = np.arange(first, last + 1)
        pages = pages[self.frames[pages] < 0]
        if self._next_frame + pages.size > self._frame_limit:
            raise ValueError("out of physical frames below the page tables")
        self.frames[pages] = self._next_frame + np.arange(pages.size, dtype=np.int64)
        if node is not None:
            self.placement.place(pages, node)
            self.max_node = max(self.max_node, node)
        self._next_frame += pages.size

    def translate(self, va: int) -> tuple[int, int]:
        """``(physical address, node)`` of a mapped virtual address."""
        page = (va - self.va_base) >> self.page_shift
        if va < self.va_base or page >= self.frames.shape[0] or self.frames[page] < 0:
            raise IndexError(f"virtual address {va:#x} is not mapped")
        offset = va & (self.page_size - 1)
        return int(self.frames[page]) << self.page_shift | offset, int(self.nodes[page])

    def entry_address(self, va: int, level: int) -> int:
        """Physical address of the entry a walk for ``va`` reads at ``level`` (0 = root)."""
        if not 0 <= level < self.levels:
            raise ValueError(f"level must be in [0, {self.levels}), got {level}")
        return int(_kernels.pte_address(va, level, self.levels, self.page_shift, self.table_base))
