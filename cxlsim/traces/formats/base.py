"""What every foreign trace format provides, and what an import reports."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cxlsim.traces.native import Columns, Trace, TraceMeta
from cxlsim.traces.params import Param


@dataclass
class ImportReport:
    """Counts of an import: records written, lines (or records) read, bad ones skipped,
    and the message of the first bad one."""

    records: int = 0
    lines: int = 0
    skipped: int = 0
    first_bad: str | None = None


#: ``read(path, options, report, skip_bad) -> (metadata, chunks)``.
Reader = Callable[[Path, Mapping[str, Any], ImportReport, bool],
                  tuple[TraceMeta, Iterator[Columns]]]
#: ``write(trace, out, options)``: write an open native trace in the format to ``out``.
Writer = Callable[[Trace, Path, Mapping[str, Any]], None]


@dataclass(frozen=True)
class Format:
    """A foreign trace format: how to read it and, if it can hold a trace, write it."""

    name: str
    doc: str                    # the tool and command that produce it
    read: Reader
    fields: tuple[str, ...]     # native columns its files carry
    options: Mapping[str, Param] = field(default_factory=dict)
    write: Writer | None = None
