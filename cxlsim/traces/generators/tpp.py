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

The four services TPP was evaluated on (``web1``, ``cache1``, ``cache2``, ``warehouse``)
are one model, :func:`service`, with each workload's parameters chosen once from the
paper's characterisation (section 3, as quoted by a reading note of arXiv 2206.02878
v2 -- ``../shared/reference/policies.md`` section 1.3 and its seed): the footprint is
made of anon and file pages in the workload's shares; the workload's start allocates
them in its order -- file cache read in bulk at warm-up, anon pages touched once when
first allocated -- and afterwards only the hot pages are accessed (a page is "hot" when
used within two minutes: the rest of the allocated memory stays idle), every hot page
equally often (an assumption: the paper gives no per-page rates), so the file pages'
share of accesses follows from the hot pages' shares.
Not modelled: allocation churn (pages freed and allocated again: a trace cannot free),
the hot set drifting over time, re-accesses of cold pages.
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
from cxlsim.traces.params import Param, boolean, fraction, integer
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


def service(p: Mapping[str, Any], rng: np.random.Generator,
            n: int) -> Iterator[Columns]:
    """A TPP service: its start (anon and file pages first touched in the workload's
    order) then uniform accesses over its hot anon and hot file pages."""
    total = items(p)
    file_items = int(round(total * p["file_share"]))
    anon_items = total - file_items
    check(anon_items >= 1 and file_items >= 1,
          "footprint must hold at least one anon and one file item at this file_share")
    kinds = np.repeat(np.array([ANON, FILE], np.uint8), [anon_items, file_items])
    order = np.arange(total) if p["anon_first"] else \
        np.concatenate([np.arange(anon_items, total), np.arange(anon_items)])
    hot = np.concatenate([  # each type's hot pages, scattered over its area
        rng.permutation(anon_items)[:max(int(round(anon_items * p["anon_hot"])), 1)],
        anon_items + rng.permutation(file_items)[:max(int(round(file_items * p["file_hot"])),
                                                     1)]])
    m = batch(n)
    for start in range(0, total, m):  # the start: every page touched once, in order
        index = order[start:start + m]
        yield {"addr": place(rng, index, p), "op": ops(rng, index.size, p["read_ratio"]),
               "page_type": kinds[index], "region": kinds[index].astype(np.uint16)}
    while True:
        index = hot[rng.integers(0, hot.size, m)]
        yield {"addr": place(rng, index, p), "op": ops(rng, m, p["read_ratio"]),
               "page_type": kinds[index], "region": kinds[index].astype(np.uint16)}


def _service(name: str, doc: str, footprint: str, file_share: str, anon_hot: str,
             file_hot: str, anon_first: str) -> Kind:
    """A TPP service model with its workload's defaults (sources in each ``doc``)."""
    return Kind(name, doc, {
        **TIMING, **SPACE,
        "footprint": Param(footprint, parse_size, "bytes of anon and file pages together "
                                                  "(assumption: a server's tens of GiB shrunk "
                                                  "to 96 % of the 100 MiB tpp topologies)"),
        "file_share": Param(file_share[0], fraction, "fraction of the footprint that is file "
                                                     "pages: " + file_share[1]),
        "anon_hot": Param(anon_hot[0], fraction, "fraction of the anon pages that are hot: "
                                                 + anon_hot[1]),
        "file_hot": Param(file_hot[0], fraction, "fraction of the file pages that are hot: "
                                                 + file_hot[1]),
        "anon_first": Param(anon_first[0], boolean, "anon pages allocated before the file "
                                                    "cache is read in: " + anon_first[1])},
        service, regions=_REGIONS)


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
    # TPP paper section 3 (reading note of arXiv 2206.02878 v2). Web, Cache and Ads use
    # 95-98 % of a server's memory: the experiments size the nodes to that.
    _service("web1", "TPP's Web1 (HHVM web service): file cache loaded at start, then anon",
             "96 MiB",
             ("0.5", "assumption: the VM binaries and bytecode loaded at start make a "
                     "large share (the paper's Fig. 9a, not read)"),
             ("0.475", "35-60 % of a web service's anon pages hot within 2 min (midpoint)"),
             ("0.085", "3-14 % of a web service's file pages hot within 2 min (midpoint)"),
             ("false", "the file cache is loaded at start, anon grows afterwards")),
    _service("cache1", "TPP's Cache1 (in-memory object cache on tmpfs)", "96 MiB",
             ("0.76", "file (tmpfs) pages are 70-82 % of a cache's memory (midpoint)"),
             ("0.40", "40 % of Cache1's anon pages accessed within 2 min"),
             ("0.25", "25 % of Cache1's file pages accessed within 2 min"),
             ("true", "Cache1's anon pages are first allocated locally")),
    _service("cache2", "TPP's Cache2 (in-memory object cache on tmpfs)", "96 MiB",
             ("0.76", "file (tmpfs) pages are 70-82 % of a cache's memory (midpoint)"),
             ("0.43", "43 % of Cache2's anon pages hot within 1 min"),
             ("0.30", "30 % of Cache2's file pages hot within 1 min"),
             ("true", "Cache2's anon pages are mostly allocated locally")),
    _service("warehouse", "TPP's Data Warehouse (batch query engine)", "96 MiB",
             ("0.15", "anon pages are 85 % of its memory, file 15 %, stable"),
             ("0.333", "only a third of its anon pages are hot"),
             ("0.05", "assumption: its file pages are 'mostly cold' (no number given)"),
             ("false", "assumption: file pages of the intermediate results first "
                       "(order not given)")),
)
