"""Physical quantities at the boundary: parse unit strings in, format them out.

Config files and the command line give quantities as text ("90 ns", "64 GB/s",
"8 GiB"); everything inside cxlsim works on plain numbers in fixed units:

=============  ==========================  ============================
quantity       internal value              example
=============  ==========================  ============================
time           float nanoseconds           "1.1 us"   -> 1100.0
size           int bytes                   "8 GiB"    -> 8589934592
bandwidth      float bytes per second      "25 Gb/s"  -> 3125000000.0
transfer rate  float transfers per second  "32 GT/s"  -> 32000000000.0
frequency      float hertz                 "2.35 GHz" -> 2350000000.0
percentage     float fraction              "50 %"     -> 0.5
=============  ==========================  ============================

Conventions:

* Decimal and binary prefixes are never confused: K/k, M, G, T step by 10^3 and
  Ki, Mi, Gi, Ti by 2^10. Units that could mean either ("K", "G") or that confuse
  bits with bytes ("Gb" for a size, "GBps") are rejected with a hint, never guessed.
* "B" is bytes; "b" and "bps" are bits, divided by 8 for a bandwidth.
* In a user's file or ``--set`` a unit is required, except for zero, for sizes (a
  bare integer is bytes) and for percentages (a bare number in [0, 1] is a fraction);
  Python code building a model may pass plain numbers in the internal units. Negative, NaN and infinite
  values are always rejected, and so is a zero bandwidth, transfer rate or frequency.
* The number is multiplied by the unit's factor in exact decimal arithmetic and
  rounded once, so "1.1 us" is exactly 1100.0.
* ``format_*`` picks a readable unit. Without ``digits`` the text parses back to the
  identical value, so a dumped config reloads bit for bit; with ``digits`` it is
  rounded for display only. A field can name the unit its source uses instead
  (:func:`shown_in`: the kernel's MiB/s rate limits, its millisecond sysctls); files of
  results (metrics, tables) keep numbers in the internal units.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field, replace
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_EVEN, Context, Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, ValidationInfo, WithJsonSchema

__all__ = [
    "UnitError",
    "parse_time", "parse_size", "parse_bandwidth", "parse_rate", "parse_frequency",
    "parse_percent", "parse_quantity", "parse_delivered_bandwidth",
    "format_time", "format_size", "format_bandwidth", "format_rate", "format_frequency",
    "format_percent", "shown_in",
    "Time", "Size", "Bandwidth", "DeliveredBandwidth", "Rate", "Frequency", "Percent",
]


class UnitError(ValueError):
    """A quantity that could not be read; the one-line message says what was expected
    and what was found."""


@dataclass(frozen=True)
class _Kind:
    """Everything the shared parser and formatter need to know about one quantity."""

    noun: str                        # "a time", for messages
    examples: tuple[str, ...]        # shown in messages; the first one in hints
    units: dict[str, Decimal]        # unit text -> factor to the internal unit; "" = bare
    display: tuple[str, ...]         # units format_* may pick, smallest first
    base: str                        # the unit with factor 1 ("" = bare number)
    whole: str | None = None         # values must be whole numbers of this (e.g. bytes)
    maximum: Decimal | None = None
    over_max: dict[str, str] = field(default_factory=dict)  # unit -> reason above maximum
    hints: dict[str, str] = field(default_factory=dict)     # unit -> reason it is rejected
    positive: bool = False           # zero is meaningless (a rate that never delivers)


_DEC = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_BIT = Decimal(1) / 8

_TIME = _Kind(
    "a time", ("90 ns", "1.5 us"),
    {"ps": Decimal("0.001"), "ns": Decimal(1), "us": Decimal(10**3), "\u00b5s": Decimal(10**3),
     "\u03bcs": Decimal(10**3), "ms": Decimal(10**6), "s": Decimal(10**9)},
    ("ps", "ns", "us", "ms", "s"), "ns")

_SIZE = _Kind(
    "a size", ("64 B", "8 GiB", "8 GB"),
    {"": Decimal(1), **{p + "B": Decimal(f) for p, f in (_DEC | _BIN).items()}},
    ("B", "KB", "MB", "GB", "TB"), "B", whole="bytes",
    hints={**{p: f"ambiguous unit '{p}': write '{p.upper()}B' for 10^3 steps or "
                 f"'{p.upper()}iB' for 2^10 steps" for p in _DEC if p},
           **{p + "b": f"'{p}b' means bits; a size is in bytes, e.g. '{p.upper()}B'"
                       + (f" or '{p.upper()}iB'" if p else "") for p in _DEC}})

_BANDWIDTH = _Kind(
    "a bandwidth", ("64 GB/s", "25 Gb/s"),
    {**{p + "B/s": Decimal(f) for p, f in (_DEC | _BIN).items()},
     **{p + b: Decimal(f) * _BIT for p, f in _DEC.items() for b in ("b/s", "bps")}},
    ("B/s", "KB/s", "MB/s", "GB/s", "TB/s"), "B/s", positive=True,
    hints={p + "Bps": f"ambiguous unit '{p}Bps': write '{p}B/s' for bytes or '{p}b/s' "
                      "for bits per second" for p in _DEC})

# A measured, delivered bandwidth (a loaded-latency curve's idle point) may be zero.
_DELIVERED = replace(_BANDWIDTH, positive=False)

_RATE = _Kind(
    "a transfer rate", ("32 GT/s", "6400 MT/s"),
    {"T/s": Decimal(1), "MT/s": Decimal(10**6), "GT/s": Decimal(10**9)},
    ("T/s", "MT/s", "GT/s"), "T/s", positive=True)

_FREQUENCY = _Kind(
    "a frequency", ("2.35 GHz", "800 MHz"),
    {"Hz": Decimal(1), "kHz": Decimal(10**3), "MHz": Decimal(10**6), "GHz": Decimal(10**9)},
    ("Hz", "kHz", "MHz", "GHz"), "Hz", positive=True)

_PERCENT = _Kind(
    "a percentage", ("50 %", "0.5"),
    {"%": Decimal("0.01"), "": Decimal(1)},
    ("%",), "", maximum=Decimal(1),
    over_max={"%": "must be at most 100 %",
              "": "a bare number is a fraction from 0 to 1; for a percentage write '{num} %'"})

_NUMBER = re.compile(
    r"\s*(?P<num>[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|nan|inf(?:inity)?))"
    r"\s*(?P<unit>.*?)\s*", re.IGNORECASE)
_CTX = Context(prec=2000, Emax=MAX_EMAX, Emin=MIN_EMIN)  # exact for every float we meet


def _num(d: Decimal) -> str:
    """Shortest plain text for a Decimal: '1100', '1.5', or '1.5e+25' when very large/small."""
    d = d.normalize(_CTX)
    return format(d, "f") if -7 <= d.adjusted() <= 20 else format(d, "e")


def _either(items: Any) -> str:
    """"'a'", "'a' or 'b'", "'a', 'b' or 'c'"."""
    names = [repr(i) for i in items]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _suggest(kind: _Kind, unit: str) -> str:
    """Why ``unit`` is rejected, naming the units it was probably meant to be."""
    if unit in kind.hints:
        return kind.hints[unit]

    def key(u: str) -> str:
        return re.sub(r"[\s/]", "", u).lower()

    near = [u for u in kind.units
            if u and (key(u).startswith(key(unit)) or key(unit).startswith(key(u)))]
    if not near:
        return f"unknown unit {unit!r}"
    return f"unknown unit {unit!r}; did you mean {_either(near)}?"


def _parse(kind: _Kind, value: Any) -> float | int:
    """Read ``value`` (a string with a unit, or a bare number) as ``kind`` in internal units."""
    def fail(reason: str) -> UnitError:
        found = str(value).lower() if isinstance(value, bool) else repr(value)  # as in YAML
        return UnitError(f"expected {kind.noun} such as {_either(kind.examples)}; "
                         f"found {found} ({reason})")

    if isinstance(value, str):
        m = _NUMBER.fullmatch(value)
        if m is None:
            raise fail("not a number followed by a unit")
        num, unit = Decimal(m["num"]), m["unit"]
    elif isinstance(value, Decimal):
        num, unit = value, ""
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        num = Decimal(int(value)) if isinstance(value, numbers.Integral) else Decimal(float(value))
        unit = ""
    else:
        raise fail("not a number or a string with a unit")

    if not num.is_finite():
        raise fail("not a finite number")
    if num < 0:
        raise fail("must not be negative")
    if num == 0 and kind.positive:
        raise fail("must be greater than zero")
    if unit not in kind.units:
        if unit:
            raise fail(_suggest(kind, unit))
        if num == 0:
            return 0 if kind.whole else 0.0
        raise fail(f"a unit is required, e.g. {kind.examples[0]!r}")
    if num.adjusted() > 400:
        raise fail("too large")

    exact = Context(prec=len(num.as_tuple().digits) + 40).multiply(num, kind.units[unit])
    if kind.maximum is not None and exact > kind.maximum:
        raise fail(kind.over_max[unit].format(num=_num(num)))
    if kind.whole:
        if exact >= 2**64:
            raise fail("too large")
        if exact != exact.to_integral_value():
            raise fail(f"not a whole number of {kind.whole}: {_num(exact)} {kind.base}")
        return int(exact)
    result = float(exact) + 0.0  # + 0.0 turns -0.0 into 0.0
    if math.isinf(result):
        raise fail("too large")
    return result


def _round(d: Decimal, digits: int) -> Decimal:
    """``d`` rounded to ``digits`` significant digits."""
    if digits < 1:
        raise ValueError(f"digits must be at least 1, not {digits}")
    if d == 0:
        return d
    return d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), ROUND_HALF_EVEN, _CTX)


def _format(kind: _Kind, value: float, digits: int | None) -> str:
    """``value`` in the largest display unit where it is >= 1, exact unless ``digits``."""
    v = float(value)
    if not math.isfinite(v):
        return f"{v!r} {kind.base}".rstrip()
    d = Decimal(repr(abs(v))) if digits is None else _round(Decimal(abs(v)), digits)
    if d == 0:
        unit = kind.base if kind.base in kind.display else kind.display[0]
    else:
        unit = next((u for u in reversed(kind.display) if kind.units[u] <= d), kind.display[0])
    text = f"{'-' if v < 0 else ''}{_num(_CTX.divide(d, kind.units[unit]))} {unit}".rstrip()
    if digits is None:
        try:
            exact = _parse(kind, text) == v
        except UnitError:  # outside what parse accepts (negative, over 100 %): no promise
            exact = True
        if not exact:  # cannot happen with power-of-ten factors; kept as the guarantee
            text = f"{v!r} {kind.base}".rstrip()
    return text


# Units tried for an exact size, preferred first: binary, then decimal, largest first.
_SIZE_EXACT = tuple(p + "B" for p in reversed(_BIN)) + ("TB", "GB", "MB", "KB")


def parse_time(value: Any) -> float:
    """Nanoseconds from '90 ns', '1.1 us', '250 ps', '2 ms', '1 s' (or 0)."""
    return _parse(_TIME, value)


def parse_size(value: Any) -> int:
    """Bytes from '64 B', '8 GiB' (2^30 steps), '8 GB' (10^3 steps) or a bare integer."""
    return int(_parse(_SIZE, value))


def parse_bandwidth(value: Any) -> float:
    """Bytes per second from '64 GB/s', '16 GiB/s', or bits: '25 Gb/s', '100 Mbps'."""
    return _parse(_BANDWIDTH, value)


def parse_delivered_bandwidth(value: Any) -> float:
    """As :func:`parse_bandwidth`, but zero is allowed: a measured delivered bandwidth."""
    return _parse(_DELIVERED, value)


def parse_rate(value: Any) -> float:
    """Transfers per second from '32 GT/s', '6400 MT/s', '1000 T/s'."""
    return _parse(_RATE, value)


def parse_frequency(value: Any) -> float:
    """Hertz from '2.35 GHz', '800 MHz', '32 kHz', '50 Hz'."""
    return _parse(_FREQUENCY, value)


def parse_percent(value: Any) -> float:
    """A fraction from '50 %' (0 to 100 %) or a bare number from 0 to 1."""
    return _parse(_PERCENT, value)


def parse_quantity(value: Any) -> tuple[float | int, str] | None:
    """A string with a unit as ``(number in internal units, that unit)``, e.g.
    ``"1.1 us" -> (1100.0, "ns")``; None if it is not a quantity with a unit."""
    if not isinstance(value, str):
        return None
    for kind, _ in _KINDS:
        m = _NUMBER.fullmatch(value)
        if m is None or not m["unit"] or m["unit"] not in kind.units:
            continue
        try:
            return _parse(kind, value), kind.base or "fraction"
        except UnitError:
            return None
    return None


def format_time(ns: float, digits: int | None = None) -> str:
    """'90 ns', '1.5 us', '250 ps': the largest unit in which the value is >= 1."""
    return _format(_TIME, ns, digits)


def format_size(size: int, digits: int | None = None) -> str:
    """'8 GiB', '8 GB', '1500 B': the shortest exact whole count, binary units first.

    With ``digits``, a count needing more significant digits is rounded in decimal units.
    """
    if isinstance(size, float) and size.is_integer():
        size = int(size)
    if not isinstance(size, numbers.Integral):
        return _format(_SIZE, size, digits)
    n = int(size)
    choices = [(str(n // int(_SIZE.units[u])), u) for u in _SIZE_EXACT
               if n >= _SIZE.units[u] and n % int(_SIZE.units[u]) == 0]
    num, unit = min(choices + [(str(n), "B")], key=lambda c: len(c[0]))
    if digits is not None and len(num.lstrip("-").rstrip("0")) > digits:
        return _format(_SIZE, n, digits)
    return f"{num} {unit}"


def format_bandwidth(bytes_per_s: float, digits: int | None = None) -> str:
    """'64 GB/s', '3.125 GB/s': decimal byte units, the largest in which the value is >= 1."""
    return _format(_BANDWIDTH, bytes_per_s, digits)


def format_rate(transfers_per_s: float, digits: int | None = None) -> str:
    """'32 GT/s', '6400 MT/s'."""
    return _format(_RATE, transfers_per_s, digits)


def format_frequency(hz: float, digits: int | None = None) -> str:
    """'2.35 GHz', '800 MHz'."""
    return _format(_FREQUENCY, hz, digits)


def format_percent(fraction: float, digits: int | None = None) -> str:
    """'12.5 %' for 0.125."""
    return _format(_PERCENT, fraction, digits)


#: Each kind of quantity with its readable formatter.
_KINDS = ((_TIME, format_time), (_SIZE, format_size), (_BANDWIDTH, format_bandwidth),
          (_RATE, format_rate), (_FREQUENCY, format_frequency), (_PERCENT, format_percent))


def _significant(text: str) -> int:
    """Significant digits of the number a quantity's text starts with."""
    return len(Decimal(text.split()[0]).normalize(_CTX).as_tuple().digits)


