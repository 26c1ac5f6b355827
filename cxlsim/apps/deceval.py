"""DecEval (ORNL, ExHET'22): decompress on an FPGA, integrate on a GPU, four dataflows.

The application is a dataflow of stage processes (FPGA read, kernel and write per
chunk; GPU integration) and link transfers, run in the discrete-event simulator:

* ``baseline``: the FPGA works through every chunk, its output is DMAed to host memory,
  staged through host memory by the runtimes, DMAed to the GPU, then the GPU integrates.
* ``p2p``: direct accelerator communication: FPGA -> GPU DMA through the root complex.
* ``cxl_cache``: CXL with a coherent cache (host bias): the GPU reads the FPGA's output
  with coherent line accesses while it integrates; nothing is staged.
* ``cxl_pipelined``: chunks flow through the stages concurrently (bounded buffers), the
  GPU reading each chunk coherently as soon as it is written.

Transfers are bursts of TLPs (PCIe) or of line accesses (CXL) through link directions.
The accelerators sit on CXL links of the topology: DMA runs over their PHY as PCIe TLPs
(CXL.io); a coherent access is a round trip over both links (their one-way latencies)
with ``mlp`` accesses in flight, and each link carries its ``cxl_penalty`` of the PCIe
effective bandwidth (the ORNL model's assumptions, on the topology's links). Kernel and stage times are the measured per-chunk figures scaled
by bytes per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import simpy
from pydantic import Field

from cxlsim.apps.pipeline import run_pipeline
from cxlsim.config.base import StrictModel
from cxlsim.devices.accelerator import ComputeEngine, ComputeEngineParams
from cxlsim.devices.memory import MemoryBackend
from cxlsim.engine import Simulation
from cxlsim.link.direction import LinkDirection
from cxlsim.link.tlp import coherent_wire_factor, phy_config, write_wire_bytes
from cxlsim.protocol.bulk import Bulk
from cxlsim.protocol.journey import LINK, LINK_IO, SERVE
from cxlsim.topology import Topology
from cxlsim.topology.elaborate import System
from cxlsim.units import LINE_BYTES, Bandwidth, Size, Time

Flow = Literal["baseline", "p2p", "cxl_cache", "cxl_pipelined"]
FLOWS: tuple[Flow, ...] = ("baseline", "p2p", "cxl_cache", "cxl_pipelined")


class FpgaParams(StrictModel):
    """Per-chunk FPGA stage times at the reference chunking (scaled by chunk bytes)."""

    read: Time = Field(description="reading a chunk's compressed input")
    kernel: Time = Field(description="decompressing a chunk")
    write: Time = Field(description="writing a chunk's output")
    launch: Time = Field(0.0, description="fixed cost per chunk (kernel enqueue)")


class GpuParams(StrictModel):
    """GPU integration kernel over the whole data set."""

    kernel: Time = Field(description="integration kernel, whole data set")


class HostParams(StrictModel):
    """Host-side costs: staging through host memory (baseline), DMA setup, P2P forwarding."""

    staging_bandwidth: Bandwidth = Field(description="runtime staging copies through host memory")
    staging_copies: int = Field(2, ge=0, description="copies of the data staged by the runtimes")
    dma_setup: Time = Field(description="fixed cost of one PCIe DMA")
    root_complex: Time = Field(0.0, description="P2P forwarding latency in the root complex")


class CxlParams(StrictModel):
    """The accelerators' side of the coherent flows (the links' ``cxl_penalty`` and
    latency come from the topology)."""

    mlp: int = Field(64, ge=1, description="coherent line accesses in flight")


class DecEvalParams(StrictModel):
    """``models/apps/deceval.yaml``: data, chunking, stage times, host and CXL costs."""

    data: Size = Field(description="inflated data moved from the FPGA to the GPU")
    reference_chunks: int = Field(ge=1, description="chunking the per-chunk times were measured at")
    chunks: int = Field(ge=1, description="chunks this run uses")
    fpga: FpgaParams
    gpu: GpuParams
    host: HostParams
    cxl: CxlParams


@dataclass
class FlowTime:
    """Simulated time of one flow (ns) and where it went."""

    flow: Flow
    total: float
    fpga: float
    transfers: float
    gpu: float


class DecEval:
    """Runs a flow on ``topology``: the FPGA's and the GPU's own CXL links to ``host``
    (PCIe flows use their PHY through CXL.io, the coherent flows their ``cxl_penalty``
    and latency)."""

    def __init__(self, params: DecEvalParams, topology: Topology, host: str, fpga: str,
                 gpu: str) -> None:
        self.p = params
        self.topology, self.host, self.devices = topology, host, {"fpga": fpga, "gpu": gpu}

    # -- the stage times ---------------------------------------------------------
    @property
    def chunk_bytes(self) -> int:
        """Bytes per chunk (the last chunk takes the remainder)."""
        return -(-self.p.data // self.p.chunks)

    def engine_params(self) -> dict[str, ComputeEngineParams]:
        """The FPGA's read, kernel and write units and the GPU kernel, from the measured
        times (FPGA per reference chunk, GPU for the whole data)."""
        p, per = self.p, max(1, round(self.p.data / self.p.reference_chunks))
        return {
            "fpga_read": ComputeEngineParams(time=p.fpga.read, per=per),
            "fpga_kernel": ComputeEngineParams(time=p.fpga.kernel, per=per, setup=p.fpga.launch),
            "fpga_write": ComputeEngineParams(time=p.fpga.write, per=per),
            "gpu": ComputeEngineParams(time=p.gpu.kernel, per=p.data),
        }

    def stage_times(self) -> dict[str, float]:
        """Each engine's time for one chunk, ns (the closed-form pipeline's stages)."""
        return {name: e.setup + self.chunk_bytes * e.ns_per_byte
                for name, e in self.engine_params().items()}

    # -- running -------------------------------------------------------------------
    def run(self, flow: Flow) -> FlowTime:
        """Simulate ``flow``; the result's ``total`` is the application time."""
        sim = Simulation()
        env = sim.env
        system = System(sim, self.topology)
        self.links = {key: system.device_link(self.host, device)
                      for key, device in self.devices.items()}
        self.pcie = phy_config(self.links["fpga"][0].params)
        self._engines(sim)
        parts = {"fpga": 0.0, "transfers": 0.0, "gpu": 0.0}
        proc = env.process(getattr(self, f"_{flow}")(sim, parts))
        env.run(proc)
        return FlowTime(flow, env.now, parts["fpga"], parts["transfers"], parts["gpu"])

    def _engines(self, sim: Simulation) -> None:
        """The FPGA's read, kernel and write units, the GPU kernel, host staging memory."""
        p = self.p
        engines = {name: ComputeEngine(sim, name, params)
                   for name, params in self.engine_params().items()}
        self.fpga_read, self.fpga_kernel = engines["fpga_read"], engines["fpga_kernel"]
        self.fpga_write, self.gpu = engines["fpga_write"], engines["gpu"]
        self.staging = MemoryBackend(sim, "host_staging", {
            "media_bandwidth": p.host.staging_bandwidth / max(p.host.staging_copies, 1)})
        self.staging.claim()

    def _chunks(self):
        """Sizes of the chunks: equal, the last one taking the remainder."""
        size = self.chunk_bytes
        return [size] * (self.p.chunks - 1) + [self.p.data - size * (self.p.chunks - 1)]

    def _fpga_all(self, env: simpy.Environment, parts: dict):
        start = env.now
        for n in self._chunks():
            yield self.fpga_read.run(n)
            yield self.fpga_kernel.run(n)
            yield self.fpga_write.run(n)
        parts["fpga"] += env.now - start

    def _timed(self, env: simpy.Environment, parts: dict, key: str, event: simpy.Event):
        start = env.now
        yield event
        parts[key] += env.now - start

    def _baseline(self, sim: Simulation, parts: dict):
        env, p = sim.env, self.p
        fpga_up, gpu_down = self.links["fpga"][0], self.links["gpu"][1]
        yield from self._fpga_all(env, parts)
        yield from self._timed(env, parts, "transfers", self._dma([fpga_up], env).move(
            p.data, p.host.dma_setup))
        if p.host.staging_copies:  # host memory as the intermediary buffer
            ready = self.staging.access(p.data, env.now)
            yield from self._timed(env, parts, "transfers", env.timeout(ready - env.now))
        yield from self._timed(env, parts, "transfers", self._dma([gpu_down], env).move(
            p.data, p.host.dma_setup))
        yield from self._timed(env, parts, "gpu", self.gpu.run(p.data))

    def _p2p(self, sim: Simulation, parts: dict):
        env, p = sim.env, self.p
        links = [self.links["fpga"][0], self.links["gpu"][1]]
        yield from self._fpga_all(env, parts)
        yield from self._timed(env, parts, "transfers", self._dma(links, env).move(
            p.data, p.host.dma_setup))
        yield from self._timed(env, parts, "gpu", self.gpu.run(p.data))

    def _cxl_cache(self, sim: Simulation, parts: dict):
        env, p = sim.env, self.p
        stream = self._coherent(sim)
        yield from self._fpga_all(env, parts)
        start = env.now
        reads = stream.move(p.data)
        yield env.all_of([self.gpu.run(p.data), reads])
        parts["gpu"] += env.now - start

    def _cxl_pipelined(self, sim: Simulation, parts: dict):
        env = sim.env
        stream = self._coherent(sim)
        sizes = self._chunks()
        stages = [("fpga_read", lambda e, c: self.fpga_read.run(sizes[c])),
                  ("fpga_kernel", lambda e, c: self.fpga_kernel.run(sizes[c])),
                  ("fpga_write", lambda e, c: self.fpga_write.run(sizes[c])),
                  ("gpu", lambda e, c: e.all_of([self.gpu.run(sizes[c]),
                                                 stream.move(sizes[c])]))]
        run = yield run_pipeline(env, stages, self.p.chunks)
        parts["fpga"] = run.finished["fpga_write"][-1]
        parts["gpu"] = run.end - parts["fpga"]

    # -- transfers ------------------------------------------------------------------
    def _dma(self, links: list[LinkDirection], env: simpy.Environment) -> Bulk:
        """PCIe DMA writes (MWr TLPs, CXL.io) through ``links``, forwarded by the root
        complex."""
        cfg, rc = self.pcie, self.p.host.root_complex

        def steps(burst: int) -> tuple:
            wire = write_wire_bytes(burst, cfg)
            return tuple((LINK_IO, link, wire, rc if k + 1 < len(links) else 0.0)
                         for k, link in enumerate(links))

        return Bulk(env, steps)

    def _coherent(self, sim: Simulation) -> Bulk:
        """The GPU's coherent reads of the FPGA's output over CXL: a window of ``mlp``
        line accesses, each a round trip over both links (GPU -> host -> FPGA and back),
        then the FPGA's and the GPU's CXL links, each at its share of the PCIe rate
        (:func:`~cxlsim.link.tlp.coherent_wire_factor`)."""
        cfg = self.pcie
        links = [self.links["fpga"][0], self.links["gpu"][1]]
        latency = 2 * sum(link.params.one_way_latency for link in links)
        window = MemoryBackend(sim, "cxl_window", {
            "media_latency": latency,
            "media_bandwidth": self.p.cxl.mlp * LINE_BYTES / latency * 1e9 if latency else None})
        window.claim()
        factors = [coherent_wire_factor(link.params) for link in links]

        def steps(burst: int) -> tuple:
            wire = write_wire_bytes(burst, cfg)
            return ((SERVE, window, lambda txn, t: window.access(txn.size, t), 0.0),
                    *((LINK, link, wire * f, 0.0) for link, f in zip(links, factors)))

        return Bulk(sim.env, steps)
