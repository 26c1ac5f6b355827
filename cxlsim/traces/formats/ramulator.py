"""Ramulator's two trace modes.

Memory traces (``ramulator`` here), one request per line: ``0x12345680 R`` or
``0x4cbd56c0 W`` (Ramulator), also ``LD 0x12345680`` / ``ST 0x...`` (Ramulator 2);
no clock (``sequence``) and no size. cxlsim writes this format too (``--to ramulator``).

CPU traces (``ramulator-cpu``): ``<non-memory instructions> <read address>
[<write-back address>]``, decimal addresses (``0x`` hex also read). The read is the
instruction after the non-memory ones, so ``time`` counts instructions; a write-back
shares its read's time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cxlsim.traces.files import atomic_output, open_input
from cxlsim.traces.formats._parsers import RAMULATOR, RAMULATOR_CPU
from cxlsim.traces.formats._text import scan_text
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import Columns, Trace, TraceMeta

FIELDS = ("time", "addr", "op")
EXPECTED = "a Ramulator memory trace line 'ADDR R|W' or 'LD|ST ADDR' (hex address)"
EXPECTED_CPU = ("a Ramulator CPU trace line 'INSTRUCTIONS READ_ADDR [WRITEBACK_ADDR]' "
                "(decimal numbers)")


def read(path: Path, options: Mapping[str, Any], report: ImportReport,
         skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    chunks = scan_text(open_input(path), path, parser=RAMULATOR, columns=FIELDS,
                       expected=EXPECTED, report=report, skip_bad=skip_bad)
    return TraceMeta(clock="sequence", source=f"ramulator:{path.name}"), chunks


def read_cpu(path: Path, options: Mapping[str, Any], report: ImportReport,
             skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    chunks = scan_text(open_input(path), path, parser=RAMULATOR_CPU, columns=FIELDS,
                       expected=EXPECTED_CPU, report=report, skip_bad=skip_bad, per_line=2)
    return TraceMeta(clock="instructions", source=f"ramulator-cpu:{path.name}"), chunks


def write(trace: Trace, out: Path, options: Mapping[str, Any]) -> None:
    """One ``0xADDR R|W`` line per record (addresses and operations only)."""
    with atomic_output(out) as tmp, open(tmp, "w", encoding="ascii", newline="\n") as f:
        for chunk in trace.chunks(["addr", "op"]):
            f.writelines(f"0x{a:x} {'W' if o else 'R'}\n"
                         for a, o in zip(chunk["addr"].tolist(), chunk["op"].tolist()))


FORMAT = Format("ramulator", "Ramulator / Ramulator 2 memory traces", read,
                fields=("addr", "op"), write=write)
CPU_FORMAT = Format("ramulator-cpu", "Ramulator CPU traces (instructions, read, write-back)",
                    read_cpu, fields=FIELDS)
