"""Intel Pin's pinatrace example tool output (every memory operand).

    pin -t obj-intel64/pinatrace.so -- PROGRAM      # writes pinatrace.out

Lines ``IP: R ADDR`` and ``IP: W ADDR`` with ``0x`` hexadecimal instruction pointer and
address; the final ``#eof`` and other ``#`` lines are skipped. There is no clock or size:
``time`` is the access's position (clock ``sequence``) and ``size`` is 0 (unknown).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cxlsim.traces.files import open_input
from cxlsim.traces.formats._parsers import PIN
from cxlsim.traces.formats._text import scan_text
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import Columns, TraceMeta

EXPECTED = "a pinatrace line 'IP: R ADDR' or 'IP: W ADDR' (0x-hex IP and address)"
FIELDS = ("time", "addr", "op")


def read(path: Path, options: Mapping[str, Any], report: ImportReport,
         skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    chunks = scan_text(open_input(path), path, parser=PIN, columns=FIELDS, expected=EXPECTED,
                       report=report, skip_bad=skip_bad)
    return TraceMeta(clock="sequence", source=f"pin:{path.name}"), chunks


FORMAT = Format("pin", "Intel Pin pinatrace tool (pinatrace.out)", read, fields=FIELDS)
