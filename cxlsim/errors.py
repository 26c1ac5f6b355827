"""The one exception type for mistakes in what a user hands us.

Every file, preset, experiment, trace and command-line value that fails validation
raises :class:`InputError`. The CLI prints its one-line message and exits with
status 2; nothing else in cxlsim should print a traceback for bad input.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any


class RunWarning(UserWarning):
    """A run that finished without doing what its file set out to study (a policy that
    never acted), about ``subject`` (the experiment), raised ``times`` times (a study's
    runs count theirs, :mod:`cxlsim.runwarnings`); shown as one line,
    ``cxlsim: warning: SUBJECT: MESSAGE (N times)``."""

    def __init__(self, message: str, subject: str = "", times: int = 1) -> None:
        super().__init__(message, subject, times)

    @property
    def message(self) -> str:
        return self.args[0]

    @property
    def subject(self) -> str:
        return self.args[1]

    @property
    def times(self) -> int:
        return self.args[2]

    def __str__(self) -> str:
        text = f"{self.subject}: {self.message}" if self.subject else self.message
        return text if self.times == 1 else f"{text} ({self.times} times)"


@dataclass(frozen=True)
class Location:
    """Where a value came from: a file (or ``--set``), and a line/column if known."""

    source: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.source
        if self.column is None:
            return f"{self.source}:{self.line}"
        return f"{self.source}:{self.line}:{self.column}"


class InputError(Exception):
    """A user mistake, with where it is and what was expected.

    ``str(err)`` is one line per problem: ``FILE:LINE:COL: key.path: message``, then
    ``  also: ...`` for each further problem found in the same file (``also``).
    """

    def __init__(self, message: str, *, location: Location | str | None = None,
                 key: str | None = None, also: tuple[InputError, ...] = ()) -> None:
        self.message = message
        self.location = Location(location) if isinstance(location, str) else location
        self.key = key
        self.also = tuple(also)
        super().__init__(str(self))

    def with_also(self, others: list[InputError]) -> InputError:
        """This problem with ``others`` listed after it."""
        return InputError(self.message, location=self.location, key=self.key,
                          also=self.also + tuple(others))

    def headline(self) -> str:
        """The first problem alone, on one line."""
        parts = []
        if self.location is not None:
            parts.append(str(self.location))
        if self.key:
            parts.append(self.key)
        parts.append(self.message)
        return ": ".join(parts)

    def __str__(self) -> str:
        return "\n".join([self.headline()] + [f"  also: {e.headline()}" for e in self.also])


def shown(value: Any) -> str:
    """A value found in a user's file as a message shows it: text quoted, ``true``,
    ``nothing (null)``, ``a list [...]``; long values cut to about 60 characters."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple, dict)):
        noun = "mapping" if isinstance(value, dict) else "list"
        return f"an empty {noun}" if not value else f"a {noun} {_cut(repr(value))}"
    return _cut(repr(value))


def did_you_mean(name: Any, allowed: Collection[str]) -> str:
    """``; did you mean 'x'?`` for the one of ``allowed`` closest to ``name``, if one is
    close (else nothing)."""
    close = difflib.get_close_matches(str(name), list(allowed), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(what: str, name: Any, known: Collection[str]) -> str:
    """The message for a ``what`` (a generator, a policy) called ``name`` that is none of
    ``known``: all of them, and the closest if one is close."""
    return (f"unknown {what} {shown(name)}; expected one of {', '.join(known)}"
            f"{did_you_mean(name, known)}")


def _cut(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
