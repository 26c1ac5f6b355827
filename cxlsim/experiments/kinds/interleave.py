"""``kind: weighted-interleave`` — bandwidth of DRAM + CXL under (weighted) interleave (T5.1-T5.3).

MLC-style bandwidth threads (delay ``delay``, all cores but one) at each read/write
mix, with their pages on DRAM only, on CXL only, and interleaved with weights w:1
(DRAM:CXL pages per round; 1:1 is the kernel's plain round-robin ``--interleave``,
w:1 its weighted interleave), and with the kernel's auto-mode weights computed from the
nodes' modelled bandwidths. The epoch level gives the bandwidth each placement
sustains and each node's utilisation; the gain is over DRAM only.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
from pydantic import Field, model_validator

from cxlsim.experiments.memory_base import MemoryExperiment
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import register
from cxlsim.memory.epoch import Demand, policy_shares
from cxlsim.memory.numa import auto_weights
from cxlsim.units import Time


def mix_tag(mix: str) -> str:
    """``"2:1"`` -> ``"2to1"`` (metric names)."""
    return mix.replace(":", "to").replace(" ", "")


@register("weighted-interleave")
class WeightedInterleaveExperiment(MemoryExperiment):
    """Bandwidth gain of weighted interleave over DRAM only, per read/write mix."""

    kind: str = "weighted-interleave"
    dram: str = Field("dram", description="the DRAM node")
    cxl: str = Field("cxl", description="the CXL node")
    weights: list[int] = Field([1, 2, 3, 4], min_length=1,
                               description="DRAM pages per CXL page (w:1); 1 = round robin")
    mixes: dict[str, float] = Field({"2:1": 2 / 3, "1:1": 0.5}, min_length=1,
                                    description="read:write mix name -> fraction of bytes read")
    delay: Time = Field(0.0, description="injected delay between accesses (0: saturate)")
    auto: bool = Field(True, description=(
        "also run the kernel's auto weights (numa.auto_weights) from the nodes' modelled "
        "bandwidths, the lower of all-read and all-write, as HMAT/CDAT report them"))

    @model_validator(mode="after")
    def _known(self) -> WeightedInterleaveExperiment:
        for node in (self.dram, self.cxl):
            if node not in self.nodes:
                raise ValueError(f"node {node!r} is not in nodes ({', '.join(self.nodes)})")
        return self

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        system = self.memory()
        policies = {"DRAM only": {self.dram: 1}, "CXL only": {self.cxl: 1}}
        policies.update({f"{w}:1": {self.dram: w, self.cxl: 1} for w in self.weights})
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
                    "latency_ns": eq.latencies[0]})
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
            for w in self.weights:
                g = float(by.loc[f"{w}:1", "bandwidth_GBps"] / base - 1)
                gains[w] = g
                metrics[f"gain_w{w}to1_rw{tag}"] = g
                metrics[f"dram_utilisation_w{w}to1_rw{tag}"] = float(
                    by.loc[f"{w}:1", "dram_utilisation"])
            metrics[f"best_weight_rw{tag}"] = f"{max(gains, key=gains.get)}:1"
            if auto is not None:
                metrics[f"gain_auto_rw{tag}"] = float(by.loc["auto", "bandwidth_GBps"] / base - 1)
        table["gain"] = table.apply(lambda row: row["bandwidth_GBps"] / table[
            (table["mix"] == row["mix"]) & (table["policy"] == "DRAM only")][
            "bandwidth_GBps"].iloc[0] - 1, axis=1)
        fig = px.bar(table, x="policy", y="bandwidth_GBps", color="mix", barmode="group",
                     title="bandwidth by page placement (DRAM:CXL weights)",
                     labels={"bandwidth_GBps": "bandwidth (GB/s)", "policy": "placement"})
        fig.update_layout(template="plotly_white")
        return RunResult(self.name, self, metrics, {"points": table}, {"bandwidth": fig})
