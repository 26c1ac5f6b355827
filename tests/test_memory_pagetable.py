"""Page tables: frames at first touch, radix-tree entry addresses."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.memory import PageTable
from cxlsim.memory.pagetable import TABLE_OFFSET

GiB = 2**30


def test_frames_follow_first_touch_order():
    pt = PageTable(4096, va_base=GiB, va_size=64 * 4096)
    pt.map(GiB + 8 * 4096, 4 * 4096)
    pt.map(GiB, 16 * 4096)  # pages 8-11 keep their frames
    assert pt.frames[8:12].tolist() == [0, 1, 2, 3]
    assert pt.frames[:8].tolist() == list(range(4, 12))
    assert pt.frames[12:16].tolist() == [12, 13, 14, 15]
    assert (pt.frames[16:] == -1).all()
    assert pt.translate(GiB + 8 * 4096 + 100) == (100, 0)


def test_pages_record_their_node():
    pt = PageTable(4096, va_base=0, va_size=256 * 4096)
    pt.map(0, 128 * 4096, node=2)
    assert (pt.nodes[:128] == 2).all() and pt.max_node == 2
    assert pt.translate(128 * 4096 - 1) == (128 * 4096 - 1, 2)


@pytest.mark.parametrize("page_size, levels", [(4096, 4), (2**21, 3), (2**30, 2)])
def test_walk_levels(page_size, levels):
    assert PageTable(page_size, va_base=0, va_size=2 * GiB).levels == levels


def test_entry_addresses_follow_the_radix_tree():
    pt = PageTable(4096, va_base=GiB, va_size=GiB)
    leaf = [pt.entry_address(GiB + i * 4096, 3) for i in range(16)]
    assert np.diff(leaf).tolist() == [8] * 15                       # neighbouring PTEs
    assert len({a // 64 for a in leaf}) == 2                         # eight to a line
    assert pt.entry_address(GiB, 2) + 8 == pt.entry_address(GiB + 2**21, 2)
    assert pt.entry_address(GiB, 0) == pt.entry_address(2 * GiB - 1, 0)  # one root entry
    bases = pt.table_base.tolist()
    assert bases[0] == TABLE_OFFSET and bases == sorted(bases)       # above the data frames
    assert all(a >= bases[3] for a in leaf)


def test_two_mib_pages_walk_three_levels_to_the_pde():
    pt = PageTable(2**21, va_base=GiB, va_size=GiB)
    assert pt.entry_address(GiB + 2**21, 2) - pt.entry_address(GiB, 2) == 8


@pytest.mark.parametrize("kwargs, message", [
    ({"page_size": 8192}, "page size must be 4 KiB, 2 MiB or 1 GiB, got 8192 B"),
    ({"page_size": 2**21, "va_base": 4096},
     "va_base must be a non-negative multiple of the 2 MiB page size, got 4096"),
    ({"va_size": 0}, "the region must be non-empty and below 2\\^48"),
])
def test_bad_regions_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PageTable(**kwargs)


def test_mapping_outside_the_region_and_unmapped_addresses():
    pt = PageTable(4096, va_base=GiB, va_size=4 * 4096)
    with pytest.raises(ValueError, match=r"is not inside the page table's region"):
        pt.map(GiB, 5 * 4096)
    with pytest.raises(IndexError, match="virtual address 0x40000000 is not mapped"):
        pt.translate(GiB)
