"""The TPP studies' runs as the T6 checks and the identification read them: one point of
an ``experiments/tpp-*.yaml`` file, its epochs and its measured window by the one judging
rule (:mod:`.steady`), each point computed once per process."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pandas as pd

from cxlsim.experiments import load_experiment
from cxlsim.experiments.quick import quick_form
from cxlsim.validation.checks import EXPERIMENTS
from cxlsim.validation.steady import Window, local_share, throughput, window


@dataclass(frozen=True)
class Judged:
    """A run's epochs and its measured window (:func:`~.steady.window`)."""

    epochs: pd.DataFrame
    window: Window

    @property
    def throughput(self) -> float:
        """Accesses per simulated second over the window."""
        return throughput(self.epochs, self.window.first)

    @property
    def local(self) -> float:
        """DRAM's share of the memory references over the window."""
        return local_share(self.epochs, self.window.first)

    @property
    def hot_on_cxl(self) -> float:
        """The share of the pages accessed in an epoch that sit on CXL, over the window."""
        part = self.epochs.iloc[self.window.first:]
        return float((part["hot_cxl"] / (part["hot_dram"] + part["hot_cxl"]).clip(lower=1))
                     .mean())

    @property
    def cxl_ns(self) -> float:
        """The CXL node's mean loaded latency over the window."""
        part = self.epochs.iloc[self.window.first:]
        return float((part["latency_ns_cxl"] * part["refs_cxl"]).sum()
                     / max(part["refs_cxl"].sum(), 1))

    def promoted(self, first: int | None = None) -> int:
        """Pages promoted from epoch ``first`` (default: the window's) to the end."""
        start = self.window.first if first is None else first
        return int(self.epochs["pgpromote_success"].iloc[start:].sum())



@cache  # one key per point: called with and without ``extra``, the runs were made twice
def point(file: str, workload: str, policy: str, extra: tuple[str, ...],
           quick: bool) -> Judged:
    """One point of ``experiments/<file>``: ``workload`` under ``policy`` (a name or a
    ``{name: ..., tunable: ...}`` mapping as text), ``extra`` overrides, at the file's
    size or (``quick``) its quick form; each point once per process."""
    overrides = [f"trace.generate={workload}", f"policy={policy}", "figures=false",
                 "sweep=null", *extra]
    if quick:  # the file's quick form: the same study at a coarser scale
        overrides += quick_form(load_experiment(EXPERIMENTS / file, overrides)).overrides()
    result = load_experiment(EXPERIMENTS / file, overrides).run()
    epochs = result.tables["epochs"]
    return Judged(epochs, window(epochs, result.metrics["time_compression"]))
