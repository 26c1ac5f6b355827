"""CXL.mem transactions from a host to a Type 3 device, as sequences of messages.

A read is M2S Req (MemRd) down, the device's memory access, S2M DRS (MemData) up; a
write is M2S RwD (MemWr + 64 B) down, the access, S2M NDR (Cmp) up (CXL 2.0 spec §3.3).
Req and RwD are credited per hop: the host holds ``credits`` of each and gets one back
when the device takes the message, one upstream latency later (piggybacked on an
upstream flit); NDR and DRS are pre-allocated at the host and never block (§2.5). A
device whose controller accepts only ``request_buffer`` requests grants that many
credits, shared by reads and writes, each back one upstream latency after its request
completes: a full controller back-pressures the host.
A transaction's latency is the sum of the component delays plus the queueing it meets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cxlsim.protocol.credits import CreditPool
from cxlsim.protocol.journey import (SERVE, Hop, MemoryPort, Route, Transaction, advance,
                                     link_steps)

#: Message kinds of CXL.mem (names as in the flit packer).
M2S_REQ, M2S_RWD, S2M_NDR, S2M_DRS = "M2S_REQ", "M2S_RWD", "S2M_NDR", "S2M_DRS"

__all__ = ["M2S_REQ", "M2S_RWD", "S2M_DRS", "S2M_NDR", "MemPath", "Transaction"]


class MemPath(Route):
    """The route host -> device -> host for CXL.mem, with its credits and message costs.

    ``down`` and ``up`` list the hops from the host and from the device, each the fixed
    latency before a link direction; ``tail_down`` and ``tail_up`` are the fixed
    latencies after the last link (into the device, into the host's home agent).
    ``wire`` gives each message kind's cost in wire bytes, from the flit packer. Stages
    exclusive to this path are reserved ahead (:mod:`cxlsim.protocol.journey`): an
    unshared read costs one event.
    """

    def __init__(self, env: Any, down: Sequence[Hop], up: Sequence[Hop], device: MemoryPort,
                 wire: Mapping[str, float], tail_down: float = 0.0, tail_up: float = 0.0,
                 credits: int = 32) -> None:
        self.env = env
        self.device = device
        buffer = getattr(device, "request_buffer", None)
        self._held = buffer is not None  # credits held until the request completes
        self.req_credits = CreditPool(env, buffer if self._held else credits)
        self.rwd_credits = self.req_credits if self._held else CreditPool(env, credits)
        for _, link in (*down, *up):
            link.claim()
        device.claim()
        self._credit_return = sum(lat + link.latency for lat, link in up) + tail_up
        self._head = down[0][0]
        self.streamed_until = -1.0  # end of a stream computed at once (see read())

        def steps(request: str, response: str) -> tuple:
            return (*link_steps(down, wire[request], tail_down),
                    (SERVE, device, self._at_device, up[0][0]),
                    *link_steps(up, wire[response], tail_up))

        self._read = steps(M2S_REQ, S2M_DRS)
        self._write = steps(M2S_RWD, S2M_NDR)

    def read(self, done: Callable[[Transaction], None], size: int = 64) -> Transaction:
        """Issue a MemRd now."""
        self._check_streamed()
        txn = Transaction(self.env.now, size, "read", done)
        self.req_credits.take(self._start, txn)
        return txn

    def write(self, done: Callable[[Transaction], None], size: int = 64) -> Transaction:
        """Issue a MemWr now."""
        self._check_streamed()
        txn = Transaction(self.env.now, size, "write", done)
        self.rwd_credits.take(self._start, txn)
        return txn

    def _check_streamed(self) -> None:
        if self.env.now < self.streamed_until:
            raise RuntimeError(
                f"this path's sources were computed at once up to t={self.streamed_until:g} "
                f"ns, so a request issued directly at t={self.env.now:g} cannot join their "
                "queues; build the Simulation with streaming=False to mix them")

    @property
    def untouched(self) -> bool:
        """No request issued on this path yet (its credits all at hand)."""
        return (self.completed == 0 and not self.req_credits.in_use
                and not self.rwd_credits.in_use)

    def stages(self) -> list[Any]:
        """The links (down, then up) and the device this path sends through."""
        _, down, device, _, up, *_ = self.route()
        return [*(link for link, _ in down), *(link for link, _ in up), device]

    def route(self) -> tuple[float, list, Any, float, list, tuple[float, ...], float, bool]:
        """(latency before the first link, [(down link, latency after)], device, latency
        after the device, [(up link, latency after)], wire bytes of (Req, RwD, NDR, DRS),
        credit return latency, credits held to completion): the path as data."""
        serve = next(k for k, step in enumerate(self._read) if step[0] is SERVE)
        down = [(step[1], step[3]) for step in self._read[:serve]]
        up = [(step[1], step[3]) for step in self._read[serve + 1:]]
        wire = (self._read[0][2], self._write[0][2], self._write[-1][2], self._read[-1][2])
        return (self._head, down, self.device, self._read[serve][3], up, wire,
                self._credit_return, self._held)

    def _start(self, txn: Transaction) -> None:
        steps = self._write if txn.op == "write" else self._read
        advance(self.env, txn, steps, 0, self.env.now + self._head, self._finish)

    def _at_device(self, txn: Transaction, t: float) -> float:
        credits = self.rwd_credits if txn.op == "write" else self.req_credits
        done = self.device.access(txn.size, t)
        credits.give_back((done if self._held else t) + self._credit_return)
        return done

