"""``k=v`` parameters of generators (``--param``) and importers (``--option``).

Each generator or format declares its parameters as :class:`Param` objects (default,
parser, description); :func:`parse_params` reads the command line's ``k=v`` strings
against them and reports unknown names and bad values as one-line input errors
(:func:`parse_param` reads one, for an experiment file's ``params``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cxlsim.errors import InputError, Location, did_you_mean


@dataclass(frozen=True)
class Param:
    """A parameter: its default (as text, the way a user writes it), how to read it from
    text, what it means, and how a trace of the same workload ``F`` times smaller takes
    it (``shrinks``: ``"size"``, a share of the footprint, and ``"count"``, a number of
    records or keys, are divided by ``F``; None: kept -- a granule, a fraction, a time)."""

    default: str
    parse: Callable[[str], Any]
    doc: str
    shrinks: str | None = None


def parse_params(specs: Mapping[str, Param], items: Sequence[str], *, flag: str,
                 owner: str) -> dict[str, Any]:
    """Defaults of ``specs`` updated by ``items`` (``"k=v"`` strings given with ``flag``)."""
    values = {name: spec.parse(spec.default) for name, spec in specs.items()}
    for text in items:
        where = Location(f"{flag} {text}")
        name, sep, raw = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InputError("expected NAME=VALUE, e.g. theta=0.9", location=where)
        try:
            values[name] = parse_param(specs, name, raw.strip(), owner)
        except ValueError as exc:
            raise InputError(str(exc), location=where) from None
    return values


def parse_param(specs: Mapping[str, Param], name: str, text: str, owner: str) -> Any:
    """Parameter ``name`` of ``owner`` read from ``text``; a ValueError (a UnitError for a
    quantity) says what is wrong in one line."""
    if name not in specs:
        known = ", ".join(specs) or "none"
        raise ValueError(f"unknown parameter {name!r} for {owner}{did_you_mean(name, specs)}"
                         f"; known: {known}")
    return specs[name].parse(text)


def integer(low: int = 0, high: int | None = None) -> Callable[[str], int]:
    """A whole number (decimal, or hexadecimal with 0x) in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise ValueError(f"expected a whole number; found {text!r}") from None
        if value < low or (high is not None and value > high):
            upper = f"..{high}" if high is not None else " or more"
            raise ValueError(f"expected a whole number {low}{upper}; found {text!r}")
        return value
    return parse


def number(low: float, high: float, *, open_low: bool = False,
           open_high: bool = False) -> Callable[[str], float]:
    """A real number in the interval from low to high (ends open or closed)."""
    shown = f"{'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        below = value <= low if open_low else value < low
        above = value >= high if open_high else value > high
        if value != value or below or above:
            raise ValueError(f"expected a number in {shown}; found {text!r}")
        return value
    return parse


#: A fraction from 0 to 1 inclusive.
fraction = number(0.0, 1.0)


def choice(*names: str) -> Callable[[str], str]:
    """One of ``names``."""
    def parse(text: str) -> str:
        if text not in names:
            raise ValueError(f"expected one of {', '.join(names)}; found {text!r}")
        return text
    return parse


def boolean(text: str) -> bool:
    """yes/no, true/false, 1/0."""
    lowered = text.lower()
    if lowered in ("yes", "true", "1", "on"):
        return True
    if lowered in ("no", "false", "0", "off"):
        return False
    raise ValueError(f"expected yes or no; found {text!r}")
