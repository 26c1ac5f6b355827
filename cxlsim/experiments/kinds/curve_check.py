"""``kind: curve-check`` — a memory target's model against measured loaded-latency curves.

For each measured curve (a read fraction, points of total bandwidth and mean read
latency), the epoch level's model of the same target on the topology gives its read
latency at each measured bandwidth and mix. The error is reported point by point and,
over the points between ``band`` fractions of the curve's maximum bandwidth, as a mean
absolute error; the model's saturation bandwidth stands beside the measured maximum.
The unloaded latency is the topology's (for the shipped Mess platforms: the measured
curves' lowest-load point, so the rows built on them say ``idle calibrated``); every
other input is the parts' own, and the comparison shows where the rise above that
latency holds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from pydantic import Field, ValidationInfo, field_validator

from cxlsim.experiments.memory_base import curve_targets
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, HostName, register
from cxlsim.memory.curvefile import CurveFileSpec
from cxlsim.memory.epoch import MemorySystem
from cxlsim.topology import Topology
from cxlsim.topology.schema import TopologySpec


@register("curve-check")
class CurveCheckExperiment(ExperimentSpec):
    """Modelled vs measured loaded latency of memory targets, point by point."""

    kind: str = "curve-check"
    topology: TopologySpec = Field(description="the system whose targets are modelled")
    host: HostName = Field("host0", validate_default=True, description="the host reading")
    curves: dict[str, CurveFileSpec] = Field(
        min_length=1, description="memory target -> its measured curves (a curve file, path "
                                  "relative to this file, or the same inline)")
    band: tuple[float, float] = Field((0.1, 0.9), description=(
        "fractions of each curve's maximum bandwidth between which the mean error is taken"))

    @field_validator("curves")
    @classmethod
    def _targets(cls, curves: dict[str, CurveFileSpec], info: ValidationInfo
                 ) -> dict[str, CurveFileSpec]:
        return curve_targets(curves, info)

    @field_validator("band")
    @classmethod
    def _band_order(cls, band: tuple[float, float]) -> tuple[float, float]:
        lo, hi = band
        if not 0 <= lo < hi <= 1:
            raise ValueError(f"expected two fractions 0 <= low < high <= 1; found {band}")
        return band

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        system = MemorySystem.from_topology(Topology.from_spec(self.topology), self.host)
        rows, summary = [], []
        lo, hi = self.band
        for name, spec in self.curves.items():
            node = system.nodes[name]
            for curve in spec.curves:
                r = curve.read_fraction
                top = max(bw for bw, _ in curve.points)
                errors = []
                for bw, measured in curve.points:
                    model = node.read_latency(bw * r, bw * (1 - r))
                    inside = lo * top <= bw <= hi * top
                    rows.append({"target": name, "read_fraction": r, "bandwidth_GBps": bw / 1e9,
                                 "measured_ns": measured, "model_ns": model,
                                 "error_ns": model - measured, "in_band": inside})
                    if inside:
                        errors.append(model - measured)
                errors = np.array(errors)
                worst = int(np.argmax(np.abs(errors))) if errors.size else 0
                in_band = [row for row in rows[-len(curve.points):] if row["in_band"]]
                summary.append({
                    "target": name, "read_fraction": r, "points": len(errors),
                    "mean_abs_error_ns": float(np.mean(np.abs(errors))) if errors.size else np.nan,
                    "worst_error_ns": float(errors[worst]) if errors.size else np.nan,
                    "worst_at_GBps": in_band[worst]["bandwidth_GBps"] if in_band else np.nan,
                    "band_GBps": (lo * top / 1e9, hi * top / 1e9),
                    "measured_max_GBps": top / 1e9,
                    "model_capacity_GBps": node.capacity(r) / 1e9})
        points, summary = pd.DataFrame(rows), pd.DataFrame(summary)
        metrics = {"worst_mean_abs_error_ns": float(summary["mean_abs_error_ns"].max())}
        return RunResult(self.name, self, metrics, {"points": points, "summary": summary},
                         self.draw(lambda: {"model vs measured": _figure(points)}))


def _figure(points: pd.DataFrame) -> go.Figure:
    """Measured curves as markers, the model at the same bandwidths as lines."""
    fig = go.Figure()
    for (target, r), part in points.groupby(["target", "read_fraction"], sort=False):
        label = f"{target}, {r:.0%} reads"
        fig.add_scatter(x=part["bandwidth_GBps"], y=part["measured_ns"], mode="markers",
                        name=f"{label}: measured")
        finite = part[np.isfinite(part["model_ns"])]
        fig.add_scatter(x=finite["bandwidth_GBps"], y=finite["model_ns"], mode="lines",
                        name=f"{label}: model")
    fig.update_layout(title="Loaded latency: model vs measured",
                      xaxis_title="bandwidth (GB/s)", yaxis_title="read latency (ns)")
    return fig
