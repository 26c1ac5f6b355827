"""One direction of a link at transaction level: serializer, ARB/MUX, retry buffer, replays.

A message handed to :meth:`LinkDirection.send` at the moment it reaches the transmitting
port waits for the serializer, occupies it for ``wire_bytes / bandwidth`` ns and is
delivered ``latency`` ns after its last byte left (port pipelines, propagation,
retimers and the receiver's flit accumulation). The serializer is a ``free_at``
timestamp, not a process: an idle link costs one event per message (the delivery); a
busy one adds a single wake-up event per message to pick the next one.

ARB/MUX: two stacks (``IO`` and ``CACHEMEM``) share the direction under weighted round
robin at flit granularity (deficit round robin with a quantum of ``weight`` flits), and
an idle stack leaves the whole link to the other (work-conserving).

Link-layer retry: at most ``retry_buffer`` flits may be unacknowledged; an Ack returns
``ack_every`` flits after a flit, one round trip later, so a buffer smaller than the Ack
round trip caps the transmitter's rate (applied as that steady-state cap, so that bulk
messages of many flits are not stalled artificially). With a bit error rate, a flit fails its CRC with
probability ``1 - (1 - ber)**bits``; the receiver's RETRY.Req sequence travels back, the
transmitter answers and replays every flit sent since the bad one. The cost of errors
is that replay time, not a fixed penalty.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from cxlsim.engine import Component, call_later
from cxlsim.link.params import LinkParams
from cxlsim.link.tlp import cachemem_scale, io_bandwidth

IO, CACHEMEM = 0, 1

#: Flits of the RETRY.Req (or RETRY.Ack) sequence: 5 RETRY.Frame + 1 (CXL 2.0 spec §4.2.8).
RETRY_SEQUENCE_FLITS = 6


class LinkDirection(Component):
    """A serializer shared by two protocol stacks, with delivery after a fixed latency.

    ``bandwidth`` (B/s) is what the serializer moves: the raw rate for flit-packed
    CXL.cachemem messages (their wire bytes include the flit overheads), the TLP rate
    after DLLP overheads for PCIe. PCIe / CXL.io TLPs get the TLP rate on a CXL link
    too (:func:`~cxlsim.link.tlp.io_bandwidth`); a link's ``cxl_penalty`` stretches
    CXL.cachemem messages only (:func:`~cxlsim.link.tlp.cachemem_scale`). Delivery comes
    ``params.one_way_latency`` plus one flit of accumulation at the receiver after the
    last byte leaves.
    """

    Params = LinkParams

    def __init__(self, sim: Any, name: str, params: Any = None, parent: Component | None = None,
                 bandwidth: float | None = None, monitor: bool = False) -> None:
        super().__init__(sim, name, params, parent)
        p = self.params
        bandwidth = bandwidth or p.raw_bandwidth
        self._ns_per_byte = 1e9 / bandwidth
        self._flit_ns = p.flit_bytes * 1e9 / p.raw_bandwidth
        self._latency = p.one_way_latency + self._flit_ns
        self._flit_bytes = p.flit_bytes
        self._quantum = (max(p.weight_io, 1) * p.flit_bytes,
                         max(p.weight_cachemem, 1) * p.flit_bytes)
        self._queues: tuple[deque, deque] = (deque(), deque())
        self._deficit = [0.0, 0.0]
        self._turn = CACHEMEM
        self.free_at = 0.0
        self._waking = False
        # A flit stays in the retry buffer until its Ack returns: one round trip plus
        # the ``ack_every`` flits an Ack waits for. A buffer holding fewer flits than
        # are sent in that time caps the transmitter at buffer / round trip.
        ack_rtt = 2 * self._latency + p.ack_every * self._flit_ns
        if p.retry_buffer and p.flit is not None:  # CXL link-layer retry, in flits
            self.retry_cap = min(1.0, p.retry_buffer * self._flit_ns / ack_rtt)
            self._ns_per_byte /= self.retry_cap
        else:
            self.retry_cap = 1.0
        self._ns_per_byte_io = self._ns_per_byte * bandwidth / io_bandwidth(p, bandwidth)
        self._ns_per_byte *= cachemem_scale(p)
        self._p_flit_error = -math.expm1(p.flit_bytes * 8 * math.log1p(-p.ber)) if p.ber else 0.0
        self._rng = sim.rng
        self.busy_ns = 0.0
        self.sent_bytes = [0, 0]
        self.replays = 0
        self.users = 0
        self.last_start = 0.0
        self._monitor = monitor
        if monitor:
            self._in_system = self.level("in_system")
            self._sojourn = self.tally("sojourn")
            self._wait = self.tally("wait")

    @property
    def latency(self) -> float:
        """Last byte out -> delivered, ns."""
        return self._latency

    @property
    def flit_ns(self) -> float:
        """Serialization time of one flit."""
        return self._flit_ns

    def send(self, stack: int, wire_bytes: float, deliver: Callable[[Any], None],
             payload: Any = None, extra_delay: float = 0.0) -> None:
        """Transmit ``wire_bytes`` for ``stack`` now; call ``deliver(payload)`` on arrival.

        ``extra_delay`` is added after delivery, to fold the next node's fixed latency
        (a switch hop, a root port) into the same event.
        """
        now = self.env.now
        if self._monitor:
            self._in_system.add(1, now)
        if self._waking or self._queues[0] or self._queues[1] or now < self.free_at:
            self._queues[stack].append((now, wire_bytes, deliver, payload, extra_delay))
            if not self._waking:
                self._wake_at(self.free_at)
            return
        self._transmit(now, now, stack, wire_bytes, deliver, payload, extra_delay)

    def forward(self, stack: int, wire_bytes: float, at: float, deliver: Callable[[Any], None],
                payload: Any = None, extra_delay: float = 0.0) -> None:
        """Like :meth:`send` for a message reaching the port at ``at`` (>= now): reserved
        ahead when the direction is :attr:`exclusive`, else handed over by an event."""
        if self.exclusive:
            delivered = self.reserve(wire_bytes, at, stack)
            call_later(self.env, delivered + extra_delay - self.env.now,
                       lambda ev: deliver(ev.payload), payload)
        elif at > self.env.now:
            call_later(self.env, at - self.env.now, lambda _: self.send(
                stack, wire_bytes, deliver, payload, extra_delay))
        else:
            self.send(stack, wire_bytes, deliver, payload, extra_delay)

    def _wake_at(self, when: float) -> None:
        self._waking = True
        call_later(self.env, max(when - self.env.now, 0.0), self._wake)

    def _wake(self, _event: Any) -> None:
        self._waking = False
        stack = self._pick()
        arrived, wire_bytes, deliver, payload, extra = self._queues[stack].popleft()
        self._transmit(self.env.now, arrived, stack, wire_bytes, deliver, payload, extra)
        if self._queues[0] or self._queues[1]:
            self._wake_at(self.free_at)

    def _pick(self) -> int:
        """Deficit round robin between the stacks, quantum = weight flits (ARB/MUX WRR).

        The stack whose turn it is is visited first in every round; each visit adds its
        quantum until the head message fits. The rounds are counted, not looped, so a
        bulk message many flits long costs no more than a small one.
        """
        queues, deficit, quantum = self._queues, self._deficit, self._quantum
        a = self._turn
        b = 1 - a
        if not queues[b]:
            deficit[a] = 0.0  # alone: no credit carried into contention
            return a
        if not queues[a]:
            deficit[a] = 0.0
            deficit[b] = 0.0
            self._turn = b
            return b
        rounds_a = max(0, math.ceil((queues[a][0][1] - deficit[a]) / quantum[a]))
        rounds_b = max(0, math.ceil((queues[b][0][1] - deficit[b]) / quantum[b]))
        if rounds_a <= rounds_b:
            deficit[a] += rounds_a * quantum[a] - queues[a][0][1]
            deficit[b] += rounds_a * quantum[b]
            return a
        deficit[a] += (rounds_b + 1) * quantum[a]
        deficit[b] += rounds_b * quantum[b] - queues[b][0][1]
        self._turn = b
        return b

    def claim(self) -> None:
        """Register one more sender (a path, a DMA engine) using this direction."""
        self.check_joinable()
        self.users += 1

    @property
    def exclusive(self) -> bool:
        """One in-order sender and no monitors: messages may be reserved ahead of time."""
        return self.users == 1 and not self._monitor

    @property
    def monitored(self) -> bool:
        """Keeps wait and sojourn statistics (every message goes through events)."""
        return self._monitor

    @property
    def idle(self) -> bool:
        """No message waiting for the serializer."""
        return not (self._waking or self._queues[0] or self._queues[1])

    @property
    def error_free(self) -> bool:
        """No bit errors: a message's serialization time is fixed (no random replays)."""
        return not self._p_flit_error

    @property
    def cachemem_ns_per_byte(self) -> float:
        """Serialization time of a CXL.cachemem byte (retry cap and ``cxl_penalty`` in)."""
        return self._ns_per_byte

    def reserve(self, wire_bytes: float, at: float, stack: int = CACHEMEM) -> float:
        """Serialize a message that reaches the port at ``at`` (FIFO); return its delivery time.

        No event: for an :attr:`exclusive` direction the caller hands messages over in
        time order, so reserving in call order is reserving in arrival order.
        """
        start = at if at > self.free_at else self.free_at
        duration = wire_bytes * (self._ns_per_byte if stack else self._ns_per_byte_io)
        if self._p_flit_error and self._rng.random() < -math.expm1(
                wire_bytes / self._flit_bytes * math.log1p(-self._p_flit_error)):
            duration += self._replay_ns(duration)
        self.last_start = start
        self.free_at = start + duration
        self.busy_ns += duration
        self.sent_bytes[stack] += wire_bytes
        return self.free_at + self._latency

    def _transmit(self, now: float, arrived: float, stack: int, wire_bytes: float,
                  deliver: Callable, payload: Any, extra: float) -> None:
        delivered = self.reserve(wire_bytes, max(now, arrived), stack)
        if self._monitor:
            self._wait.record(self.last_start - arrived, now)
        call_later(self.env, delivered + extra - self.env.now,
                   (lambda ev: self._delivered(ev, arrived, deliver)) if self._monitor
                   else (lambda ev: deliver(ev.payload)), payload)

    def _delivered(self, event: Any, arrived: float, deliver: Callable) -> None:
        now = self.env.now
        self._in_system.add(-1, now)
        self._sojourn.record(now - arrived, now)
        deliver(event.payload)

    def _replay_ns(self, duration: float) -> float:
        """Time one CRC error costs the transmitter.

        The receiver sees the bad flit one latency later and sends the RETRY.Req
        sequence back; the transmitter answers with RETRY.Ack and replays from the bad
        flit, so everything sent during that round trip is sent again, and so is the
        message itself.
        """
        self.replays += 1
        return 2 * self._latency + 2 * RETRY_SEQUENCE_FLITS * self._flit_ns + duration

    def utilization(self, now: float | None = None) -> float:
        """Fraction of elapsed time the serializer was busy."""
        now = self.env.now if now is None else now
        return self.busy_ns / now if now > 0 else 0.0
