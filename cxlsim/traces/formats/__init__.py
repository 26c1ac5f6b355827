"""Foreign trace formats: import any of them into the native format, export to those
that can hold a trace. One module per tool; :data:`FORMATS` lists them by name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cxlsim.errors import InputError
from cxlsim.traces.formats import champsim, csv, damon, lackey, perf, pin, ramulator
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import TraceWriter, open_trace
from cxlsim.traces.params import parse_params

FORMATS: dict[str, Format] = {f.name: f for f in (
    csv.FORMAT, lackey.FORMAT, pin.FORMAT, ramulator.FORMAT, ramulator.CPU_FORMAT,
    champsim.FORMAT, perf.MEM_FORMAT, perf.SCRIPT_FORMAT, damon.FORMAT)}

__all__ = ["FORMATS", "Format", "ImportReport", "described", "import_trace", "export_trace"]


def described() -> dict[str, str]:
    """Every format, native first, with a line on it: what it is, and whether cxlsim
    reads it or reads and writes it (``cxlsim trace list``, ``cxlsim list formats``)."""
    return {"native": "cxlsim's own (Arrow IPC file); read and written",
            **{name: f"{fmt.doc}; {'read and written' if fmt.write else 'read'}"
               for name, fmt in FORMATS.items()}}


def _format(name: str, flag: str) -> Format:
    if name not in FORMATS:
        raise InputError(f"unknown format {name!r}; expected one of {', '.join(FORMATS)}",
                         location=flag)
    return FORMATS[name]


def import_trace(src: str | Path, out: str | Path, fmt: str, options: Sequence[str] = (),
                 skip_bad: bool = False) -> ImportReport:
    """Convert ``src`` in format ``fmt`` to a native trace at ``out``. Bad lines or
    records raise :class:`InputError`, or with ``skip_bad`` are counted in the report."""
    spec = _format(fmt, "--from")
    values = parse_params(spec.options, options, flag="--option", owner=f"format {fmt}")
    report = ImportReport()
    meta, chunks = spec.read(Path(src), values, report, skip_bad)
    with TraceWriter(out, meta) as writer:
        for chunk in chunks:
            writer.write(chunk)
    report.records = writer.records
    return report


def export_trace(src: str | Path, out: str | Path, fmt: str,
                 options: Sequence[str] = ()) -> None:
    """Write the native trace ``src`` to ``out`` in format ``fmt`` (keeping the fields
    that format holds)."""
    spec = _format(fmt, "--to")
    if spec.write is None:
        writable = ", ".join(name for name, f in FORMATS.items() if f.write)
        raise InputError(f"cxlsim reads {fmt} but does not write it; it writes native, "
                         f"{writable}", location="--to")
    values = parse_params(spec.options, options, flag="--option", owner=f"format {fmt}")
    spec.write(open_trace(src), Path(out), values)
