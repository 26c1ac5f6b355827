"""Host-side traffic: a Poisson stream of CXL.mem requests on a path.

The arrival gaps and the read/write choices are drawn up front from the requester's own
random stream; on events, one arrival is pending at a time, so a long run keeps the
event heap shallow. Alone on an exclusive path the stream is computed at once
(:mod:`cxlsim.protocol.stream`). Latencies are recorded only after the warm-up time: of
every request, and of reads and writes apart (their paths differ: RwD down, NDR up).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cxlsim.engine import Component, call_later
from cxlsim.protocol.mem import MemPath, Transaction
from cxlsim.protocol.stream import POISSON, REQUEST_BYTES, Source


class PoissonRequester(Source):
    """Issues reads (and writes, with probability ``write_fraction``) at ``rate`` per ns."""

    kind = POISSON

    def __init__(self, sim: Any, name: str, path: MemPath, rate: float, count: int,
                 write_fraction: float = 0.0, parent: Component | None = None) -> None:
        super().__init__(sim, name, [path], count, parent)
        self.target = path
        self._mean_gap = 1.0 / rate
        self._write_fraction = write_fraction
        self.latency = self.tally("latency")
        self.op_latency = {"read": self.tally("read_latency"),
                           "write": self.tally("write_latency")}
        self.completed = self.counter("completed")
        self.bytes = self.counter("bytes")

    def _draw(self) -> tuple[np.ndarray, np.ndarray]:
        gaps = self.rng.exponential(self._mean_gap, self.count)
        writes = (self.rng.random(self.count) < self._write_fraction
                  if self._write_fraction else np.zeros(self.count, bool))
        return gaps, writes

    def _begin(self) -> None:
        gaps, writes = self._draw()
        self._gaps, self._writes = gaps.tolist(), writes.tolist()
        self._next = 0
        call_later(self.env, self._gaps[0], self._arrive)

    def _arrive(self, _event: Any) -> None:
        k = self._next
        if self._writes[k]:
            self.target.write(self._done)
        else:
            self.target.read(self._done)
        self._next = k + 1
        if self._next < self.count:
            call_later(self.env, self._gaps[self._next], self._arrive)

    def _done(self, txn: Transaction) -> None:
        now = self.env.now
        self.latency.record(txn.latency, now)
        self.op_latency[txn.op].record(txn.latency, now)
        self.completed.add()
        self.bytes.add(txn.size)

    def _deliver(self, done: dict[str, np.ndarray]) -> None:
        time, latency, write = done["time"], done["latency"], done["write"]
        self.latency.record_many(latency, time)
        self.op_latency["read"].record_many(latency[~write], time[~write])
        self.op_latency["write"].record_many(latency[write], time[write])
        counted = int(np.count_nonzero(time >= self.sim.stats.warmup))
        self.completed.add(counted)
        self.bytes.add(counted * REQUEST_BYTES)
