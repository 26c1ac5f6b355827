"""``kind: epyc-latency`` — load latency and read bandwidth against block size, per page size.

One core of ``cpu`` (e.g. ``preset: cpus/epyc-7452``) runs a pointer chase over a block
of each size in ``blocks`` (latency per dependent load) and a sequential read of it
(bandwidth with the core's memory-level parallelism), with the block mapped by pages
of each size in ``page_sizes`` -- the NCRB study of the EPYC 7452's L3 and TLB (seed
003, targets T3). Knees of each latency curve are found from the curve itself
(:func:`find_knees`); the ratios 4 KiB / 2 MiB pages are reported at ``compare_block``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from pydantic import Field, model_validator

from cxlsim.apps.pointer_chase import pointer_chase, sequential_read
from cxlsim.engine.rng import make_rng
from cxlsim.experiments.progress import progress_bar, steps
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, register
from cxlsim.memory import PAGE_SIZES, CpuParams
from cxlsim.units import Size

MiB = 2**20


def find_knees(blocks: np.ndarray, latency: np.ndarray,
               threshold: float) -> list[tuple[float, float]]:
    """Knees of a latency curve: ``[(block, rise), ...]`` in block order.

    The slope of ln(latency) against log2(block) is taken between neighbouring points;
    a point's *rise* is the slope after it minus the slope before it (how much faster
    latency grows per doubling of the block beyond it). A knee is a point whose rise is
    above ``threshold`` and a local maximum. The curve's ends cannot be knees.
    """
    slope = np.diff(np.log(latency)) / np.diff(np.log2(blocks))
    rise = np.diff(slope)  # rise[j] belongs to point j + 1
    knees = []
    for j, r in enumerate(rise):
        before = rise[j - 1] if j > 0 else -np.inf
        after = rise[j + 1] if j + 1 < rise.size else -np.inf
        if r > threshold and r >= before and r > after:
            knees.append((float(blocks[j + 1]), float(r)))
    return knees


def _tag(page_size: int) -> str:
    """``4096`` -> ``"4KiB"`` (metric names)."""
    return PAGE_SIZES[page_size].replace(" ", "")


@register("epyc-latency")
class EpycLatencyExperiment(ExperimentSpec):
    """Pointer-chase latency and sequential-read bandwidth vs block size and page size."""

    step_unit: ClassVar[str] = "B"
    kind: str = "epyc-latency"
    cpu: CpuParams = Field(description="the CPU (use preset cpus/epyc-7452)")
    blocks: list[Size] = Field(min_length=3, description="block sizes, ascending")
    page_sizes: list[Size] = Field([4096, 2 * MiB], min_length=1,
                                   description="page sizes mapping the block")
    warmup_laps: int = Field(1, ge=0, description="laps over the block before measuring")
    loads: int | None = Field(None, ge=1, description="loads measured per point "
                                                      "(default: one full lap)")
    compare_block: Size = Field(16 * MiB, description="block at which page sizes are compared")
    knee_threshold: float = Field(
        0.05, gt=0, description="a knee: the slope of ln(latency) per doubling of the block "
                                "rises by more than this")

    @model_validator(mode="after")
    def _check(self) -> EpycLatencyExperiment:
        if sorted(set(self.blocks)) != list(self.blocks):
            raise ValueError("blocks must be strictly ascending")
        if self.compare_block not in self.blocks:
            raise ValueError("compare_block must be one of the blocks")
        unknown = [p for p in self.page_sizes if p not in PAGE_SIZES]
        if unknown or len(set(self.page_sizes)) != len(self.page_sizes):
            raise ValueError("page sizes must be distinct, each 4 KiB, 2 MiB or 1 GiB")
        return self

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        rng = make_rng(self.seed, point)
        laps = dict(warmup_laps=self.warmup_laps, loads=self.loads)
        rows = []
        # a point's laps over its block take time in proportion to the block
        with progress_bar(progress, len(self.page_sizes) * sum(self.blocks), self.name,
                          self.step_unit, unit_scale=True) as bar:
            for page_size in self.page_sizes:
                for block in steps(bar, self.blocks, weight=lambda b: b):
                    chase = pointer_chase(self.cpu, block, page_size, rng=rng, **laps)
                    read = sequential_read(self.cpu, block, page_size, **laps)
                    stats = chase.stats
                    rows.append({
                        "page_size": PAGE_SIZES[page_size], "block_MiB": block / MiB,
                        "latency_ns": chase.ns_per_load,
                        "bandwidth_GBps": read.bytes_per_s / 1e9,
                        "walks_per_load": stats.walks / stats.accesses,
                        "memory_per_load": stats.memory.sum() / stats.accesses})
        table = pd.DataFrame(rows)
        metrics: dict[str, float] = {}
        knees: dict[str, list[tuple[float, float]]] = {}
        at = table[table["block_MiB"] == self.compare_block / MiB].set_index("page_size")
        for page_size in self.page_sizes:
            name, tag = PAGE_SIZES[page_size], _tag(page_size)
            curve = table[table["page_size"] == name]
            knees[name] = find_knees(curve["block_MiB"].to_numpy(), curve["latency_ns"].to_numpy(),
                                     self.knee_threshold)
            metrics[f"knees_{tag}"] = len(knees[name])
            metrics[f"first_knee_MiB_{tag}"] = knees[name][0][0] if knees[name] else np.nan
            metrics[f"strongest_knee_MiB_{tag}"] = (max(knees[name], key=lambda k: k[1])[0]
                                                    if knees[name] else np.nan)
            metrics[f"latency_ns_{tag}_at_compare"] = float(at.loc[name, "latency_ns"])
            metrics[f"bandwidth_GBps_{tag}_at_compare"] = float(at.loc[name, "bandwidth_GBps"])
        largest = max(self.page_sizes)  # each smaller page size against the largest
        for page_size in self.page_sizes:
            if page_size != largest:
                ratio = f"{_tag(page_size)}_over_{_tag(largest)}"
                mine, theirs = at.loc[PAGE_SIZES[page_size]], at.loc[PAGE_SIZES[largest]]
                metrics[f"latency_ratio_{ratio}"] = float(
                    mine["latency_ns"] / theirs["latency_ns"])
                metrics[f"bandwidth_ratio_{ratio}"] = float(
                    mine["bandwidth_GBps"] / theirs["bandwidth_GBps"])
        figures = self.draw(lambda: {
            "latency": self._figure(table, "latency_ns", "latency per load (ns)", knees),
            "bandwidth": self._figure(table, "bandwidth_GBps",
                                      "sequential-read bandwidth (GB/s)")})
        knee_table = pd.DataFrame(
            [{"page_size": name, "block_MiB": block, "rise": rise}
             for name, found in knees.items() for block, rise in found],
            columns=["page_size", "block_MiB", "rise"])
        return RunResult(self.name, self, metrics, {"points": table, "knees": knee_table},
                         figures)

    def _figure(self, table: pd.DataFrame, column: str, label: str,
                knees: dict[str, list[tuple[float, float]]] | None = None) -> go.Figure:
        fig = go.Figure()
        for name, curve in table.groupby("page_size", sort=False):
            fig.add_scatter(x=curve["block_MiB"], y=curve[column], mode="lines+markers",
                            name=f"{name} pages")
            marked = [b for b, _ in (knees or {}).get(name, [])]
            if marked:
                at = curve.set_index("block_MiB").loc[marked, column]
                fig.add_scatter(x=marked, y=at, mode="markers", name=f"knees, {name} pages",
                                marker={"symbol": "x", "size": 12})
        fig.update_layout(title=f"{self.cpu.name}: {label} vs block size",
                          xaxis={"type": "log", "title": "block size (MiB)"},
                          yaxis={"title": label})
        return fig