def shown_in(unit: str) -> PlainSerializer:
    """For ``Annotated[Bandwidth, shown_in("MiB/s")]``: the field's text is in ``unit``,
    the one its source gives (the kernel's ``65536 MiB/s`` rather than ``68.719476736
    GB/s``), and as exact as any dump. A value below one ``unit`` or needing more digits
    there than in the readable unit (a user's ``1 GB/s`` is ``953.67431640625 MiB/s``)
    keeps the readable text."""
    kind, readable = next(((k, f) for k, f in _KINDS if unit and unit in k.units),
                          (None, None))
    if kind is None:
        raise ValueError(f"unknown unit {unit!r}")

    def text(value: float | int) -> str:
        auto = readable(value)
        if not math.isfinite(value):
            return auto
        exact = Decimal(value) if isinstance(value, numbers.Integral) \
            else Decimal(repr(float(value)))
        number = _CTX.divide(exact, kind.units[unit])
        mine = f"{_num(number)} {unit}"
        try:
            same = _parse(kind, mine) == value
        except UnitError:
            same = False
        fits = number >= 1 or number == 0
        return mine if same and fits and _significant(mine) <= _significant(auto) else auto

    return _as_text(text)


def _schema(kind: _Kind, number: str) -> WithJsonSchema:
    """JSON schema: a unit string (what dumps contain) or a plain number."""
    return WithJsonSchema({
        "anyOf": [{"type": "string"}, {"type": number}],
        "description": f"{kind.noun.split(' ', 1)[1]} such as {_either(kind.examples)}",
        "examples": list(kind.examples),
    })


