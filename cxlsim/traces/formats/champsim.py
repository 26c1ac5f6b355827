"""ChampSim binary instruction traces: one fixed-size C struct per instruction.

From ChampSim's ``inc/trace_instruction.h`` (little-endian, natural alignment):

* ``standard``, 64 bytes (``input_instr``): u64 ip; u8 is_branch, branch_taken;
  u8 destination_registers[2], source_registers[4]; u64 destination_memory[2],
  source_memory[4].
* ``load-type``, 72 bytes: the same plus the newest ChampSim's trailing u8 load_type
  (padded to 72), which the header itself notes breaks older traces.
* ``cloudsuite``, 96 bytes (``cloudsuite_instr``): u64 ip; u8 is_branch, branch_taken;
  u8 destination_registers[4], source_registers[4]; u64 destination_memory[4],
  source_memory[4] (from byte 24); u8 asid[2], load_type.

Each non-zero source_memory is a load and each non-zero destination_memory a store of
that instruction, whose index is the clock (``instructions``); loads come before stores.
Traces are usually xz-compressed; they are read as they are. cxlsim writes the format
too: records sharing an instruction count share an instruction (so the trace must be in
time order), and instructions without accesses fill the gaps (ip 0).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cxlsim.errors import InputError
from cxlsim.traces.files import STREAM_ERRORS, atomic_output, open_input
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import READ, WRITE, Columns, Trace, TraceMeta
from cxlsim.traces.params import Param, choice


def _record(stores: int, stores_at: int, loads_at: int, itemsize: int) -> np.dtype:
    return np.dtype({"names": ["ip", "stores", "loads"],
                     "formats": ["<u8", ("<u8", stores), ("<u8", 4)],
                     "offsets": [0, stores_at, loads_at], "itemsize": itemsize})


VARIANTS = {"standard": _record(2, 16, 32, 64), "load-type": _record(2, 16, 32, 72),
            "cloudsuite": _record(4, 24, 56, 96)}
OPTIONS = {"variant": Param("standard", choice(*VARIANTS),
                            "record layout: standard (64 B), load-type (72 B), "
                            "cloudsuite (96 B)")}
FIELDS = ("time", "addr", "op")
_BLOCK = 1 << 16  # instructions per read


def read(path: Path, options: Mapping[str, Any], report: ImportReport,
         skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    record = VARIANTS[options["variant"]]
    chunks = _chunks(open_input(path), path, record, options["variant"], report, skip_bad)
    return TraceMeta(clock="instructions", source=f"champsim:{path.name}"), chunks


def _chunks(stream: Any, path: Path, record: np.dtype, variant: str, report: ImportReport,
            skip_bad: bool) -> Iterator[Columns]:
    carry = b""
    with stream:
        while True:
            try:
                data = stream.read(_BLOCK * record.itemsize)
            except STREAM_ERRORS:
                _truncated(path, report, skip_bad, "the compressed data is cut short")
                return
            if not data:
                break
            data = carry + data
            whole = len(data) - len(data) % record.itemsize
            carry = data[whole:]
            yield _accesses(np.frombuffer(data[:whole], record), report.lines)
            report.lines += whole // record.itemsize
    if carry:
        _truncated(path, report, skip_bad, f"then {len(carry)} stray bytes (a {variant} "
                                           f"record is {record.itemsize} bytes)")


def _truncated(path: Path, report: ImportReport, skip_bad: bool, detail: str) -> None:
    report.first_bad = (f"{path}: truncated ChampSim trace: {report.lines:,} whole records "
                        f"read, {detail}")
    if not skip_bad:
        raise InputError(report.first_bad)
    report.skipped += 1


def _accesses(instructions: np.ndarray, first: int) -> Columns:
    """The loads then stores of each instruction, in instruction order."""
    memory = np.concatenate([instructions["loads"], instructions["stores"]], axis=1)
    rows, slots = np.nonzero(memory)
    return {"time": (first + rows).astype(np.uint64), "addr": memory[rows, slots],
            "op": np.where(slots >= 4, WRITE, READ).astype(np.uint8)}


def write(trace: Trace, out: Path, options: Mapping[str, Any]) -> None:
    record = VARIANTS[options["variant"]]
    by_time = trace.meta.clock == "instructions"
    nxt = 0          # index of the next instruction to write
    held: Columns | None = None  # records of the last instruction seen, maybe incomplete
    where = str(trace.path)
    with atomic_output(out) as tmp, open(tmp, "wb") as f:
        for chunk in trace.chunks(["time", "addr", "op"]):
            n = len(chunk["addr"])
            ids = chunk["time"].astype(np.int64) if by_time else np.arange(nxt, nxt + n)
            cols = {"id": ids, "addr": chunk["addr"], "op": chunk["op"]}
            if held is not None:
                cols = {k: np.concatenate([held[k], cols[k]]) for k in cols}
            if len(cols["id"]) == 0:
                continue
            if np.any(np.diff(cols["id"]) < 0) or cols["id"][0] < nxt:
                raise InputError("the trace's instruction counts go backwards; ChampSim needs "
                                 "them in order", location=where)
            last = int(cols["id"][-1])
            keep = cols["id"] == last
            held = {k: v[keep] for k, v in cols.items()}
            ready = {k: v[~keep] for k, v in cols.items()}
            nxt = _emit(f, record, ready, nxt, last, where)
        if held is not None:
            _emit(f, record, held, nxt, int(held["id"][-1]) + 1, where)


def _emit(f: Any, record: np.dtype, cols: Columns, first: int, stop: int, where: str) -> int:
    """Write instructions ``first .. stop-1`` holding ``cols``' accesses; return ``stop``."""
    loads, stores = cols["op"] == READ, cols["op"] == WRITE
    slots = {"loads": (loads, 4), "stores": (stores, record["stores"].shape[0])}
    for start in range(first, stop, _BLOCK):
        end = min(start + _BLOCK, stop)
        out = np.zeros(end - start, record)
        for field, (mask, capacity) in slots.items():
            ids, addr = cols["id"][mask], cols["addr"][mask]
            lo, hi = np.searchsorted(ids, [start, end])
            ids, addr = ids[lo:hi], addr[lo:hi]
            rank = np.arange(len(ids)) - np.searchsorted(ids, ids, side="left")
            if len(rank) and rank.max() >= capacity:
                crowded = int(ids[np.argmax(rank >= capacity)])
                raise InputError(f"instruction {crowded} has more than {capacity} {field}; a "
                                 f"ChampSim record holds at most {capacity}", location=where)
            if np.any(addr == 0):
                raise InputError("address 0 cannot be written: ChampSim reads it as "
                                 "'no access'", location=where)
            out[field][ids - start, rank] = addr
        f.write(out.tobytes())
    return stop


FORMAT = Format("champsim", "ChampSim binary traces (input_instr, cloudsuite_instr)", read,
                fields=FIELDS, options=OPTIONS, write=write)
