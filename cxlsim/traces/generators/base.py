"""What a synthetic trace generator is, the parameters most of them share, and the
address and operation helpers they build records with."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cxlsim.errors import InputError
from cxlsim.traces.native import CHUNK_RECORDS, Columns
from cxlsim.traces.params import Param, fraction, integer
from cxlsim.units import format_size, parse_size, parse_time

#: Most records a generator makes at a time.
CHUNK = CHUNK_RECORDS

#: ``stream(values, rng, n) -> chunks`` of at least ``n`` records in all: ``addr`` and
#: ``op``, optionally ``size``, ``page_type``, ``region``.
Stream = Callable[[Mapping[str, Any], np.random.Generator, int], Iterator[Columns]]


@dataclass(frozen=True)
class Kind:
    """A generator: its parameters, its record stream, its region tag names and the
    optional native columns its records carry (with the required ones, what a record
    takes on disk)."""

    name: str
    doc: str
    params: Mapping[str, Param]
    stream: Stream
    regions: Mapping[int, str] = field(default_factory=dict)
    columns: tuple[str, ...] = ()


#: Every generator has these: how records are dealt to threads and spaced in time.
TIMING = {
    "threads": Param("1", integer(1, 0xFFFFFFFF),
                     "threads the records are dealt to in turn (record i -> thread i mod N)"),
    "interval": Param("10 ns", parse_time, "time between consecutive records"),
}

#: The address space most generators draw from.
SPACE = {
    "footprint": Param("1 GiB", parse_size, "bytes of memory the accesses cover",
                       shrinks="size"),
    "base": Param("0x100000000", integer(0), "lowest address"),
    "item": Param("4 KiB", parse_size, "granule the distribution picks (a page); the access "
                                        "falls at a random size-aligned offset in it"),
    "size": Param("64 B", parse_size, "bytes per access"),
    "read_ratio": Param("0.8", fraction, "fraction of accesses that are reads"),
}


def check(ok: bool, message: str) -> None:
    """Reject a combination of parameters with a one-line message."""
    if not ok:
        raise InputError(message, location="--param")


def check_size(p: Mapping[str, Any]) -> None:
    """An access ``size`` the 32-bit ``size`` column holds."""
    check(1 <= p["size"] < 1 << 32, "size must be from 1 B to 4 GiB - 1 B")


def items(p: Mapping[str, Any], footprint: str = "footprint") -> int:
    """How many ``item``s fit in ``p[footprint]``, after checking sizes fit together."""
    check_size(p)
    check(p["item"] >= p["size"],
          f"item ({format_size(p['item'])}) must be at least size ({format_size(p['size'])})")
    check(p[footprint] >= p["item"], f"{footprint} ({format_size(p[footprint])}) must hold at "
                                     f"least one item ({format_size(p['item'])})")
    check(p["base"] + p[footprint] <= 1 << 64, "base + footprint must stay below 2^64")
    return p[footprint] // p["item"]


def place(rng: np.random.Generator, index: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    """Addresses of items ``index``: a random ``size``-aligned offset inside each item."""
    addr = index.astype(np.uint64) * np.uint64(p["item"]) + np.uint64(p["base"])
    slots = p["item"] // p["size"]
    if slots > 1:
        addr += rng.integers(0, slots, len(index), dtype=np.uint64) * np.uint64(p["size"])
    return addr


def ops(rng: np.random.Generator, m: int, read_ratio: float) -> np.ndarray:
    """``m`` operations, each a read with probability ``read_ratio`` (READ is 0, WRITE 1:
    a draw at or above the ratio is a write)."""
    return (rng.random(m) >= read_ratio).view(np.uint8)


def batch(n: int) -> int:
    """Records to make at a time for an ``n``-record trace (small traces stay cheap)."""
    return max(1, min(CHUNK, n))


def endless(make: Callable[[int], Columns], n: int) -> Iterator[Columns]:
    """Chunks of ``batch(n)`` records from ``make(m)``, for ever."""
    m = batch(n)
    while True:
        yield make(m)
