"""A key-value store driven by the YCSB core workloads A-F, as memory accesses.

The store keeps, in anonymous memory, a hash index (16 bytes a key, at ``base``) and a
value slot per key (``value_size`` rounded up to 64 bytes, after the index, new keys
appended), and appends every write to a log in file-backed pages (a ring of
``log_size``, 1 TiB above ``base``). Operations become accesses:

* read: index read, value read;      * update: index read, value write, log write;
* insert: index write, value write of a new key, log write;
* scan: index read, then ``1..max_scan`` consecutive values read (uniform length);
* read-modify-write: index read, value read, value write, log write.

Mixes (YCSB ``workloads/workload[a-f]``): A 50 % read / 50 % update, B 95/5 read/update,
C read only, D 95 % read / 5 % insert with the ``latest`` distribution, E 95 % scan /
5 % insert, F 50 % read / 50 % read-modify-write; all but D choose keys with the
scrambled zipfian. ``latest`` picks the newest key minus a zipfian offset over the loaded
keys (YCSB grows the zipfian as keys are inserted; with 5 % inserts the difference is
small). Regions: 0 index, 1 values, 2 log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from cxlsim.traces.generators.base import TIMING, Kind, batch, check
from cxlsim.traces.generators.popularity import HOT, ZIPF, hot_or_cold
from cxlsim.traces.generators.zipf import ScrambledZipfian, Zipfian, fnv64
from cxlsim.traces.native import ANON, FILE, READ, WRITE, Columns
from cxlsim.traces.params import Param, boolean, choice, integer
from cxlsim.units import parse_size

READ_OP, UPDATE, INSERT, SCAN, RMW = range(5)
#: Operation mix (read, update, insert, scan, read-modify-write) and key distribution.
WORKLOADS = {
    "A": ((0.5, 0.5, 0, 0, 0), "zipfian"),
    "B": ((0.95, 0.05, 0, 0, 0), "zipfian"),
    "C": ((1.0, 0, 0, 0, 0), "zipfian"),
    "D": ((0.95, 0, 0.05, 0, 0), "latest"),
    "E": ((0, 0, 0.05, 0.95, 0), "zipfian"),
    "F": ((0.5, 0, 0, 0, 0.5), "zipfian"),
}
INDEX, VALUES, LOG = 0, 1, 2
_ENTRY = 16            # bytes of an index entry
_LOG_OFFSET = 1 << 40  # the log file is mapped this far above base
# Accesses of each operation but scan: (area, op), padded with (-1, 0).
_TEMPLATE = np.array([
    [(INDEX, READ), (VALUES, READ), (-1, 0), (-1, 0)],
    [(INDEX, READ), (VALUES, WRITE), (LOG, WRITE), (-1, 0)],
    [(INDEX, WRITE), (VALUES, WRITE), (LOG, WRITE), (-1, 0)],
    [(INDEX, READ), (-1, 0), (-1, 0), (-1, 0)],  # scan: the values follow
    [(INDEX, READ), (VALUES, READ), (VALUES, WRITE), (LOG, WRITE)],
], np.int64)
_LENGTH = (_TEMPLATE[:, :, 0] >= 0).sum(axis=1)


def kv(p: Mapping[str, Any], rng: np.random.Generator, n: int) -> Iterator[Columns]:
    mix, default = WORKLOADS[p["workload"]]
    distribution = default if p["distribution"] == "workload" else p["distribution"]
    keys = p["keys"]
    values_base, slot = layout(p)
    log_base = p["base"] + _LOG_OFFSET
    log_slots = max(1, p["log_size"] // slot)
    cumulative = np.cumsum(mix)
    mean = float(np.dot(mix, _LENGTH)) + mix[SCAN] * (p["max_scan"] + 1) / 2
    ops_per_batch = max(1, int(batch(n) / mean))
    choose = _chooser(p, distribution)
    inserted = 0
    logged = 0
    while True:
        draw = rng.random(ops_per_batch)
        kind = np.minimum(np.searchsorted(cumulative, draw, side="right"), RMW)
        is_insert = kind == INSERT
        newest = keys + inserted + np.cumsum(is_insert) - 1  # newest key at each operation
        key = np.where(is_insert, newest, choose(rng, newest))
        scan = np.where(kind == SCAN, rng.integers(1, p["max_scan"] + 1, ops_per_batch), 0)
        count = _LENGTH[kind] + scan
        op_of = np.repeat(np.arange(ops_per_batch), count)
        pos = np.arange(len(op_of)) - np.repeat(np.cumsum(count) - count, count)
        scanning = (kind[op_of] == SCAN) & (pos > 0)
        template = _TEMPLATE[kind[op_of], np.minimum(pos, 3)]
        area = np.where(scanning, VALUES, template[:, 0])
        record_key = np.minimum(key[op_of] + np.where(scanning, pos - 1, 0), newest[op_of])
        is_log = area == LOG
        log_index = (logged + np.cumsum(is_log) - 1) % log_slots
        addr = np.select(
            [area == INDEX, area == VALUES],
            [index_addr(p, record_key), values_base + record_key * slot],
            log_base + log_index * slot).astype(np.uint64)
        inserted += int(is_insert.sum())
        logged += int(is_log.sum())
        yield {"addr": addr,
               "op": np.where(scanning, READ, template[:, 1]).astype(np.uint8),
               "size": np.where(area == INDEX, _ENTRY, p["value_size"]).astype(np.uint32),
               "page_type": np.where(is_log, FILE, ANON).astype(np.uint8),
               "region": area.astype(np.uint16)}


def layout(p: Mapping[str, Any]) -> tuple[int, int]:
    """Where the values start (the page after the index) and the bytes of a value slot."""
    check(1 <= p["value_size"] < 1 << 32, "value_size must be from 1 B to 4 GiB - 1 B")
    slot = -(-p["value_size"] // 64) * 64
    return p["base"] + -(-p["keys"] * _ENTRY // 4096) * 4096, slot


def index_addr(p: Mapping[str, Any], key: np.ndarray) -> np.ndarray:
    """Address of each key's hash index entry."""
    return p["base"] + (fnv64(key) % p["keys"]) * _ENTRY


