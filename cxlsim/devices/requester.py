"""Host-side traffic: a Poisson stream of CXL.mem requests on a path.

Arrivals are generated lazily (one pending event per source), so a long run keeps the
event heap shallow. Latencies are recorded only after the warm-up time: of every
request, and of reads and writes apart (their paths differ: RwD down, NDR up).
"""

from __future__ import annotations

from typing import Any

from cxlsim.engine import Component, call_later
from cxlsim.protocol.mem import MemPath, Transaction


class PoissonRequester(Component):
    """Issues reads (and writes, with probability ``write_fraction``) at ``rate`` per ns."""

    def __init__(self, sim: Any, name: str, path: MemPath, rate: float, count: int,
                 write_fraction: float = 0.0, parent: Component | None = None) -> None:
        super().__init__(sim, name, parent=parent)
        self.target = path
        self._mean_gap = 1.0 / rate
        self._left = count
        self._write_fraction = write_fraction
        self._rng = sim.rng
        self.latency = self.tally("latency")
        self.op_latency = {"read": self.tally("read_latency"),
                           "write": self.tally("write_latency")}
        self.completed = self.counter("completed")
        self.bytes = self.counter("bytes")
        call_later(self.env, self._rng.exponential(self._mean_gap), self._arrive)

    def _arrive(self, _event: Any) -> None:
        if self._write_fraction and self._rng.random() < self._write_fraction:
            self.target.write(self._done)
        else:
            self.target.read(self._done)
        self._left -= 1
        if self._left > 0:
            call_later(self.env, self._rng.exponential(self._mean_gap), self._arrive)

    def _done(self, txn: Transaction) -> None:
        now = self.env.now
        self.latency.record(txn.latency, now)
        self.op_latency[txn.op].record(txn.latency, now)
        self.completed.add()
        self.bytes.add(txn.size)
