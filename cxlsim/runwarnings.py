"""Run warnings (:class:`~cxlsim.errors.RunWarning`) shown once each, on one line.

A study repeats its runs (a sweep's points, the validation's checks), and the same
warning from each would fill the screen and cut through the progress bar. Within
:func:`once_each` the warnings are counted instead -- in this process, or in a worker
that runs its task through :func:`counted` and hands the count back with the result --
and each distinct one is shown at the end, once, with the experiments it came from and
how often. Importing cxlsim makes Python show a RunWarning as the one line
``cxlsim: warning: ...`` wherever it shows warnings (the command line, a notebook),
without the file and source line it gives other warnings.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from cxlsim.errors import RunWarning

T = TypeVar("T")


class Tally:
    """Run warnings counted: per message, how often each subject raised it."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}

    def add(self, warning: RunWarning) -> None:
        """Count ``warning`` (``times`` times, under each subject it names)."""
        subjects = self.counts.setdefault(warning.message, {})
        subjects[warning.subject] = subjects.get(warning.subject, 0) + warning.times

    def merge(self, other: Tally) -> None:
        """Add every count of ``other`` (a worker's, an inner region's)."""
        for message, subjects in other.counts.items():
            for subject, times in subjects.items():
                self.add(RunWarning(message, subject, times))

    def summary(self) -> list[RunWarning]:
        """One warning per message: its subjects joined, its count summed."""
        return [RunWarning(message, ", ".join(filter(None, subjects)), sum(subjects.values()))
                for message, subjects in self.counts.items()]


#: The tallies of the regions open in this process, innermost last.
_open: list[Tally] = []


@contextmanager
def _counting(tally: Tally) -> Iterator[Tally]:
    """Run warnings raised within are counted in ``tally``, not shown (every one: Python's
    once-per-place filter does not apply); other warnings are shown as usual.

    Only the main thread counts: Python's warning settings are the whole process's, and
    threads changing them at once could leave them changed. A task on a thread (a thread
    pool, a Dask worker in this process) counts nothing itself: its warnings reach the
    region the main thread has open, if any."""
    if threading.current_thread() is not threading.main_thread():
        yield tally
        return
    with warnings.catch_warnings():
        warnings.simplefilter("always", RunWarning)
        show = warnings.showwarning

        def count(message, category, filename, lineno, file=None, line=None):
            if isinstance(message, RunWarning):
                tally.add(message)
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = count
        _open.append(tally)
        try:
            yield tally
        finally:
            _open.pop()


@contextmanager
def once_each() -> Iterator[Tally]:
    """Count the run warnings raised within; at the end, error or not, show each distinct
    one once, with its count (or, inside another region, leave them to that one)."""
    outer = _open[-1] if _open and threading.current_thread() is threading.main_thread() \
        else None
    tally = Tally()
    try:
        with _counting(tally):
            yield tally
    finally:
        if outer is not None:
            outer.merge(tally)
        else:
            for warning in tally.summary():
                warnings.warn(warning, stacklevel=3)


def counted(task: Callable[..., T], *args: Any) -> tuple[T, Tally]:
    """A worker's side: ``task(*args)`` and the run warnings it raised, counted, for the
    parent's :func:`once_each` to add (:meth:`Tally.merge`)."""
    with _counting(Tally()) as tally:
        return task(*args), tally


def one_line(format_other: Callable[..., str]) -> Callable[..., str]:
    """A :func:`warnings.formatwarning` that shows a run warning as ``cxlsim: warning:
    ...`` and leaves any other to ``format_other``."""
    def formatwarning(message, category, filename, lineno, line=None):
        if issubclass(category, RunWarning):
            return f"cxlsim: warning: {message}\n"
        return format_other(message, category, filename, lineno, line)

    formatwarning.one_line = True
    return formatwarning


def install() -> None:
    """Make Python format run warnings with :func:`one_line` (once per process)."""
    if not getattr(warnings.formatwarning, "one_line", False):
        warnings.formatwarning = one_line(warnings.formatwarning)
