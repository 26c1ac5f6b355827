"""Statistics monitors and the registry that names them.

Monitors are written to on the simulation's hot path, so recording only appends to a
C array of doubles or updates a few scalars; numpy is used only when a summary is asked
for (and, in a streaming tally, once per block of samples).

Warm-up: samples taken before the registry's ``warmup`` time (ns) are excluded so
that start-up transients (empty queues, cold caches) do not bias steady-state
results. :class:`Tally` and :class:`Level` filter by the ``now`` they are given;
:class:`Counter` has no clock, so :meth:`StatsRegistry.end_warmup` zeroes counters
(``Simulation`` calls it at exactly the warm-up time).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
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
    """Per-sample monitor (e.g. latency): every recorded value weighs the same.

    The samples are kept, 8 bytes each (a C array of doubles, not a list of Python
    floats at ~40 bytes), so every summary is exact and :meth:`values` can return them.
    :class:`StreamingTally` keeps memory flat instead.
    """

    kind = "tally"
    __slots__ = ("_warmup", "_values")

    def __init__(self, warmup: float = 0.0) -> None:
        self._warmup = warmup
        self._values = array("d")

    def record(self, value: float, now: float) -> None:
        """Record ``value`` observed at time ``now``; ignored before warm-up ends."""
        if now >= self._warmup:
            self._values.append(value)

    def record_many(self, values: np.ndarray, times: np.ndarray) -> None:
        """:meth:`record` each of ``values`` observed at the matching ``times``, in order."""
        self._extend(np.ascontiguousarray(values[times >= self._warmup], dtype=float))

    def _extend(self, kept: np.ndarray) -> None:
        self._values.frombytes(kept.tobytes())

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
        _check_q(q)
        return float(np.percentile(self._values, q)) if self._values else math.nan

    def histogram(self, bins: int | np.ndarray = 10,
                  range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(counts, edges)`` as returned by :func:`numpy.histogram`."""
        return np.histogram(self.values(), bins=bins, range=range)

    def summary(self, now: float | None = None) -> dict[str, float]:
        """count, mean, std, min, p50, p95, p99, max (NaN where there are no samples).

        ``now`` is accepted so all monitors share one signature; a tally ignores it.
        """
        if not self.count:
            return {"count": 0.0, "mean": math.nan, "std": math.nan, "min": math.nan,
                    "p50": math.nan, "p95": math.nan, "p99": math.nan, "max": math.nan}
        p50, p95, p99 = (self.percentile(q) for q in _SUMMARY_PERCENTILES)
        return {"count": float(self.count), "mean": self.mean, "std": self.std,
                "min": self.min, "p50": p50, "p95": p95, "p99": p99, "max": self.max}


#: Samples a :class:`StreamingTally` holds before folding them into its summary.
BLOCK = 1 << 16
#: Relative width of a :class:`StreamingTally`'s percentile bins.
RESOLUTION = 1e-3
_LOG_STEP = math.log1p(RESOLUTION)
_OFFSET = 1 << 20  # keeps every positive value's bin index above zero (|v| >= 1e-300)


