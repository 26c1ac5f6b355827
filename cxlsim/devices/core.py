"""A core's miss slots at transaction level: one pool of outstanding misses for all targets.

A thread keeps ``slots`` misses in flight (its line fill buffers / MSHRs). Each slot,
when its miss completes, waits ``gap`` ns of core work and issues the next miss to a
target drawn by ``shares`` (the memory policy's page fractions). Whichever target a miss
goes to, it holds a slot until it completes, so a slow or saturated target keeps slots
that the fast ones could have used: the transaction-level counterpart of the epoch
level's :class:`~cxlsim.memory.epoch.Demand`, whose rate is ``slots / (slots * gap +
mean latency)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cxlsim.engine import Component, call_later
from cxlsim.protocol.mem import MemPath, Transaction
from cxlsim.protocol.stream import SLOTS, Source


class MissSlots(Source):
    """``slots`` outstanding reads over ``paths`` (name -> path) chosen by ``shares``.

    The target of each miss is drawn up front from the component's own random stream;
    alone on exclusive paths the whole run is computed at once
    (:mod:`cxlsim.protocol.stream`).
    """

    kind = SLOTS

    def __init__(self, sim: Any, name: str, paths: Mapping[str, MemPath],
                 shares: Mapping[str, float], slots: int, count: int, gap: float = 0.0,
                 parent: Component | None = None) -> None:
        if slots < 1 or count < 1 or gap < 0:
            raise ValueError("need slots >= 1, count >= 1 and gap >= 0")
        unknown = set(shares) - set(paths)
        if unknown or not shares:
            raise ValueError(f"shares name unknown paths {sorted(unknown)}")
        names = list(shares)
        super().__init__(sim, name, [paths[n] for n in names], count, parent)
        self._names = names
        weights = np.array([shares[n] for n in names], dtype=float)
        self.cdf = np.cumsum(weights / weights.sum())
        self.slots, self.gap = slots, gap
        self.completed = {n: self.counter(f"completed.{n}") for n in names}
        self.latency = self.tally("latency")

    def _draw(self) -> tuple[np.ndarray, np.ndarray]:
        """One uniform per miss choosing its path (none needed for one path)."""
        n = self.count if len(self.paths) > 1 else 0
        return self.rng.random(n), np.zeros(n, bool)

    def _begin(self) -> None:
        self._choices = self._draw()[0].tolist()
        self._drawn = 0
        self._left = self.count  # misses not yet scheduled
        for _ in range(min(self.slots, self.count)):
            self._left -= 1
            self._issue()

    def _issue(self) -> None:
        k = 0
        if self._choices:
            u = self._choices[self._drawn]
            self._drawn += 1
            k = min(int(np.searchsorted(self.cdf, u, side="right")), len(self.paths) - 1)
        self.paths[k].read(lambda txn, k=k: self._done(k, txn))

    def _done(self, k: int, txn: Transaction) -> None:
        now = self.env.now
        self.completed[self._names[k]].add()
        self.latency.record(txn.latency, now)
        if self._left > 0:
            self._left -= 1
            if self.gap:
                call_later(self.env, self.gap, lambda _: self._issue())
            else:
                self._issue()

    def _deliver(self, done: dict[str, np.ndarray]) -> None:
        time = done["time"]
        self.latency.record_many(done["latency"], time)
        chosen = np.bincount(done["path"][time >= self.sim.stats.warmup],
                             minlength=len(self._names))
        for name, n in zip(self._names, chosen.tolist()):
            self.completed[name].add(n)
