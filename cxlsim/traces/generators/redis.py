"""Redis under YCSB behind cold memory: HMSDK's DRAM-pressure setup as one trace.

SK hynix's DAMON tiering evaluation (HMSDK talk, seed 004; LKML "DAMON based tiered
memory management for CXL memory", v6, June 2024) fills DRAM with cold memory
allocated before redis-server loads, so part of Redis lands on CXL, then runs YCSB
zipfian read-only against it. The trace, in four phases:

1. **cold filler**: ``cold`` bytes first-touched one write a page (a memset), never
   touched again (region ``cold``);
2. **settle**: accesses of another small task (``settle_set`` bytes, read in turn; region
   ``other``) until ``settle`` records have passed since the filler began -- the time
   the cold memory sits before Redis starts (with DAMON always on, what lets it find
   the filler cold first);
3. **load**: YCSB's load phase, keys inserted in order: for each key an index write and
   a value write (so Redis's pages are allocated in key order, hot and cold keys mixed
   as the scrambled zipfian mixes them);
4. **run**: the YCSB workload (:mod:`~cxlsim.traces.generators.kv`; default C, read
   only, scrambled zipfian) for the rest of the records.

The run phase starts at record ``settle + 2 keys`` whatever the pressure
(:func:`run_start`), so runs at different ``cold`` sizes measure the same records.
Not modelled: Redis's own data structures (dict entries, robj/sds headers: the kv
store's index entry and value slot stand for them), its file-backed memory, the network.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from cxlsim.traces.generators import kv
from cxlsim.traces.generators.base import CHUNK, Kind, check
from cxlsim.traces.native import ANON, READ, WRITE, Columns
from cxlsim.traces.params import Param, integer
from cxlsim.units import format_size, parse_size

COLD, OTHER = 3, 4  # regions after the kv store's index, values and log
_PAGE = 4096
_COLD_OFFSET = 1 << 41   # the filler and the other task lie far from Redis's areas
_OTHER_OFFSET = 1 << 42


def run_start(p: Mapping[str, Any]) -> int:
    """Index of the first record of the YCSB run phase."""
    return p["settle"] + 2 * p["keys"]


def redis(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    cold_pages = -(-p["cold"] // _PAGE)
    check(cold_pages <= p["settle"],
          f"settle ({p['settle']:,} records) must cover the cold filler's "
          f"{cold_pages:,} page writes ({format_size(p['cold'])})")
    check(p["settle_set"] >= 64, "settle_set must be at least one 64 B line")
    check(n > run_start(p), f"n ({n:,}) must exceed the records before the run phase "
                            f"(settle + 2 x keys = {run_start(p):,})")
    yield from _settle(p, cold_pages)
    yield from _load(p)
    yield from kv.kv(p, rng, n - run_start(p))


def _settle(p: Mapping[str, Any], cold_pages: int) -> Iterator[Columns]:
    """The cold filler's page writes, then the other task's reads, up to ``settle``
    records, :data:`~.base.CHUNK` at a time."""
    cold = np.uint64(p["base"] + _COLD_OFFSET)
    other = np.uint64(p["base"] + _OTHER_OFFSET)
    lines = np.uint64(p["settle_set"] // 64)
    for start in range(0, p["settle"], CHUNK):
        k = np.arange(start, min(start + CHUNK, p["settle"]), dtype=np.uint64)
        filler = k < np.uint64(cold_pages)
        addr = np.where(filler, cold + k * np.uint64(_PAGE),
                        other + (k - np.uint64(cold_pages)) % lines * np.uint64(64))
        yield _records(addr, np.where(filler, WRITE, READ), np.where(filler, COLD, OTHER), 64)


def _load(p: Mapping[str, Any]) -> Iterator[Columns]:
    """YCSB's load phase: per key in order an index write and a value write,
    :data:`~.base.CHUNK` records at a time."""
    values, slot = kv.layout(p)
    for start in range(0, p["keys"], CHUNK // 2):
        keys = np.arange(start, min(start + CHUNK // 2, p["keys"]), dtype=np.uint64)
        load = np.empty(2 * keys.size, np.uint64)
        load[0::2], load[1::2] = kv.index_addr(p, keys), values + keys * np.uint64(slot)
        yield _records(load, np.full(load.size, WRITE),
                       np.tile([kv.INDEX, kv.VALUES], keys.size),
                       np.tile([16, p["value_size"]], keys.size))


def _records(addr: np.ndarray, op: np.ndarray, region: np.ndarray, size) -> Columns:
    return {"addr": addr, "op": op.astype(np.uint8),
            "size": np.broadcast_to(np.asarray(size, np.uint32), addr.shape).copy(),
            "page_type": np.full(addr.size, ANON, np.uint8),
            "region": region.astype(np.uint16)}


_KV = kv.KINDS[0]
KINDS = (
    Kind("redis", "Redis + YCSB behind cold memory (HMSDK's DRAM pressure): cold filler, "
                  "settle, load, run",
         {**_KV.params,
          "workload": Param("C", _KV.params["workload"].parse,
                            "YCSB core workload (HMSDK: zipfian read only, C)"),
          "cold": Param("0 B", parse_size, "cold memory allocated before Redis (the "
                                           "pressure)", shrinks="size"),
          "settle": Param("100000", integer(0), "records before Redis loads: the filler's "
                                                "page writes, then the other task's reads",
                          shrinks="count"),
          "settle_set": Param("64 KiB", parse_size, "bytes the other task reads while the "
                                                    "filler sits (assumption: a small, "
                                                    "cache-resident task)", shrinks="size")},
         redis, regions={**_KV.regions, COLD: "cold", OTHER: "other"}, columns=_KV.columns),
)
