"""Statistics monitors and the registry that names them.

Monitors are written to on the simulation's hot path, so recording only appends to a
Python list or updates a few scalars; numpy is used only when a summary is asked for.

Warm-up: samples taken before the registry's ``warmup`` time (ns) are excluded so
that start-up transients (empty queues, cold caches) do not bias steady-state
results. :class:`Tally` and :class:`Level` filter by the ``now`` they are given;
:class:`Counter` has no clock, so :meth:`StatsRegistry.end_warmup` zeroes counters
(``Simulation`` calls it at exactly the warm-up time).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

#: Percentiles reported by every summary.
_SUMMARY_PERCENTILES = (50.0, 95.0, 99.0)


class Counter:
    """A running count (requests, bytes, retries...)."""

    kind = "counter"
    __slots__ = ("_warmup", "value")

    def __init__(self, warmup: float = 0.0) -> None:
        self._warmup = warmup
        self.value = 0

    def add(self, n: int | float = 1) -> None:
        """Add ``n`` (default 1) to the count."""
        self.value += n

    def reset(self) -> None:
        """Zero the count (used at the end of warm-up)."""
        self.value = 0

    def summary(self, now: float) -> dict[str, float]:
        """``value`` and ``rate`` (value per ns since warm-up; bytes/ns is GB/s)."""
        span = now - self._warmup
        return {"value": float(self.value),
                "rate": self.value / span if span > 0 else math.nan}


class Tally:
    """Per-sample monitor (e.g. latency): every recorded value weighs the same."""

    kind = "tally"
    __slots__ = ("_warmup", "_values")

    def __init__(self, warmup: float = 0.0) -> None:
        self._warmup = warmup
        self._values: list[float] = []

    def record(self, value: float, now: float) -> None:
        """Record ``value`` observed at time ``now``; ignored before warm-up ends."""
        if now >= self._warmup:
            self._values.append(value)

    def values(self) -> np.ndarray:
        """The kept samples as a new float array, in recording order."""
        return np.array(self._values, dtype=float)

    @property
    def count(self) -> int:
        return len(self._values)

    @property
    def mean(self) -> float:
        return float(np.mean(self._values)) if self._values else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation (ddof=0)."""
        return float(np.std(self._values)) if self._values else math.nan

    @property
    def min(self) -> float:
        return float(min(self._values)) if self._values else math.nan

    @property
    def max(self) -> float:
        return float(max(self._values)) if self._values else math.nan

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0..100, numpy's linear interpolation); NaN if empty."""
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"percentile q must be in [0, 100], got {q}")
        return float(np.percentile(self._values, q)) if self._values else math.nan

    def histogram(self, bins: int | np.ndarray = 10,
                  range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(counts, edges)`` as returned by :func:`numpy.histogram`."""
        return np.histogram(self.values(), bins=bins, range=range)

    def summary(self, now: float | None = None) -> dict[str, float]:
        """count, mean, std, min, p50, p95, p99, max (NaN where there are no samples).

        ``now`` is accepted so all monitors share one signature; a tally ignores it.
        """
        if not self._values:
            return {"count": 0.0, "mean": math.nan, "std": math.nan, "min": math.nan,
                    "p50": math.nan, "p95": math.nan, "p99": math.nan, "max": math.nan}
        a = self.values()
        p50, p95, p99 = np.percentile(a, _SUMMARY_PERCENTILES)
        return {"count": float(a.size), "mean": float(a.mean()), "std": float(a.std()),
                "min": float(a.min()), "p50": float(p50), "p95": float(p95),
                "p99": float(p99), "max": float(a.max())}


class Level:
    """Time-weighted monitor (e.g. queue depth, occupancy): a piecewise-constant signal.

    Each value is weighted by how long it was held within the window
    ``[max(warmup, first set), now]``. Recording adds the just-ended segment's
    duration to a value→time dict, so memory grows with the number of distinct
    values, not with the number of changes, and time-weighted percentiles are exact.
    """

    kind = "level"
    __slots__ = ("_warmup", "_value", "_since", "_time_at", "_peak")

    def __init__(self, warmup: float = 0.0) -> None:
        self._warmup = warmup
        self._value: float | None = None
        self._since = math.nan          # when the current value was set
        self._time_at: dict[float, float] = {}
        self._peak = -math.inf           # largest value set at or after warm-up

    @property
    def value(self) -> float | None:
        """The current value (None before the first :meth:`set`)."""
        return self._value

    def set(self, value: float, now: float) -> None:
        """The signal becomes ``value`` at time ``now`` (times must not decrease)."""
        if self._value is not None:
            if now < self._since:
                raise ValueError(f"Level time went backwards: {now} < {self._since}")
            start = self._since if self._since > self._warmup else self._warmup
            if now > start:
                self._time_at[self._value] = self._time_at.get(self._value, 0.0) + (now - start)
        if now >= self._warmup and value > self._peak:
            self._peak = value
        self._value = value
        self._since = now

    def add(self, delta: float, now: float) -> None:
        """Change the signal by ``delta`` at ``now`` (starting from 0 if never set)."""
        self.set((self._value or 0) + delta, now)

    def _time_at_until(self, now: float) -> dict[float, float]:
        """Value→held-time within the window, including the current open segment."""
        held = {v: t for v, t in self._time_at.items() if t > 0}
        if self._value is not None:
            start = max(self._since, self._warmup)
            if now > start:
                held[self._value] = held.get(self._value, 0.0) + (now - start)
        return held

    def mean(self, now: float) -> float:
        """Time-weighted mean over the window ending at ``now``; NaN if it is empty."""
        held = self._time_at_until(now)
        total = sum(held.values())
        return sum(v * t for v, t in held.items()) / total if total > 0 else math.nan

    def max(self, now: float) -> float:
        """Largest value in effect in the window, counting instantaneous peaks."""
        held = self._time_at_until(now)
        peak = max(self._peak, max(held, default=-math.inf))
        return peak if peak > -math.inf else math.nan

    def percentile(self, q: float, now: float) -> float:
        """Time-weighted ``q``-th percentile (0..100): the smallest value held for at
        least ``q`` % of the window (inverted CDF, no interpolation)."""
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"percentile q must be in [0, 100], got {q}")
        held = self._time_at_until(now)
        if not held:
            return math.nan
        values = np.array(sorted(held))
        cdf = np.cumsum([held[v] for v in values])
        i = int(np.searchsorted(cdf, q / 100.0 * cdf[-1], side="left"))
        return float(values[min(i, values.size - 1)])

    def summary(self, now: float) -> dict[str, float]:
        """mean, max, p50, p95, p99 over the window ending at ``now``."""
        out = {"mean": self.mean(now), "max": self.max(now)}
        for q in _SUMMARY_PERCENTILES:
            out[f"p{q:g}"] = self.percentile(q, now)
        return out


Monitor = Counter | Tally | Level


class StatsRegistry:
    """All monitors of one run, by dotted name (``host0.link.latency``).

    ``counter``/``tally``/``level`` create a monitor on first use and return the same
    one afterwards, so components can ask for their stats without bookkeeping.
    """

    def __init__(self, warmup: float = 0.0) -> None:
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0 ns, got {warmup}")
        self._warmup = float(warmup)
        self._monitors: dict[str, Monitor] = {}

    @property
    def warmup(self) -> float:
        """Warm-up end time (ns), applied to every monitor."""
        return self._warmup

    def _get(self, name: str, cls: type[Monitor]) -> Monitor:
        monitor = self._monitors.get(name)
        if monitor is None:
            if not name or any(not part for part in name.split(".")):
                raise ValueError(f"invalid stat name {name!r}")
            monitor = self._monitors[name] = cls(self._warmup)
        elif type(monitor) is not cls:
            raise TypeError(f"stat {name!r} is a {monitor.kind}, not a {cls.kind}")
        return monitor

    def counter(self, name: str) -> Counter:
        return self._get(name, Counter)

    def tally(self, name: str) -> Tally:
        return self._get(name, Tally)

    def level(self, name: str) -> Level:
        return self._get(name, Level)

    def __getitem__(self, name: str) -> Monitor:
        return self._monitors[name]

    def __contains__(self, name: object) -> bool:
        return name in self._monitors

    def __iter__(self) -> Iterator[str]:
        return iter(self._monitors)

    def __len__(self) -> int:
        return len(self._monitors)

    def end_warmup(self) -> None:
        """Zero every counter: the warm-up period is over."""
        for monitor in self._monitors.values():
            if isinstance(monitor, Counter):
                monitor.reset()

    def to_dict(self, now: float) -> dict[str, float]:
        """Flat ``{"name.stat": value}`` for every monitor, summarised at ``now``."""
        return {f"{name}.{stat}": value
                for name, monitor in self._monitors.items()
                for stat, value in monitor.summary(now).items()}

    def to_frame(self, now: float) -> pd.DataFrame:
        """Tidy long table with columns ``name, kind, stat, value``."""
        rows = [(name, monitor.kind, stat, value)
                for name, monitor in self._monitors.items()
                for stat, value in monitor.summary(now).items()]
        return pd.DataFrame(rows, columns=["name", "kind", "stat", "value"])
