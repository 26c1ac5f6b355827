"""``kind: bias`` — when does flipping a Type 2 device's memory to device bias pay?

A device phase touches ``size`` bytes of the device's own memory ``reuse`` times (passes
separated by a barrier, as a kernel's iterations), ``access_mlp`` lines in flight. The
host phase before it left ``host_dirty_fraction`` of the lines modified in the host's
caches. Three policies (:mod:`cxlsim.coherence`):

* host bias: every touch resolves coherence with the host; the first pass also writes
  the host's modified lines back.
* device bias: the pages stay device-biased (the host never caches them): local touches.
* flip: flip host -> device when the phase starts (the transition agent, ``flip_mlp``
  lines in flight), touch locally, flip back device -> host for the next host phase.

A pass starts on an idle system, so passes after the first take equal time: per size,
the DES runs host-bias passes 1 and 2, and flip-in, one device-bias pass and flip-out;
a phase is their sum, t_host = p1 + (R - 1)·p2, t_flip = in + R·p + out, t_device = R·p
(a test checks this against simulating every pass). Flipping pays above the break-even
reuse R* where t_host(R*) = t_flip(R*). Lines move in bursts of ``burst``
(:class:`~cxlsim.coherence.BiasedMemory`); ``burst_error`` measures what that costs on the
sizes up to ``check_size`` against line-by-line runs. Its progress bar counts the bytes
the DES has passed over, op by op.
"""

from __future__ import annotations

import math
from typing import ClassVar

import pandas as pd
import plotly.express as px
from pydantic import Field, field_validator
from tqdm import tqdm

from cxlsim.coherence import PAGE_BYTES, BiasTable
from cxlsim.engine import Simulation
from cxlsim.experiments.progress import progress_bar
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, HostName, Type2DeviceName, register
from cxlsim.plot.heatmap import heatmap
from cxlsim.topology import Topology
from cxlsim.topology.elaborate import System
from cxlsim.topology.schema import TopologySpec
from cxlsim.units import Percent, Size, Time, format_size

POLICIES = ("host bias", "device bias", "flip")


@register("bias")
class BiasExperiment(ExperimentSpec):
    """Device-local memory in host bias, in device bias and flipped per phase."""

    step_unit: ClassVar[str] = "B"
    kind: str = "bias"
    topology: TopologySpec = Field(description="the system (a topology file path or inline)")
    host: HostName = Field("host0", validate_default=True,
                           description="the host sharing the device's memory")
    device: Type2DeviceName = Field("acc0", validate_default=True,
                                    description="the Type 2 device")
    sizes: list[Size] = Field([4096 * 4**i for i in range(8)], min_length=1,
                              description="bytes the device touches per pass (whole 4 KiB pages)")
    reuse: list[int] = Field([1, 4, 16, 64], min_length=1,
                             description="passes over the data per device phase")
    access_mlp: int = Field(64, ge=1, description="lines the device keeps in flight")
    flip_mlp: int = Field(64, ge=1, description="lines the transition agent keeps in flight")
    coherence_latency: Time = Field(90.0, description="the host's coherence resolution per "
                                                      "request")
    host_dirty_fraction: Percent = Field(0.25, description="lines the host phase left modified "
                                                           "in the host's caches")
    device_dirty_fraction: Percent = Field(0.25, description="lines the device's cache holds "
                                                             "modified when the data flips back")
    flip_setup: Time = Field(0.0, description="fixed cost of one flip command")
    burst: int = Field(4, ge=1, le=64, description="lines per burst (DES batching; 1 = exact)")
    check_size: Size = Field(256 * 1024, ge=0, description="sizes up to this are also run line "
                                                           "by line to measure the batching error")

    @field_validator("sizes")
    @classmethod
    def _whole_pages(cls, sizes: list[int]) -> list[int]:
        for size in sizes:
            if size <= 0 or size % PAGE_BYTES:
                raise ValueError(f"a size is a whole number of {PAGE_BYTES} B pages; found {size}")
        return sizes

    @field_validator("reuse")
    @classmethod
    def _positive(cls, reuse: list[int]) -> list[int]:
        if min(reuse) < 1:
            raise ValueError(f"reuse counts passes, at least 1; found {min(reuse)}")
        return reuse

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        topology = Topology.from_spec(self.topology)
        checked = sum(s for s in self.sizes if s <= self.check_size) if self.burst > 1 else 0
        with progress_bar(progress, len(_PIECES) * (sum(self.sizes) + checked), self.name,
                          self.step_unit, unit_scale=True) as bar:
            pieces = pd.DataFrame([self.pieces(topology, size, self.burst, bar)
                                   for size in self.sizes])
            burst_error = self._burst_error(topology, pieces, bar)
        phases = phase_table(pieces, self.reuse)
        pieces["break_even_reuse"] = pieces.apply(break_even, axis=1)
        pieces["flip_pays_from_reuse"] = [pays_from(r) for r in pieces["break_even_reuse"]]
        metrics = {"flip_pays": verdict(pieces), "burst_error": burst_error}
        for _, row in pieces.iterrows():
            metrics[f"break_even_reuse_{row['size'].replace(' ', '')}"] = row["break_even_reuse"]
        flip = phases[phases["policy"] == "flip"]
        metrics["max_speedup_flip_vs_host"] = float(flip["speedup_vs_host"].max())
        metrics["min_speedup_flip_vs_host"] = float(flip["speedup_vs_host"].min())
        return RunResult(self.name, self, metrics, {"phases": phases, "pieces": pieces},
                         self.draw(lambda: figures(phases, pieces)))

    def pieces(self, topology: Topology, size: int, burst: int, bar: tqdm | None = None
               ) -> dict:
        """The simulated pieces of a phase over ``size`` bytes, ns (``bar``: as
        :meth:`simulate`)."""
        host = self.simulate(topology, size, burst, ["access", "access"], bar)
        flip = self.simulate(topology, size, burst, ["flip_to_device", "access", "flip_to_host"],
                             bar)
        return {"size": format_size(size), "size_B": size, "host_pass1_ns": host[0],
                "host_pass_ns": host[1], "flip_in_ns": flip[0], "device_pass_ns": flip[1],
                "flip_out_ns": flip[2]}

    def _burst_error(self, topology: Topology, pieces: pd.DataFrame, bar: tqdm) -> float:
        """Largest relative error of a batched piece against line by line, up to check_size."""
        if self.burst == 1:
            return 0.0
        errors = [abs(row[k] / exact[k] - 1)
                  for _, row in pieces[pieces["size_B"] <= self.check_size].iterrows()
                  for exact in [self.pieces(topology, int(row["size_B"]), 1, bar)]
                  for k in _PIECES if exact[k]]
        return max(errors, default=0.0)

    def simulate(self, topology: Topology, size: int, burst: int, ops: list[str],
                 bar: tqdm | None = None) -> list[float]:
        """Run ``ops`` of a fresh BiasedMemory one after the other; their times, ns. Each
        op done advances ``bar`` by ``size``."""
        sim = Simulation(self.seed)
        memory = System(sim, topology).biased_memory(
            self.host, self.device, BiasTable(size), coherence_latency=self.coherence_latency,
            device_dirty_fraction=self.device_dirty_fraction, flip_setup=self.flip_setup,
            burst=burst)
        memory.host_wrote(0, size, self.host_dirty_fraction)
        mlp = {"access": self.access_mlp, "flip_to_device": self.flip_mlp,
               "flip_to_host": self.flip_mlp}
        times: list[float] = []

        def step(elapsed: float | None = None) -> None:
            if elapsed is not None:
                times.append(elapsed)
                if bar is not None:
                    bar.update(size)
            if len(times) < len(ops):
                op = ops[len(times)]
                getattr(memory, op)(0, size, step, mlp=mlp[op])

        step()
        sim.run()
        return times