def _chooser(p: Mapping[str, Any], distribution: str) -> Callable[..., np.ndarray]:
    """``choose(rng, newest) -> key`` for each operation, given the newest key then."""
    keys = p["keys"]
    if distribution == "uniform":
        return lambda rng, newest: rng.integers(0, keys, len(newest))
    if distribution == "hotspot":
        hot = max(1, int(keys * p["hot_fraction"]))
        return lambda rng, newest: hot_or_cold(rng, len(newest), keys, hot, p["hot_ops"])
    if distribution == "latest":
        offset = Zipfian(keys, p["theta"])
        return lambda rng, newest: np.maximum(newest - offset.draw(rng.random(len(newest))), 0)
    chooser = (ScrambledZipfian if p["scrambled"] else Zipfian)(keys, p["theta"])
    return lambda rng, newest: chooser.draw(rng.random(len(newest)))


KINDS = (
    Kind("kv", "key-value store under a YCSB workload (A-F): index, values, write log",
         {**TIMING,
          "workload": Param("A", choice(*WORKLOADS), "YCSB core workload"),
          "keys": Param("1000000", integer(1, 1 << 40), "keys loaded before the run",
                        shrinks="count"),
          "value_size": Param("1000 B", parse_size, "bytes of a value (YCSB: 10 fields "
                                                    "of 100 B)"),
          "distribution": Param("workload", choice("workload", "zipfian", "uniform",
                                                   "hotspot", "latest"),
                                "key distribution; 'workload' takes the workload's own"),
          **ZIPF,
          "scrambled": Param("yes", boolean, "scrambled zipfian (YCSB's key chooser)"),
          **HOT,
          "max_scan": Param("100", integer(1), "longest scan (workload E)"),
          "log_size": Param("256 MiB", parse_size, "size of the write-ahead log ring",
                            shrinks="size"),
          "base": Param("0x100000000", integer(0), "address of the index")},
         kv, regions={INDEX: "index", VALUES: "values", LOG: "log"},
         columns=("page_type", "region")),
)
