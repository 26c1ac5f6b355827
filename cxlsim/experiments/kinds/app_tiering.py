"""``kind: app-tiering`` — a server application on DRAM, on CXL, interleaved (T4.3-T4.5).

The application of :mod:`cxlsim.apps.server` (``app: preset apps/server-db``) runs with
its pages placed by each of ``modes``; its throughput is compared with ``reference``
at ``threads`` workers, and its mean request latency is traced over ``thread_sweep``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
from pydantic import Field, model_validator

from cxlsim.apps.server import ServerAppParams, serve, thread_sweep
from cxlsim.experiments.memory_base import MemoryExperiment, weights_known
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import register


@register("app-tiering")
class AppTieringExperiment(MemoryExperiment):
    """Server-application throughput and request latency per page placement."""

    kind: str = "app-tiering"
    app: ServerAppParams = Field(description="the application (e.g. preset apps/server-db)")
    modes: dict[str, dict[str, float]] = Field(min_length=1,
                                               description="mode -> page weights per node")
    reference: str = Field(description="the mode throughput is compared with")
    thread_sweep: list[int] = Field([1, 2, 4, 8, 16, 24, 32, 40, 48], min_length=2,
                                    description="worker counts for the latency curve")

    @model_validator(mode="after")
    def _known(self) -> AppTieringExperiment:
        weights_known(self.modes, self.nodes)
        if self.reference not in self.modes:
            raise ValueError(f"reference {self.reference!r} is not one of the modes")
        return self

    @property
    def workers(self) -> int:
        """A server uses every core (no MLC latency core)."""
        return self.threads or self.cpu.cores

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        system = self.memory()
        mlp = self.thread_mlp
        at = {mode: serve(system, self.app, w, self.workers, mlp)
              for mode, w in self.modes.items()}
        ref = at[self.reference]["throughput_rps"]
        metrics: dict[str, float] = {"threads": self.workers, "mlp": self.app.mlp or mlp}
        for mode, r in at.items():
            metrics[f"throughput_rps_{mode}"] = r["throughput_rps"]
            metrics[f"throughput_change_{mode}"] = r["throughput_rps"] / ref - 1
            metrics[f"memory_latency_ns_{mode}"] = r["memory_latency_ns"]
            metrics[f"bandwidth_GBps_{mode}"] = r["bandwidth_GBps"]
            metrics[f"utilisation_{mode}"] = r["utilisation"]
        sweep = thread_sweep(system, self.app, self.modes, sorted(self.thread_sweep), mlp)
        for mode, part in sweep.groupby("mode", sort=False):
            lat = part["request_latency_us"].to_numpy()
            metrics[f"request_latency_us_min_threads_{mode}"] = float(lat[0])
            metrics[f"request_latency_us_max_threads_{mode}"] = float(lat[-1])
            metrics[f"request_latency_rise_{mode}"] = float(lat[-1] / lat[0] - 1)
            metrics[f"request_latency_monotone_{mode}"] = bool(np.all(np.diff(lat) >= 0))

        def figures() -> dict:
            fig = px.line(sweep, x="threads", y="request_latency_us", color="mode",
                          markers=True,
                          title=f"{self.app.name}: mean request latency vs worker threads",
                          labels={"request_latency_us": "request latency (us)"})
            return {"latency": fig}

        modes = pd.DataFrame([{"mode": mode, "throughput_rps": r["throughput_rps"],
                               "throughput_change": r["throughput_rps"] / ref - 1,
                               "memory_latency_ns": r["memory_latency_ns"],
                               "bandwidth_GBps": r["bandwidth_GBps"],
                               "utilisation": r["utilisation"]} for mode, r in at.items()])
        return RunResult(self.name, self, metrics, {"modes": modes, "threads": sweep},
                         self.draw(figures))
