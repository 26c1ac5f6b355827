"""Sampled loads and stores from ``perf mem`` (Intel PEBS, AMD IBS, Arm SPE).

A sample stands for the ``period`` accesses of its kind that went by since the previous
one, so each record carries its period in ``weight`` -- the scale factor from samples to
accesses.

``perf-mem``: the raw dump ``perf mem report -D [-x ,]``, one sample a line under the
header ``# PID, TID, IP, ADDR, [PHYS ADDR,] [DATA PAGE SIZE,] LOCAL WEIGHT, DSRC, SYMBOL``
(the header says where the columns are; without it the plain layout is assumed). The
load/store bit of DSRC gives the operation. The dump has neither time nor period: the
clock is ``sequence`` and the period is the ``period`` option (the ``-c`` given to
``perf mem record``).

``perf-script``: ``perf script -F comm,tid,cpu,time,period,event,addr`` lines
``COMM TID [CPU] SECONDS: [PERIOD] EVENT: ADDR``; the time stamp becomes nanoseconds,
``load`` or ``store`` in the event name (or later in the line, e.g. a data_src field)
the operation, and a line without a period takes the ``period`` option.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cxlsim.errors import InputError, Location
from cxlsim.traces.files import open_input
from cxlsim.traces.formats._parsers import PERF_MEM, PERF_SCRIPT
from cxlsim.traces.formats._text import scan_text
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import Columns, TraceMeta
from cxlsim.traces.params import Param, choice, integer

FIELDS = ("time", "addr", "op", "thread", "weight")
_PERIOD = Param("1", integer(1, 0xFFFFFFFF),
                "sample period (accesses per sample) when the input does not give it")
MEM_OPTIONS = {"period": _PERIOD,
               "addr": Param("virtual", choice("virtual", "physical"),
                             "which address to import (physical needs perf mem -p)")}
SCRIPT_OPTIONS = {"period": _PERIOD}

#: Columns of ``perf mem report -D`` when the file has no header line.
_PLAIN = ("PID", "TID", "IP", "ADDR", "LOCAL WEIGHT", "DSRC", "SYMBOL")


def read_mem(path: Path, options: Mapping[str, Any], report: ImportReport,
             skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    with open_input(path) as stream:
        first = stream.readline().decode("utf-8", "replace").strip()
    columns = _header(first) if first.startswith("#") and "ADDR" in first else _PLAIN
    addr = "PHYS ADDR" if options["addr"] == "physical" else "ADDR"
    missing = [c for c in ("TID", addr, "DSRC") if c not in columns]
    if missing:
        hint = " (physical addresses need perf mem -p)" if addr in missing else ""
        raise InputError(f"the header lacks column(s) {', '.join(missing)}{hint}; expected "
                         f"'# {', '.join(_PLAIN)}'", location=Location(str(path), 1))
    where = [columns.index(c) for c in ("TID", addr, "DSRC")]
    expected = (f"a perf mem -D sample '{' '.join(columns)}' whose DSRC marks a load "
                "or a store")
    chunks = scan_text(open_input(path), path, parser=PERF_MEM, columns=FIELDS,
                       expected=expected, report=report, skip_bad=skip_bad,
                       params=(*where, options["period"]))
    return TraceMeta(clock="sequence", source=f"perf-mem:{path.name}"), chunks


def _header(line: str) -> tuple[str, ...]:
    """Column names of the ``# PID, TID, ...`` header line."""
    return tuple(name.strip() for name in line.lstrip("#").split(",") if name.strip())


def read_script(path: Path, options: Mapping[str, Any], report: ImportReport,
                skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    expected = ("a perf script line 'COMM TID [CPU] SECONDS: [PERIOD] EVENT: ADDR' with "
                "'load' or 'store' in the event")
    chunks = scan_text(open_input(path), path, parser=PERF_SCRIPT, columns=FIELDS,
                       expected=expected, report=report, skip_bad=skip_bad,
                       params=(options["period"],))
    return TraceMeta(clock="ns", source=f"perf-script:{path.name}"), chunks


MEM_FORMAT = Format("perf-mem", "perf mem report -D (raw samples)", read_mem,
                    fields=FIELDS, options=MEM_OPTIONS)
SCRIPT_FORMAT = Format("perf-script", "perf script -F comm,tid,cpu,time,period,event,addr",
                       read_script, fields=FIELDS, options=SCRIPT_OPTIONS)
