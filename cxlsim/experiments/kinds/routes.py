"""``kind: routes`` — host-to-device routes of a topology: latency and bottleneck bandwidth."""

from __future__ import annotations

import pandas as pd
from pydantic import Field

from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, register
from cxlsim.plot.topology import routes_figure, topology_figure
from cxlsim.topology import Topology
from cxlsim.topology.schema import TopologySpec


@register("routes")
class RoutesExperiment(ExperimentSpec):
    """Every host-to-device route of the topology, as a table and a picture."""

    kind: str = "routes"
    topology: TopologySpec = Field(description="the system: a topology file path or inline")

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        topo = Topology.from_spec(self.topology)
        table = routes_table(topo)
        metrics = {
            "routes": len(table),
            "latency_min_ns": float(table["latency_ns"].min()),
            "latency_max_ns": float(table["latency_ns"].max()),
            "bandwidth_min_GBps": float(table["bandwidth_GBps"].min()),
        }
        return RunResult(self.name, self, metrics, {"routes": table}, self.draw(lambda: {
            "topology": topology_figure(topo), "routes": routes_figure(table)}))


def routes_table(topo: Topology) -> pd.DataFrame:
    """One row per host-to-device route."""
    return pd.DataFrame([{
        "host": r.host, "device": r.device, "links": r.links, "path": " > ".join(r.path),
        "latency_ns": r.latency, "bandwidth_GBps": r.bandwidth / 1e9,
    } for r in topo.routes])
