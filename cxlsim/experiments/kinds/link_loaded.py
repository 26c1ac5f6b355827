"""``kind: link-loaded`` — CXL.mem read latency versus delivered bandwidth on a link.

Poisson requesters on the host issue 64 B reads to one Type 3 device at a swept offered
load, for each flit mode and link width asked for. The offered load is a fraction of
the link's saturated read bandwidth, which comes from the flit packer (raw bandwidth x
packed efficiency of S2M DRS); the latency curve, the knee and the saturation point
come out of the transaction-level run.
"""

from __future__ import annotations

import itertools
from typing import Annotated

import numpy as np
import pandas as pd
import plotly.express as px
from pydantic import Field

from cxlsim.engine import Simulation
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, HostName, MemoryDeviceName, register
from cxlsim.devices.requester import PoissonRequester
from cxlsim.link.flits import saturated_efficiency
from cxlsim.link.params import FlitMode
from cxlsim.topology import Topology
from cxlsim.topology.elaborate import System
from cxlsim.topology.schema import TopologySpec


@register("link-loaded")
class LinkLoadedExperiment(ExperimentSpec):
    """Loaded-latency curves of CXL.mem reads for flit modes x link widths."""

    kind: str = "link-loaded"
    topology: TopologySpec = Field(description="the system (a topology file path or inline)")
    host: HostName = Field("host0", validate_default=True, description="the requesting host")
    device: MemoryDeviceName = Field("cxl0", validate_default=True,
                                     description="the Type 3 device read from")
    flit_modes: list[FlitMode] = Field(["68B", "256B"], min_length=1,
                                       description="flit modes applied to every CXL link")
    widths: list[int] = Field([8, 16], min_length=1, description="link widths to compare")
    loads: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        [0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95], min_length=1,
        description="offered load, fraction of saturated read bandwidth, in (0, 1]")
    requesters: int = Field(16, ge=1, description="independent Poisson requesters")
    requests: int = Field(40_000, ge=100, description="requests per point")
    warmup: float = Field(0.1, ge=0, lt=1, description="fraction of requests before measuring")
    credits: int = Field(256, ge=1, description="M2S Req credits of the host")

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        rows = []
        for mode, width in itertools.product(self.flit_modes, self.widths):
            for i, load in enumerate(self.loads):
                rows.append(self._point(mode, width, load, point * 1000 + i))
        table = pd.DataFrame(rows)
        metrics = {}
        for (mode, width), part in table.groupby(["flit_mode", "width"], sort=False):
            tag = f"{mode}_x{width}"
            metrics[f"capacity_GBps_{tag}"] = float(part["capacity_GBps"].iloc[0])
            metrics[f"max_delivered_GBps_{tag}"] = float(part["delivered_GBps"].max())
            metrics[f"lowest_load_latency_ns_{tag}"] = float(part["latency_mean_ns"].iloc[0])
        fig = px.line(table, x="delivered_GBps", y="latency_mean_ns",
                      color=table["flit_mode"] + " x" + table["width"].astype(str),
                      markers=True, title="CXL.mem read latency vs delivered bandwidth",
                      labels={"delivered_GBps": "delivered bandwidth (GB/s)",
                              "latency_mean_ns": "mean read latency (ns)", "color": "link"})
        fig.update_layout(template="plotly_white")
        return RunResult(self.name, self, metrics, {"points": table}, {"loaded latency": fig})

    def _point(self, mode: str, width: int, load: float, stream: int) -> dict:
        links = [link.model_copy(update={"flit_mode": mode, "width": width})
                 if link.protocol == "cxl" else link for link in self.topology.links]
        topo = Topology.from_spec(self.topology.model_copy(update={"links": links}))
        first = next(r for r in topo.routes if r.host == self.host and r.device == self.device)
        capacity = first.bandwidth * saturated_efficiency(mode, "read")  # B/s of 64 B lines
        rate = load * capacity / 64 / 1e9  # reads per ns
        warm = int(self.requests * self.warmup)
        sim = Simulation(self.seed, stream, warmup=warm / rate)
        system = System(sim, topo)
        path = system.mem_path(self.host, self.device, credits=self.credits)
        per = -(-self.requests // self.requesters)
        sources = [PoissonRequester(sim, f"req{k}", path, rate / self.requesters, per, parent=system)
                   for k in range(self.requesters)]
        sim.run()
        latency = np.concatenate([s.latency.values() for s in sources])
        done_bytes = sum(s.bytes.value for s in sources)
        return {"flit_mode": mode, "width": width, "load": load,
                "capacity_GBps": capacity / 1e9, "offered_GBps": load * capacity / 1e9,
                "delivered_GBps": done_bytes / (sim.now - sim.stats.warmup),
                "latency_mean_ns": float(latency.mean()),
                "latency_p99_ns": float(np.percentile(latency, 99)),
                "busiest_link_utilization": max(d.utilization() for d in system.links.values())}
