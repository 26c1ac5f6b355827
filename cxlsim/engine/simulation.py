"""One simulation run: clock, random stream, statistics and component tree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import simpy
from simpy.events import URGENT

from cxlsim.engine.callbacks import call_later
from cxlsim.engine.component import Component
from cxlsim.engine.rng import make_rng
from cxlsim.engine.stats import StatsRegistry

if TYPE_CHECKING:
    import pandas as pd


class Simulation:
    """A run: owns the SimPy environment, the run's only RNG and its stats registry.

    ``seed`` is the experiment seed and ``point`` the sweep point index; together they
    fix the random stream (see :func:`~cxlsim.engine.rng.make_rng`). Time is in ns.
    Counters are zeroed at ``warmup``; tallies and levels ignore earlier samples. With
    ``keep_samples=False`` tallies stream (flat memory, summaries and percentiles only).
    ``streaming``: traffic sources alone on exclusive paths are computed in one compiled
    pass when the run goes to its end (:mod:`cxlsim.protocol.stream`; the same results
    to the bit); False keeps one event per message, e.g. to check that.
    """

    def __init__(self, seed: int = 0, point: int = 0, warmup: float = 0.0,
                 keep_samples: bool = True, streaming: bool = True) -> None:
        self.seed = seed
        self.point = point
        self.env = simpy.Environment()
        self.rng = make_rng(seed, point)
        self.stats = StatsRegistry(warmup, keep_samples)
        self.components: list[Component] = []
        self.streaming = streaming
        self.to_the_end = False  # the current run() has no ``until``
        if warmup > 0:
            # URGENT: warm-up ends before anything else due at that instant, so counters
            # agree with the ``now >= warmup`` rule of tallies and levels.
            call_later(self.env, warmup, lambda _: self.stats.end_warmup(), priority=URGENT)

    @property
    def now(self) -> float:
        """Current simulation time (ns)."""
        return self.env.now

    def run(self, until: float | simpy.Event | None = None) -> None:
        """Run until ``until`` (a time or an event), or until no events are left."""
        self.to_the_end = until is None
        try:
            self.env.run(until=until)
        finally:
            self.to_the_end = False

    def walk(self) -> Iterator[Component]:
        """Every component of the run, depth first."""
        for component in self.components:
            yield from component.walk()

    def metrics(self) -> dict[str, float]:
        """Flat ``{"name.stat": value}`` of every monitor at the current time."""
        return self.stats.to_dict(self.now)

    def stats_frame(self) -> pd.DataFrame:
        """Tidy ``name, kind, stat, value`` table of every monitor at the current time."""
        return self.stats.to_frame(self.now)
