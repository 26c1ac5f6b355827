"""Generated traces reused by the runs of one process.

Runs that generate the same trace -- the same generator, records, seed and parameters:
a policy comparison, validate's T6 families, a sweep's points in one worker -- read one
file and share its survey (the first pass) instead of generating and hashing it again.
The last :data:`CACHED_TRACES` traces are kept, as long as they hold at most
:data:`CACHED_RECORDS` records together (a policy study's 2.5·10^8-record trace, ~6.6 GB,
is generated once per process, not once per point), in a folder of the temporary folder
that this process made and removes when it exits (:mod:`cxlsim.scratch`, which also
removes what a killed process left). A worker forked from this process reads the
traces kept when it was forked (a sweep makes its shared trace before forking its
workers, :meth:`..spec.ExperimentSpec.prepare`) and never removes them; what it makes
itself goes in a folder of its own. A shared
survey's arrays are read-only, so a run that tried to change them would fail loudly
rather than change the next run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from cxlsim import scratch

#: Most records kept at once (25-28 B a record on disk, generators.trace_bytes: 13-15 GB).
CACHED_RECORDS = 1 << 29
#: Traces kept at once.
CACHED_TRACES = 4


class _Cache:
    """This process's folder and its traces, oldest first: key -> (path, [survey])."""

    def __init__(self, inherited: dict[Hashable, tuple[Path, list[Any]]] | None = None) -> None:
        self.pid = os.getpid()
        self.inherited = inherited or {}  # the parent's traces: read here, never removed
        self.folder: Path | None = None
        self.kept: OrderedDict[Hashable, tuple[Path, list[Any]]] = OrderedDict()
        self.made: dict[Hashable, Path] = {}  # the folder made for each kept trace
        self.records: dict[Hashable, int] = {}  # and its records

    def own_folder(self) -> Path:
        if self.folder is None:
            self.folder = scratch.make("cxlsim-traces-")
        return self.folder


_cache = _Cache()


def keeps(records: int) -> bool:
    """Whether a trace of ``records`` records is kept (else made anew by every run)."""
    return records <= CACHED_RECORDS


def generated(key: Hashable, records: int, make: Callable[[Path], Path],
              scratch: Callable[[], Path]) -> tuple[Path, list[Any]]:
    """The trace for ``key`` and a one-item list for its survey (None until made).

    A trace of at most :data:`CACHED_RECORDS` records is made once, by ``make(folder)``
    in a folder of this process's own, the oldest kept ones removed to make room; a
    larger one is made in ``scratch()`` (the caller's folder) every time, and nothing is
    kept.
    """
    global _cache
    if not keeps(records):
        return make(scratch()), [None]
    if _cache.pid != os.getpid():  # forked: the parent's files are read, not ours to remove
        _cache = _Cache({**_cache.inherited, **_cache.kept})
    if key in _cache.inherited:
        return _cache.inherited[key]
    if key in _cache.kept:
        _cache.kept.move_to_end(key)
        return _cache.kept[key]
    while _cache.kept and (len(_cache.kept) >= CACHED_TRACES
                           or sum(_cache.records.values()) + records > CACHED_RECORDS):
        old, _ = _cache.kept.popitem(last=False)
        del _cache.records[old]
        # the folder mkdtemp made below, whatever path ``make`` returned
        shutil.rmtree(_cache.made.pop(old), ignore_errors=True)
    folder = Path(tempfile.mkdtemp(dir=_cache.own_folder()))
    try:
        path = make(folder)
    except BaseException:  # refused, failed or stopped: nothing half made stays
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _cache.made[key] = folder
    _cache.records[key] = records
    _cache.kept[key] = (path, [None])
    return _cache.kept[key]
