"""Folders cxlsim makes outside a run folder (generated traces, a conversion's
intermediate file): made, checked for room and removed here, and only here.

Each is a ``cxlsim-*`` folder of the temporary folder (``TMPDIR``, else the system's)
holding a marker, :data:`MARKER`, that names its owner: the process's pid, its start
time (``/proc/PID/stat``; where there is no ``/proc``, none: the pid alone), the host and
the boot. The owner removes it when done with it, and at its exit -- a normal one, Ctrl-C
(SIGINT), or SIGTERM and SIGHUP, which the CLI turns into a clean exit
(:mod:`cxlsim.signals`). What a SIGKILL or a power cut leaves, the next cxlsim to start
removes (:func:`remove_stale`): a folder whose marker names a process that no longer
runs (or a pid now held by a process that started at another time). A folder without a
marker of ours, of another user, or whose owner runs or ran on another host, is never
touched. A process forked from the owner (a sweep's worker) reads the owner's folders
but never removes them; its own go when it ends.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.util import Finalize
from pathlib import Path

from cxlsim.errors import InputError
from cxlsim.units import format_size

#: Every folder made here is named so.
PREFIX = "cxlsim-"
#: The file in each folder that names its owner.
MARKER = ".cxlsim-owner"
#: A folder this large is announced on stderr before it is filled.
ANNOUNCED = 1 << 30

_PROC = Path("/proc")
_BOOT_ID = _PROC / "sys/kernel/random/boot_id"

_folders: dict[Path, int] = {}  # folders made here -> pid of the process that made them
_hooked_pid: int | None = None  # the process whose exit removes its folders


def make(prefix: str) -> Path:
    """A new folder ``PREFIX...`` in the temporary folder, owned by this process."""
    global _hooked_pid
    assert prefix.startswith(PREFIX), prefix
    pid = os.getpid()
    if _hooked_pid != pid:  # the first folder of this process (or of a fork of it)
        remove_stale()
        # at exit, in the main process and in multiprocessing's workers alike (atexit
        # does not run in those)
        Finalize(None, remove_own, exitpriority=0)
        _hooked_pid = pid
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    _folders[folder] = pid
    staged = folder / f"{MARKER}.tmp"  # whole or absent: a half-written marker is foreign
    staged.write_text(json.dumps({"owner": "cxlsim", **_identity(pid)}), encoding="utf-8")
    staged.replace(folder / MARKER)
    return folder


def remove(folder: Path) -> None:
    """Remove a folder :func:`make` made in this process."""
    if _folders.get(folder) == os.getpid():
        del _folders[folder]
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def temporary(prefix: str) -> Iterator[Path]:
    """A folder of :func:`make`, removed when the block ends."""
    folder = make(prefix)
    try:
        yield folder
    finally:
        remove(folder)


def remove_own() -> None:
    """Remove every folder this process made (not those of the process it was forked
    from): at exit, and before a worker whose parent is gone ends abruptly."""
    for folder, pid in list(_folders.items()):
        if pid == os.getpid():
            remove(folder)


def remove_stale() -> None:
    """Remove the folders of the temporary folder whose marker names a process of this
    host that no longer runs."""
    try:
        entries = [e for e in os.scandir(tempfile.gettempdir()) if e.name.startswith(PREFIX)]
    except OSError:
        return
    here = _identity(os.getpid())
    for entry in entries:
        owner = _owner(entry)
        if owner is not None and owner["host"] == here["host"] and not _runs(owner, here):
            shutil.rmtree(entry.path, ignore_errors=True)


def check_room(folder: Path, needed: int, what: str) -> None:
    """Before ``what`` writes ``needed`` bytes in ``folder`` (in one of :func:`make`):
    say so on stderr when it is large, refuse when its file system has not that room."""
    free = shutil.disk_usage(folder).free
    where = f"{tempfile.gettempdir()} (the temporary folder: TMPDIR)"
    if needed > free:
        raise InputError(f"{what} needs {format_size(needed, 3)} in {where}, which has "
                         f"{format_size(free, 3)} free: point TMPDIR at a folder with room "
                         f"or free some")
    if needed > ANNOUNCED:
        from tqdm.auto import tqdm  # a line that leaves a progress bar whole

        tqdm.write(f"{what}: {format_size(needed, 3)} in {where}", file=sys.stderr)


def _identity(pid: int) -> dict[str, object]:
    """What names process ``pid`` of this host and boot over time (pids are reused)."""
    return {"pid": pid, "start": _started(pid), "host": socket.gethostname(),
            "boot": _read(_BOOT_ID)}


def _started(pid: int) -> int | None:
    """Process ``pid``'s start time (clock ticks after boot), None where unknown."""
    stat = _read(_PROC / str(pid) / "stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command, which may hold spaces
    return int(fields[19])  # field 22 of proc(5), the 20th after the command


def _runs(owner: dict, here: dict) -> bool:
    """Whether the process ``owner`` names (of this host) still runs."""
    if owner["boot"] is not None and here["boot"] is not None and owner["boot"] != here["boot"]:
        return False  # the machine restarted since
    pid = owner["pid"]
    if os.name != "posix":  # os.kill would end the process: it cannot be asked
        return True
    if _PROC.joinpath("self").is_dir():
        stat = _read(_PROC / str(pid) / "stat")
        if stat is None or stat.rpartition(")")[2].split()[0] in ("Z", "X"):
            return False  # gone, or ended and not yet reaped
        return owner["start"] is None or _started(pid) == owner["start"]
    try:
        os.kill(pid, 0)  # signal 0: no signal, only the check that the pid exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process holds the pid: ours cannot be told
        pass                 # from a reuse without a start time; keep the folder
    return True


def _owner(entry: os.DirEntry) -> dict | None:
    """The owner a ``cxlsim-*`` entry's marker names, if it is a folder of this user
    with a marker of ours; None for anything else."""
    try:
        mine = not hasattr(os, "getuid") or \
            entry.stat(follow_symlinks=False).st_uid == os.getuid()
        if not (mine and entry.is_dir(follow_symlinks=False)):
            return None
        owner = json.loads(Path(entry.path, MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = (isinstance(owner, dict) and owner.get("owner") == "cxlsim"
          and type(owner.get("pid")) is int and owner["pid"] > 0
          and (owner.get("start") is None or type(owner["start"]) is int)
          and isinstance(owner.get("host"), str)
          and (owner.get("boot") is None or isinstance(owner["boot"], str)))
    return owner if ok else None


def _read(path: Path) -> str | None:
    """The text of a small system file, None if it cannot be read."""
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
