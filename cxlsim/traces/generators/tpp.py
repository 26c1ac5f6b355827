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
v2 -- ``../shared/reference/policies.md`` section 1.3 and its seed; figure numbers are
the paper's): the footprint is made of anon and file pages in the workload's shares; the
workload's start allocates them in its order -- file cache read in bulk at warm-up, anon
pages touched once when first allocated. The records after the start stand for ``span``
of real time (a time window is that share of them) and mix three kinds of pages:

* hot pages (``anon_hot``, ``file_hot`` of each type; Fig. 8's pages used within
  ``hot_window``, two minutes, Cache2's one): each is used once in every ``hot_window``
  at a random phase (a random permutation of them spread over the window), and the hot
  records left are dealt to them by their heat (below); each type takes its share of
  the hot pages' share of those records (an assumption: the paper gives no split of the
  accesses by type);
* warm pages (``reaccess`` of each type's cold pages; Fig. 11's cold pages re-accessed
  within ten minutes): each is touched once in every ``reaccess_window`` at a random
  phase, so rarely next to a hot page; the other cold pages stay idle after the start;
* churn (``churn`` of the hot file pages, ``anon_churn`` of the hot anon pages, per
  ``reaccess_window``; Fig. 11's Data Warehouse, whose hot file pages are mostly newly
  allocated ones): a hot page is retired -- left allocated and idle, as a trace cannot
  free -- and a new page of its type, at the next address after the footprint, takes its
  place, hot from its first touch. The allocated memory grows by ``item`` x
  (round(churn x hot file pages) + round(anon_churn x hot anon pages)) every
  ``reaccess_window``, i.e. by ``span / reaccess_window`` times that over the trace.

The heat of the hot pages (the paper gives no per-page rates) is measured object
popularity: the per-cluster statistics of Twitter's cache traces (Yang et al., OSDI'20,
the table ``stat/2020Mar.md`` of their trace release) give 45 of its 54 clusters a
fitted Zipf exponent, median 1.28 (interquartile 0.85-1.60), and a mean object of 265 B
of key and value (the median cluster), plus the 56 B of metadata Twemcache keeps with
each. A hot page of 4 KiB holds ``item // object_size`` = 12 objects, placed regardless
of popularity, and is as hot as their sum: each type's hot objects are ranked by a Zipf
law of ``anon_alpha`` or ``file_alpha`` and dealt onto the real service's hot pages
(:func:`~cxlsim.traces.generators.heat.page_heat`). The service is the one of
``real_footprint`` the trace stands for (16 GiB, the experiments' 256 MiB at scale 64; a
run sets it to its scale x footprint): each page of the trace takes the heat of that
many real pages of like heat, so a top fraction of the pages takes the same share of
the accesses at every scale. Measured on caches' keys, the law stands for the data
objects of every service, anon and file alike (no source gives them apart); 0 makes
every hot page equally hot (the first version of the model). A hot slot keeps its heat
when churn gives it a new page.

