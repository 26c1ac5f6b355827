"""CXL.cache transactions between a device's cache (Type 1/2) and host memory.

Flows (CXL 2.0 spec §3.2.4):

* read (RdShared, RdOwn, RdCurr, RdAny): D2H Req up; the host's home agent resolves
  coherence and reads memory; H2D Rsp GO and H2D Data (one 64 B line) down.
* write (DirtyEvict, WrInv, ItoMWr, MemWr): D2H Req up; the home agent answers
  GO_WritePull down; the device sends D2H Data up, written to host memory.
* snoop (SnpData, SnpInv, SnpCur), host to device: H2D Req down; the device looks up its
  cache; D2H Rsp up, with D2H Data when the line was modified (RspIFwdM / RspSFwdM).

D2H Req is credited to the host and H2D Req (snoops) to the device; responses and
data are pre-allocated (CXL 2.0 Table 8). The home agent's coherence work and the
device's lookup are fixed latencies; host memory is a FIFO memory back-end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cxlsim.protocol.credits import CreditPool
from cxlsim.protocol.journey import (SERVE, Hop, MemoryPort, Route, Transaction, advance,
                                     link_steps)

D2H_REQ, D2H_RSP, D2H_DATA = "D2H_REQ", "D2H_RSP", "D2H_DATA"
H2D_REQ, H2D_RSP, H2D_DATA = "H2D_REQ", "H2D_RSP", "H2D_DATA"

READS = ("RdShared", "RdOwn", "RdCurr", "RdAny")
WRITES = ("DirtyEvict", "WrInv", "ItoMWr", "MemWr")
SNOOPS = ("SnpData", "SnpInv", "SnpCur")


class FixedDelay:
    """A stage with a fixed latency and no capacity limit (never queues, so never shared)."""

    exclusive = True

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def __call__(self, txn: Transaction, t: float) -> float:
        return t + self.latency


class CachePath(Route):
    """CXL.cache between one device and its host's memory.

    ``up`` holds the hops from the device to the host and ``down`` the hops back (each
    the latency before a link direction); ``tail_up``/``tail_down`` the latency after
    the last link. ``home_latency`` is the home agent's coherence resolution,
    ``snoop_latency`` the device's cache lookup for a snoop (spec target 50 ns, CXL 2.0).
    """

    def __init__(self, env: Any, up: Sequence[Hop], down: Sequence[Hop], memory: MemoryPort,
                 wire: Mapping[str, float], tail_up: float = 0.0, tail_down: float = 0.0,
                 home_latency: float = 0.0, snoop_latency: float = 50.0,
                 credits: int = 32) -> None:
        self.env = env
        self.memory = memory
        self.d2h_credits = CreditPool(env, credits)
        self.h2d_credits = CreditPool(env, credits)
        # Reads, write-backs and snoops reach the same link (and host memory) at
        # different offsets from their issue, so not in issue order: claim twice, so
        # these stages are entered by event in order of arrival, never reserved ahead.
        for _, link in (*up, *down):
            link.claim()
            link.claim()
        memory.claim()
        memory.claim()
        home = FixedDelay(home_latency)
        lookup = FixedDelay(snoop_latency)
        self._credit_up = sum(lat + link.latency for lat, link in down) + tail_down
        self._credit_down = sum(lat + link.latency for lat, link in up) + tail_up
        self._up_head, self._down_head = up[0][0], down[0][0]
        go_data = wire[H2D_DATA] + wire[H2D_RSP]
        self._read = (*link_steps(up, wire[D2H_REQ], tail_up),
                      (SERVE, memory, self._home_read, down[0][0]),
                      *link_steps(down, go_data, tail_down))
        self._write = (*link_steps(up, wire[D2H_REQ], tail_up),
                       (SERVE, home, self._home_pull, down[0][0]),
                       *link_steps(down, wire[H2D_RSP], tail_down + up[0][0]),
                       *link_steps(up, wire[D2H_DATA], tail_up),
                       (SERVE, memory, self._home_write, 0.0))
        self._snoop_clean = (*link_steps(down, wire[H2D_REQ], tail_down),
                             (SERVE, lookup, self._device_snooped, up[0][0]),
                             *link_steps(up, wire[D2H_RSP], tail_up))
        self._snoop_dirty = (*self._snoop_clean[:-len(up)],
                             *link_steps(up, wire[D2H_RSP] + wire[D2H_DATA], tail_up))
        self._home = home
        self._lookup = lookup

    def read(self, done: Callable[[Transaction], None], op: str = "RdShared") -> Transaction:
        """The device reads a line of host memory; ``done`` when the data reaches it."""
        return self._issue(op, READS, self._read, self.d2h_credits, self._up_head, done)

    def write(self, done: Callable[[Transaction], None], op: str = "DirtyEvict") -> Transaction:
        """The device writes a line back; ``done`` when the data is in host memory."""
        return self._issue(op, WRITES, self._write, self.d2h_credits, self._up_head, done)

    def snoop(self, done: Callable[[Transaction], None], op: str = "SnpData",
              dirty: bool = False) -> Transaction:
        """The host snoops the device; a ``dirty`` line comes back with the response."""
        steps = self._snoop_dirty if dirty else self._snoop_clean
        txn = self._issue(op, SNOOPS, steps, self.h2d_credits, self._down_head, done)
        txn.data = dirty
        return txn

    def _issue(self, op: str, allowed: tuple[str, ...], steps: tuple, credits: CreditPool,
               head: float, done: Callable[[Transaction], None]) -> Transaction:
        if op not in allowed:
            raise ValueError(f"{op!r} is not one of {', '.join(allowed)}")
        txn = Transaction(self.env.now, 64, op, done)
        credits.take(lambda t: advance(self.env, t, steps, 0, self.env.now + head,
                                       self._finish), txn)
        return txn

    def _home_read(self, txn: Transaction, t: float) -> float:
        self.d2h_credits.give_back(t + self._credit_up)
        return self.memory.access(txn.size, self._home.latency + t)

    def _home_pull(self, txn: Transaction, t: float) -> float:
        self.d2h_credits.give_back(t + self._credit_up)
        return t + self._home.latency

    def _home_write(self, txn: Transaction, t: float) -> float:
        return self.memory.access(txn.size, t)

    def _device_snooped(self, txn: Transaction, t: float) -> float:
        self.h2d_credits.give_back(t + self._credit_down)
        return t + self._lookup.latency
