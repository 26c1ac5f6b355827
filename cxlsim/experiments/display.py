"""Metrics as ``cxlsim run`` prints them: grouped, in display units, without e-notation.

Every experiment kind names its metrics with their unit as a word of the name
(``app_time_s``, ``local_ns``, ``bandwidth_GBps_dram``, ``crossover_KiB``,
``traffic_share_cxl0``, ``accesses_per_s``), so one reading of the names serves all:
a time is shown in the largest unit in which it is at least 1 (``6.453 s``), a
bandwidth in GB/s, a share as a percentage, a count per second with a k/M/G prefix, a
whole number with thousands separators, any other number with four significant digits.
The groups are found by name too (:func:`group_of`). ``--json`` and the run folder keep
the exact values; this is only for reading.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cxlsim.units import format_bandwidth, format_time

#: Significant digits of a shown number.
DIGITS = 4

#: The words of a metric's name that give its unit: how to show a value in that unit.
_TIME_WORDS = {"ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_SIZE_WORDS = ("B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB")

#: Groups found by name, tried in this order (``loss_migration_ns`` is a loss before it
#: is a time); a name none matches goes to "time" or "throughput" by its unit, else "run".
_BY_NAME = (("scaling", r"^(scale|time_compression|real_time_s|clock_)"),
            ("policy", r"^policy_"),
            ("loss breakdown", r"^(loss|local)_"),
            ("kernel counters", r"^(pg|numa_|damon_|kswapd|allocstall|migrat|pingpong|tlb_)"),
            ("traffic per node", r"^traffic_"),
            ("pages", r"(^|_)pages(_|$)"))
_BY_UNIT = {"time": "time", "rate": "throughput"}

#: More metrics than this are shown in groups, fewer as one list.
GROUP_ABOVE = 12

#: The groups in the order shown.
GROUPS = ("run", "time", "throughput", "traffic per node", "pages", "kernel counters",
          "policy", "loss breakdown", "scaling")


def _words(name: str) -> list[str]:
    return re.split(r"[^A-Za-z0-9]+", name)


def _number(value: float) -> str:
    """``value`` with :data:`DIGITS` significant digits (whole above 1000), thousands
    separated, never in e-notation."""
    if not math.isfinite(value):
        return "n/a" if math.isnan(value) else str(value)
    if value == 0:
        return "0"
    decimals = max(0, DIGITS - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _per_second(value: float, unit: str) -> str:
    """A count per second with a k/M/G/T prefix: ``21.7 M/s``, ``500/s``, ``3 kreq/s``."""
    power = min(int(math.log10(abs(value)) // 3), 4) if abs(value) >= 1000 else 0
    prefix = " kMGT"[power].strip()
    space = " " if prefix or not unit.startswith("/") else ""
    return f"{_number(value / 1000 ** power)}{space}{prefix}{unit}"


def _unit(name: str) -> tuple[str | None, Callable[[float], str]]:
    """The kind of quantity a metric's name says (``time``, ``rate`` or None) and how to
    show its value."""
    words = _words(name)
    if words and words[-1] == "loss":  # a quantity's relative loss: accesses_per_s_loss
        return None, lambda v: f"{_number(v * 100)} %"
    for i, word in enumerate(words):
        if word == "s" and i and words[i - 1] == "per":
            return "rate", lambda v: _per_second(v, "/s")
        if word in _TIME_WORDS:
            return "time", lambda v, f=_TIME_WORDS[word]: format_time(v * f, digits=DIGITS)
        if word == "rps":
            return "rate", lambda v: _per_second(v, "req/s")
        if word == "GBps":
            return "rate", lambda v: format_bandwidth(v * 1e9, digits=DIGITS)
        if word in _SIZE_WORDS:
            return None, lambda v, u=word: f"{_number(v)} {u}"
        if word in ("share", "utilisation", "utilization"):
            return None, lambda v: f"{_number(v * 100)} %"
    return None, _number


def metric_text(name: str, value: Any) -> str:
    """``value`` of metric ``name`` as shown: in the unit its name gives, readable."""
    if value is None:
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if not isinstance(value, numbers.Real):
        return str(value) or "-"
    value = float(value)
    show = _unit(name)[1]
    if show is _number and value.is_integer() and abs(value) < 2 ** 53:
        return f"{int(value):,}"
    return show(value) if math.isfinite(value) else _number(value)


def group_of(name: str) -> str:
    """The group (one of :data:`GROUPS`) metric ``name`` belongs to."""
    for group, pattern in _BY_NAME:
        if re.search(pattern, name):
            return group
    return _BY_UNIT.get(_unit(name)[0], "run")


def metrics_text(metrics: Mapping[str, Any]) -> str:
    """The metrics as lines ``name  value``, names aligned: as one list in their own
    order, or, when more than :data:`GROUP_ABOVE` fall in two or more groups, under a
    heading per group."""
    width = max((len(name) for name in metrics), default=0)

    def line(name: str, indent: str = "") -> str:
        return f"{indent}{name:<{width}}  {metric_text(name, metrics[name])}"

    groups: dict[str, list[str]] = {g: [] for g in GROUPS}
    for name in metrics:
        groups[group_of(name)].append(name)
    shown = [(group, names) for group, names in groups.items() if names]
    if len(metrics) <= GROUP_ABOVE or len(shown) == 1:
        return "\n".join(map(line, metrics))
    return "\n\n".join("\n".join([group, *[line(n, "  ") for n in names]])
                       for group, names in shown)
