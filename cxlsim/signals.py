"""SIGTERM and SIGHUP as a clean exit, as Ctrl-C already is.

By default either ends Python at once: no ``finally`` block, no exit handler runs, and
what the process made in the temporary folder stays (:mod:`cxlsim.scratch`). ``timeout``,
``kill`` and a batch scheduler's time limit send SIGTERM; a closed terminal or ssh
session SIGHUP. Under :func:`stop_cleanly` either raises :class:`Stopped` in the main
thread instead, which unwinds like ``sys.exit`` (status 128 + the signal's number, as a
shell reports a process the signal ended). The first one is also sent on to the
process's multiprocessing children (a sweep's workers), so that a signal sent to the
parent alone does not leave it waiting for points that run on; later ones are ignored,
so that a worker that got the signal twice (from a ``timeout`` that signals the whole
process group, and from its parent) is not stopped again while it cleans up, and
:func:`check` raises it again where a stopped worker would start more work.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The signals turned into :class:`Stopped` (those that exist here: not SIGHUP on Windows).
SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                if hasattr(signal, name))


class Stopped(SystemExit):
    """The process was asked to stop by signal ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    def __reduce__(self) -> tuple:  # a worker's sends it back to its parent
        return Stopped, (self.signum,)

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


_stopped_by: int | None = None  # the signal that stopped this process


def check() -> None:
    """Raise :class:`Stopped` if a signal stopped this process (a worker that the pool
    would hand the next task after its stopped one)."""
    if _stopped_by is not None:
        raise Stopped(_stopped_by)


def _stop(signum: int, frame: object) -> None:
    global _stopped_by
    _stopped_by = signum
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    for child in multiprocessing.active_children():
        try:
            os.kill(child.pid, signum)
        except OSError:  # it ended meanwhile
            pass
    raise Stopped(signum)


@contextmanager
def stop_cleanly() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Stopped` (in the main thread;
    elsewhere signals cannot be handled and nothing changes; one ignored, as under
    ``nohup``, stays ignored); then the handlers before, unless one came: then they stay
    ignored while the process exits and cleans up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, _stop) for s in SIGNALS  # not those ignored (nohup)
              if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, handler in before.items():
            if signal.getsignal(s) is _stop:
                signal.signal(s, signal.SIG_DFL if handler is None else handler)
