"""Generators that pick items by popularity: uniform, zipfian, hotspot, shifting hot set.

Each access picks an item (a page by default) of the footprint from a distribution, then
a random ``size``-aligned offset inside it, and is a read with probability ``read_ratio``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from cxlsim.traces.generators.base import (
    SPACE, TIMING, Kind, batch, check, endless, items, ops, place)
from cxlsim.traces.generators.zipf import THETA, ScrambledZipfian, Zipfian
from cxlsim.traces.native import Columns
from cxlsim.traces.params import Param, boolean, fraction, integer, number

ZIPF = {
    "theta": Param(str(THETA), number(0, 1, open_low=True, open_high=True),
                   "zipfian constant (YCSB: 0.99)"),
    "scrambled": Param("no", boolean, "scatter the popular items over the footprint "
                                       "(YCSB ScrambledZipfianGenerator)"),
}
HOT = {
    "hot_fraction": Param("0.2", fraction, "fraction of the items that are hot"),
    "hot_ops": Param("0.8", fraction, "fraction of the accesses that go to hot items"),
}


def _accesses(p: Mapping[str, Any], rng: np.random.Generator, index: np.ndarray) -> Columns:
    return {"addr": place(rng, index, p), "op": ops(rng, len(index), p["read_ratio"])}


def uniform(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    count = items(p)
    return endless(lambda m: _accesses(p, rng, rng.integers(0, count, m)), n)


def zipfian(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    count = items(p)
    chooser = (ScrambledZipfian if p["scrambled"] else Zipfian)(count, p["theta"])
    return endless(lambda m: _accesses(p, rng, chooser.draw(rng.random(m))), n)


def hot_or_cold(rng: np.random.Generator, m: int, count: int, hot: int, hot_ops: float,
                start: int = 0) -> np.ndarray:
    """YCSB's hotspot chooser: with probability ``hot_ops`` one of the ``hot`` items from
    ``start`` (wrapping), else one of the others, uniformly."""
    cold = count - hot
    pick_hot = rng.random(m) < hot_ops if cold else np.ones(m, bool)
    offset = np.where(pick_hot, rng.integers(0, hot, m), hot + rng.integers(0, max(cold, 1), m))
    return (start + offset) % count


def _hot_items(p: Mapping[str, Any], count: int) -> int:
    hot = int(count * p["hot_fraction"])
    check(hot >= 1, f"hot_fraction {p['hot_fraction']:g} of {count} items is no item at all")
    return hot


def hotspot(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    count = items(p)
    hot = _hot_items(p, count)
    return endless(lambda m: _accesses(p, rng, hot_or_cold(rng, m, count, hot, p["hot_ops"])),
                   n)


def phases(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    """The hot set moves by ``shift`` of the footprint at each of ``phases`` equal phases."""
    count = items(p)
    hot = _hot_items(p, count)
    length = -(-n // p["phases"])  # records per phase
    step = int(count * p["shift"])
    done = 0
    while True:
        phase, into = divmod(done, length)
        m = min(batch(n), length - into)
        start = (phase * step) % count
        yield _accesses(p, rng, hot_or_cold(rng, m, count, hot, p["hot_ops"], start))
        done += m


KINDS = (
    Kind("uniform", "every item equally likely", {**TIMING, **SPACE}, uniform),
    Kind("zipfian", "YCSB zipfian popularity (item 0 hottest), or scrambled",
         {**TIMING, **SPACE, **ZIPF}, zipfian),
    Kind("hotspot", "YCSB hotspot: hot_ops of the accesses to the first hot_fraction of items",
         {**TIMING, **SPACE, **HOT}, hotspot),
    Kind("phases", "a hot set that moves to another part of the footprint at each phase",
         {**TIMING, **SPACE, **HOT,
          "hot_fraction": Param("0.1", fraction, "fraction of the items that are hot"),
          "hot_ops": Param("0.9", fraction, "fraction of the accesses that go to hot items"),
          "phases": Param("4", integer(1), "equal phases the trace is cut into"),
          "shift": Param("0.1", fraction, "how far the hot set moves at each phase, as a "
                                          "fraction of the footprint (0.1: to fresh items)")},
         phases),
)