_PIECES = ("host_pass1_ns", "host_pass_ns", "flip_in_ns", "device_pass_ns", "flip_out_ns")


def phase_table(pieces: pd.DataFrame, reuse: list[int]) -> pd.DataFrame:
    """Time per device phase of each policy for every size and reuse."""
    rows = []
    for _, p in pieces.iterrows():
        for r in reuse:
            times = {"host bias": p["host_pass1_ns"] + (r - 1) * p["host_pass_ns"],
                     "device bias": r * p["device_pass_ns"],
                     "flip": p["flip_in_ns"] + r * p["device_pass_ns"] + p["flip_out_ns"]}
            rows += [{"size": p["size"], "size_B": p["size_B"], "reuse": r, "policy": policy,
                      "time_ns": times[policy],
                      "speedup_vs_host": times["host bias"] / times[policy]}
                     for policy in POLICIES]
    return pd.DataFrame(rows)


def break_even(p: pd.Series) -> float:
    """Reuse R* with t_host(R*) = t_flip(R*): 0 when flipping pays however little the
    data is reused, inf when a device-bias pass is no faster than a host-bias one."""
    gain = p["host_pass_ns"] - p["device_pass_ns"]
    cost = p["flip_in_ns"] + p["flip_out_ns"] + p["host_pass_ns"] - p["host_pass1_ns"]
    return max(0.0, cost / gain) if gain > 0 else math.inf


def pays_from(r: float) -> int | None:
    """The least whole number of passes at which flipping is faster; None if never."""
    return None if math.isinf(r) else max(1, math.floor(r) + 1)


def verdict(pieces: pd.DataFrame) -> str:
    """When flipping pays, in words, grouping consecutive sizes with the same answer."""
    parts: list[str] = []
    pays = pieces["flip_pays_from_reuse"]
    for _, g in pieces.groupby((pays != pays.shift()).cumsum(), sort=False):
        sizes = g["size"].iloc[0] if len(g) == 1 else f"{g['size'].iloc[0]}-{g['size'].iloc[-1]}"
        r, even = g["flip_pays_from_reuse"].iloc[0], g["break_even_reuse"]
        parts.append(f"never at {sizes}" if r is None or pd.isna(r) else
                     f"from {int(r)} pass{'es' if r > 1 else ''} per phase at {sizes} "
                     f"(break-even reuse {even.min():.3g}-{even.max():.3g})")
    return ("flipping to device bias beats staying in host bias " + "; ".join(parts) +
            "; with fewer passes keep the data in host bias")


def figures(phases: pd.DataFrame, pieces: pd.DataFrame) -> dict:
    """Time per phase against size per policy and reuse; the flip speedup heat map."""
    lines = px.line(phases, x="size_B", y="time_ns", color="policy", facet_col="reuse",
                    log_x=True, log_y=True, markers=True,
                    title="Device phase time vs bytes touched per pass, per policy",
                    labels={"size_B": "bytes per pass", "time_ns": "phase time (ns)"})
    flip = phases[phases["policy"] == "flip"]
    heat = heatmap(flip, "size", "reuse", "speedup_vs_host",
                   "Speedup of flipping over host bias (>1: flipping pays)")
    even = px.line(pieces, x="size_B", y="break_even_reuse", log_x=True, markers=True,
                   title="Break-even reuse: passes per phase above which flipping pays",
                   labels={"size_B": "bytes per pass", "break_even_reuse": "break-even reuse"})
    return {"phase time": lines, "flip speedup": heat, "break-even reuse": even}

