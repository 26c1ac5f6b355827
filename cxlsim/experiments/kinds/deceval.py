"""``kind: deceval-flows`` and ``kind: deceval-chunks`` — the ORNL DecEval study.

``deceval-flows`` runs the four dataflows of :mod:`cxlsim.apps.deceval` and reports
their times and speedups over the baseline, with the closed-form pipeline model beside
the simulated pipelined flow. ``deceval-chunks`` reruns the flows over a range of chunk
counts: application time and total transfer time against chunk size, and the best.
The accelerators' links come from the topology (CXL links: their ``cxl_penalty`` and
``latency`` set the coherent flows); a sweep over them gives the architect's heat map.
"""

from __future__ import annotations

from typing import ClassVar

import pandas as pd
import plotly.express as px
from pydantic import Field, field_validator

from cxlsim.analytic import t_app
from cxlsim.apps.deceval import FLOWS, DecEval, DecEvalParams, Flow
from cxlsim.experiments.progress import progress_bar, steps
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, register
from cxlsim.link.params import LinkParams
from cxlsim.topology import Topology
from cxlsim.topology.schema import TopologySpec


class _DecEvalBase(ExperimentSpec):
    topology: TopologySpec = Field(description="the system (FPGA and GPU links)")
    app: DecEvalParams = Field(description="DecEval parameters (use preset apps/deceval)")
    flows: list[Flow] = Field(list(FLOWS), min_length=1, description="flows to run")

    @field_validator("topology")
    @classmethod
    def _linked_accelerators(cls, topology: TopologySpec) -> TopologySpec:
        for kind in ("fpga", "gpu"):
            link = _accelerator_link(topology, kind)
            if link is None:
                raise ValueError(f"DecEval needs an accelerator node of kind {kind!r} with a "
                                 "link (its PHY carries the DMAs)")
            if link.protocol != "cxl":
                raise ValueError(f"the {kind}'s link must be a CXL link (protocol: cxl): the "
                                 "coherent flows run on it, the DMAs on its PHY (CXL.io)")
        return topology

    def model(self, app: DecEvalParams | None = None) -> DecEval:
        """The DecEval model on this topology's FPGA and GPU links."""
        topology = Topology.from_spec(self.topology)
        fpga, gpu = (_accelerator(self.topology, kind) for kind in ("fpga", "gpu"))
        host = next(r.host for r in topology.routes if r.device == fpga)
        return DecEval(app or self.app, topology, host, fpga, gpu)

    def _times(self, app: DecEvalParams) -> dict[str, object]:
        model = self.model(app)
        flows = ["baseline", *[f for f in self.flows if f != "baseline"]]
        return {f: model.run(f) for f in flows}


@register("deceval-flows")
class DecEvalFlowsExperiment(_DecEvalBase):
    """Four DecEval flows: simulated times and speedups over the baseline."""

    step_unit: ClassVar[str] = "chunk"
    kind: str = "deceval-flows"

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        times = self._times(self.app)
        base = times["baseline"].total
        table = pd.DataFrame([{"flow": t.flow, "total_s": t.total / 1e9, "fpga_s": t.fpga / 1e9,
                               "transfers_s": t.transfers / 1e9, "gpu_s": t.gpu / 1e9,
                               "speedup": base / t.total} for t in times.values()])
        metrics = {"baseline_s": base / 1e9}
        for t in times.values():
            metrics[f"time_s_{t.flow}"] = t.total / 1e9
            metrics[f"speedup_{t.flow}"] = base / t.total
        model = self.model()
        stages = model.stage_times().values()
        metrics["pipeline_closed_form_s"] = t_app(len(stages), self.app.chunks, max(stages)) / 1e9

        def figures() -> dict:
            long = table.melt(id_vars="flow", value_vars=["fpga_s", "transfers_s", "gpu_s"],
                              var_name="part", value_name="seconds")
            return {"flows": px.bar(long, x="flow", y="seconds", color="part",
                                    title="DecEval: where the time goes, per flow (simulated)")}

        return RunResult(self.name, self, metrics, {"flows": table}, self.draw(figures))


@register("deceval-chunks")
class DecEvalChunksExperiment(_DecEvalBase):
    """DecEval flows against the chunk size: application and transfer time, the best."""

    kind: str = "deceval-chunks"
    chunk_counts: list[int] = Field([8, 16, 32, 64, 104, 208, 416, 832, 1664], min_length=1,
                                    description="numbers of chunks to try")

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        rows = []
        # a run's time grows with its chunks (the pipelined flow's events)
        with progress_bar(progress, sum(self.chunk_counts), self.name, self.step_unit) as bar:
            for n in steps(bar, self.chunk_counts, weight=lambda n: n):
                app = self.app.model_copy(update={"chunks": n})
                for t in self._times(app).values():
                    rows.append({"chunks": n, "chunk_MB": app.data / n / 1e6, "flow": t.flow,
                                 "app_s": t.total / 1e9, "transfers_s": t.transfers / 1e9})
        table = pd.DataFrame(rows)
        metrics = {}
        for flow, part in table.groupby("flow", sort=False):
            best = part.loc[part["app_s"].idxmin()]
            metrics[f"best_chunk_MB_{flow}"] = float(best["chunk_MB"])
            metrics[f"best_app_s_{flow}"] = float(best["app_s"])
        plots = (("app_s", "Application time vs chunk size"),
                 ("transfers_s", "Total transfer time vs chunk size"))
        return RunResult(self.name, self, metrics, {"chunks": table}, self.draw(lambda: {
            title: px.line(table, x="chunk_MB", y=y, color="flow", log_x=True, markers=True,
                           title=title, labels={"chunk_MB": "chunk size (MB)", y: "seconds"})
            for y, title in plots}))


def _accelerator(topology: TopologySpec, kind: str) -> str | None:
    """The topology's first accelerator of ``kind`` (gpu or fpga) that has a link."""
    linked = {end.split(".")[0] for lk in topology.links for end in (lk.src, lk.dst)}
    return next((n.name for n in topology.nodes
                 if n.type == "accelerator" and n.kind == kind and n.name in linked), None)


def _accelerator_link(topology: TopologySpec, kind: str) -> LinkParams | None:
    """The link of the topology's first linked accelerator of ``kind``."""
    name = _accelerator(topology, kind)
    return next((lk for lk in topology.links
                 if name in (lk.src.split(".")[0], lk.dst.split(".")[0])), None)
