"""CSV: one access per line under a header line naming the columns.

    # clock: ns
    # region 1: heap
    time,addr,op,size,thread,page_type,region,weight
    0,0x7f0000001000,R,64,0,anon,1,1

The columns are the native ones (any order, any subset holding ``addr`` and ``op``);
numbers are decimal or ``0x`` hexadecimal, ``op`` is R or W, ``page_type`` anon or file.
Comment lines before the header may give the ``clock`` and region tag names; without a
``time`` column the clock is ``sequence``. It holds every native field, so
native -> CSV -> native is lossless.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from cxlsim.errors import InputError, Location, did_you_mean
from cxlsim.traces.files import atomic_output, open_input
from cxlsim.traces.formats._parsers import CSV
from cxlsim.traces.formats._text import scan_text
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import (CLOCKS, FIELD, FIELDS, PAGE_TYPES, Columns, Trace,
                                  TraceMeta)
from cxlsim.traces.params import Param, choice

CSV_FIELDS = tuple(f.name for f in FIELDS)

OPTIONS = {"clock": Param("ns", choice(*CLOCKS), "clock of the time column when the file "
                                                 "has no '# clock:' line")}


def read(path: Path, options: Mapping[str, Any], report: ImportReport,
         skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    stream = open_input(path)
    clock, regions, header, lines = _preamble(stream, path)
    columns = _columns(header, path, lines)
    clock = clock or options["clock"]
    meta = TraceMeta(clock=clock if "time" in columns else "sequence", regions=regions,
                     source=f"csv:{path.name}")
    codes = [len(columns)] + [CSV_FIELDS.index(c) for c in columns]
    chunks = scan_text(stream, path, parser=CSV, columns=("time", *columns),
                       expected=lambda line: _what_is_wrong(line, columns),
                       report=report, skip_bad=skip_bad, params=codes, lines_before=lines)
    return meta, chunks


_VALUES = {"op": ("R", "W"), "page_type": PAGE_TYPES}


def _what_is_wrong(line: str, columns: list[str]) -> str:
    """What a bad line lacks, for the message: the value count or the first bad value."""
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(columns):
        return (f"{len(columns)} comma-separated values ({','.join(columns)}), "
                f"not {len(values)}")
    for name, value in zip(columns, values):
        allowed = _VALUES.get(name)
        if allowed is not None and value not in allowed:
            return f"{name} to be {' or '.join(allowed)} (it is {value!r})"
        if allowed is None and not _is_number(value, FIELD[name].dtype):
            return (f"{name} to be a whole number from 0 to "
                    f"{np.iinfo(FIELD[name].dtype).max:,}, decimal or 0x-hex (it is {value!r})")
    return (f"{len(columns)} comma-separated values {','.join(columns)} (numbers decimal "
            "or 0x-hex, op R or W, page_type anon or file)")


def _is_number(text: str, dtype: np.dtype) -> bool:
    hex_ = text[:2].lower() == "0x"
    digits = text[2:] if hex_ else text
    if not (digits.isascii() and digits.isalnum()):  # int() would take "+1", "1_0", " 1"
        return False
    try:
        value = int(digits, 16 if hex_ else 10)
    except ValueError:
        return False
    return value <= np.iinfo(dtype).max


def _preamble(stream: BinaryIO, path: Path) -> tuple[str | None, dict[int, str], str, int]:
    """Read comments and the header: (clock, region names, header, lines read)."""
    clock: str | None = None
    regions: dict[int, str] = {}
    number = 0
    for raw in iter(stream.readline, b""):
        number += 1
        line = raw.decode("utf-8", "replace").strip()
        where = Location(str(path), number)
        if not line:
            continue
        if not line.startswith("#"):
            return clock, regions, line, number
        key, sep, value = line.lstrip("#").partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            continue
        if key == "clock":
            if value not in CLOCKS:
                raise InputError(f"clock {value!r}: expected one of {', '.join(CLOCKS)}",
                                 location=where)
            clock = value
        elif key.startswith("region "):
            tag = key.removeprefix("region ").strip()
            if not tag.isdigit() or int(tag) > 0xFFFF:
                raise InputError(f"expected '# region N: name' with N from 0 to 65535; "
                                 f"found {line!r}", location=where)
            regions[int(tag)] = value
    raise InputError("no header line; expected a line naming the columns, e.g. "
                     "'time,addr,op,size'", location=str(path))


def _columns(header: str, path: Path, line: int) -> list[str]:
    """The native field of each header column, checked."""
    where = Location(str(path), line)
    names = [n.strip() for n in header.split(",")]
    for name in names:
        if name not in CSV_FIELDS:
            raise InputError(f"unknown column {name!r} in the header"
                             f"{did_you_mean(name, CSV_FIELDS)}; columns are "
                             f"{', '.join(CSV_FIELDS)}", location=where)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"column {repeated[0]!r} appears twice in the header", location=where)
    missing = [n for n in ("addr", "op") if n not in names]
    if missing:
        raise InputError(f"the header lacks {' and '.join(missing)}; expected at least "
                         "'addr,op'", location=where)
    return names


def write(trace: Trace, out: Path, options: Mapping[str, Any]) -> None:
    names = [f.name for f in FIELDS if f.name in trace.fields]
    with atomic_output(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# clock: {trace.meta.clock}\n")
        for tag, name in sorted(trace.meta.regions.items()):
            f.write(f"# region {tag}: {name}\n")
        f.write(",".join(names) + "\n")
        for chunk in trace.chunks():
            cells = [_text(name, chunk[name]) for name in names]
            f.writelines(",".join(row) + "\n" for row in zip(*cells))


def _text(name: str, values: np.ndarray) -> list[str]:
    """The CSV cells of one column."""
    if name == "addr":
        return [f"0x{v:x}" for v in values.tolist()]
    if name == "op":
        return np.where(values == 1, "W", "R").tolist()
    if name == "page_type":
        return np.asarray(PAGE_TYPES)[values].tolist()
    return values.astype(str).tolist()


FORMAT = Format("csv", "comma-separated values with a header (any tool, spreadsheets)", read,
                fields=CSV_FIELDS, options=OPTIONS, write=write)
