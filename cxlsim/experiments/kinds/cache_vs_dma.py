"""``kind: cache-vs-dma`` — when does a device's coherent line access beat its DMA engine?

A CXL Type 1/2 device moves ``size`` bytes between host memory and itself in two ways,
each on a freshly elaborated :class:`~cxlsim.topology.elaborate.System`:

* CXL.cache: ceil(size / 64) line requests through
  :meth:`~cxlsim.topology.elaborate.System.cache_path` (RdCurr reads, ItoMWr writes),
  ``in_flight`` of them outstanding: the next line is issued when one completes, as a
  data mover with that many miss slots would.
* DMA: one transfer of ``size`` bytes by the device's DMA engine
  (:meth:`~cxlsim.topology.elaborate.System.dma_engine`): CXL.io TLPs sized by the
  link's MPS/MRRS, after the fixed cost ``dma_setup``.

Both share the device's own root-port link and host memory (a FIFO back-end with the
DRAM's idle latency and sustained bandwidth). The crossover, per op and ``in_flight``,
is the smallest transfer from which the DMA is no slower: the swept sizes bracket it
and a bisection on whole bytes pins it.

Not modelled: the device's own cache (every line misses and goes to the host), snoops
and coherence conflicts with host caches (the home agent resolves a request in
``home_latency``), the DMA's descriptor traffic on the link (it is in ``dma_setup``),
and the time to hand the data to the device's compute.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from pydantic import Field, ValidationInfo, field_validator

from cxlsim.analytic.search import least_true
from cxlsim.engine import Simulation
from cxlsim.experiments.progress import progress_bar, steps
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, HostName, _node_validator, register
from cxlsim.topology import Topology
from cxlsim.topology.elaborate import System
from cxlsim.topology.schema import TopologySpec
from cxlsim.units import Size, Time, format_size

LINE = 64
METHODS = ("CXL.cache", "DMA")
_CACHE_OPS = {"read": "RdCurr", "write": "ItoMWr"}  # a data mover keeps no copy

CacheDeviceName = Annotated[str, _node_validator(
    "a CXL Type 1 or 2 device or accelerator",
    lambda n: n.type in ("cxl_device", "accelerator") and getattr(n, "cxl_type", None) in (1, 2))]


@register("cache-vs-dma")
class CacheVsDmaExperiment(ExperimentSpec):
    """CXL.cache line accesses with a window in flight versus one DMA transfer."""

    step_unit: ClassVar[str] = "B"
    kind: str = "cache-vs-dma"
    topology: TopologySpec = Field(description="the system (a topology file path or inline)")
    host: HostName = Field("host0", validate_default=True,
                           description="the host whose memory (a dram node) holds the data")
    device: CacheDeviceName = Field("acc0", validate_default=True, description=(
        "the CXL Type 1/2 device moving the data, on its own CXL link to a root port of host"))
    sizes: list[Annotated[Size, Field(gt=0)]] = Field(
        [LINE * 2**i for i in range(15)], min_length=1,
        description="bytes moved per transfer (sorted, repeats dropped)")
    in_flight: list[Annotated[int, Field(ge=1)]] = Field(
        [1, 4, 16, 64], min_length=1,
        description="CXL.cache line requests the device keeps outstanding (sorted, repeats "
                    "dropped)")
    ops: list[Literal["read", "write"]] = Field(
        ["read"], min_length=1, description="read: host memory -> device; write: device -> "
                                            "host memory (sorted, repeats dropped)")
    dma_setup: Time | None = Field(738.77, description=(
        "fixed cost of one DMA transfer; default the pcie-bench measured DMA round trip "
        "(LAT_CMD_WRRD, SIGCOMM'18), as topologies/ornl-gen3-x16.yaml; null: the device "
        "node's dma_setup"))
    home_latency: Time = Field(0.0, description="the host's coherence resolution per CXL.cache "
                                                "request")
    credits: int = Field(32, ge=1, description="D2H Req credits the host grants the device")
    bursts: int = Field(256, ge=16, description="DMA bursts per transfer (DES batching)")

    @field_validator("host")
    @classmethod
    def _has_dram(cls, host: str, info: ValidationInfo) -> str:
        """Both methods read and write the host's DRAM."""
        topology = info.data.get("topology")
        if topology is not None and not any(n.type == "dram" and n.attached_to == host
                                             for n in topology.nodes):
            raise ValueError(f"{host!r} has no dram node attached; the data moved lives in "
                             "the host's memory")
        return host

    @field_validator("device")
    @classmethod
    def _own_cxl_link(cls, device: str, info: ValidationInfo) -> str:
        """The DMA engine needs the device one link from a root port; CXL.cache a CXL link."""
        topology, host = info.data.get("topology"), info.data.get("host")
        if topology is None or host is None:
            return device
        ports = {n.name for n in topology.nodes if n.type == "root_port" and n.host == host}
        ends = [{lk.src.partition(".")[0], lk.dst.partition(".")[0]} for lk in topology.links
                if lk.protocol == "cxl"]
        if not any(len(e) == 2 and device in e and e - {device} <= ports for e in ends):
            raise ValueError(f"{device!r} is not on its own CXL link to a root port of "
                             f"{host!r}; CXL.cache and the device's DMA engine use that link")
        return device

    @field_validator("sizes", "in_flight", "ops")
    @classmethod
    def _sorted(cls, values: list) -> list:
        """One row per point; the crossover search walks the sizes in order."""
        return sorted(set(values))

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        topology = Topology.from_spec(self.topology)
        rows, crossings = [], []
        # a transfer's time to simulate grows with its bytes
        with progress_bar(progress, len(self.ops) * (1 + len(self.in_flight)) * sum(self.sizes),
                          self.name, self.step_unit, unit_scale=True) as bar:
            for op in self.ops:
                dma = {n: self.dma_ns(topology, n, op)
                       for n in steps(bar, self.sizes, weight=lambda n: n)}
                for k in self.in_flight:
                    cache = {n: self.cache_ns(topology, n, k, op)
                             for n in steps(bar, self.sizes, weight=lambda n: n)}
                    rows += [{"op": op, "size": format_size(n), "size_B": n, "in_flight": k,
                              "method": method, "time_ns": t, "bandwidth_GBps": n / t}
                             for n in self.sizes
                             for method, t in zip(METHODS, (cache[n], dma[n]))]
                    crossings.append({"op": op, "in_flight": k, "crossover_B": self._crossover(
                        topology, op, k, cache, dma)})
        points, crossover = pd.DataFrame(rows), pd.DataFrame(crossings)
        crossover["crossover"] = [format_size(int(b)) if pd.notna(b) else
                                  f"beyond {format_size(self.sizes[-1])}"
                                  for b in crossover["crossover_B"]]
        return RunResult(self.name, self, self._metrics(topology, points, crossover),
                         {"points": points, "crossover": crossover},
                         self.draw(lambda: {"transfer time": figure(points)}))

    def system(self, topology: Topology) -> System:
        """A freshly elaborated system on a new simulation."""
        return System(Simulation(self.seed), topology)

    def cache_ns(self, topology: Topology, size: int, in_flight: int, op: str) -> float:
        """Time to move ``size`` bytes as CXL.cache line requests, ``in_flight`` outstanding."""
        system = self.system(topology)
        path = system.cache_path(self.host, self.device, home_latency=self.home_latency,
                                 credits=self.credits)
        request = getattr(path, op)
        lines, state = -(-size // LINE), {"issued": 0, "done": 0}

        def issue() -> None:
            state["issued"] += 1
            request(completed, _CACHE_OPS[op])

        def completed(_txn: object) -> None:
            state["done"] += 1
            if state["issued"] < lines:
                issue()

        for _ in range(min(in_flight, lines)):
            issue()
        system.sim.run()
        return system.sim.now

    def dma_ns(self, topology: Topology, size: int, op: str) -> float:
        """Time of one DMA transfer of ``size`` bytes, its fixed cost included."""
        system = self.system(topology)
        engine = system.dma_engine(self.host, self.device, setup_latency=self.dma_setup,
                                   bursts=self.bursts)
        out: list[float] = []
        engine.transfer(size, op, out.append)
        system.sim.run()
        return out[0]

    def _crossover(self, topology: Topology, op: str, in_flight: int, cache: dict[int, float],
                   dma: dict[int, float]) -> float | None:
        """Smallest size from which DMA is no slower: the first swept size from which DMA
        wins at every larger swept size, brought down by bisection over the bytes since the
        swept size before it; None if CXL.cache wins at the largest size."""
        losing = [i for i, n in enumerate(self.sizes) if dma[n] > cache[n]]
        first = losing[-1] + 1 if losing else 0
        if first == len(self.sizes):
            return None
        lo, hi = (self.sizes[first - 1] if first else 0), self.sizes[first]
        return least_true(lambda n: self.dma_ns(topology, n, op)
                          <= self.cache_ns(topology, n, in_flight, op), lo, hi)

    def _metrics(self, topology: Topology, points: pd.DataFrame,
                 crossover: pd.DataFrame) -> dict:
        """Scalars independent of the swept values: those are in the tables."""
        by = points.groupby("method")["bandwidth_GBps"].max()
        found = crossover["crossover_B"].dropna()
        return {"line_read_ns": self.cache_ns(topology, LINE, 1, "read"),
                "max_cache_GBps": float(by["CXL.cache"]), "max_dma_GBps": float(by["DMA"]),
                "crossovers_found": len(found), "crossovers_missing": len(crossover) - len(found),
                "min_crossover_B": float(found.min()) if len(found) else None,
                "max_crossover_B": float(found.max()) if len(found) else None}


def figure(points: pd.DataFrame) -> go.Figure:
    """Time against size, log-log: one line per in_flight for CXL.cache, one for DMA."""
    dma = points[(points["method"] == "DMA")
                 & (points["in_flight"] == points["in_flight"].min())]
    cache = points[points["method"] == "CXL.cache"]
    shown = pd.concat([cache.assign(line="CXL.cache x" + cache["in_flight"].astype(str)),
                       dma.assign(line="DMA")])
    fig = px.line(shown, x="size_B", y="time_ns", color="line", facet_col="op",
                  log_x=True, log_y=True, markers=True,
                  title="Moving data between host memory and a CXL device: CXL.cache lines "
                        "(x lines in flight) vs one DMA",
                  labels={"size_B": "bytes moved", "time_ns": "time (ns)", "line": "method"})
    return fig