class StreamingTally(Tally):
    """A tally whose memory stays flat however many samples it sees: every
    :data:`BLOCK` samples fold into a running count, mean and sum of squared deviations
    (Chan et al.'s pairwise update: exact up to rounding), min, max, and counts in
    logarithmic bins :data:`RESOLUTION` wide, from which percentiles come (within half a
    bin, 0.05 %, of the exact value; exact while fewer than :data:`BLOCK` samples came).
    The samples themselves are not kept: :meth:`values` refuses."""

    __slots__ = ("_n", "_mean", "_m2", "_lo", "_hi", "_bins")

    def __init__(self, warmup: float = 0.0) -> None:
        super().__init__(warmup)
        self._n, self._mean, self._m2 = 0, 0.0, 0.0
        self._lo, self._hi = math.inf, -math.inf
        self._bins: dict[int, int] = {}

    def record(self, value: float, now: float) -> None:
        if now >= self._warmup:
            self._values.append(value)
            if len(self._values) >= BLOCK:
                self._fold()

    def _extend(self, kept: np.ndarray) -> None:
        while kept.size:  # fold at the same sample counts as record() does
            room = BLOCK - len(self._values)
            self._values.frombytes(kept[:room].tobytes())
            kept = kept[room:]
            if len(self._values) >= BLOCK:
                self._fold()

    def _fold(self) -> None:
        """Fold the held samples into the running summary and drop them."""
        if not self._values:
            return
        block = np.frombuffer(self._values, dtype=float).copy()
        n, mean = block.size, float(block.mean())
        m2 = float(((block - mean) ** 2).sum())
        total = self._n + n
        delta = mean - self._mean
        self._m2 += m2 + delta * delta * self._n * n / total
        self._mean += delta * n / total
        self._n = total
        self._lo, self._hi = min(self._lo, float(block.min())), max(self._hi, float(block.max()))
        keys, counts = np.unique(_bin(block), return_counts=True)
        for k, c in zip(keys.tolist(), counts.tolist()):
            self._bins[k] = self._bins.get(k, 0) + c
        del self._values[:]

    def values(self) -> np.ndarray:
        raise RuntimeError("a streaming tally keeps no samples (summaries and percentiles "
                           "only); keep_samples=True keeps them")

    @property
    def count(self) -> int:
        return self._n + len(self._values)

    @property
    def mean(self) -> float:
        return self._summed()[1]

    @property
    def std(self) -> float:
        n, _, m2, _, _ = self._summed()
        return math.sqrt(m2 / n) if n else math.nan

    @property
    def min(self) -> float:
        return self._summed()[3]

    @property
    def max(self) -> float:
        return self._summed()[4]

    def _summed(self) -> tuple[int, float, float, float, float]:
        """(count, mean, M2, min, max) over the folded and the held samples."""
        if not self._n:
            held = np.frombuffer(self._values, dtype=float) if self._values else None
            if held is None:
                return 0, math.nan, math.nan, math.nan, math.nan
            mean = float(held.mean())
            return (held.size, mean, float(((held - mean) ** 2).sum()), float(held.min()),
                    float(held.max()))
        self._fold()
        return self._n, self._mean, self._m2, self._lo, self._hi

    def percentile(self, q: float) -> float:
        _check_q(q)
        if not self._n:  # nothing folded yet: the held samples give it exactly
            return super().percentile(q)
        self._fold()
        keys = np.array(sorted(self._bins))
        cdf = np.cumsum([self._bins[k] for k in keys.tolist()])
        rank = q / 100.0 * (self._n - 1)
        k = int(keys[min(int(np.searchsorted(cdf, rank, side="right")), keys.size - 1)])
        return min(max(_bin_value(k), self._lo), self._hi)

    def histogram(self, bins: int | np.ndarray = 10,
                  range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError("a streaming tally keeps no samples: no histogram")


def _bin(values: np.ndarray) -> np.ndarray:
    """Log-bin index of each value: 0 for 0, the sign of the value times its bin."""
    mag = np.abs(values)
    idx = np.floor(np.log(np.where(mag > 0, mag, 1.0)) / _LOG_STEP).astype(np.int64) + _OFFSET
    return np.where(mag > 0, np.sign(values).astype(np.int64) * idx, 0)


def _bin_value(key: int) -> float:
    """The middle (geometric) of bin ``key``."""
    if key == 0:
        return 0.0
    mag = math.exp((abs(key) - _OFFSET + 0.5) * _LOG_STEP)
    return math.copysign(mag, key)


def _check_q(q: float) -> None:
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")


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

    def __init__(self, warmup: float = 0.0, keep_samples: bool = True) -> None:
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0 ns, got {warmup}")
        self._warmup = float(warmup)
        self._tally = Tally if keep_samples else StreamingTally
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
        """The tally ``name``: it keeps its samples unless the registry was made with
        ``keep_samples=False`` (a :class:`StreamingTally`: flat memory)."""
        return self._get(name, self._tally)

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
        import pandas as pd  # only here: the engine's users need not pay for pandas

        return pd.DataFrame(rows, columns=["name", "kind", "stat", "value"])
