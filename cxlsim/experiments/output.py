"""Write a run folder: resolved config, metrics, Parquet tables and, when asked, an HTML
report (``report.html``: the figures with plotly.js inside, about 5 MB, so not by default).

Everything is written to a temporary folder beside the target and renamed into place
at the end, so an interrupted or failed run never leaves a half-written folder.

A run folder carries the marker file :data:`MARKER`. cxlsim replaces a folder only if
it carries that marker (a previous run), or is empty; anything else the user has there
is refused before the run starts, never deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from cxlsim.config import dump_yaml
from cxlsim.errors import InputError
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.report import report_html

MARKER = ".cxlsim-run"
_MARKER_TEXT = "A run folder written by cxlsim; a later run may replace it.\n"


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` is a folder cxlsim wrote (it holds the marker file)."""
    return (path / MARKER).is_file()


def check_out(out: str | Path, key: str = "--out") -> Path:
    """Refuse, before anything runs, an ``out`` that a run could not or must not replace.

    Allowed: a new path under a writable folder, an empty folder, or a previous run
    folder. Refused: the current folder or one above it, a file, a folder of the user's,
    a path under a file or in a folder we cannot write.
    """
    out = Path(out)
    where = out.absolute()
    if where == Path.cwd() or where in Path.cwd().parents or out.name in ("", ".", ".."):
        raise InputError(f"{str(out)!r} is the current folder or above it; a run folder "
                         "must be a new or previous run folder, e.g. runs/NAME", key=key)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise InputError(f"{str(out)!r} exists and is not a folder; cxlsim will not "
                         "replace it", key=key)
    if out.is_dir() and any(out.iterdir()) and not is_run_folder(out):
        raise InputError(f"{str(out)!r} is a folder cxlsim did not write (no {MARKER} "
                         "marker); choose a new --out, cxlsim will not replace it", key=key)
    parent = where.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"cannot make {str(out)!r}: {str(parent)!r} is a file", key=key)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot make {str(out)!r}: no permission to write in "
                         f"{str(parent)!r}", key=key)
    return out


def next_free(base: Path) -> Path:
    """``base``, or ``base-2``, ``base-3``, ... : the first that does not exist yet."""
    out, n = base, 1
    while out.exists() or out.is_symlink():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def write_run_folder(result: RunResult, out: str | Path, report: bool = False) -> Path:
    """Write ``result`` to folder ``out`` (with ``report``: its ``report.html`` too),
    replacing a previous run there; return it."""
    out = check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        # mkdtemp makes the folder 0700; give the run folder the mode mkdir would
        # (keeping a set-group-ID bit inherited from the parent folder).
        tmp.chmod((tmp.stat().st_mode & stat.S_ISGID) | (0o777 & ~_umask()))
        (tmp / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
        (tmp / "config.resolved.yaml").write_text(dump_yaml(result.config), encoding="utf-8")
        payload = result.to_json_dict()
        (tmp / "metrics.json").write_text(
            json.dumps({"experiment": payload["experiment"], "metrics": payload["metrics"]},
                       indent=2), encoding="utf-8")
        for name, table in result.tables.items():
            table.to_parquet(tmp / f"{name}.parquet", index=False)
        if report:
            (tmp / "report.html").write_text(report_html(result), encoding="utf-8")
        if out.exists():  # check_out vouched: a previous run folder, or empty
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(old / out.name)
            shutil.rmtree(old)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no other way to read it; restore it at once
    os.umask(mask)
    return mask
