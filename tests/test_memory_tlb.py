"""TLB parameters: one array per page size, validated geometry."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from cxlsim.memory import TlbArrayParams, TlbParams

L2 = TlbParams(name="L2 DTLB", latency_cycles=7, arrays=[
    {"page_size": 4096, "entries": 2048, "ways": 8},
    {"page_size": 2**21, "entries": 1024, "ways": 4}])


def test_each_page_size_gets_its_own_array():
    small, large = L2.build(4096), L2.build(2**21)
    assert (small.sets, small.ways) == (256, 8) and (large.sets, large.ways) == (256, 4)
    small.access(np.arange(10))
    assert not large.access(np.arange(10)).any()  # separate state


def test_a_missing_page_size_is_named():
    with pytest.raises(ValueError, match="L2 DTLB has no entries for 1 GiB pages"):
        L2.build(2**30)


@pytest.mark.parametrize("array, message", [
    ({"page_size": 8192, "entries": 64, "ways": 64},
     "page size must be 4 KiB, 2 MiB or 1 GiB, got 8192 B"),
    ({"page_size": 4096, "entries": 2048, "ways": 12},
     "entries / ways must be a power-of-two number of sets; 2048 / 12 is not"),
    ({"page_size": 4096, "entries": 96, "ways": 32},
     "entries / ways must be a power-of-two number of sets; 96 / 32 is not"),
])
def test_bad_arrays_are_rejected(array, message):
    with pytest.raises(ValidationError, match=message):
        TlbArrayParams(**array)


def test_one_array_per_page_size():
    with pytest.raises(ValidationError, match="a page size is listed twice"):
        TlbParams(name="x", latency_cycles=0, arrays=[
            {"page_size": 4096, "entries": 4, "ways": 4},
            {"page_size": 4096, "entries": 8, "ways": 8}])
