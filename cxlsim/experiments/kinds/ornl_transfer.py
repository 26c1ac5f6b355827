"""``kind: ornl-transfer`` — PCIe versus CXL transfer time, the ORNL model as a simulation.

Each transfer runs in the discrete-event simulator: a DMA engine streams the TLPs of a
simultaneous read+write of n bytes through the two directions of a PCIe 3.0 x16 link
(TLP bandwidth after DLLP and SKP overheads, from :mod:`cxlsim.link.tlp`) after a fixed
setup latency. The CXL side makes the ORNL assumptions component by component: the
same TLP stream on a link that delivers ``cxl_penalty`` of the PCIe bandwidth, with the
CXL fixed latency. The closed form of :mod:`cxlsim.analytic.ornl` runs beside it, and
the report shows where they differ.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from cxlsim.analytic import ornl
from cxlsim.config.base import StrictModel
from cxlsim.devices.dma import DmaEngine
from cxlsim.engine import Simulation
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, register
from cxlsim.link.direction import LinkDirection
from cxlsim.link.params import LinkParams
from cxlsim.link.tlp import PcieConfig, tlp_bandwidth
from cxlsim.plot.transfer import chunk_figure, relative_figure, transfer_figure
from cxlsim.units import Size, Time


class OrnlLink(StrictModel):
    """The link and fixed latencies the ORNL model assumes (see models/links/ornl-*.yaml)."""

    generation: int = Field(3, ge=1, le=5, description="PCIe generation of the PHY")
    width: int = Field(16, description="lanes")
    mps: int = Field(256, description="max payload size, bytes")
    mrrs: int = Field(512, description="max read request size, bytes")
    rcb: int = Field(64, description="read completion boundary, bytes")
    pcie_latency: Time = Field(description="fixed cost t_s of a PCIe DMA transfer")
    cxl_latency: Time = Field(description="fixed cost t_s of a CXL transfer")
    cxl_penalty: float | list[float] = Field(
        description="fraction(s) of the PCIe effective bandwidth a CXL link delivers")

    @field_validator("cxl_penalty")
    @classmethod
    def _in_range(cls, value: float | list[float]) -> float | list[float]:
        for p in value if isinstance(value, list) else [value]:
            if not 0 < p < 1:
                raise ValueError(f"a cxl_penalty is a fraction in (0, 1); found {p}")
        return value

    @property
    def penalties(self) -> list[float]:
        """The penalties to run, as a list."""
        return self.cxl_penalty if isinstance(self.cxl_penalty, list) else [self.cxl_penalty]

    @property
    def pcie(self) -> PcieConfig:
        """The PCIe settings as the TLP model takes them."""
        return PcieConfig(self.generation, self.width, self.mps, self.mrrs, self.rcb)


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


@register("ornl-transfer")
class OrnlTransferExperiment(ExperimentSpec):
    """Transfer time, speedup and crossover of CXL over PCIe, DES and closed form."""

    kind: str = "ornl-transfer"
    link: OrnlLink = Field(description="ORNL link assumptions (use the preset)")
    sizes: Sizes = Field(default_factory=Sizes, description="transfer sizes")
    chunks: ChunkStudy | None = Field(default_factory=ChunkStudy,
                                      description="Figure 5 study (null to skip)")
    bursts: int = Field(256, ge=16, description="DMA bursts per transfer (DES batching)")

    @field_validator("topology")
    @classmethod
    def _no_topology(cls, topology: object) -> None:
        if topology is not None:
            raise ValueError("ornl-transfer runs the ORNL model's own link ('link:'), not a "
                             "topology's; remove 'topology:'")
        return topology

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        link = self.link
        sim_pcie = _transfer_fn(link.pcie, 1.0, link.pcie_latency, self.bursts)
        sims = {p: _transfer_fn(link.pcie, p, link.cxl_latency, self.bursts)
                for p in link.penalties}
        rows = []
        for n in self.sizes.values():
            t_p = sim_pcie(n)
            a_p = ornl.t_pcie(n, link.pcie, link.pcie_latency)
            rows.append(_row(n, "PCIe", None, t_p, a_p, t_p))
            for p, sim in sims.items():
                t_c = sim(n)
                rows.append(_row(n, f"CXL p={p:g}", p, t_c,
                                 ornl.t_cxl(n, p, link.pcie, link.cxl_latency), t_p))
        transfer = pd.DataFrame(rows)
        t64 = transfer[transfer["size_B"] == self.sizes.values()[0]].set_index("cxl_penalty")
        penalties = pd.DataFrame([{
            "cxl_penalty": p,
            "speedup_first_size": float(t64.loc[p, "speedup"]),
            "crossover_B": _crossover(sim_pcie, sims[p]),
            "crossover_analytic_B": ornl.crossover(p, link.pcie, link.pcie_latency,
                                                   link.cxl_latency),
        } for p in link.penalties])
        penalties["crossover_KiB"] = penalties["crossover_B"] / 1024
        metrics = {"max_rel_err_des_vs_analytic": float(transfer["rel_err"].abs().max())}
        if len(link.penalties) == 1:  # a sweep point: its penalty's numbers as metrics
            metrics["speedup_first_size"] = float(penalties["speedup_first_size"].iloc[0])
            metrics["crossover_KiB"] = float(penalties["crossover_KiB"].iloc[0])
        pcie64 = transfer[(transfer["size_B"] == self.sizes.values()[0])
                          & (transfer["config"] == "PCIe")]
        metrics["latency_only_ratio"] = float(pcie64["t_sim_ns"].iloc[0] / link.cxl_latency)
        figures = {"Figure 2: transfer time": transfer_figure(transfer),
                   "Figure 3: relative transfer time": relative_figure(transfer)}
        tables = {"transfer": transfer, "penalties": penalties}
        if self.chunks is not None:
            tables["chunks"] = _chunk_table(self.chunks, sim_pcie, sims)
            figures["Figure 5: total transfer time vs chunk size"] = chunk_figure(tables["chunks"])
        return RunResult(self.name, self, metrics, tables, figures)


def _row(n: int, config: str, penalty: float | None, t_sim: float, t_analytic: float,
         t_pcie: float) -> dict:
    return {"size_B": n, "config": config, "cxl_penalty": penalty, "t_sim_ns": t_sim,
            "t_analytic_ns": t_analytic, "rel_err": t_sim / t_analytic - 1,
            "speedup": t_pcie / t_sim}


def _transfer_fn(cfg: PcieConfig, penalty: float, latency: float, bursts: int
                 ) -> Callable[[int], float]:
    """A function running one DES transfer of n bytes over a fresh link; returns ns."""
    bandwidth = tlp_bandwidth(cfg) * penalty
    phy = LinkParams(protocol="pcie", generation=cfg.generation, width=cfg.width,
                     retry_buffer=0)

    def run(n: int) -> float:
        sim = Simulation()
        tx = LinkDirection(sim, "tx", phy, bandwidth=bandwidth)
        rx = LinkDirection(sim, "rx", phy, bandwidth=bandwidth)
        dma = DmaEngine(sim, "dma", {"setup_latency": latency, "bursts": bursts}, tx, rx, cfg)
        out: list[float] = []
        dma.transfer(n, "read_write", out.append)
        sim.run()
        return out[0]

    return run


def _crossover(t_pcie: Callable[[int], float], t_cxl: Callable[[int], float]) -> int:
    """Smallest n with t_cxl(n) >= t_pcie(n), by doubling then bisection on the DES."""
    lo, hi = 1, 64
    while t_cxl(hi) < t_pcie(hi):
        lo, hi = hi, hi * 2
        if hi > 2**40:
            raise ValueError("CXL never becomes slower than PCIe below 1 TiB")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if t_cxl(mid) < t_pcie(mid):
            lo = mid
        else:
            hi = mid
    return hi


def _chunk_table(study: ChunkStudy, sim_pcie: Callable[[int], float],
                 sims: dict[float, Callable[[int], float]]) -> pd.DataFrame:
    rows = []
    chunk = study.start
    while chunk <= min(study.stop, study.total):
        count = -(-study.total // chunk)
        rows.append({"chunk_B": chunk, "config": "PCIe", "total_s": count * sim_pcie(chunk) / 1e9})
        for p, sim in sims.items():
            rows.append({"chunk_B": chunk, "config": f"CXL p={p:g}",
                         "total_s": count * sim(chunk) / 1e9})
        chunk *= 4
    return pd.DataFrame(rows)
