"""``kind: link-loaded`` — CXL.mem latency versus delivered bandwidth on a link.

Poisson requesters on the host issue 64 B requests to one Type 3 device at a swept
offered load, for each flit mode, link width and read fraction asked for: a read is M2S
Req down and S2M DRS (data) up, a write M2S RwD (data) down and S2M NDR up. The offered
load is a fraction of the link's saturated bandwidth for the mix: raw bandwidth x 64 B
over the flit packer's wire bytes per request of the mixed stream in the busier
direction (all reads: the packed efficiency of S2M DRS). The latency curves (all requests, reads, writes), the
knee and the saturation point come out of the transaction-level run.
"""

from __future__ import annotations

import itertools
from typing import Annotated, ClassVar

import numpy as np
import pandas as pd
import plotly.express as px
from pydantic import Field

from cxlsim.engine import Simulation
from cxlsim.experiments.progress import progress_bar, steps
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, HostName, MemoryDeviceName, register
from cxlsim.devices.requester import PoissonRequester
from cxlsim.link.flits import mixed_line_bytes
from cxlsim.link.params import FlitMode
from cxlsim.topology import Topology
from cxlsim.topology.elaborate import System
from cxlsim.topology.schema import TopologySpec


@register("link-loaded")
class LinkLoadedExperiment(ExperimentSpec):
    """Loaded-latency curves of CXL.mem for flit modes x link widths x read fractions."""

    step_unit: ClassVar[str] = "point"
    kind: str = "link-loaded"
    topology: TopologySpec = Field(description="the system (a topology file path or inline)")
    host: HostName = Field("host0", validate_default=True, description="the requesting host")
    device: MemoryDeviceName = Field("cxl0", validate_default=True,
                                     description="the Type 3 device read from")
    flit_modes: list[FlitMode] = Field(["68B", "256B"], min_length=1,
                                       description="flit modes applied to every CXL link")
    widths: list[int] = Field([8, 16], min_length=1, description="link widths to compare")
    read_fractions: list[Annotated[float, Field(ge=0, le=1)]] = Field(
        [1.0], min_length=1,
        description="fraction of requests that are reads, in [0, 1] (the rest are writes)")
    loads: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        [0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95], min_length=1,
        description="offered load, fraction of the mix's saturated bandwidth, in (0, 1]")
    requesters: int = Field(16, ge=1, description="independent Poisson requesters")
    requests: int = Field(40_000, ge=100, description="requests per point")
    warmup: float = Field(0.1, ge=0, lt=1, description="fraction of requests before measuring")
    credits: int = Field(256, ge=1, description="M2S Req credits of the host")

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        rows = []
        curves = list(itertools.product(self.flit_modes, self.widths, self.read_fractions))
        with progress_bar(progress, len(curves) * len(self.loads), self.name,
                          self.step_unit) as bar:
            for mode, width, reads in curves:
                for i, load in steps(bar, enumerate(self.loads)):
                    rows.append(self._point(mode, width, reads, load, point * 1000 + i))
        table = pd.DataFrame(rows)
        metrics = {}
        curve = table["flit_mode"] + " x" + table["width"].astype(str)
        if self.read_fractions != [1.0]:
            curve += " reads " + table["read_fraction"].map("{:g}".format)
        for (mode, width, reads), part in table.groupby(["flit_mode", "width", "read_fraction"],
                                                        sort=False):
            tag = f"{mode}_x{width}" + ("" if reads == 1.0 else f"_reads{reads:g}")
            metrics[f"capacity_GBps_{tag}"] = float(part["capacity_GBps"].iloc[0])
            metrics[f"max_delivered_GBps_{tag}"] = float(part["delivered_GBps"].max())
            metrics[f"lowest_load_latency_ns_{tag}"] = float(part["latency_mean_ns"].iloc[0])

        def figures() -> dict:
            fig = px.line(table, x="delivered_GBps", y="latency_mean_ns", color=curve,
                          markers=True, title="CXL.mem latency vs delivered bandwidth",
                          labels={"delivered_GBps": "delivered bandwidth (GB/s)",
                                  "latency_mean_ns": "mean latency (ns)", "color": "link"})
            return {"loaded latency": fig}

        return RunResult(self.name, self, metrics, {"points": table}, self.draw(figures))

    def _point(self, mode: str, width: int, reads: float, load: float, stream: int) -> dict:
        links = [link.model_copy(update={"flit_mode": mode, "width": width})
                 if link.protocol == "cxl" else link for link in self.topology.links]
        topo = Topology.from_spec(self.topology.model_copy(update={"links": links}))
        first = next(r for r in topo.routes if r.host == self.host and r.device == self.device)
        busier = max(mixed_line_bytes(mode, reads).values())  # wire bytes per request
        capacity = first.bandwidth * (64 / busier)  # B/s of 64 B lines
        rate = load * capacity / 64 / 1e9  # requests per ns
        warm = int(self.requests * self.warmup)
        sim = Simulation(self.seed, stream, warmup=warm / rate)
        system = System(sim, topo)
        path = system.mem_path(self.host, self.device, credits=self.credits,
                               read_fraction=reads)
        per = -(-self.requests // self.requesters)
        sources = [PoissonRequester(sim, f"req{k}", path, rate / self.requesters, per,
                                    write_fraction=1 - reads, parent=system)
                   for k in range(self.requesters)]
        sim.run()
        latency = np.concatenate([s.latency.values() for s in sources])
        done_bytes = sum(s.bytes.value for s in sources)
        row = {"flit_mode": mode, "width": width, "read_fraction": reads, "load": load,
               "capacity_GBps": capacity / 1e9, "offered_GBps": load * capacity / 1e9,
               "delivered_GBps": done_bytes / (sim.now - sim.stats.warmup),
               "latency_mean_ns": float(latency.mean()),
               "latency_p99_ns": float(np.percentile(latency, 99))}
        for op in ("read", "write"):
            part = np.concatenate([s.op_latency[op].values() for s in sources])
            row[f"{op}_latency_mean_ns"] = float(part.mean()) if part.size else np.nan
            row[f"{op}_latency_p99_ns"] = float(np.percentile(part, 99)) if part.size else np.nan
        row["busiest_link_utilization"] = max(d.utilization() for d in system.links.values())
        return row
