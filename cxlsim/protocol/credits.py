"""Per-channel credits: a sender holding none waits until the receiver returns one.

Returns are recorded with the time they reach the sender and applied lazily when a
credit is next needed, so credits cost no events while they are plentiful; only a
sender that actually waits gets a wake-up at the earliest return.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import Any

import simpy

from cxlsim.engine import call_later


class CreditPool:
    """``credits`` receiver buffers of one channel, seen from the sender."""

    def __init__(self, env: simpy.Environment, credits: int) -> None:
        if credits < 1:
            raise ValueError("a channel needs at least one credit")
        self.env = env
        self.credits = credits
        self.available = credits
        self._returns: list[float] = []
        self._waiting: deque[tuple[Callable[[Any], None], Any]] = deque()
        self._waking = False
        self.stalls = 0

    @property
    def in_use(self) -> bool:
        """Some credit is taken or on its way back, or someone waits for one."""
        return self.available < self.credits or bool(self._returns) or bool(self._waiting)

    def pending_returns(self) -> list[float]:
        """Times of the credits on their way back, as a heap (earliest first)."""
        return list(self._returns)

    def restore(self, available: int, stalls: int, returns: list[float]) -> None:
        """Set the state a computed stream left (no one waiting; ``returns`` a heap)."""
        self.available, self.stalls, self._returns = available, stalls, returns

    def take(self, then: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``then(arg)`` as soon as a credit is available (now, if one is)."""
        self._collect()
        if self.available and not self._waiting:
            self.available -= 1
            then(arg)
            return
        self.stalls += 1
        self._waiting.append((then, arg))
        self._arm()

    def give_back(self, at: float) -> None:
        """The receiver freed a buffer; its credit reaches the sender at time ``at``."""
        heapq.heappush(self._returns, at)
        if self._waiting:
            self._arm()

    def _collect(self) -> None:
        now, returns = self.env.now, self._returns
        while returns and returns[0] <= now:
            heapq.heappop(returns)
            self.available += 1

    def _arm(self) -> None:
        if self._waking or not self._returns:
            return
        self._waking = True
        call_later(self.env, max(self._returns[0] - self.env.now, 0.0), self._wake)

    def _wake(self, _event: Any) -> None:
        self._waking = False
        self._collect()
        while self.available and self._waiting:
            self.available -= 1
            then, arg = self._waiting.popleft()
            then(arg)
        if self._waiting:
            self._arm()
