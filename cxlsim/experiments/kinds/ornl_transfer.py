"""``kind: ornl-transfer`` — PCIe versus CXL transfer time, the ORNL model as a simulation.

The system is the experiment's topology: a host, one device on a PCIe link (its DMA
engine's fixed cost is the node's ``dma_setup``, the measured round trip of the ORNL
model) and devices on CXL links of the same PHY. Each transfer runs in the
discrete-event simulator on the elaborated :class:`~cxlsim.topology.elaborate.System`:
the PCIe device's DMA engine streams the TLPs of a simultaneous read+write of n bytes
through its link; a CXL device moves the same bytes over its link's CXL.cache stack,
so the link's ``cxl_penalty`` (of the PCIe rate) and latency (a round trip is the CXL
fixed cost) set its time — the ORNL assumptions, on the topology's links. The closed
form of :mod:`cxlsim.analytic.ornl` runs beside it with the same inputs.

The two differ by design on a CXL link. The closed form charges the TX direction's wire
bytes (read requests and writes, the bottleneck of the read+write b_n) and then the
whole t_s; in the simulation t_s is the link's round trip, and a transfer ends with its
read (MRd, one way, CplD, one way) while the MWr, sent after the MRd, lands one way after
it leaves. The simulation is shorter by the MWr's header over the CplD's, 4 B per TLP of
the last read request (64 B: 108 B instead of 112 B before the 40 ns), whatever the
link latency; on PCIe (link latency 0.06 ns, t_s a measured set-up) by that latency.
tests/test_ornl_transfer_des.py holds the arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import Field, ValidationInfo, field_validator, model_validator

from cxlsim.analytic import ornl
from cxlsim.analytic.search import least_true
from cxlsim.config.base import StrictModel
from cxlsim.engine import Simulation
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, register
from cxlsim.link.params import LinkParams
from cxlsim.link.tlp import cxl_fraction, phy_config
from cxlsim.plot.transfer import chunk_figure, relative_figure, transfer_figure
from cxlsim.topology import Topology
from cxlsim.topology.elaborate import System
from cxlsim.topology.schema import TopologySpec
from cxlsim.units import Size


class Sizes(StrictModel):
    """Transfer sizes: powers of two from ``start`` to ``stop``, ``per_octave`` points each."""

    start: Size = Field(64, ge=1, description="smallest transfer")
    stop: Size = Field(2**30, ge=1, description="largest transfer")
    per_octave: int = Field(1, ge=1, le=16, description="sizes per doubling")

    @model_validator(mode="after")
    def _ordered(self) -> Sizes:
        return _start_before_stop(self)

    def values(self) -> list[int]:
        """The sizes, rounded to whole bytes, without repeats."""
        octaves = np.log2(self.stop / self.start)
        points = np.round(self.start * 2 ** np.linspace(
            0, octaves, int(round(octaves * self.per_octave)) + 1))
        return sorted({int(v) for v in points})


class ChunkStudy(StrictModel):
    """Figure 5: moving ``total`` bytes as chunks of each size, one transfer per chunk."""

    total: Size = Field(1_600_000_000, description="data moved by the application")
    start: Size = Field(4096, ge=1, description="smallest chunk")
    stop: Size = Field(2**28, ge=1, description="largest chunk")

    @model_validator(mode="after")
    def _ordered(self) -> ChunkStudy:
        return _start_before_stop(self)


def _start_before_stop(spec: Sizes | ChunkStudy) -> Sizes | ChunkStudy:
    if spec.stop < spec.start:
        raise ValueError(f"stop ({spec.stop:,} B) must not be below start ({spec.start:,} B)")
    return spec


@dataclass
class Device:
    """A device on its own root-port link, as the transfers see it."""

    name: str
    host: str
    protocol: str      # "pcie" or "cxl": the link's protocol
    penalty: float     # fraction of the PHY's PCIe rate a transfer gets (1 on PCIe)
    fixed: float       # ns: DMA setup plus the link's round trip (the model's t_s)
    link: LinkParams
    topology: Topology
    bursts: int

    @property
    def label(self) -> str:
        return "PCIe" if self.protocol == "pcie" else f"CXL p={self.penalty:g}"

    def transfer(self, n: int) -> float:
        """One DES read+write of ``n`` bytes on a freshly elaborated system; ns."""
        sim = Simulation()
        dma = System(sim, self.topology).dma_engine(
            self.host, self.name, protocol="io" if self.protocol == "pcie" else "cache",
            bursts=self.bursts)
        out: list[float] = []
        dma.transfer(n, "read_write", out.append)
        sim.run()
        return out[0]

    def closed_form(self, n: int) -> float:
        """The ORNL closed form with the same PHY, share of its rate and fixed cost."""
        cfg = phy_config(self.link)
        if self.protocol == "pcie":
            return ornl.t_pcie(n, cfg, self.fixed)
        return ornl.t_cxl(n, self.penalty, cfg, self.fixed)


def devices(topology: Topology, bursts: int = 256) -> tuple[Device, list[Device]]:
    """The PCIe device and the CXL devices of ``topology``, each on its own root-port link."""
    found = []
    system = System(Simulation(), topology)
    for route in topology.routes:
        spec = topology.graph.nodes[route.device]["spec"]
        if spec.type not in ("accelerator", "pcie_device"):
            continue
        up, down = system.device_link(route.host, route.device)
        cxl = up.params.protocol == "cxl"
        found.append(Device(route.device, route.host, up.params.protocol,
                            round(cxl_fraction(up.params), 12) if cxl else 1.0,
                            getattr(spec, "dma_setup", 0.0) + up.latency + down.latency,
                            up.params, topology, bursts))
    return ([d for d in found if d.protocol == "pcie"][0],
            [d for d in found if d.protocol == "cxl"])


def _compared_devices(topology: TopologySpec) -> TopologySpec:
    """One device on a PCIe link (the reference) and at least one on a CXL link."""
    kinds = {"pcie": [], "cxl": []}
    linked = {lk.dst.split(".")[0]: lk.protocol for lk in topology.links}
    for node in topology.nodes:
        if node.type in ("accelerator", "pcie_device") and node.name in linked:
            kinds[linked[node.name]].append(node.name)
    if len(kinds["pcie"]) != 1 or not kinds["cxl"]:
        raise ValueError(
            "ornl-transfer compares one device on a PCIe link with devices on CXL links "
            "(accelerator or pcie_device nodes, each the 'to' end of its root port's link); "
            f"found {len(kinds['pcie'])} on PCIe {kinds['pcie']} and {len(kinds['cxl'])} on "
            f"CXL {kinds['cxl']}")
    return topology


@register("ornl-transfer")
class OrnlTransferExperiment(ExperimentSpec):
    """Transfer time, speedup and crossover of CXL over PCIe, DES and closed form."""

    kind: str = "ornl-transfer"
    topology: TopologySpec = Field(description="a PCIe device and CXL devices on their own "
                                               "root-port links (topologies/ornl-gen3-x16.yaml)")
    sizes: Sizes = Field(default_factory=Sizes, description="transfer sizes")
    chunks: ChunkStudy | None = Field(default_factory=ChunkStudy,
                                      description="Figure 5 study (null to skip)")
    compare: list[str] | None = Field(None, min_length=1, description=(
        "the CXL-linked devices to compare with the PCIe one (default: all)"))
    bursts: int = Field(256, ge=16, description="DMA bursts per transfer (DES batching)")

    @field_validator("topology")
    @classmethod
    def _devices(cls, topology: TopologySpec) -> TopologySpec:
        return _compared_devices(topology)

    @field_validator("compare")
    @classmethod
    def _known(cls, names: list[str] | None, info: ValidationInfo) -> list[str] | None:
        topology = info.data.get("topology")
        if names is None or topology is None:
            return names
        cxl = [lk.dst.split(".")[0] for lk in topology.links if lk.protocol == "cxl"]
        unknown = [n for n in names if n not in cxl]
        if unknown:
            raise ValueError(f"not a device on a CXL link: {', '.join(map(repr, unknown))}; "
                             f"expected some of {', '.join(map(repr, cxl))}")
        return names

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        pcie, cxls = devices(Topology.from_spec(self.topology), self.bursts)
        cxls = [d for d in cxls if self.compare is None or d.name in self.compare]
        first = self.sizes.values()[0]
        rows = []
        for n in self.sizes.values():
            t_p = pcie.transfer(n)
            rows.append(_row(n, pcie, t_p, t_p))
            rows += [_row(n, dev, dev.transfer(n), t_p) for dev in cxls]
        transfer = pd.DataFrame(rows)
        at_first = transfer[transfer["size_B"] == first].set_index("device")
        penalties = pd.DataFrame([{
            "device": dev.name, "cxl_penalty": dev.penalty, "cxl_fixed_ns": dev.fixed,
            "speedup_first_size": float(at_first.loc[dev.name, "speedup"]),
            "crossover_B": _crossover(pcie.transfer, dev.transfer),
            "crossover_analytic_B": ornl.crossover(dev.penalty, phy_config(dev.link),
                                                   pcie.fixed, dev.fixed),
        } for dev in cxls])
        penalties["crossover_KiB"] = penalties["crossover_B"] / 1024
        metrics = {"max_rel_err_des_vs_analytic": float(transfer["rel_err"].abs().max())}
        if len(cxls) == 1:  # e.g. a sweep point: its link's numbers as metrics
            metrics["speedup_first_size"] = float(penalties["speedup_first_size"].iloc[0])
            metrics["crossover_KiB"] = float(penalties["crossover_KiB"].iloc[0])
        metrics["latency_only_ratio"] = float(at_first.loc[pcie.name, "t_sim_ns"]
                                              / min(dev.fixed for dev in cxls))
        tables = {"transfer": transfer, "penalties": penalties}
        if self.chunks is not None:
            tables["chunks"] = _chunk_table(self.chunks, pcie, cxls)

        def figures() -> dict:
            drawn = {"Figure 2: transfer time": transfer_figure(transfer),
                     "Figure 3: relative transfer time": relative_figure(transfer)}
            if self.chunks is not None:
                drawn["Figure 5: total transfer time vs chunk size"] = \
                    chunk_figure(tables["chunks"])
            return drawn

        return RunResult(self.name, self, metrics, tables, self.draw(figures))


def _row(n: int, dev: Device, t_sim: float, t_pcie: float) -> dict:
    t_analytic = dev.closed_form(n)
    return {"size_B": n, "device": dev.name, "config": dev.label,
            "cxl_penalty": None if dev.protocol == "pcie" else dev.penalty, "t_sim_ns": t_sim,
            "t_analytic_ns": t_analytic, "rel_err": t_sim / t_analytic - 1,
            "speedup": t_pcie / t_sim}


def _crossover(t_pcie: Callable[[int], float], t_cxl: Callable[[int], float]) -> int:
    """Smallest n with t_cxl(n) >= t_pcie(n), by doubling then bisection on the DES."""
    try:
        return least_true(lambda n: t_cxl(n) >= t_pcie(n), hi=64, limit=2**40)
    except ValueError:
        raise ValueError("CXL never becomes slower than PCIe below 1 TiB") from None


def _chunk_table(study: ChunkStudy, pcie: Device, cxls: list[Device]) -> pd.DataFrame:
    rows = []
    chunk = study.start
    while chunk <= min(study.stop, study.total):
        count = -(-study.total // chunk)
        rows += [{"chunk_B": chunk, "config": dev.label,
                  "total_s": count * dev.transfer(chunk) / 1e9} for dev in (pcie, *cxls)]
        chunk *= 4
    return pd.DataFrame(rows)
