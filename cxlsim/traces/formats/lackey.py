"""valgrind lackey ``--trace-mem=yes`` output (every instruction and data access).

    valgrind --tool=lackey --trace-mem=yes --log-file=trace.txt PROGRAM

Lines ``I  ADDR,SIZE`` (instruction fetch), `` L ADDR,SIZE`` (load), `` S ADDR,SIZE``
(store) and `` M ADDR,SIZE`` (modify: a load then a store); hexadecimal address, decimal
size. Instruction fetches are not data accesses: they are counted, and the clock of each
access is the number of the instruction that made it (clock ``instructions``). valgrind's
own ``==PID==`` lines are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cxlsim.traces.files import open_input
from cxlsim.traces.formats._parsers import LACKEY
from cxlsim.traces.formats._text import scan_text
from cxlsim.traces.formats.base import Format, ImportReport
from cxlsim.traces.native import Columns, TraceMeta

EXPECTED = "a lackey line 'I  ADDR,SIZE' or ' L|S|M ADDR,SIZE' (hex address, decimal size)"
FIELDS = ("time", "addr", "op", "size")


def read(path: Path, options: Mapping[str, Any], report: ImportReport,
         skip_bad: bool) -> tuple[TraceMeta, Iterator[Columns]]:
    chunks = scan_text(open_input(path), path, parser=LACKEY, columns=FIELDS,
                       expected=EXPECTED, report=report, skip_bad=skip_bad, per_line=2)
    return TraceMeta(clock="instructions", source=f"lackey:{path.name}"), chunks


FORMAT = Format("lackey", "valgrind --tool=lackey --trace-mem=yes", read, fields=FIELDS)
