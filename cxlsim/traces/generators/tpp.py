"""Building blocks of the TPP-style service workloads (Maruf et al., ASPLOS'23).

Meta's datacenter measurements behind TPP: anonymous pages are hotter than file pages;
new allocations are often hot and short-lived; the file cache is filled in bulk at
warm-up and rarely touched afterwards. Each block models one of these, with page types
(``page_type``) and regions so that a placement policy can tell them apart:

* ``alloc-bursts``: a long-lived heap accessed uniformly, plus bursts -- every
  ``burst_every`` records a fresh ``burst_size`` allocation takes ``burst_ops`` of the
  accesses for ``burst_life`` records, then is never touched again;
* ``anon-file-mix``: anonymous memory with zipfian popularity and file pages read
  uniformly by ``file_ops`` of the accesses;
* ``file-warmup``: one sequential read of the whole file (one ``item`` a record), then
  the anon/file mix with few file accesses.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from cxlsim.traces.generators.base import (
    SPACE, TIMING, Kind, batch, check, items, ops, place)
from cxlsim.traces.generators.popularity import ZIPF
from cxlsim.traces.generators.zipf import Zipfian
from cxlsim.traces.native import ANON, FILE, READ, Columns
from cxlsim.traces.params import Param, fraction, integer
from cxlsim.units import format_size, parse_size

_ALIGN = 1 << 30  # second areas start at the next GiB boundary after the first


def _after(p: Mapping[str, Any], first_items: int) -> int:
    """Item index where an area placed after ``first_items`` items starts."""
    per = max(1, _ALIGN // p["item"])
    return -(-first_items // per) * per


def alloc_bursts(p: Mapping[str, Any], rng: np.random.Generator,
                 n: int) -> Iterator[Columns]:
    heap = items(p)
    burst = p["burst_size"] // p["item"]
    check(burst >= 1, f"burst_size ({format_size(p['burst_size'])}) must hold an item")
    check(p["burst_life"] <= p["burst_every"], "burst_life must not exceed burst_every")
    first = _after(p, heap)
    m = batch(n)
    done = 0
    while True:
        g = np.arange(done, done + m)
        k, into = np.divmod(g, p["burst_every"])
        in_burst = (into < p["burst_life"]) & (rng.random(m) < p["burst_ops"])
        index = np.where(in_burst, first + k * burst + rng.integers(0, burst, m),
                         rng.integers(0, heap, m))
        yield {"addr": place(rng, index, p), "op": ops(rng, m, p["read_ratio"]),
               "page_type": np.full(m, ANON, np.uint8),
               "region": in_burst.astype(np.uint16)}
        done += m


def _mix(p: Mapping[str, Any], rng: np.random.Generator, m: int, zipf: Zipfian,
         file_first: int, file_items: int) -> Columns:
    """``m`` accesses: file pages (uniform) with probability file_ops, else anon (zipf)."""
    to_file = rng.random(m) < p["file_ops"]
    index = np.where(to_file, file_first + rng.integers(0, file_items, m),
                     zipf.draw(rng.random(m)))
    return {"addr": place(rng, index, p), "op": ops(rng, m, p["read_ratio"]),
            "page_type": np.where(to_file, FILE, ANON).astype(np.uint8),
            "region": to_file.astype(np.uint16)}


def _file(p: Mapping[str, Any]) -> tuple[int, int]:
    """(first item, item count) of the file area."""
    file_items = items(p, "file_size")
    return _after(p, items(p)), file_items


def anon_file_mix(p: Mapping[str, Any], rng: np.random.Generator,
                  n: int) -> Iterator[Columns]:
    zipf = Zipfian(items(p), p["theta"])
    first, count = _file(p)
    while True:
        yield _mix(p, rng, batch(n), zipf, first, count)


def file_warmup(p: Mapping[str, Any], rng: np.random.Generator,
                n: int) -> Iterator[Columns]:
    zipf = Zipfian(items(p), p["theta"])
    first, count = _file(p)
    done = 0
    while done < count:  # the warm-up: every file item read once, in order
        m = min(batch(n), count - done)
        index = np.arange(first + done, first + done + m)
        yield {"addr": index.astype(np.uint64) * np.uint64(p["item"]) + np.uint64(p["base"]),
               "op": np.full(m, READ, np.uint8), "page_type": np.full(m, FILE, np.uint8),
               "region": np.ones(m, np.uint16), "size": np.full(m, p["item"], np.uint32)}
        done += m
    while True:
        yield _mix(p, rng, batch(n), zipf, first, count)


_FILE = {"file_size": Param("2 GiB", parse_size, "size of the file pages (page cache)"),
         "file_ops": Param("0.2", fraction, "fraction of the accesses to file pages")}
_REGIONS = {0: "anon", 1: "file"}

KINDS = (
    Kind("alloc-bursts", "long-lived heap plus bursts of short-lived hot allocations",
         {**TIMING, **SPACE,
          "burst_size": Param("64 MiB", parse_size, "size of each burst allocation"),
          "burst_every": Param("1000000", integer(1), "records from one burst to the next"),
          "burst_life": Param("250000", integer(1), "records a burst lives"),
          "burst_ops": Param("0.5", fraction, "fraction of accesses to the live burst")},
         alloc_bursts, regions={0: "heap", 1: "burst"}),
    Kind("anon-file-mix", "zipfian anonymous memory and uniformly read file pages",
         {**TIMING, **SPACE, "theta": ZIPF["theta"], **_FILE}, anon_file_mix,
         regions=_REGIONS),
    Kind("file-warmup", "sequential read of the file cache, then mostly anonymous accesses",
         {**TIMING, **SPACE, "theta": ZIPF["theta"], **_FILE,
          "file_size": Param("4 GiB", parse_size, "size of the file read at warm-up"),
          "file_ops": Param("0.02", fraction, "fraction of the accesses to file pages after "
                                              "the warm-up")},
         file_warmup, regions=_REGIONS),
)
