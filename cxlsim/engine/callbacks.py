"""Schedule a plain callback on the SimPy clock: the transaction-level hot path.

Equivalent to ``env.timeout(delay, value).callbacks.append(fn)`` but without the
generator machinery or argument checks of :class:`simpy.Timeout`: one pre-triggered
event, one heap push. ``fn`` receives the event; its ``value`` is ``value``. This is the
only place that touches SimPy's private event fields; callers read ``event.value``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import NORMAL


def call_later(env: simpy.Environment, delay: float, fn: Callable[[simpy.Event], None],
               value: Any = None, priority: int = NORMAL) -> simpy.Event:
    """Run ``fn(event)`` after ``delay`` ns (``delay`` >= 0)."""
    event = simpy.Event(env)
    event._ok = True
    event._value = value
    event.callbacks.append(fn)
    env.schedule(event, priority, delay)
    return event
