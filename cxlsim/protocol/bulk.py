"""Bulk data movement: many bytes as bursts through a chain of FIFO stages.

A transfer is split into at most ``bursts`` bursts; each burst is a transaction through
the given steps (link directions, windows), store-and-forward per stage, so stages
overlap across bursts the way a DMA stream overlaps its TLPs. The wire bytes of a
burst come from the caller (TLP or flit accounting). The only approximation is the
pipeline fill of one burst, at most ``1 / bursts`` of the transfer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

from cxlsim.link.tlp import split
from cxlsim.protocol.journey import Route, Transaction, advance


class Bulk(Route):
    """Moves ``total`` bytes; ``steps(burst_bytes)`` gives one burst's steps."""

    def __init__(self, env: simpy.Environment, steps: Callable[[int], tuple],
                 bursts: int = 256, granule: int = 4096) -> None:
        self.env = env
        self._steps = steps
        self._bursts = bursts
        self._granule = granule

    def move(self, total: int, start: float = 0.0) -> simpy.Event:
        """An event that succeeds (value: elapsed ns) when all ``total`` bytes have arrived,
        the first burst entering ``start`` ns from now."""
        done = simpy.Event(self.env)
        began = self.env.now
        chunk = self._granule * max(1, -(-total // (self._granule * self._bursts)))
        pieces = split(total, chunk)
        left = [len(pieces)]

        def landed(_txn: Any) -> None:
            left[0] -= 1
            if left[0] == 0:
                done.succeed(self.env.now - began)

        for piece in pieces:
            txn = Transaction(self.env.now, piece, "bulk", landed)
            advance(self.env, txn, self._steps(piece), 0, self.env.now + start, self._finish)
        return done
