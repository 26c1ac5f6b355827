"""One judging rule for every tiering row (T5.5-T6.10): the steady state after warm-up.

A run's *warm-up* lasts until DRAM's share of the memory references settles: the epochs
are grouped into the policy's periods (NUMA-scan passes for the hint-fault policies,
DAMON aggregation intervals for DAMON's; for a policy with neither, twenty equal blocks
of the run), each period's local share is taken, and the warm-up ends with the first
period whose share is within :data:`SETTLE` of the share over the last half of the
periods. The *measured window* runs from there to the run's end, and must cover at
least :data:`MIN_PERIODS` of the policy's periods: when the share settles later than
that allows, the window is the last :data:`MIN_PERIODS` periods, and a run with fewer
periods than that in all is not in a steady state at all (:attr:`Window.steady`). The
row says how many periods the window covers, how many pages the policy moved in it,
and the warm-up in the real system's seconds; a loss compares the window's throughput
with the all-local run's over the same records (the same epochs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Fewest of the policy's periods a measured window covers.
MIN_PERIODS = 10
#: How near its final value (the last half's) DRAM's share must come to have settled.
SETTLE = 0.02
#: Blocks a run without a policy clock is cut into to see its share settle.
BLOCKS = 20
#: The policies' clocks, by the epochs table's cumulative column: (column, period name).
CLOCKS = (("numa_scan_passes", "NUMA-scan pass"), ("damon_aggregations", "DAMON aggregation"))


@dataclass(frozen=True)
class Window:
    """The judged epochs ``first`` to the end of a run, and what the row says of them."""

    first: int            # first epoch of the window
    periods: int          # the policy's periods it covers (0: the policy has no clock)
    period: str           # their name ("" without a clock)
    warmup_s: float       # real seconds until DRAM's share settled
    moved: int            # pages migrated in the window (promoted and demoted)
    steady: bool          # the run has at least MIN_PERIODS periods (or no clock)
    total: int = 0        # the policy's periods in the whole run (0: no clock)

    def count(self) -> str:
        """The periods it covers, in words ("12 NUMA-scan passes")."""
        plural = "es" if self.period.endswith("s") else "s"
        return f"{self.periods} {self.period}{plural if self.periods != 1 else ''}"

    def text(self) -> str:
        """The window as a row's note says it."""
        over = f"over {self.count()}" if self.period else "to the end"
        return (f"measured {over} after a warm-up of {self.warmup_s:.0f} s, "
                f"{self.moved:,} pages moved in it")


def window(epochs: pd.DataFrame, compression: float, after: int = 0) -> Window:
    """The measured window of a run's ``epochs`` table (``compression``: the law's K,
    for the warm-up in real seconds); epochs starting before record ``after`` (a
    workload's declared load phase) are warm-up whatever the share does."""
    starts = (epochs["accesses"].cumsum() - epochs["accesses"]).to_numpy()
    clock, name = next(((epochs[c].to_numpy(), n) for c, n in CLOCKS
                        if c in epochs and epochs[c].iloc[-1] > 0), (None, ""))
    if clock is None:
        group = np.arange(len(epochs)) * BLOCKS // max(len(epochs), 1)
    else:  # an epoch belongs to the period in progress when it started
        group = np.concatenate([[0], clock[:-1]])
    eligible = starts >= after
    groups = np.unique(group[eligible])
    dram = epochs["refs_dram"].to_numpy(float)
    refs = dram + epochs["refs_cxl"].to_numpy(float)

    def share(sel: np.ndarray) -> float:
        return float(dram[sel].sum() / max(refs[sel].sum(), 1))

    last = groups[len(groups) // 2:]
    final = share(eligible & np.isin(group, last))
    settled = next((g for g in groups
                    if abs(share(eligible & (group == g)) - final) <= SETTLE), groups[-1])
    if clock is not None:  # at least MIN_PERIODS whole periods (and the last, partial
        settled = min(settled, groups[max(len(groups) - MIN_PERIODS - 1, 0)])  # one)
    first = int(np.flatnonzero(eligible & (group >= settled))[0])
    periods = int(clock[-1] - clock[first - 1]) if clock is not None and first else \
        int(clock[-1]) if clock is not None else 0
    end_of_warmup = float(epochs["end_ns"].iloc[first] - epochs["duration_ns"].iloc[first])
    moved = int(epochs["pgmigrate_success"].iloc[first:].sum())
    return Window(first, periods, name, end_of_warmup * compression / 1e9, moved,
                  clock is None or periods >= MIN_PERIODS,
                  int(clock[-1]) if clock is not None else 0)


def throughput(epochs: pd.DataFrame, first: int) -> float:
    """Accesses per simulated second over epochs ``first`` to the end."""
    part = epochs.iloc[first:]
    return float(part["accesses"].sum() / part["duration_ns"].sum() * 1e9)


def local_share(epochs: pd.DataFrame, first: int) -> float:
    """DRAM's share of the memory references over epochs ``first`` to the end."""
    part = epochs.iloc[first:]
    return float(part["refs_dram"].sum() / max(part["refs_dram"].sum()
                                               + part["refs_cxl"].sum(), 1))