With ``reaccess=0``, ``churn=0`` and ``anon_churn=0`` only the hot pages are accessed
after the start. Not modelled: the hot set drifting over time other than by churn (a
retired page never comes back), warm pages turning hot, an object's accesses falling
on its own lines (an access falls on any line of its page), re-accesses at intervals
other than ``reaccess_window`` (Fig. 11's distribution beyond its ten-minute point),
and the anon/file shares changing over a run (Fig. 9a's web service).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from cxlsim.traces.generators.base import (
    SPACE, TIMING, Kind, batch, check, items, ops, place)
from cxlsim.traces.generators.heat import Alias, page_heat
from cxlsim.traces.generators.popularity import ZIPF
from cxlsim.traces.generators.zipf import Zipfian
from cxlsim.traces.native import ANON, FILE, READ, Columns
from cxlsim.traces.params import Param, boolean, fraction, integer, number
from cxlsim.units import format_size, format_time, parse_size, parse_time

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


class _Rounds:
    """A sequence dealt in rounds of ``size`` entries: entry ``k`` is entry ``k % size`` of
    round ``k // size``, and each round is a fresh draw (``draw(count)``: ``count`` rounds
    as a ``count`` x ``size`` array), made when first needed. Callers ask for increasing
    ``k``, so the rounds are drawn in order and the stream stays reproducible."""

    def __init__(self, size: int, draw: Callable[[int], np.ndarray]) -> None:
        self.size, self.draw = size, draw
        self.first, self.held = 0, np.empty((0, size), np.int64)

    def take(self, first: int, count: int) -> np.ndarray:
        """Entries ``first`` to ``first + count - 1``."""
        if count == 0:
            return np.empty(0, np.int64)
        r, i = np.divmod(np.arange(first, first + count, dtype=np.int64), self.size)
        lo, hi = int(r[0]), int(r[-1])
        end = self.first + len(self.held)
        kept = self.held[lo - self.first:] if lo < end else self.held[:0]
        new = max(lo, end)
        self.held = np.concatenate([kept, self.draw(hi + 1 - new)]) if hi >= new else kept
        self.first = lo
        return self.held[r - lo, i]


def _permutations(rng: np.random.Generator, size: int) -> Callable[[int], np.ndarray]:
    """``draw`` for :class:`_Rounds`: each round a random permutation of ``range(size)``."""
    return lambda count: rng.permuted(np.tile(np.arange(size, dtype=np.int64), (count, 1)),
                                      axis=1)


def _victims(rng: np.random.Generator, hot: tuple[int, int],
             churned: tuple[int, int]) -> Callable[[int], np.ndarray]:
    """``draw`` for :class:`_Rounds`: each round the hot slots one ``reaccess_window``
    retires -- ``churned[0]`` distinct anon slots (``0 .. hot[0] - 1``) and ``churned[1]``
    distinct file slots (after them), in a random order."""
    def draw(count: int) -> np.ndarray:
        out = np.empty((count, sum(churned)), np.int64)
        for j in range(count):
            out[j] = rng.permutation(np.concatenate([
                rng.choice(hot[0], churned[0], replace=False),
                hot[0] + rng.choice(hot[1], churned[1], replace=False)]))
        return out
    return draw


def _dealt(first: int, count: int, rate: float) -> tuple[np.ndarray, int, int]:
    """Records ``first .. first + count - 1`` of a stream in which a share ``rate`` (below
    or at 1) of the records are set aside, evenly (record ``k`` is set aside when
    ``floor((k + 1) rate) > floor(k rate)``): the mask of those set aside, and the index,
    among all set aside, of the first one here and of the one after the last."""
    if rate <= 0:
        return np.zeros(count, bool), 0, 0
    a = np.floor(np.arange(first, first + count + 1, dtype=np.float64) * rate).astype(np.int64)
    return a[1:] > a[:-1], int(a[0]), int(a[-1])


def service(p: Mapping[str, Any], rng: np.random.Generator,
            n: int) -> Iterator[Columns]:
    """A TPP service: its start (anon and file pages first touched in the workload's
    order), then its hot pages (each once in every ``hot_window`` at a random phase, the
    other hot accesses by the pages' heat), its warm pages (each once in every
    ``reaccess_window``) and its churn (hot pages retired and replaced by new ones)."""
    total = items(p)
    file_items = int(round(total * p["file_share"]))
    anon_items = total - file_items
    check(anon_items >= 1 and file_items >= 1,
          "footprint must hold at least one anon and one file item at this file_share")
    span, window, hot_window = p["span"], p["reaccess_window"], p["hot_window"]
    for name in ("span", "reaccess_window", "hot_window"):
        check(p[name] > 0, f"{name} must be longer than 0 s")
    check(p["reaccess"] == 0 or window > hot_window,
          f"reaccess_window ({format_time(window)}) must be longer than hot_window "
          f"({format_time(hot_window)}): a page re-accessed once per reaccess_window would "
          f"be hot")
    kinds = np.repeat(np.array([ANON, FILE], np.uint8), [anon_items, file_items])
    order = np.arange(total) if p["anon_first"] else \
        np.concatenate([np.arange(anon_items, total), np.arange(anon_items)])
    # each type's pages in a random order: its hot pages first, then its warm pages
    anon = rng.permutation(anon_items)
    file = anon_items + rng.permutation(file_items)
    n_hot = (max(int(round(anon_items * p["anon_hot"])), 1),
             max(int(round(file_items * p["file_hot"])), 1))
    n_warm = [int(round((size - h) * p["reaccess"]))
              for size, h in zip((anon_items, file_items), n_hot)]
    hot = np.concatenate([anon[:n_hot[0]], file[:n_hot[1]]])
    heat = _heat(p, n_hot, total)
    warm = np.concatenate([anon[n_hot[0]:n_hot[0] + n_warm[0]],
                           file[n_hot[1]:n_hot[1] + n_warm[1]]])
    churned = (int(round(n_hot[0] * p["anon_churn"])), int(round(n_hot[1] * p["churn"])))
    m = batch(n)
    for start in range(0, total, m):  # the start: every page touched once, in order
        index = order[start:start + m]
        yield {"addr": place(rng, index, p), "op": ops(rng, index.size, p["read_ratio"]),
               "page_type": kinds[index], "region": kinds[index].astype(np.uint16)}
    after = n - total  # records after the start: they stand for span of real time
    if after <= 0:
        return
    per_window = after * window / span  # records a reaccess_window stands for
    special = warm.size + sum(churned)  # warm touches and new pages per reaccess_window
    check(special < per_window,
          f"{warm.size} warm and {sum(churned)} churned pages a reaccess_window "
          f"({format_time(window)}) need more than its {per_window:.0f} records ({after} "
          f"records after the start stand for span {format_time(span)}): raise n, lengthen "
          f"span or lower reaccess or churn")
    grown = total + int(np.ceil(sum(churned) * span / window)) + 1
    check(p["base"] + grown * p["item"] <= 1 << 64,
          f"footprint plus the pages churn allocates over span ({format_size(p['item'])} x "
          f"{grown - total}) must stay below 2^64 from base")
    rate = special / per_window  # records that are a warm touch or a new page
    churn_share = sum(churned) / special if special else 0.0
    hot_rate = min(1.0, hot.size / ((1 - rate) * after * hot_window / span))
    hot_rounds = _Rounds(hot.size, _permutations(rng, hot.size))
    warm_rounds = _Rounds(max(warm.size, 1), _permutations(rng, warm.size))
    churn_rounds = _Rounds(max(sum(churned), 1), _victims(rng, n_hot, churned))
    slot_type = np.repeat(np.array([ANON, FILE], np.uint8), n_hot)
    current = hot.copy()  # the page in each hot slot (churn replaces them)
    q = 0
    while True:
        page, kind = np.empty(m, np.int64), np.empty(m, np.uint8)
        aside, s0, s1 = _dealt(q, m, rate)
        # hot records: a round of every hot slot per hot_window, the rest by heat
        hpos = np.flatnonzero(~aside)
        sched, h0, h1 = _dealt(q - s0, hpos.size, hot_rate)
        slot = np.empty(hpos.size, np.int64)
        slot[sched] = hot_rounds.take(h0, h1 - h0)
        slot[~sched] = heat.draw(rng, hpos.size - (h1 - h0))
        page[hpos], kind[hpos] = current[slot], slot_type[slot]
        # set-aside records: the churn's new pages and the warm pages' touches
        spos = np.flatnonzero(aside)
        new, e0, e1 = _dealt(s0, s1 - s0, churn_share)
        wpos, epos = spos[~new], spos[new]
        touched = warm[warm_rounds.take(s0 - e0, wpos.size)]
        page[wpos], kind[wpos] = touched, kinds[touched]
        if e1 > e0:
            victim = churn_rounds.take(e0, e1 - e0)
            fresh = total + np.arange(e0, e1, dtype=np.int64)
            page[epos], kind[epos] = fresh, slot_type[victim]
            _follow(page, slot, hpos, victim, epos, fresh, current, m)
        yield {"addr": place(rng, page, p), "op": ops(rng, m, p["read_ratio"]),
               "page_type": kind, "region": kind.astype(np.uint16)}
        q += m


def _heat(p: Mapping[str, Any], n_hot: tuple[int, int], total: int) -> Alias:
    """The hot slots' heat (anon slots, then file slots, each type's hottest first): each
    type takes its share of the hot pages' share of the hot records, spread over its
    slots as :func:`~cxlsim.traces.generators.heat.page_heat` gives it for the real
    service of ``real_footprint`` (at least the footprint)."""
    check(p["object_size"] >= 1, "object_size must be at least 1 B")
    per_page = max(1, p["item"] // p["object_size"])
    real = max(total, p["real_footprint"] // p["item"])
    real_file = int(round(real * p["file_share"]))
    real_hot = (int(round((real - real_file) * p["anon_hot"])),
                int(round(real_file * p["file_hot"])))
    u, anon = p["spread"], p["anon_ops"]
    shares = (n_hot[0] / sum(n_hot), n_hot[1] / sum(n_hot)) if anon is None else \
        (anon, 1 - anon)
    return Alias(np.concatenate([
        ((1 - u) * page_heat(count, real_count, per_page, p[alpha]) + u / count) * share
        for count, real_count, alpha, share in zip(n_hot, real_hot, ("anon_alpha", "file_alpha"),
                                                   shares)]))


def _follow(page: np.ndarray, slot: np.ndarray, hpos: np.ndarray, victim: np.ndarray,
            epos: np.ndarray, fresh: np.ndarray, current: np.ndarray, m: int) -> None:
    """Send the hot records of a chunk whose slot was churned earlier in it to the slot's
    new page, and leave each churned slot's last new page in ``current``."""
    mark = np.zeros(current.size, bool)
    mark[victim] = True
    sel = np.flatnonzero(mark[slot])
    by = np.lexsort((epos, victim))  # events by slot, then by position
    ev_slot, ev_page = victim[by], fresh[by]
    key = ev_slot * (m + 1) + epos[by]
    i = np.searchsorted(key, slot[sel] * (m + 1) + hpos[sel], side="right") - 1
    ok = (i >= 0) & (ev_slot[np.maximum(i, 0)] == slot[sel])
    page[hpos[sel[ok]]] = ev_page[i[ok]]
    last = np.append(ev_slot[1:] != ev_slot[:-1], True)
    current[ev_slot[last]] = ev_page[last]


Source = tuple[str, str]  # a default and where it comes from

#: The real time of the paper's re-access statements (Fig. 11: "within ten minutes").
_TEN_MINUTES = "600 s"


def _service(name: str, doc: str, footprint: str, file_share: Source, anon_hot: Source,
             file_hot: Source, anon_first: Source, *, hot_window: Source, reaccess: Source,
             churn: Source, anon_ops: Source = ("pages", "the anon pages' share of the hot "
                                                        "pages (no source splits the "
                                                        "accesses by type)")) -> Kind:
    """A TPP service model with its workload's defaults (sources in each ``doc``)."""
    return Kind(name, doc, {
        **TIMING, **SPACE,
        "footprint": Param(footprint, parse_size, "bytes of anon and file pages together "
                                                  "(assumption: a server's tens of GiB shrunk "
                                                  "to 96 % of the 100 MiB tpp topologies); "
                                                  "churn allocates more after it", shrinks="size"),
        "file_share": Param(file_share[0], fraction, "fraction of the footprint that is file "
                                                     "pages: " + file_share[1]),
        "anon_hot": Param(anon_hot[0], fraction, "fraction of the anon pages that are hot "
                                                 "(each used in every hot_window): "
                                                 + anon_hot[1]),
        "file_hot": Param(file_hot[0], fraction, "fraction of the file pages that are hot: "
                                                 + file_hot[1]),
        "anon_first": Param(anon_first[0], boolean, "anon pages allocated before the file "
                                                    "cache is read in: " + anon_first[1]),
        "hot_window": Param(hot_window[0], parse_time, "time in which every hot page is "
                                                       "used (once at a random phase, more "
                                                       "often at random): "
                                                       + hot_window[1]),
        "reaccess": Param(reaccess[0], fraction, "fraction of the cold (not hot) pages of "
                                                 "each type that are warm: re-accessed once "
                                                 "in every reaccess_window, at a random "
                                                 "phase; the others stay idle after the "
                                                 "start: " + reaccess[1]),
        "reaccess_window": Param(_TEN_MINUTES, parse_time,
                                 "time in which a warm page is re-accessed, and per which "
                                 "churn and anon_churn renew the hot pages: ten minutes "
                                 "(Fig. 11)"),
        "churn": Param(churn[0], fraction, "fraction of the hot file pages retired per "
                                           "reaccess_window (left allocated and idle) and "
                                           "replaced by as many new file pages after the "
                                           "footprint, hot from their first touch: "
                                           + churn[1]),
        "anon_churn": Param("0", fraction, "the same for the hot anon pages: assumption "
                                           "(Fig. 11's newly allocated pages are the Data "
                                           "Warehouse's file pages; no anon churn is "
                                           "given)"),
        "span": Param(_TEN_MINUTES, parse_time,
                      "real time the records after the start stand for (a time window is "
                      "that share of them): assumption, one reaccess_window"),
        **_HEAT,
        "anon_ops": Param(anon_ops[0], _share_or_pages,
                          "share of the hot accesses that fall on anon pages (the rest on "
                          "file pages), or 'pages': the anon pages' share of the hot pages; "
                          "default: " + anon_ops[1])},
        service, regions=_REGIONS, columns=_COLUMNS)


def _share_or_pages(text: str) -> float | None:
    """A fraction, or ``pages`` (None): in proportion to the hot pages."""
    return None if text.strip() == "pages" else fraction(text)


#: Where the hot pages' heat comes from: the per-cluster statistics of Twitter's cache
#: traces (Yang et al., "A large scale analysis of hundreds of in-memory cache clusters at
#: Twitter", OSDI'20; the table stat/2020Mar.md of their trace release, one row per
#: cluster, 54 clusters). 45 clusters have a fitted Zipf exponent above 0 (the other nine:
#: none fitted, or 0 for write-only and one-hit workloads).
_TWITTER = "Yang et al., OSDI'20, per-cluster table of the Twitter cache traces"
_ALPHA: Source = ("1.28", "the median over the 45 Twitter cache clusters with a fitted "
                          "Zipf exponent (interquartile range 0.85-1.60, all 0.02-2.68; "
                  + _TWITTER + "); measured on caches' keys, taken for every service's "
                               "data objects; no source gives anon and file pages apart, "
                               "so both types take it; 0: every hot page equally hot")

#: The page heat parameters every TPP service shares (sources in each doc).
_HEAT = {
    "anon_alpha": Param(_ALPHA[0], number(0, 10), "Zipf exponent of the popularity of the "
                                                  "objects on the hot anon pages: "
                                                  + _ALPHA[1]),
    "file_alpha": Param(_ALPHA[0], number(0, 10), "the same for the hot file pages: "
                                                  + _ALPHA[1]),
    "object_size": Param("321 B", parse_size,
                         "bytes an object takes in a page (a page holds item // "
                         "object_size of them): the median over the same 45 clusters of "
                         "the mean key + value size, 265 B, plus the 56 B of metadata "
                         "Twemcache keeps with each (" + _TWITTER + ")"),
    "spread": Param("0", fraction,
                    "share of the hot accesses that follow no object's popularity, spread "
                    "evenly over the type's hot pages (index, metadata and allocator "
                    "traffic); no source measures it"),
    "real_footprint": Param("16 GiB", parse_size,
                            "bytes of the real service the footprint stands for (at least "
                            "the footprint): each page of the trace has the heat of "
                            "real_footprint / footprint of its pages of like heat; 16 GiB, "
                            "the service the experiments simulate as 256 MiB at scale 64 (a "
                            "run sets it to its scale x footprint)"),
}

_FILE = {"file_size": Param("2 GiB", parse_size, "size of the file pages (page cache)",
                           shrinks="size"),
         "file_ops": Param("0.2", fraction, "fraction of the accesses to file pages")}
_REGIONS = {0: "anon", 1: "file"}
_COLUMNS = ("page_type", "region")

#: Defaults the services share, with their sources.
_NO_CHURN = ("0", "assumption: Fig. 11's newly allocated pages are said of the Data "
                  "Warehouse only")
_CACHE_REACCESS = ("0.5", "assumption: Fig. 11 says many of a cache service's cold pages "
                          "are re-accessed within ten minutes, without a number")
_CACHE_FILE_SHARE = ("0.76", "file (tmpfs) pages are 70-82 % of a cache's memory (Fig. 9b-c, "
                             "midpoint)")

KINDS = (
    Kind("alloc-bursts", "long-lived heap plus bursts of short-lived hot allocations",
         {**TIMING, **SPACE,
          "burst_size": Param("64 MiB", parse_size, "size of each burst allocation",
                              shrinks="size"),
          "burst_every": Param("1000000", integer(1), "records from one burst to the next",
                               shrinks="count"),
          "burst_life": Param("250000", integer(1), "records a burst lives", shrinks="count"),
          "burst_ops": Param("0.5", fraction, "fraction of accesses to the live burst")},
         alloc_bursts, regions={0: "heap", 1: "burst"}, columns=_COLUMNS),
    Kind("anon-file-mix", "zipfian anonymous memory and uniformly read file pages",
         {**TIMING, **SPACE, "theta": ZIPF["theta"], **_FILE}, anon_file_mix,
         regions=_REGIONS, columns=_COLUMNS),
    Kind("file-warmup", "sequential read of the file cache, then mostly anonymous accesses",
         {**TIMING, **SPACE, "theta": ZIPF["theta"], **_FILE,
          "file_size": Param("4 GiB", parse_size, "size of the file read at warm-up",
                             shrinks="size"),
          "file_ops": Param("0.02", fraction, "fraction of the accesses to file pages after "
                                              "the warm-up")},
         file_warmup, regions=_REGIONS, columns=_COLUMNS),
    # TPP paper section 3 (reading note of arXiv 2206.02878 v2). Web, Cache and Ads use
    # 95-98 % of a server's memory: the experiments size the nodes to that.
    _service("web1", "TPP's Web1 (HHVM web service): file cache loaded at start, then anon",
             "96 MiB",
             ("0.5", "assumption: the VM binaries and bytecode loaded at start make a "
                     "large share (the paper's Fig. 9a, not read)"),
             ("0.475", "35-60 % of a web service's anon pages hot within 2 min (Fig. 8, "
                       "midpoint)"),
             ("0.085", "3-14 % of a web service's file pages hot within 2 min (Fig. 8, "
                       "midpoint)"),
             ("false", "the file cache is loaded at start, anon grows afterwards (Fig. 9a)"),
             hot_window=("120 s", "the hot shares are of pages used within two minutes "
                                  "(Fig. 8)"),
             reaccess=("0.8", "80 % of a web service's cold pages are re-accessed within "
                              "ten minutes (Fig. 11)"),
             churn=_NO_CHURN),
    _service("cache1", "TPP's Cache1 (in-memory object cache on tmpfs)", "96 MiB",
             _CACHE_FILE_SHARE,
             ("0.40", "40 % of Cache1's anon pages accessed within 2 min (Fig. 8)"),
             ("0.25", "25 % of Cache1's file pages accessed within 2 min (Fig. 8)"),
             ("true", "Cache1's anon pages are first allocated locally"),
             hot_window=("120 s", "Cache1's hot shares are of pages used within two "
                                  "minutes (Fig. 8)"),
             reaccess=_CACHE_REACCESS,
             churn=_NO_CHURN),
    _service("cache2", "TPP's Cache2 (in-memory object cache on tmpfs)", "96 MiB",
             _CACHE_FILE_SHARE,
             ("0.43", "43 % of Cache2's anon pages hot within 1 min (Fig. 8)"),
             ("0.30", "30 % of Cache2's file pages hot within 1 min (Fig. 8)"),
             ("true", "Cache2's anon pages are mostly allocated locally"),
             hot_window=("60 s", "Cache2's hot shares are of pages used within one minute "
                                 "(Fig. 8; within two its anon and file shares are close)"),
             reaccess=_CACHE_REACCESS,
             churn=_NO_CHURN,
             anon_ops=("0.48", "identified on T6.3c, Cache2's default-Linux local traffic "
                               "of 78 % at DRAM:CXL 2:1 (cxlsim.validation.identify; "
                               "plausible 0.1-0.9)")),
    _service("warehouse", "TPP's Data Warehouse (batch query engine)", "96 MiB",
             ("0.15", "anon pages are 85 % of its memory, file 15 %, stable (Fig. 9d)"),
             ("0.333", "only a third of its anon pages are hot"),
             ("0.05", "assumption: its file pages are 'mostly cold' (Fig. 8, no number "
                      "given)"),
             ("false", "assumption: file pages of the intermediate results first "
                       "(order not given)"),
             hot_window=("120 s", "the hot shares are of pages used within two minutes "
                                  "(Fig. 8)"),
             reaccess=("0", "assumption: Fig. 11 gives the Data Warehouse's churn of hot "
                            "file pages, nothing on re-accesses of its cold pages"),
             churn=("0.8", "only 20 % of the Data Warehouse's hot file pages are re-accessed "
                           "within ten minutes, the rest are newly allocated (Fig. 11)")),
)
