"""Generators of access patterns: sequential sweeps, STREAM kernels, GUPS, pointer chase."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from cxlsim.traces.generators.base import (
    SPACE, TIMING, Kind, batch, check, check_size, endless, items, ops, place)
from cxlsim.traces.generators.popularity import hot_or_cold
from cxlsim.traces.native import READ, WRITE, Columns
from cxlsim.traces.params import Param, choice, fraction
from cxlsim.units import format_size, parse_size

_BASE = {k: SPACE[k] for k in ("footprint", "base", "size")}


def sequential(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    """Addresses ``stride`` apart from ``base``, wrapping at the footprint."""
    check_size(p)
    check(p["stride"] >= 1, "stride must be at least 1 B")
    count = p["footprint"] // p["stride"]
    check(count >= 1, "footprint must hold at least one stride")
    m = batch(n)
    done = 0
    while True:
        index = np.arange(done, done + m, dtype=np.uint64) % np.uint64(count)
        yield {"addr": index * np.uint64(p["stride"]) + np.uint64(p["base"]),
               "op": ops(rng, m, p["read_ratio"])}
        done += m


#: STREAM kernels: per element, the arrays (0 a, 1 b, 2 c) read then written.
STREAM_KERNELS = {"copy": ((0, READ), (2, WRITE)),      # c = a
                  "scale": ((2, READ), (1, WRITE)),     # b = q*c
                  "add": ((0, READ), (1, READ), (2, WRITE)),  # c = a + b
                  "triad": ((1, READ), (2, READ), (0, WRITE))}  # a = b + q*c


def stream(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    """STREAM over three arrays a, b, c of footprint/3 each, one access per ``size``
    (a cache line), element after element, starting over at the end."""
    steps = STREAM_KERNELS[p["kernel"]]
    check_size(p)
    lines = p["footprint"] // 3 // p["size"]
    check(lines >= 1, f"footprint must hold three arrays of at least size "
                      f"({format_size(p['size'])}) each")
    array = np.array([a for a, _ in steps], np.uint64)
    kind = np.array([o for _, o in steps], np.uint8)
    span = np.uint64(lines * p["size"])
    m = batch(n)
    done = 0
    while True:
        k = np.arange(done, done + m, dtype=np.uint64)
        step = k % np.uint64(len(steps))
        line = (k // np.uint64(len(steps))) % np.uint64(lines)
        yield {"addr": np.uint64(p["base"]) + array[step] * span + line * np.uint64(p["size"]),
               "op": kind[step], "region": array[step].astype(np.uint16)}
        done += m


def gups(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    """GUPS with a hot region at the end of the buffer (Colloid's variant): each update
    picks a ``size`` element, in the hot region with probability ``hot_ops``, else in the
    rest, uniformly; ``update`` reads then writes it, ``read`` only reads it."""
    count = items({**p, "item": p["size"]})
    hot = p["hot"] // p["size"]
    check(1 <= hot <= count, f"hot ({format_size(p['hot'])}) must hold an element and fit "
                             f"in the footprint ({format_size(p['footprint'])})")
    per = 2 if p["mode"] == "update" else 1

    def make(m: int) -> Columns:
        index = hot_or_cold(rng, m // per, count, hot, p["hot_ops"], start=count - hot)
        addr = np.repeat(index.astype(np.uint64) * np.uint64(p["size"]) + np.uint64(p["base"]),
                         per)
        op = np.tile(np.array([READ, WRITE][:per], np.uint8), m // per)
        is_hot = np.repeat(index >= count - hot, per).astype(np.uint16)
        return {"addr": addr, "op": op, "region": is_hot}
    return endless(make, n + n % 2)


def pointer_chase(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    """Reads that follow one random cycle through all nodes of ``item`` bytes (each read
    depends on the previous one), round and round."""
    count = items(p)
    check(count <= 1 << 28, f"{count:,} nodes are too many to shuffle; use a larger item "
                            "or a smaller footprint (at most 2^28 nodes)")
    order = rng.permutation(count)
    m = batch(n)
    done = 0
    while True:
        index = order[np.arange(done, done + m) % count]
        yield {"addr": place(rng, index, p), "op": np.full(m, READ, np.uint8)}
        done += m


KINDS = (
    Kind("sequential", "a sequential sweep with a stride, wrapping at the footprint",
         {**TIMING, **_BASE,
          "stride": Param("64 B", parse_size, "distance between consecutive accesses"),
          "read_ratio": Param("1", fraction, "fraction of accesses that are reads")},
         sequential),
    Kind("stream", "STREAM copy/scale/add/triad over three arrays",
         {**TIMING, **_BASE,
          "kernel": Param("triad", choice(*STREAM_KERNELS), "STREAM kernel")},
         stream, regions={0: "a", 1: "b", 2: "c"}, columns=("region",)),
    Kind("gups", "GUPS updates with a hot region (Colloid: 20 of 72 GiB, 90 % hot)",
         {**TIMING, **_BASE,
          "footprint": Param("72 GiB", parse_size, "table size", shrinks="size"),
          "size": Param("8 B", parse_size, "element size"),
          "hot": Param("20 GiB", parse_size, "hot region at the end of the table",
                       shrinks="size"),
          "hot_ops": Param("0.9", fraction, "fraction of updates in the hot region"),
          "mode": Param("update", choice("update", "read"),
                        "update: read then write the element; read: read only")},
         gups, regions={0: "cold", 1: "hot"}, columns=("region",)),
    Kind("pointer-chase", "dependent reads along a random cycle through all nodes",
         {**TIMING, **_BASE,
          "item": Param("64 B", parse_size, "node size (one node per cache line)")},
         pointer_chase),
)
