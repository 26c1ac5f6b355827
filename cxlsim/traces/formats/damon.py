"""DAMON monitoring results from ``damo record``: region snapshots -> region access trace.

    damo record -o damon.data PROGRAM

All three text forms damo writes are read (told apart by their first bytes):

* ``json``: a list of records ``{target_id, intervals, snapshots: [{start_time, end_time,
  regions: [{start, end, nr_accesses, age}]}]}``; nr_accesses is a number or
  ``{"samples": N, "percent": P}``, and numbers may be written as strings;
* ``json_compressed``: the same, zlib-compressed (damo's default);
* ``perf_script``: ``perf script`` lines ``kdamond.0 4452 [000] 82877.315633:
  damon:damon_aggregated: target_id=ID nr_regions=N START-END: NR_ACCESSES [AGE]``.

Each region of each snapshot becomes a record: ``time`` the snapshot's end (ns), ``addr``
the region start, ``size`` its length (a region over 2 GiB becomes several records, as
``size`` is 32-bit), ``op`` read (DAMON does not tell reads from writes), ``weight`` its
nr_accesses (in how many sampling intervals of the aggregation the region was found
accessed; 0 = idle), ``region`` the target (0, 1, ... in order of appearance, named
``target ID``).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from cxlsim.errors import InputError, Location
from cxlsim.traces.files import STREAM_ERRORS, open_input
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import READ, Columns, TraceMeta

FIELDS = ("time", "addr", "op", "size", "region", "weight")
#: Largest ``size`` of one record; longer regions are split.
PIECE = 1 << 31

_AGGREGATED = re.compile(
    r"\S.*?\s(?P<secs>\d+\.\d+):\s+damon:damon_aggregated:\s+target_id=(?P<target>\d+)\s+"
    r"nr_regions=\d+\s+(?P<start>\d+)-(?P<end>\d+):\s+(?P<acc>\d+)(?:\s+\d+)?")
_PERF_EXPECTED = ("a damo perf_script line 'COMM PID [CPU] SECONDS: damon:damon_aggregated: "
                  "target_id=ID nr_regions=N START-END: NR_ACCESSES [AGE]'")


class _Regions:
    """Regions read so far, as lists, with the targets numbered in order of appearance."""

    def __init__(self) -> None:
        self.time: list[int] = []
        self.start: list[int] = []
        self.end: list[int] = []
        self.accesses: list[int] = []
        self.target: list[int] = []
        self.targets: dict[str, int] = {}

    def add(self, time: int, start: int, end: int, accesses: int, target: str) -> None:
        if end <= start or accesses < 0 or accesses > 0xFFFFFFFF or time < 0:
            raise ValueError(f"expected start < end and 0 <= nr_accesses < 2^32; found "
                             f"start {start}, end {end}, nr_accesses {accesses}")
        self.time.append(time)
        self.start.append(start)
        self.end.append(end)
        self.accesses.append(accesses)
        self.target.append(self.targets.setdefault(target, len(self.targets)))

    def columns(self) -> Columns:
        """One record per region piece of at most :data:`PIECE` bytes, in time order."""
        start = np.asarray(self.start, np.uint64)
        length = np.asarray(self.end, np.uint64) - start
        pieces = ((length + np.uint64(PIECE - 1)) // np.uint64(PIECE)).astype(np.int64)
        first = np.repeat(np.cumsum(pieces) - pieces, pieces)
        offset = (np.arange(len(first)) - first).astype(np.uint64) * np.uint64(PIECE)
        rest = np.repeat(length, pieces) - offset
        cols = {"time": np.repeat(np.asarray(self.time, np.uint64), pieces),
                "addr": np.repeat(start, pieces) + offset,
                "size": np.minimum(rest, np.uint64(PIECE)),
                "weight": np.repeat(np.asarray(self.accesses, np.uint32), pieces),
                "region": np.repeat(np.asarray(self.target, np.uint16), pieces)}
        order = np.argsort(cols["time"], kind="stable")
        cols = {k: v[order] for k, v in cols.items()}
        cols["op"] = np.full(len(order), READ, np.uint8)
        return cols


def read(path: Path, options: Mapping[str, Any], report: ImportReport,
         skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    with open_input(path) as stream:
        try:
            data = stream.read()
        except STREAM_ERRORS as exc:
            raise InputError(f"compressed data damaged ({exc})", location=str(path)) from None
    if data[:1] == b"\x78":  # zlib header: damo's json_compressed
        try:
            data = zlib.decompress(data)
        except zlib.error as exc:
            raise InputError(f"not readable as damo json_compressed ({exc})",
                             location=str(path)) from None
    regions = _Regions()
    text = data.decode("utf-8", "replace")
    if text.lstrip()[:1] in ("[", "{"):
        _from_json(text, path, regions, report, skip_bad)
    else:
        _from_perf_script(text, path, regions, report, skip_bad)
    if len(regions.targets) > 0x10000:
        raise InputError("more than 65536 DAMON targets; region tags are 16-bit",
                         location=str(path))
    names = {tag: f"target {target}" for target, tag in regions.targets.items()}
    return (TraceMeta(clock="ns", regions=names, source=f"damon:{path.name}"),
            iter([regions.columns()]))


def _from_json(text: str, path: Path, regions: _Regions, report: ImportReport,
               skip_bad: bool) -> None:
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})",
                         location=Location(str(path), exc.lineno, exc.colno)) from None
    if not isinstance(records, list):
        raise InputError("expected a list of damo records [{target_id, snapshots}, ...]",
                         location=str(path))
    for r, record in enumerate(records):
        snapshots = record.get("snapshots") if isinstance(record, dict) else None
        if not isinstance(snapshots, list):
            raise InputError(f"[{r}]: expected a record with a 'snapshots' list",
                             location=str(path))
        target = str(record.get("target_id"))
        for s, snapshot in enumerate(snapshots):
            key = f"[{r}].snapshots[{s}]"
            if not isinstance(snapshot, dict) or not isinstance(snapshot.get("regions"), list):
                raise InputError(f"{key}: expected a snapshot with 'end_time' and a 'regions' "
                                 "list", location=str(path))
            try:
                end_time = _whole(snapshot.get("end_time"), "end_time")
            except ValueError as exc:
                raise InputError(f"{key}: {exc}", location=str(path)) from None
            for g, region in enumerate(snapshot["regions"]):
                report.lines += 1
                try:
                    if not isinstance(region, dict):
                        raise ValueError("expected {start, end, nr_accesses}")
                    regions.add(end_time, _whole(region.get("start"), "start"),
                                _whole(region.get("end"), "end"),
                                _accesses(region.get("nr_accesses")), target)
                except ValueError as exc:
                    _bad(f"{path}: {key}.regions[{g}]: {exc}", report, skip_bad)


def _from_perf_script(text: str, path: Path, regions: _Regions, report: ImportReport,
                      skip_bad: bool) -> None:
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or (
                "damon:" in stripped and "damon:damon_aggregated:" not in stripped):
            continue  # blank, comment, or another DAMON event (e.g. damos_before_apply)
        report.lines += 1
        match = _AGGREGATED.fullmatch(stripped)
        try:
            if match is None:
                raise ValueError
            regions.add(int(Decimal(match["secs"]) * 10**9), int(match["start"]),
                        int(match["end"]), int(match["acc"]), match["target"])
        except ValueError:
            shown = stripped if len(stripped) <= 80 else stripped[:77] + "..."
            _bad(f"{Location(str(path), number)}: expected {_PERF_EXPECTED}; found {shown!r}",
                 report, skip_bad)


def _bad(message: str, report: ImportReport, skip_bad: bool) -> None:
    if report.first_bad is None:
        report.first_bad = message
    if not skip_bad:
        raise InputError(message)
    report.skipped += 1


def _whole(value: Any, name: str) -> int:
    """A whole number written as a number or a string (damo writes both)."""
    if not isinstance(value, bool):
        try:
            number = Decimal(str(value).replace(",", ""))
            if number == number.to_integral_value():
                return int(number)
        except InvalidOperation:
            pass
    raise ValueError(f"{name}: expected a whole number; found {value!r}")


def _accesses(value: Any) -> int:
    """nr_accesses: a number, or damo's ``{"samples": N, "percent": P}``."""
    if isinstance(value, dict):
        value = value.get("samples")
    return _whole(value, "nr_accesses")


FORMAT = Format("damon", "damo record files (json, json_compressed, perf_script)", read,
                fields=FIELDS)
