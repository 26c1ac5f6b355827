"""``kind: weighted-interleave`` — bandwidth of DRAM + CXL under (weighted) interleave (T5.1-T5.3).

MLC-style bandwidth threads (delay ``delay``, all cores but one) at each read/write
mix, with their pages on DRAM only, on CXL only, and interleaved by each entry of
``weights`` -- a whole number w for w:1 DRAM:CXL pages per round (1:1 is the kernel's
plain round-robin ``--interleave``, w:1 its weighted interleave), or a mapping node ->
pages per round over any of ``nodes`` (``{dram: 5, cxl: 2}``, or three nodes) -- and
with the kernel's auto-mode weights computed from the nodes' modelled bandwidths. The
epoch level gives the bandwidth each placement sustains, each node's utilisation and
the share of the host's trackers held (the CPU's ``trackers``, shared by both tiers);
the gain is over DRAM only.

A placement's label (table column ``policy``) is ``w:1`` or ``d:c`` for DRAM:CXL weights
and ``dram 4 : cxl0 1 : cxl1 1`` otherwise; its metrics are named by
``w{w}to1``/``w{d}to{c}``, or by the weights over all ``nodes`` in order
(``w4to1to1``, 0 for a node without pages).
"""

from __future__ import annotations

from typing import Annotated

import pandas as pd
import plotly.express as px
from pydantic import (AfterValidator, Discriminator, Field, Tag, ValidationInfo,
                      field_validator, model_validator)

from cxlsim.experiments.memory_base import MemoryExperiment
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import register
from cxlsim.memory.epoch import Demand
from cxlsim.mm.numa import auto_weights
from cxlsim.mm.placement import policy_shares
from cxlsim.units import Time


def mix_tag(mix: str) -> str:
    """``"2:1"`` -> ``"2to1"`` (metric names)."""
    return mix.replace(":", "to").replace(" ", "")


def _a_node(name: str, info: ValidationInfo) -> str:
    """A weights mapping names only the experiment's NUMA nodes."""
    nodes = info.data.get("nodes")
    if nodes is not None and name not in nodes:  # else the nodes' own error is shown
        raise ValueError(f"node {name!r} is not in nodes ({', '.join(nodes)})")
    return name


Pages = Annotated[int, Field(ge=1)]
WeightEntry = Annotated[
    Annotated[Pages, Tag("w")]
    | Annotated[dict[Annotated[str, AfterValidator(_a_node)], Pages], Field(min_length=1),
                Tag("nodes")],
    Discriminator(lambda v: "nodes" if isinstance(v, dict) else "w")]


def placement(entry: int | dict[str, int], dram: str, cxl: str, nodes: list[str]
              ) -> tuple[str, str, dict[str, int]]:
    """An entry of ``weights`` as (label, metric tag, node -> pages per round)."""
    if isinstance(entry, int):
        return f"{entry}:1", f"w{entry}to1", {dram: entry, cxl: 1}
    if set(entry) == {dram, cxl}:
        return (f"{entry[dram]}:{entry[cxl]}", f"w{entry[dram]}to{entry[cxl]}", dict(entry))
    label = " : ".join(f"{n} {entry[n]}" for n in nodes if n in entry)
    return label, "w" + "to".join(str(entry.get(n, 0)) for n in nodes), dict(entry)