#: Bytes in a cache line: what every memory access and CXL data message moves.
LINE_BYTES = 64

#: Validation-context flag set when a model is built from a user's file or ``--set``.
USER_INPUT = "user_input"


def _validator(parse: Any, kind: _Kind) -> BeforeValidator:
    """Parse unit strings; a bare number is in internal units only when Python code
    builds the model (no :data:`USER_INPUT` context) -- in a user's file it is ambiguous."""

    def validate(value: Any, info: ValidationInfo) -> Any:
        from_user = bool(info.context and info.context.get(USER_INPUT))
        if from_user or isinstance(value, (str, bool)) or not isinstance(value, numbers.Real):
            return parse(value)
        return _parse(kind, f"{value!r} {kind.base}".rstrip()) if kind.base else parse(value)

    return BeforeValidator(validate)


def _as_text(fmt: Any) -> PlainSerializer:
    """Unit strings in JSON dumps; numbers stay numbers in python-mode dumps."""
    return PlainSerializer(fmt, return_type=str, when_used="json-unless-none")


Time = Annotated[float, _validator(parse_time, _TIME), _as_text(format_time),
                 _schema(_TIME, "number")]
#: A time the kernel's sysctls give in milliseconds, shown so.
KernelMs = Annotated[Time, shown_in("ms")]
Size = Annotated[int, _validator(parse_size, _SIZE), _as_text(format_size),
                 _schema(_SIZE, "integer")]
Bandwidth = Annotated[float, _validator(parse_bandwidth, _BANDWIDTH), _as_text(format_bandwidth),
                      _schema(_BANDWIDTH, "number")]
DeliveredBandwidth = Annotated[float, _validator(parse_delivered_bandwidth, _DELIVERED),
                               _as_text(format_bandwidth), _schema(_DELIVERED, "number")]
Rate = Annotated[float, _validator(parse_rate, _RATE), _as_text(format_rate),
                 _schema(_RATE, "number")]
Frequency = Annotated[float, _validator(parse_frequency, _FREQUENCY), _as_text(format_frequency),
                      _schema(_FREQUENCY, "number")]
Percent = Annotated[float, _validator(parse_percent, _PERCENT), _as_text(format_percent),
                    _schema(_PERCENT, "number")]
