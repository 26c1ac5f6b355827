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

    ``down`` and ``up`` list the hops from the host and from the device; ``tail_down``
    and ``tail_up`` are the fixed latencies after the last link (into the device, into
    the host's home agent). ``wire`` gives each message kind's cost in wire bytes, from
    the flit packer of the link's mode.
    """

    def __init__(self, env: Any, down: Sequence[Hop], up: Sequence[Hop], device: MemoryBackend,
                 wire: Mapping[str, float], tail_down: float = 0.0, tail_up: float = 0.0,
                 credits: int = 32) -> None:
        self.env = env
        self.device = device
        self.req_credits = CreditPool(env, credits)
        self.rwd_credits = CreditPool(env, credits)
        self._credit_return = sum(lat + link.latency for lat, link in up) + tail_up
        self._up_head = up[0][0]
        self._down_head = down[0][0]
        self._req = _chain(down, wire[M2S_REQ], tail_down, self._at_device)
        self._rwd = _chain(down, wire[M2S_RWD], tail_down, self._at_device)
        self._drs = _chain(up, wire[S2M_DRS], tail_up, self._at_host)
        self._ndr = _chain(up, wire[S2M_NDR], tail_up, self._at_host)
        self.completed = 0

    def read(self, done: Callable[[Transaction], None], size: int = 64) -> Transaction:
        """Issue a MemRd now."""
        txn = Transaction(self.env.now, size, False, done)
        self.req_credits.take(self._issue, txn)
        return txn

    def write(self, done: Callable[[Transaction], None], size: int = 64) -> Transaction:
        """Issue a MemWr now."""
        txn = Transaction(self.env.now, size, True, done)
        self.rwd_credits.take(self._issue, txn)
        return txn

    def _issue(self, txn: Transaction) -> None:
        (self._rwd if txn.write else self._req)(txn, self.env.now + self._down_head)

    def _at_device(self, txn: Transaction) -> None:
        now = self.env.now
        (self.rwd_credits if txn.write else self.req_credits).give_back(now + self._credit_return)
        ready = self.device.access(txn.size, now)
        (self._ndr if txn.write else self._drs)(txn, ready + self._up_head)

    def _at_host(self, txn: Transaction) -> None:
        txn.completed = self.env.now
        self.completed += 1
        txn.done(txn)


def _chain(hops: Sequence[Hop], wire_bytes: float, tail: float,
           final: Callable[[Transaction], None]) -> Callable[[Transaction, float], None]:
    """A function sending a message through ``hops`` and then calling ``final``.

    The first link is entered at a given time (its feeder is in time order); each later
    hop's fixed latency is folded into the previous link's delivery.
    """
    deliver = final
    for i in range(len(hops) - 1, 0, -1):
        link, extra = hops[i][1], (hops[i + 1][0] if i + 1 < len(hops) else tail)
        deliver = _forwarder(link, wire_bytes, deliver, extra)
    first = hops[0][1]
    first_extra = hops[1][0] if len(hops) > 1 else tail

    def enter(txn: Transaction, at: float) -> None:
        first.send(CACHEMEM, wire_bytes, deliver, txn, first_extra, at)

    return enter


def _forwarder(link: LinkDirection, wire_bytes: float, deliver: Callable, extra: float
               ) -> Callable[[Transaction], None]:
    def forward(txn: Transaction) -> None:
        link.send(CACHEMEM, wire_bytes, deliver, txn, extra)

    return forward
