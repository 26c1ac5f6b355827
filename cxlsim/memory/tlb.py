"""Translation lookaside buffers: one set-associative array per page size per level.

A :class:`TlbParams` level lists its arrays (:class:`TlbArrayParams`: page size,
entries, ways) and its lookup time in core cycles. Hardware TLBs that hold several page
sizes in one array (Zen 2's L1 DTLB; its "unified" L2 DTLB) are described by an array
per page size: a process mapped with one page size only ever uses one of them.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.memory.cache import Arena, SetAssociative
from cxlsim.memory.pagetable import PAGE_SIZES
from cxlsim.units import Size


class TlbArrayParams(StrictModel):
    """The entries of one TLB level for one page size."""

    page_size: Size = Field(description="page size translated: 4 KiB, 2 MiB or 1 GiB")
    entries: int = Field(ge=1, description="number of entries")
    ways: int = Field(ge=1, description="associativity (= entries: fully associative)")

    @model_validator(mode="after")
    def _geometry(self) -> TlbArrayParams:
        if self.page_size not in PAGE_SIZES:
            raise ValueError(f"page size must be 4 KiB, 2 MiB or 1 GiB, got {self.page_size} B")
        sets, rest = divmod(self.entries, self.ways)
        if rest or sets & (sets - 1):
            raise ValueError(f"entries / ways must be a power-of-two number of sets; "
                             f"{self.entries} / {self.ways} is not")
        return self


class TlbParams(StrictModel):
    """One level of data TLB."""

    name: str = Field(description="level name, e.g. 'L2 DTLB'")
    latency_cycles: int = Field(
        ge=0, description="lookup time, core cycles, paid by every access reaching this level "
                          "(the first level's overlaps the L1 cache access: usually 0)")
    arrays: list[TlbArrayParams] = Field(min_length=1, description="one array per page size")

    @model_validator(mode="after")
    def _one_per_size(self) -> TlbParams:
        sizes = [a.page_size for a in self.arrays]
        if len(set(sizes)) != len(sizes):
            raise ValueError("one array per page size: a page size is listed twice")
        return self

    def build(self, page_size: int, arena: Arena | None = None) -> SetAssociative:
        """An empty instance of this level's array for ``page_size``, keyed by page number."""
        for array in self.arrays:
            if array.page_size == page_size:
                return SetAssociative(array.entries // array.ways, array.ways, arena)
        raise ValueError(f"{self.name} has no entries for {PAGE_SIZES.get(page_size, page_size)} "
                         "pages")
