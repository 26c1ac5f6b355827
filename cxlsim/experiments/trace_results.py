"""What a trace-memory run reports (:mod:`cxlsim.experiments.kinds.trace_memory`): its metrics (time, throughput,
latencies, the kernel's counters, the losses, whether the policy acted), its tables
(epochs, nodes, pages, DAMON's regions) and its figures, from the run's epochs and
placement."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px

from cxlsim.errors import RunWarning
from cxlsim.experiments.result import RunResult
from cxlsim.mm.placement import DEMOTED, PAGE_TYPES, PROMOTED, Placement
from cxlsim.tiered.policies import POLICIES, Policy
from cxlsim.tiered.epochs import LOSSES
from cxlsim.tiered.host import VMSTAT
from cxlsim.tiered.trace_survey import Survey
from cxlsim.units import format_time


def result(exp: Any, run: Any, found: Survey, cores: int, scaled: Any) -> RunResult:
    """The run's metrics, tables and figures: ``exp`` as the user gave it, ``scaled`` as
    the run used it (clocks scaled by the similarity law)."""
    epochs = pd.DataFrame(run.epochs)
    names = run.nodes
    refs = np.array([epochs[f"refs_{n}"].sum() for n in names])
    lat = np.array([(epochs[f"latency_ns_{n}"] * epochs[f"refs_{n}"]).sum()
                    / max(refs[k], 1) for k, n in enumerate(names)])
    per_epoch = sum(epochs[f"latency_ns_{n}"] * epochs[f"refs_{n}"] for n in names) \
        / np.maximum(sum(epochs[f"refs_{n}"] for n in names), 1)
    seconds = run.time_ns / 1e9
    nodes = pd.DataFrame({
        "node": names, "memory_refs": refs,
        "traffic_share": refs / max(refs.sum(), 1),
        "mean_latency_ns": lat,
        "GBps": [(epochs[f"GBps_{n}"] * epochs["duration_ns"]).sum() / run.time_ns
                 for n in names],
        "resident_pages": run.placement.counts(n_nodes=len(names)),
    })
    metrics = {"app_time_s": seconds, "accesses": run.accesses,
               "accesses_per_s": run.accesses / seconds if seconds else 0.0,
               "footprint_pages": found.footprint, "cores": cores,
               "epochs": len(epochs), "sample": exp.sample,
               "mean_memory_latency_ns": float((lat * refs).sum() / max(refs.sum(), 1)),
               "p99_epoch_latency_ns": float(np.percentile(per_epoch, 99))}
    metrics.update(measured(epochs, exp.warmup))
    metrics.update({k: int(epochs[k].sum()) for k in (
        *VMSTAT, "numa_hint_faults", "numa_pages_migrated", "migrate_rate_limited",
        "pingpong")})
    metrics["tlb_shootdown_ns"] = float(epochs["tlb_shootdown_ns"].sum())
    # how far the policies' clocks got: a steady state needs many of each
    metrics.update(numa_scans=run.scans, numa_scan_passes=run.passes,
                   damon_aggregations=run.aggregations)
    metrics["migrations_per_s"] = metrics["pgmigrate_success"] / seconds if seconds else 0.0
    metrics.update({f"traffic_share_{n}": float(s)
                    for n, s in zip(names, nodes["traffic_share"])})
    metrics.update({f"pages_{t}": int((run.placement.page_type == code).sum())
                    for code, t in enumerate(PAGE_TYPES)})
    metrics.update(time_parts(epochs, run.time_ns))
    metrics.update(acted(scaled, run, metrics["numa_pages_migrated"],
                         metrics["pgmigrate_fail_dst_node_full"]))
    tables = {"epochs": epochs, "nodes": nodes, "pages": pages_table(run.placement, names)}
    if exp.damon.enabled:
        tables["damon_regions"] = pd.DataFrame(
            run.regions, columns=["time_ns", "start_page", "end_page", "nr_accesses", "age"])
    return RunResult(exp.name, exp, metrics, tables,
                     exp.draw(lambda: figures(exp.policy, epochs, names)))


def acted(exp: Any, run: Any, migrated: int, refused: int = 0) -> dict[str, Any]:
    """``policy_acted`` and, when it did not, ``policy_idle_reason`` (also a
    :class:`~cxlsim.errors.RunWarning`): no NUMA scan or DAMON aggregation before
    the run ended, or no page moved by a policy that moves pages (with the
    ``refused`` hint-fault migrations that found no room, if any). ``exp``: the
    experiment as the run used it (clocks scaled by the similarity law)."""
    ran = f"the run's {format_time(run.time_ns, digits=3)}"
    reason = ""
    if exp.numa_balancing.enabled and not run.scans:
        reason = (f"no NUMA scan before the end: numa_balancing.scan_delay "
                  f"{format_time(exp.numa_balancing.scan_delay)} is not shorter than {ran}")
    elif exp.damon.enabled and not run.aggregations:
        reason = (f"the DAMON monitor never aggregated: damon.aggregate "
                  f"{format_time(exp.damon.aggregate)} is longer than {ran}")
    elif POLICIES[exp.policy].moves is not Policy.moves and not migrated:
        reason = "it moved no page" + (
            f": its {refused:,} hint-fault migrations found DRAM at its high watermark "
            f"and nothing made room (pgmigrate_fail_dst_node_full)" if refused else "")
    if reason:
        warnings.warn(RunWarning(f"policy {exp.policy} never acted: {reason}", exp.name),
                      stacklevel=2)
    return {"policy_acted": not reason, "policy_idle_reason": reason}

def figures(policy: str, epochs: pd.DataFrame, names: list[str]) -> dict:
    """Each node's traffic, traffic share and resident (hot and cold) pages over time."""
    long = epochs.melt(id_vars=["end_ns"], value_vars=[f"GBps_{n}" for n in names],
                       var_name="node", value_name="GBps")
    long["node"] = long["node"].str.removeprefix("GBps_")
    long["time_ms"] = long["end_ns"] / 1e6
    fig = px.line(long, x="time_ms", y="GBps", color="node",
                  title=f"Memory traffic per node over time ({policy})",
                  labels={"time_ms": "simulated time (ms)", "GBps": "GB/s"})
    resident = px.area(hot_and_cold(epochs, names), x="time_ms", y="pages", color="pages of",
                       title="Resident pages per node over time: hot (accessed in the "
                             "epoch) and cold",
                       labels={"time_ms": "simulated time (ms)"})
    refs = epochs[[f"refs_{n}" for n in names]].to_numpy()
    share = pd.DataFrame(refs / np.maximum(refs.sum(axis=1, keepdims=True), 1),
                         columns=names).assign(time_ms=epochs["end_ns"] / 1e6)
    shares = px.line(share.melt(id_vars=["time_ms"], var_name="node", value_name="share"),
                     x="time_ms", y="share", color="node",
                     title="Share of memory traffic per node over time",
                     labels={"time_ms": "simulated time (ms)"})
    shares.update_layout(yaxis_tickformat=".0%")
    return {"traffic over time": fig, "traffic share over time": shares,
            "resident pages over time": resident}


