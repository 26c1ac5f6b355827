"""Schedule a plain callback on the SimPy clock: the transaction-level hot path.

Equivalent to ``env.timeout(delay, value).callbacks.append(fn)`` but without the
generator machinery or argument checks of :class:`simpy.Timeout`: one pre-triggered
event, one heap push. ``fn`` receives the event and finds ``value`` in ``event.payload``
(a plain attribute: SimPy's ``value`` property costs ten times as much on this path).
This is the only place that touches SimPy's private event fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import NORMAL


def call_later(env: simpy.Environment, delay: float, fn: Callable[[simpy.Event], None],
               value: Any = None, priority: int = NORMAL) -> simpy.Event:
    """Run ``fn(event)`` after ``delay`` ns (``delay`` >= 0); ``event.payload`` is ``value``."""
    event = simpy.Event(env)
    event._ok = True  # pre-triggered: SimPy runs the callbacks and checks only this
    event.payload = value
    event.callbacks.append(fn)
    env.schedule(event, priority, delay)
    return event
