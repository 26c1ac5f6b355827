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


class MissSlots(Component):
    """``slots`` outstanding reads over ``paths`` (name -> path) chosen by ``shares``."""

    def __init__(self, sim: Any, name: str, paths: Mapping[str, MemPath],
                 shares: Mapping[str, float], slots: int, count: int, gap: float = 0.0,
                 parent: Component | None = None) -> None:
        super().__init__(sim, name, parent=parent)
        if slots < 1 or count < 1 or gap < 0:
            raise ValueError("need slots >= 1, count >= 1 and gap >= 0")
        unknown = set(shares) - set(paths)
        if unknown or not shares:
            raise ValueError(f"shares name unknown paths {sorted(unknown)}")
        self._names = list(shares)
        weights = np.array([shares[n] for n in self._names], dtype=float)
        self._cdf = np.cumsum(weights / weights.sum())
        self._paths = [paths[n] for n in self._names]
        self._gap, self._left, self._rng = gap, count, sim.rng
        self.completed = {n: self.counter(f"completed.{n}") for n in self._names}
        self.latency = self.tally("latency")
        for _ in range(min(slots, count)):
            self._issue()

    def _issue(self) -> None:
        self._left -= 1
        k = int(np.searchsorted(self._cdf, self._rng.random(), side="right"))
        k = min(k, len(self._paths) - 1)
        self._paths[k].read(lambda txn, k=k: self._done(k, txn))

    def _done(self, k: int, txn: Transaction) -> None:
        now = self.env.now
        self.completed[self._names[k]].add()
        self.latency.record(txn.latency, now)
        if self._left > 0:
            if self._gap:
                call_later(self.env, self._gap, lambda _: self._issue())
            else:
                self._issue()
