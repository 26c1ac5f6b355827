"""The older run folders of an experiment, which ``cxlsim clean`` removes.

A run without ``--out`` never replaces an earlier one: it writes ``runs/NAME``, then
``runs/NAME-2``, ``runs/NAME-3``, ... (a quick form ``runs/NAME-quick``, ``-quick-2``,
...): a series per experiment and form. :func:`old_runs` picks, per series, all but the
newest ``keep`` of its folders; a folder named by ``--out`` is a series of its own. Only
folders cxlsim wrote count (they hold the marker file
:data:`~cxlsim.experiments.output.MARKER`; a symbolic link never does): anything else
in the folder is left alone, whatever its name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cxlsim.errors import InputError, did_you_mean
from cxlsim.experiments.output import MARKER, is_run_folder


@dataclass(frozen=True)
class RunFolder:
    """A run folder: where, its series (:func:`series`), when it was written (a
    timestamp)."""

    path: Path
    series: str
    written: float

    def size(self) -> int:
        """Bytes of the files in it (links not followed)."""
        return sum(os.lstat(os.path.join(folder, name)).st_size
                   for folder, _, names in os.walk(self.path) for name in names)


def run_folders(root: Path) -> list[RunFolder]:
    """The run folders right inside ``root``, oldest first."""
    if not root.is_dir():
        raise InputError(f"no folder {str(root)!r}; cxlsim run writes its run folders in "
                         "runs/ under the current folder", key="--runs")
    found = [RunFolder(path, series(path), (path / MARKER).stat().st_mtime)
             for path in root.iterdir()
             if not path.name.startswith(".") and not path.is_symlink() and is_run_folder(path)]
    return sorted(found, key=lambda f: (f.written, f.path.name))


def old_runs(root: Path, names: Sequence[str] = (), keep: int = 1
             ) -> tuple[list[RunFolder], list[RunFolder]]:
    """``(old, kept)``: per series named (default: every one in ``root``), its run
    folders but the newest ``keep``, and those kept. A name with no run folder in
    ``root`` is an :class:`InputError` listing the names there."""
    if keep < 0:
        raise InputError(f"expected --keep of 0 or more; found {keep}", key="--keep")
    by_name: dict[str, list[RunFolder]] = {}
    for folder in run_folders(root):
        by_name.setdefault(folder.series, []).append(folder)
    for name in names:
        if name not in by_name:
            there = ", ".join(sorted(by_name)) or "none"
            raise InputError(f"no run folder of {name!r} in {str(root)!r}; the runs there: "
                             f"{there}{did_you_mean(name, by_name)}", key="NAME")
    old: list[RunFolder] = []
    kept: list[RunFolder] = []
    for name in names or by_name:
        runs = by_name[name]
        cut = len(runs) - keep
        old += runs[:max(cut, 0)]
        kept += runs[max(cut, 0):]
    return old, kept


def remove(folder: RunFolder) -> None:
    """Delete ``folder`` if it is still a run folder cxlsim wrote."""
    if folder.path.is_symlink() or not is_run_folder(folder.path):
        raise InputError(f"{str(folder.path)!r} is no longer a run folder cxlsim wrote; "
                         "left alone", key="NAME")
    shutil.rmtree(folder.path)


def series(path: Path) -> str:
    """The series of run folder ``path``: its experiment's name (metrics.json says which)
    for ``runs/NAME`` and ``runs/NAME-N``, ``NAME-quick`` for its quick form's folders;
    the folder's own name for one named otherwise (by ``--out``)."""
    try:
        experiment = str(json.loads((path / "metrics.json").read_text(encoding="utf-8"))
                         ["experiment"])
    except (OSError, ValueError, KeyError, TypeError):
        return path.name
    default = re.fullmatch(rf"({re.escape(experiment)}(?:-quick)?)(?:-\d+)?", path.name)
    return default[1] if default else path.name