@register("weighted-interleave")
class WeightedInterleaveExperiment(MemoryExperiment):
    """Bandwidth gain of weighted interleave over DRAM only, per read/write mix."""

    kind: str = "weighted-interleave"
    dram: str = Field("dram", description="the DRAM node")
    cxl: str = Field("cxl", description="the CXL node")
    weights: list[WeightEntry] = Field(
        [1, 2, 3, 4], min_length=1,
        description="placements: w = w:1 DRAM:CXL pages per round (1 = round robin), or "
                    "node -> pages per round (e.g. {dram: 5, cxl: 2})")
    mixes: dict[str, float] = Field({"2:1": 2 / 3, "1:1": 0.5}, min_length=1,
                                    description="read:write mix name -> fraction of bytes read")
    delay: Time = Field(0.0, description="injected delay between accesses (0: saturate)")
    auto: bool = Field(True, description=(
        "also run the kernel's auto weights (numa.auto_weights) from the nodes' modelled "
        "bandwidths, the lower of all-read and all-write, as HMAT/CDAT report them"))

    @field_validator("weights")
    @classmethod
    def _distinct(cls, weights: list[int | dict[str, int]], info: ValidationInfo
                  ) -> list[int | dict[str, int]]:
        """Each placement once: the table and metrics are keyed by its label."""
        data = info.data
        if all(k in data for k in ("nodes", "dram", "cxl")):
            seen: dict[str, int] = {}
            for i, entry in enumerate(weights):
                label = placement(entry, data["dram"], data["cxl"], list(data["nodes"]))[0]
                if label in seen:
                    raise ValueError(f"entries {seen[label]} and {i} are the same placement "
                                     f"{label!r}")
                seen[label] = i
        return weights

    @model_validator(mode="after")
    def _known(self) -> WeightedInterleaveExperiment:
        for node in (self.dram, self.cxl):
            if node not in self.nodes:
                raise ValueError(f"node {node!r} is not in nodes ({', '.join(self.nodes)})")
        return self

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        system = self.memory()
        policies = {"DRAM only": {self.dram: 1}, "CXL only": {self.cxl: 1}}
        placements = [placement(e, self.dram, self.cxl, list(self.nodes)) for e in self.weights]
        policies.update({label: weights for label, _, weights in placements})
        others = [n for n in self.nodes if n not in (self.dram, self.cxl)
                  and any(n in weights for _, _, weights in placements)]
        auto = None
        if self.auto:
            bw = [min(system.nodes[n].capacity(1.0), system.nodes[n].capacity(0.0))
                  for n in (self.dram, self.cxl)]
            auto = [int(w) for w in auto_weights(bw, [True, True])]
            policies["auto"] = {self.dram: auto[0], self.cxl: auto[1]}
        rows = []
        for mix, r in self.mixes.items():
            for policy, weights in policies.items():
                shares = policy_shares(weights)
                eq = system.solve([Demand(self.workers, self.thread_mlp, shares, self.delay, r)])
                rows.append({
                    "mix": mix, "read_fraction": r, "policy": policy,
                    "dram_share": shares.get(self.dram, 0.0),
                    "bandwidth_GBps": eq.bandwidth / 1e9,
                    "dram_GBps": eq.node_bandwidth(self.dram) / 1e9,
                    "cxl_GBps": eq.node_bandwidth(self.cxl) / 1e9,
                    "dram_utilisation": eq.utilisation[self.dram],
                    "cxl_utilisation": eq.utilisation[self.cxl],
                    "latency_ns": eq.latencies[0],
                    "trackers_busy": eq.trackers_busy,
                    "tracker_wait_ns": eq.tracker_wait,
                    **{f"node_{n}_{q}": v for n in others for q, v in (
                        ("GBps", eq.node_bandwidth(n) / 1e9),
                        ("utilisation", eq.utilisation[n]))}})
        table = pd.DataFrame(rows)
        metrics: dict[str, float | str] = {"threads": self.workers, "mlp": self.thread_mlp}
        if auto is not None:
            metrics["auto_weights"] = f"{auto[0]}:{auto[1]}"
        for mix, part in table.groupby("mix", sort=False):
            by = part.set_index("policy")
            base = by.loc["DRAM only", "bandwidth_GBps"]
            tag = mix_tag(mix)
            metrics[f"bandwidth_GBps_dram_only_rw{tag}"] = float(base)
            metrics[f"bandwidth_GBps_cxl_only_rw{tag}"] = float(by.loc["CXL only",
                                                                        "bandwidth_GBps"])
            gains = {}
            for label, name, _ in placements:
                g = float(by.loc[label, "bandwidth_GBps"] / base - 1)
                gains[label] = g
                metrics[f"gain_{name}_rw{tag}"] = g
                metrics[f"dram_utilisation_{name}_rw{tag}"] = float(
                    by.loc[label, "dram_utilisation"])
            metrics[f"best_weight_rw{tag}"] = max(gains, key=gains.get)
            if auto is not None:
                metrics[f"gain_auto_rw{tag}"] = float(by.loc["auto", "bandwidth_GBps"] / base - 1)
        table["gain"] = table.apply(lambda row: row["bandwidth_GBps"] / table[
            (table["mix"] == row["mix"]) & (table["policy"] == "DRAM only")][
            "bandwidth_GBps"].iloc[0] - 1, axis=1)

        def figures() -> dict:
            fig = px.bar(table, x="policy", y="bandwidth_GBps", color="mix", barmode="group",
                         title="bandwidth by page placement (DRAM:CXL weights)",
                         labels={"bandwidth_GBps": "bandwidth (GB/s)", "policy": "placement"})
            return {"bandwidth": fig}

        return RunResult(self.name, self, metrics, {"points": table}, self.draw(figures))
