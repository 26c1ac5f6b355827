"""Carry a transaction through its stages: link directions and servers, FIFO each.

A transaction is a fixed tuple of steps — ``(LINK, direction, wire_bytes, after)`` (a
CXL.cache/.mem message; ``LINK_IO`` for PCIe / CXL.io TLPs) or
``(SERVE, resource, fn, after)`` — where ``after`` is the fixed latency following the
step (a switch hop, a root port) and ``fn(txn, t)`` serves the transaction arriving at
``t`` and returns when it leaves (a memory access, a home agent, a cache lookup).

Where a stage is exclusive (one in-order sender) the transaction is reserved through it
at once: a tandem of Lindley recursions with no event. A shared stage is entered by an
event at the arrival time, so it serves in order of arrival; a shared link arbitrates
between stacks there (ARB/MUX). The last step is followed by one event: completion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from cxlsim.engine import call_later
from cxlsim.link.direction import CACHEMEM, IO

LINK, SERVE, LINK_IO = 0, 1, 2


class Transaction:
    """One request in flight; ``done(txn)`` is called at completion at its origin."""

    __slots__ = ("done", "issued", "size", "op", "completed", "data")

    def __init__(self, issued: float, size: int, op: str,
                 done: Callable[[Transaction], None]) -> None:
        self.issued = issued
        self.size = size
        self.op = op
        self.done = done
        self.completed = 0.0
        self.data = False

    @property
    def latency(self) -> float:
        """Issue to completion, ns."""
        return self.completed - self.issued


class Route:
    """Base of the protocol paths: counts completions and hands each to its ``done``."""

    env: Any
    completed: int = 0

    def _finish(self, event: Any) -> None:
        txn = event.payload
        txn.completed = self.env.now
        self.completed += 1
        txn.done(txn)


def advance(env: Any, txn: Transaction, steps: tuple, i: int, t: float,
            finish: Callable[[Any], None]) -> None:
    """Carry ``txn`` from step ``i``, reached at time ``t``, as far as it can go now;
    ``finish(event)`` runs at completion with ``event.payload`` the transaction."""
    while i < len(steps):
        step = steps[i]
        if step[0] is SERVE:
            resource = step[1]
            if not resource.exclusive and t > env.now:
                break
            t = step[2](txn, t) + step[3]
        else:
            link, wire_bytes, after = step[1], step[2], step[3]
            stack = IO if step[0] is LINK_IO else CACHEMEM
            if not link.exclusive:
                if t > env.now:
                    break
                link.send(stack, wire_bytes, lambda tx, i=i: advance(
                    env, tx, steps, i + 1, env.now, finish), txn, after)
                return
            t = link.reserve(wire_bytes, t, stack) + after
        i += 1
    if i == len(steps):
        call_later(env, t - env.now, finish, txn)
    else:
        call_later(env, t - env.now, lambda _: advance(env, txn, steps, i, t, finish))


Hop = tuple[float, Any]
"""The fixed latency before a link direction on a route, and the direction."""


class MemoryPort(Protocol):
    """What a path needs of the memory at its end (e.g. a device's
    :class:`~cxlsim.devices.memory.MemoryBackend`): kept structural so that the protocol
    layer does not import the devices built on it. A memory may also have a
    ``request_buffer`` (requests it accepts at once; None = unlimited)."""

    def claim(self) -> None:
        """Register one more path sending requests here."""

    def access(self, size: int, t: float) -> float:
        """Reserve an access of ``size`` bytes arriving at ``t``; return its completion."""


def link_steps(route: list[Hop] | tuple[Hop, ...], wire_bytes: float, tail: float) -> list:
    """LINK steps for a message along ``route``; ``tail`` is the latency after the last link.

    The latency before the first link is the caller's (it precedes the first step).
    """
    return [(LINK, link, wire_bytes, route[k + 1][0] if k + 1 < len(route) else tail)
            for k, (_, link) in enumerate(route)]
