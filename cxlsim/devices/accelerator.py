"""An accelerator's compute engine: a kernel that processes bytes at a throughput.

A run of ``n`` bytes takes ``setup + n / throughput``; runs are served one at a time
in order (one kernel instance), so a busy engine delays the next run. The throughput
can be given directly or as a measured time for a reference amount of data.
"""

from __future__ import annotations

from typing import Any

import simpy
from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.engine import Component
from cxlsim.units import Bandwidth, Size, Time


class ComputeEngineParams(StrictModel):
    """Speed of a kernel: ``throughput``, or ``time`` measured for ``per`` bytes."""

    throughput: Bandwidth | None = Field(None, description="bytes processed per second")
    time: Time | None = Field(None, description="measured time for `per` bytes")
    per: Size | None = Field(None, description="bytes the measured `time` was for")
    setup: Time = Field(0.0, description="fixed cost of each run (launch, sync)")

    @model_validator(mode="after")
    def _one_speed(self) -> ComputeEngineParams:
        if (self.throughput is None) == (self.time is None or self.per is None):
            raise ValueError("give either 'throughput' or both 'time' and 'per'")
        return self

    @property
    def ns_per_byte(self) -> float:
        """Kernel time per byte, ns."""
        if self.throughput is not None:
            return 1e9 / self.throughput
        return self.time / self.per


class ComputeEngine(Component):
    """A kernel engine: ``run(n)`` returns the event of its completion."""

    Params = ComputeEngineParams

    def __init__(self, sim: Any, name: str, params: Any = None,
                 parent: Component | None = None) -> None:
        super().__init__(sim, name, params, parent)
        self._ns_per_byte = self.params.ns_per_byte
        self.free_at = 0.0
        self.busy_ns = 0.0

    def run(self, nbytes: int) -> simpy.Event:
        """Process ``nbytes`` after any earlier run; the event fires when done."""
        now = self.env.now
        start = max(now, self.free_at)
        duration = self.params.setup + nbytes * self._ns_per_byte
        self.free_at = start + duration
        self.busy_ns += duration
        return self.env.timeout(self.free_at - now)
