"""Opening trace inputs (plain or compressed) and writing outputs all-or-nothing."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from cxlsim.errors import InputError

# Leading bytes of the compressed formats the standard library reads.
_MAGIC = ((b"\x1f\x8b", gzip.open), (b"\xfd7zXZ\x00", lzma.open), (b"BZh", bz2.open))

#: Errors a damaged compressed stream raises while it is being read.
STREAM_ERRORS = (EOFError, OSError, lzma.LZMAError)


def open_input(path: str | Path) -> BinaryIO:
    """Open ``path`` for binary reading, decompressing gzip, xz or bzip2 transparently
    (tools' traces are often shipped compressed, e.g. ChampSim's ``.xz``)."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror}", location=str(path)) from None
    head = raw.read(6)
    raw.seek(0)
    for magic, opener in _MAGIC:
        if head.startswith(magic):
            return opener(raw, "rb")
    return raw


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` when the block
    succeeds, delete it when the block fails, so no half-written file is ever left."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder; expected a file name to write", location=str(path))
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError("cannot write: the folder does not exist", location=str(path))
    while True:  # a fresh name, created with the mode open() would give (umask applies)
        tmp = parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", location=str(path)) from None
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
