"""A memory back-end behind a CXL port: a device's controller and its media.

Requests are served in arrival order. The controller takes ``request_time`` per
request (its processing rate: one request per ``request_time``), then the media is
occupied for ``size / media_bandwidth``; the data is ready ``controller_latency +
media_latency`` after that. A controller accepts at most ``request_buffer`` requests
at once: a path to it (:class:`~cxlsim.protocol.mem.MemPath`) holds one of as many
credits per request from issue until the credit for the completed request is back, so
a full buffer stalls the requesters (back-pressure). Detailed DRAM timing behind the
controller is the epoch level's (:class:`~cxlsim.memory.dram.DramTarget`).
"""

from __future__ import annotations

from pydantic import Field

from cxlsim.config.base import StrictModel
from cxlsim.engine import Component
from cxlsim.units import Bandwidth, Time


class MemoryBackendParams(StrictModel):
    """Timing of a device's memory path behind its CXL port."""

    controller_latency: Time = Field(0.0, description="device controller latency")
    media_latency: Time = Field(0.0, description="media access latency")
    media_bandwidth: Bandwidth | None = Field(None, description="media bandwidth; none = unlimited")
    request_time: Time = Field(0.0, ge=0, description=(
        "controller processing time per request (throughput: one request per request_time)"))
    request_buffer: int | None = Field(None, ge=1, description=(
        "requests the controller accepts at once (credits it grants); none = unlimited"))


class MemoryBackend(Component):
    """FIFO memory: ``access`` reserves the media and returns the completion time."""

    Params = MemoryBackendParams

    def __init__(self, sim, name, params=None, parent=None) -> None:
        super().__init__(sim, name, params, parent)
        p = self.params
        self._latency = p.controller_latency + p.media_latency
        self._ns_per_byte = 1e9 / p.media_bandwidth if p.media_bandwidth else 0.0
        self.controller_free = 0.0
        self.free_at = 0.0
        self.accesses = 0
        self.users = 0

    def claim(self) -> None:
        """Register one more path (host) sending requests here."""
        self.check_joinable()
        self.users += 1

    @property
    def exclusive(self) -> bool:
        """One path only: requests arrive in the order they are reserved."""
        return self.users == 1

    @property
    def request_buffer(self) -> int | None:
        """Requests the controller holds at once (None: unlimited)."""
        return self.params.request_buffer

    def timing(self) -> tuple[float, float, float]:
        """(request_time, ns per byte of media, latency after the media): what
        :meth:`access` computes with, for the compiled stream (:mod:`cxlsim.protocol.stream`)."""
        return self.params.request_time, self._ns_per_byte, self._latency

    def access(self, size: int, now: float) -> float:
        """Serve ``size`` bytes arriving at ``now``; return when the data is ready."""
        if self.params.request_time:
            now = max(now, self.controller_free) + self.params.request_time
            self.controller_free = now
        start = now if now > self.free_at else self.free_at
        self.free_at = start + size * self._ns_per_byte
        self.accesses += 1
        return self.free_at + self._latency
