"""CXL.mem transactions from a host to a Type 3 device, as sequences of messages.

A read is M2S Req (MemRd) down, the device's memory access, S2M DRS (MemData) up; a
write is M2S RwD (MemWr + 64 B) down, the access, S2M NDR (Cmp) up (protocol.md §4.3).
Req and RwD are credited per hop: the host holds ``credits`` of each and gets one back
when the device takes the message, one upstream latency later (piggybacked on an
upstream flit); NDR and DRS are pre-allocated at the host and never block (§2.5).
A transaction's latency is the sum of the component delays plus the queueing it meets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cxlsim.devices.memory import MemoryBackend
from cxlsim.engine import call_later
from cxlsim.link.direction import CACHEMEM, LinkDirection
from cxlsim.protocol.credits import CreditPool

#: Message kinds of CXL.mem (names as in the flit packer).
M2S_REQ, M2S_RWD, S2M_NDR, S2M_DRS = "M2S_REQ", "M2S_RWD", "S2M_NDR", "S2M_DRS"

#: A hop: the fixed latency before a link direction (root port, switch), and the link.
Hop = tuple[float, LinkDirection]


class Transaction:
    """One CXL.mem request in flight; ``done(txn)`` is called when the host has the reply."""

    __slots__ = ("done", "issued", "size", "write", "completed")

    def __init__(self, issued: float, size: int, write: bool,
                 done: Callable[[Transaction], None]) -> None:
        self.issued = issued
        self.size = size
        self.write = write
        self.done = done
        self.completed = 0.0

    @property
    def latency(self) -> float:
        """Issue to completion at the host, ns."""
        return self.completed - self.issued


class MemPath:
    """The route host -> device -> host for CXL.mem, with its credits and message costs.

    ``down`` and ``up`` list the hops from the host and from the device, each the fixed
    latency before a link direction; ``tail_down`` and ``tail_up`` are the fixed
    latencies after the last link (into the device, into the host's home agent).
    ``wire`` gives each message kind's cost in wire bytes, from the flit packer.

    Every stage is FIFO. Where a stage is exclusive to this path (one in-order sender)
    the message is reserved through it at once, a tandem of Lindley recursions; a
    shared stage (a switch's upstream link, a device with several hosts, a monitored
    link) is entered by an event at the message's arrival, so its order of service is
    the order of arrival. An unshared read costs one event, its completion.
    """

    def __init__(self, env: Any, down: Sequence[Hop], up: Sequence[Hop], device: MemoryBackend,
                 wire: Mapping[str, float], tail_down: float = 0.0, tail_up: float = 0.0,
                 credits: int = 32) -> None:
        self.env = env
        self.device = device
        self.req_credits = CreditPool(env, credits)
        self.rwd_credits = CreditPool(env, credits)
        for _, link in (*down, *up):
            link.claim()
        device.claim()
        self._credit_return = sum(lat + link.latency for lat, link in up) + tail_up
        self._read = _steps(down, up, tail_down, tail_up, wire[M2S_REQ], wire[S2M_DRS])
        self._write = _steps(down, up, tail_down, tail_up, wire[M2S_RWD], wire[S2M_NDR])
        self.completed = 0

    def read(self, done: Callable[[Transaction], None], size: int = 64) -> Transaction:
        """Issue a MemRd now."""
        txn = Transaction(self.env.now, size, False, done)
        self.req_credits.take(self._start, txn)
        return txn

    def write(self, done: Callable[[Transaction], None], size: int = 64) -> Transaction:
        """Issue a MemWr now."""
        txn = Transaction(self.env.now, size, True, done)
        self.rwd_credits.take(self._start, txn)
        return txn

    def _start(self, txn: Transaction) -> None:
        steps = self._write if txn.write else self._read
        self._advance(txn, steps, 1, self.env.now + steps[0])

    def _advance(self, txn: Transaction, steps: tuple, i: int, t: float) -> None:
        """Carry ``txn`` from step ``i``, reached at time ``t``, as far as it can go now."""
        env = self.env
        while i < len(steps):
            step = steps[i]
            if step[0] is _DEVICE:
                if not self.device.exclusive and t > env.now:
                    break
                (self.rwd_credits if txn.write else self.req_credits).give_back(
                    t + self._credit_return)
                t = self.device.access(txn.size, t) + step[1]
            else:
                link, wire_bytes, after = step
                if not link.exclusive:
                    if t > env.now:
                        break
                    link.send(CACHEMEM, wire_bytes, lambda tx, i=i: self._advance(
                        tx, steps, i + 1, env.now), txn, after)
                    return
                t = link.reserve(wire_bytes, t) + after
            i += 1
        if i == len(steps):
            call_later(env, t - env.now, self._at_host, txn)
        else:
            call_later(env, t - env.now, lambda _: self._advance(txn, steps, i, t))

    def _at_host(self, event: Any) -> None:
        txn = event._value
        txn.completed = self.env.now
        self.completed += 1
        txn.done(txn)


_DEVICE = "device"


def _steps(down: Sequence[Hop], up: Sequence[Hop], tail_down: float, tail_up: float,
           request_bytes: float, response_bytes: float) -> tuple:
    """The stages of one transaction: the latency before the first link, then
    ``(link, wire bytes, fixed latency after it)`` per hop, with the device (and the
    latency before the first upstream link) between the two directions."""
    def hops(route: Sequence[Hop], wire_bytes: float, tail: float) -> list:
        return [(link, wire_bytes, route[k + 1][0] if k + 1 < len(route) else tail)
                for k, (_, link) in enumerate(route)]

    return (down[0][0], *hops(down, request_bytes, tail_down), (_DEVICE, up[0][0]),
            *hops(up, response_bytes, tail_up))
