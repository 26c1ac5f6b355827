"""Reading line-oriented text traces: blocks of whole lines through a compiled parser,
with line numbers for the messages about malformed lines."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from cxlsim.errors import InputError, Location
from cxlsim.traces.files import STREAM_ERRORS
from cxlsim.traces.formats._parsers import scan_block
from cxlsim.traces.formats.base import ImportReport
from cxlsim.traces.native import FIELDS, Columns

#: Bytes read at a time; a block holds only whole lines.
BLOCK_BYTES = 4 << 20
#: Longest line accepted, so that a file without line ends cannot exhaust memory.
MAX_LINE = 1 << 20


def blocks(stream: BinaryIO, path: Path, lines_before: int = 0) -> Iterator[tuple[bytes, int]]:
    """Yield (whole lines, number of lines before them) from ``stream``."""
    carry = b""
    while True:
        try:
            data = stream.read(BLOCK_BYTES)
        except STREAM_ERRORS as exc:
            raise InputError(f"compressed data damaged or cut short after line "
                             f"{lines_before:,} ({exc})", location=str(path)) from None
        if not data:
            if carry:
                yield carry, lines_before
            return
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) > MAX_LINE:
                raise InputError(f"line longer than {MAX_LINE:,} bytes; is this a text trace?",
                                 location=Location(str(path), lines_before + 1))
            carry = data
            continue
        carry = data[cut:]
        yield data[:cut], lines_before
        lines_before += data.count(b"\n", 0, cut)


def scan_text(stream: BinaryIO, path: Path, *, parser: int, columns: Sequence[str],
              expected: str | Callable[[str], str], report: ImportReport, skip_bad: bool, per_line: int = 1,
              params: Sequence[int] = (0,), lines_before: int = 0) -> Iterator[Columns]:
    """Parse ``stream`` block by block with parser number ``parser``; yield the
    ``columns`` it fills. A malformed line stops the import with a message naming
    ``path:line`` and the ``expected`` form (or what ``expected(line)`` says is wrong
    with it), or with ``skip_bad`` is counted and skipped."""
    state = np.zeros(1, np.int64)
    settings = np.asarray(params, np.int64)
    # An empty chunk first fixes the file's columns even if no line holds a record.
    yield {f.name: np.zeros(0, f.dtype) for f in FIELDS if f.name in columns}
    with stream:
        for block, before in blocks(stream, path, lines_before):
            buf = np.frombuffer(block, np.uint8)
            lines = block.count(b"\n") + (not block.endswith(b"\n"))
            outs = [np.empty(lines * per_line, f.dtype) for f in FIELDS]
            bad = np.empty(lines, np.int64)
            count, nbad = scan_block(buf, parser, tuple(outs), settings, state, bad, not skip_bad)
            if nbad:
                if report.first_bad is None:
                    report.first_bad = _bad_line(path, block, int(bad[0]), before, expected)
                if not skip_bad:
                    raise InputError(report.first_bad)
                report.skipped += int(nbad)
            report.lines += lines
            yield {f.name: out[:count] for f, out in zip(FIELDS, outs) if f.name in columns}


def _bad_line(path: Path, block: bytes, offset: int, before: int,
              expected: str | Callable[[str], str]) -> str:
    """``FILE:LINE: expected ...; found '...'`` for the line starting at ``offset``."""
    line = before + block.count(b"\n", 0, offset) + 1
    end = block.find(b"\n", offset)
    text = block[offset:end if end >= 0 else len(block)].rstrip(b"\r").decode("utf-8", "replace")
    shown = text if len(text) <= 80 else text[:77] + "..."
    what = expected if isinstance(expected, str) else expected(text)
    return f"{Location(str(path), line)}: expected {what}; found {shown!r}"
