"""``kind: mlc-loaded-latency`` — MLC-style loaded latency per memory policy (targets T4.1, T4.2).

The host's bandwidth threads (all cores but one, as MLC runs them) sweep the injected
delay; the epoch level (:mod:`cxlsim.memory.epoch`) finds, for each delay and each
memory placement (``modes``: bind to a node, interleave, weighted interleave), the
bandwidth they draw and the latency the remaining core measures. Also: MLC's
bandwidth by read/write mix and STREAM-like kernels per mode. The memory nodes come
from the topology (``nodes`` groups its DRAM and CXL devices into NUMA nodes).

``delays: []`` runs no loaded-latency sweep (only bandwidth by mix and STREAM): no
``points`` table, delay or band metrics, or curve figures. ``band: null`` (or no
delays) compares no band, so ``reference`` is then not needed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from pydantic import Field, model_validator

from cxlsim.apps.mlc import MIXES, MLC_DELAYS, bandwidth_by_mix, idle_latency, loaded_latency, stream
from cxlsim.experiments.memory_base import MemoryExperiment, weights_known
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import register
from cxlsim.memory.epoch import MemorySystem
from cxlsim.units import Time


@register("mlc-loaded-latency")
class MlcLoadedLatencyExperiment(MemoryExperiment):
    """Loaded latency vs injected delay per memory placement; bandwidth by mix; STREAM."""

    kind: str = "mlc-loaded-latency"
    modes: dict[str, dict[str, float]] = Field(
        min_length=1, description="mode -> page weights per node (bind: one node; "
                                  "interleave: all 1; weighted interleave)")
    reference: str | None = Field(None, description="the mode the others are compared with "
                                                    "over the band (needed with a band)")
    delays: list[Time] = Field(list(MLC_DELAYS), description=(
        "injected delays between accesses of the loaded-latency sweep; [] for no sweep"))
    read_fraction: float = Field(1.0, gt=0, le=1, description="loaded-latency traffic: "
                                                              "fraction of bytes read")
    band: tuple[Time, Time] | None = Field((150.0, 300.0), description=(
        "delay range compared with the reference (Selectel's lab report: 150-300 ns for databases "
        "and web servers), added to a non-empty sweep; null for no comparison"))
    band_points: int = Field(4, ge=2, description="delays added across the band")
    mixes: dict[str, float] = Field(dict(MIXES), description="bandwidth by mix: name -> "
                                                             "read fraction")
    stream: bool = Field(True, description="run the STREAM-like kernels per mode")

    @model_validator(mode="after")
    def _known(self) -> MlcLoadedLatencyExperiment:
        weights_known(self.modes, self.nodes)
        if self.reference is None and self.compared:
            raise ValueError("reference is missing: the modes are compared with it over the "
                             f"band; expected one of the modes {', '.join(self.modes)} (or "
                             "band: null)")
        if self.reference is not None and self.reference not in self.modes:
            raise ValueError(f"reference {self.reference!r} is not one of the modes "
                             f"{', '.join(self.modes)}")
        return self

    @property
    def compared(self) -> bool:
        """Whether the band is compared: it needs a band and a loaded-latency sweep."""
        return self.band is not None and bool(self.delays)

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        system = self.memory()
        band = np.linspace(*self.band, self.band_points) if self.compared else np.empty(0)
        delays = sorted({*self.delays, *band.tolist()})
        curves, mixes, kernels = [], [], []
        for mode, weights in self.modes.items():
            if delays:
                curve = loaded_latency(system, weights, self.workers, self.thread_mlp, delays,
                                       self.read_fraction)
                curve.insert(0, "mode", mode)
                curves.append(curve)
            mix = bandwidth_by_mix(system, weights, self.workers, self.thread_mlp, self.mixes)
            mix.insert(0, "mode", mode)
            mixes.append(mix)
            if self.stream:
                k = stream(system, weights, self.workers, self.thread_mlp)
                k.insert(0, "mode", mode)
                kernels.append(k)
        metrics: dict[str, float | str] = {"threads": self.workers, "mlp": self.thread_mlp}
        tables, figures = {}, {}
        if curves:
            points = pd.concat(curves, ignore_index=True)
            self._curve_metrics(system, points, band, metrics)
            tables["points"] = points
            figures = self.draw(lambda: self._curve_figures(points))
        else:
            for mode, weights in self.modes.items():
                metrics[f"idle_latency_ns_{mode}"] = idle_latency(system, weights)
        tables["mixes"] = pd.concat(mixes, ignore_index=True)
        if kernels:
            tables["stream"] = pd.concat(kernels, ignore_index=True)
        return RunResult(self.name, self, metrics, tables, figures)

    def _curve_metrics(self, system: MemorySystem, points: pd.DataFrame, band: np.ndarray,
                       metrics: dict[str, float | str]) -> None:
        """Per mode: bandwidth and latency at the least delay, idle latency, and (with a
        band) the bandwidth over the band relative to the reference's."""
        ref = points[points["mode"] == self.reference].set_index("delay_ns")["bandwidth_GBps"]
        zero = {}
        for mode, part in points.groupby("mode", sort=False):
            by_delay = part.set_index("delay_ns")
            zero[mode] = float(by_delay.loc[0.0, "bandwidth_GBps"]) if 0.0 in by_delay.index \
                else float(part["bandwidth_GBps"].max())
            metrics[f"bandwidth_GBps_delay0_{mode}"] = zero[mode]
            metrics[f"latency_ns_delay0_{mode}"] = float(part["latency_ns"].iloc[0])
            metrics[f"idle_latency_ns_{mode}"] = idle_latency(system, self.modes[mode])
            if band.size:
                in_band = by_delay.loc[band, "bandwidth_GBps"]
                rel = in_band / ref.loc[band] - 1
                metrics[f"band_bandwidth_GBps_{mode}"] = float(in_band.mean())
                metrics[f"band_max_rel_diff_{mode}"] = float(rel.abs().max())
                metrics[f"band_min_rel_diff_{mode}"] = float(rel.min())
        metrics["delay0_order"] = " > ".join(sorted(zero, key=zero.get, reverse=True))

    def _curve_figures(self, points: pd.DataFrame) -> dict[str, go.Figure]:
        """Latency vs bandwidth and bandwidth vs delay, the band shaded."""
        fig = px.line(points, x="bandwidth_GBps", y="latency_ns", color="mode", markers=True,
                      hover_data=["delay_ns"], title="MLC loaded latency",
                      labels={"bandwidth_GBps": "bandwidth (GB/s)",
                              "latency_ns": "loaded latency (ns)"})
        fig2 = px.line(points, x="delay_ns", y="bandwidth_GBps", color="mode", markers=True,
                       title="bandwidth vs injected delay",
                       labels={"delay_ns": "injected delay (ns)",
                               "bandwidth_GBps": "bandwidth (GB/s)"})
        if self.compared:
            fig2.add_vrect(x0=self.band[0], x1=self.band[1], opacity=0.1, line_width=0)
        return {"loaded latency": fig, "bandwidth vs delay": fig2}
