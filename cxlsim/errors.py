"""The one exception type for mistakes in what a user hands us.

Every file, preset, experiment, trace and command-line value that fails validation
raises :class:`InputError`. The CLI prints its one-line message and exits with
status 2; nothing else in cxlsim should print a traceback for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass


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

    ``str(err)`` is a single line: ``FILE:LINE:COL: key.path: message``.
    """

    def __init__(self, message: str, *, location: Location | str | None = None,
                 key: str | None = None) -> None:
        self.message = message
        self.location = Location(location) if isinstance(location, str) else location
        self.key = key
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = []
        if self.location is not None:
            parts.append(str(self.location))
        if self.key:
            parts.append(self.key)
        parts.append(self.message)
        return ": ".join(parts)
