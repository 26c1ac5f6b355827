"""A fixed-latency, fixed-bandwidth memory back-end (a Type 3 device's controller + media).

Detailed DRAM timing has its own issue; this back-end is enough for the interconnect:
requests are served in arrival order, each occupies the media for ``size / bandwidth``
and completes ``controller_latency + media_latency`` after its service starts.
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


class MemoryBackend(Component):
    """FIFO memory: ``access`` reserves the media and returns the completion time."""

    Params = MemoryBackendParams

    def __init__(self, sim, name, params=None, parent=None) -> None:
        super().__init__(sim, name, params, parent)
        p = self.params
        self._latency = p.controller_latency + p.media_latency
        self._ns_per_byte = 1e9 / p.media_bandwidth if p.media_bandwidth else 0.0
        self.free_at = 0.0
        self.accesses = 0
        self.users = 0

    def claim(self) -> None:
        """Register one more path (host) sending requests here."""
        self.users += 1

    @property
    def exclusive(self) -> bool:
        """One path only: requests arrive in the order they are reserved."""
        return self.users == 1

    def access(self, size: int, now: float) -> float:
        """Serve ``size`` bytes arriving at ``now``; return when the data is ready."""
        start = now if now > self.free_at else self.free_at
        self.free_at = start + size * self._ns_per_byte
        self.accesses += 1
        return self.free_at + self._latency
