"""A server application (database, web server) as memory demand: T4.3-T4.5.

The model (``models/apps/server-db.yaml`` holds the parameters and their sources):

* ``threads`` worker threads, one per core, each serving requests back to back (a
  saturated server: clients always waiting);
* a request is ``accesses`` memory accesses (last-level-cache misses), each after
  ``gap`` ns of work that hits in the caches -- the application's counterpart of MLC's
  injected delay; Selectel's lab report quotes 150-300 ns for PostgreSQL, MySQL and Nginx, so the
  model is evaluated over ``gap_min..gap_max`` and the throughput averaged;
* up to ``mlp`` accesses overlap (:class:`~cxlsim.memory.epoch.Demand`: per access the
  thread spends ``gap + L / mlp``); ``read_fraction`` of the bytes are reads;
* the memory policy places the pages (bind to DRAM, bind to CXL, interleave) and the
  epoch equilibrium gives each node's loaded latency at the bandwidth all workers draw.

Throughput (requests per second) is ``threads x rate / accesses``; a request's latency
is ``accesses / rate``. Everything that is not memory -- storage, network, locks, the
kernel -- is outside the model; it would dilute the memory's share of the time.

Because every access follows at least ``gap_min`` of work, ``threads`` workers can draw
no more than :func:`demand_ceiling` whatever their MLP: with Selectel's 150 ns and 48
workers, 48 x 96 B / 150 ns = 30.7 GB/s (a line read plus half a line written back). A
memory whose capacity is well above that queues little, so the request latency can rise
with the workers (:func:`latency_rise`) only by that little queueing divided by the MLP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.memory.epoch import Demand, MemorySystem
from cxlsim.mm.placement import policy_shares
from cxlsim.units import LINE_BYTES, Time


class ServerAppParams(StrictModel):
    """A saturated request-serving application (``models/apps/server-db.yaml``)."""

    name: str = Field(description="application name")
    gap_min: Time = Field(description="shortest work between two memory accesses")
    gap_max: Time = Field(description="longest work between two memory accesses")
    gap_points: int = Field(3, ge=1, description="gaps evaluated over [gap_min, gap_max]")
    mlp: float | None = Field(None, gt=0, description="accesses in flight per thread; "
                                                      "none = the CPU's mlp")
    read_fraction: float = Field(2 / 3, gt=0, le=1, description="fraction of the bytes read")
    accesses: int = Field(1000, ge=1, description="memory accesses per request")

    @model_validator(mode="after")
    def _range(self) -> ServerAppParams:
        if self.gap_max < self.gap_min:
            raise ValueError("gap_max must not be below gap_min")
        return self

    @property
    def gaps(self) -> np.ndarray:
        """The gaps evaluated, ns."""
        return np.linspace(self.gap_min, self.gap_max, self.gap_points)


def serve(system: MemorySystem, app: ServerAppParams, weights: Mapping[str, float],
          threads: int, mlp: float) -> dict[str, float]:
    """Throughput (requests/s, mean over the gaps), mean request latency (us), bandwidth,
    memory latency and the busiest memory queue's utilisation of ``threads`` workers
    with pages placed by ``weights``; ``mlp`` is used when the app gives none."""
    shares = policy_shares(weights)
    m = app.mlp or mlp
    rates, bandwidth, latency, busy = [], [], [], []
    for gap in app.gaps:
        eq = system.solve([Demand(threads, m, shares, float(gap), app.read_fraction)])
        rates.append(eq.rates[0])
        bandwidth.append(eq.bandwidth)
        latency.append(eq.latencies[0])
        busy.append(max(eq.utilisation[n] for n in shares))
    rate = float(np.mean(rates))  # accesses per ns per thread
    return {"throughput_rps": threads * rate * 1e9 / app.accesses,
            "request_latency_us": float(np.mean([app.accesses / r / 1e3 for r in rates])),
            "bandwidth_GBps": float(np.mean(bandwidth)) / 1e9,
            "memory_latency_ns": float(np.mean(latency)),
            "utilisation": float(np.mean(busy))}


def thread_sweep(system: MemorySystem, app: ServerAppParams,
                 modes: Mapping[str, Mapping[str, float]], threads: Sequence[int],
                 mlp: float) -> pd.DataFrame:
    """One row per (mode, thread count): throughput, request latency, bandwidth."""
    rows = []
    for mode, weights in modes.items():
        for n in threads:
            rows.append({"mode": mode, "threads": n, **serve(system, app, weights, n, mlp)})
    return pd.DataFrame(rows)


def demand_ceiling(app: ServerAppParams, threads: int) -> float:
    """The most bandwidth (GB/s, reads plus write-backs) ``threads`` workers can draw,
    whatever their MLP and the memory: one line read per ``gap_min`` of work each."""
    return threads * LINE_BYTES / app.read_fraction / float(app.gap_min)


def latency_rise(system: MemorySystem, app: ServerAppParams, weights: Mapping[str, float],
                 threads: int, mlp: float) -> float:
    """The mean request latency's relative rise from one worker to ``threads``."""
    one, many = (serve(system, app, weights, n, mlp)["request_latency_us"] for n in (1, threads))
    return many / one - 1


def plausible_grid(system: MemorySystem, app: ServerAppParams, slow: Mapping[str, float],
                   fast: Mapping[str, float], threads: Sequence[int],
                   mlps: Sequence[float]) -> pd.DataFrame:
    """One row per worker count of ``threads`` and MLP of ``mlps`` (values a source leaves
    open): the throughput change with pages placed by ``slow`` against ``fast``
    (``throughput_change``) and how much more the request latency rises from one worker
    to that many (``steeper``, :func:`latency_rise`). The counts need not be a real CPU's."""
    rows = []
    for m in mlps:
        a = app.model_copy(update={"mlp": m})
        for n in threads:
            change = (serve(system, a, slow, n, m)["throughput_rps"]
                      / serve(system, a, fast, n, m)["throughput_rps"] - 1)
            rows.append({"threads": n, "mlp": m, "throughput_change": change,
                         "steeper": latency_rise(system, a, slow, n, m)
                         - latency_rise(system, a, fast, n, m)})
    return pd.DataFrame(rows)