def time_parts(epochs: pd.DataFrame, time_ns: float) -> dict[str, float]:
    """The app time in parts that add up to it (:func:`cxlsim.tiered.epochs.epoch_row`):
    ``local_ns`` and the losses beyond it, in ns and as shares of the app time."""
    out = {}
    for key in ("local_ns", *LOSSES):
        out[key] = ns = float(epochs[key].sum())
        out[key.removesuffix("_ns") + "_share"] = ns / time_ns if time_ns else 0.0
    return out


def measured(epochs: pd.DataFrame, warmup: int) -> dict[str, float]:
    """Time, accesses and throughput of the epochs starting at or after record ``warmup``."""
    start = epochs["accesses"].cumsum() - epochs["accesses"]
    after = epochs[start >= warmup]
    seconds = float(after["duration_ns"].sum()) / 1e9
    accesses = int(after["accesses"].sum())
    return {"measured_time_s": seconds, "measured_accesses": accesses,
            "measured_accesses_per_s": accesses / seconds if seconds else 0.0}


def hot_and_cold(epochs: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per epoch end and node: resident pages accessed in the epoch (hot) and not (cold),
    long form for a stacked area figure."""
    parts = []
    for n in names:
        hot, resident = epochs[f"hot_{n}"], epochs[f"pages_{n}"]
        for label, pages in ((f"{n} hot", hot), (f"{n} cold", (resident - hot).clip(lower=0))):
            parts.append(pd.DataFrame({"time_ms": epochs["end_ns"] / 1e6, "pages": pages,
                                       "pages of": label}))
    return pd.concat(parts, ignore_index=True)


def pages_table(placement: Placement, names: list[str]) -> pd.DataFrame:
    """Pages by type, node at the end (``none``: not resident) and the epoch of their
    latest allocation, with their accesses and how many were last demoted or promoted:
    groups of one integer key each, counted with numpy (a pandas groupby of every page
    took 10 ms a run, a tenth of a small run's time)."""
    n_nodes = len(names) + 1  # node -1 ("none") shifted to 0
    epochs = int(placement.alloc_epoch.max(initial=-1)) + 2
    key = ((placement.page_type.astype(np.int64) * n_nodes + placement.node + 1) * epochs
           + placement.alloc_epoch + 1)
    groups, which = np.unique(key, return_inverse=True)
    node = (groups // epochs) % n_nodes - 1

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(which, weights=values, minlength=groups.size).astype(np.int64)

    return pd.DataFrame({
        "page_type": np.asarray(PAGE_TYPES)[groups // (epochs * n_nodes)],
        "node": np.asarray(names + ["none"])[node],  # node -1: the last name
        "alloc_epoch": groups % epochs - 1,
        "pages": np.bincount(which, minlength=groups.size).astype(np.int64),
        "accesses": total(placement.accesses),
        "demoted": total((placement.flags & DEMOTED) > 0),
        "promoted": total((placement.flags & PROMOTED) > 0)})
