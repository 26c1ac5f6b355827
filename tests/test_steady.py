"""The one judging rule of the tiering rows (cxlsim.validation.steady): the warm-up ends
when DRAM's share settles, the window covers at least ten of the policy's periods."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cxlsim.validation.steady import MIN_PERIODS, local_share, throughput, window


def _epochs(shares, passes=None, aggregations=None, accesses=100, moved=None):
    """An epochs table: DRAM's share per epoch, the policy clocks (cumulative)."""
    n = len(shares)
    refs = np.full(n, 1000)
    dram = np.round(np.asarray(shares) * refs).astype(int)
    return pd.DataFrame({
        "accesses": np.full(n, accesses), "duration_ns": np.full(n, 1e6),
        "end_ns": np.arange(1, n + 1) * 1e6, "refs_dram": dram, "refs_cxl": refs - dram,
        "numa_scan_passes": np.zeros(n, int) if passes is None else passes,
        "damon_aggregations": np.zeros(n, int) if aggregations is None else aggregations,
        "pgmigrate_success": np.ones(n, int) if moved is None else moved})


def test_the_warm_up_ends_when_the_share_settles():
    # 40 passes of 5 epochs: the share climbs over the first 10 passes, then stays at 0.9
    passes = np.arange(200) // 5
    shares = np.minimum(0.5 + 0.04 * passes, 0.9)
    w = window(_epochs(shares, passes), compression=16)
    # an epoch belongs to the period in progress when it started: period 10 (epochs 51-55,
    # after the epoch that ended pass 10) is the first whose share is within two points
    # of the last half's 0.9 (period 9 holds four epochs at 0.86)
    assert w.first == 51 and w.steady and w.period == "NUMA-scan pass"
    assert w.periods == 39 - 10  # the passes completed from there to the end
    assert w.warmup_s == pytest.approx(51 * 1e-3 * 16)
    assert w.moved == 200 - 51
    assert "29 NUMA-scan passes" in w.text() and "warm-up of 1 s" in w.text()


def test_a_late_settling_run_is_still_judged_over_ten_periods():
    passes = np.arange(150) // 10
    shares = np.where(passes < 14, 0.3, 0.9)  # settles in the last of 15 passes
    w = window(_epochs(shares, passes), compression=1)
    assert w.periods >= MIN_PERIODS and w.steady


def test_a_run_with_fewer_than_ten_periods_is_not_steady():
    passes = np.arange(40) // 10  # four passes
    w = window(_epochs(np.full(40, 0.8), passes), compression=1)
    assert not w.steady and w.count() == "3 NUMA-scan passes"


def test_damon_aggregations_are_the_clock_when_there_is_no_scanner():
    aggregations = np.arange(120) // 4
    w = window(_epochs(np.full(120, 0.7), aggregations=aggregations), compression=1)
    assert w.period == "DAMON aggregation" and w.steady and w.first == 0


def test_a_run_without_a_clock_settles_over_blocks_after_the_declared_warm_up():
    shares = np.concatenate([np.full(50, 0.2), np.full(150, 0.6)])
    w = window(_epochs(shares), compression=1, after=20 * 100)  # 20 epochs of load
    assert w.period == "" and w.steady and w.first == 50 and w.periods == 0
    assert "to the end" in w.text()


def test_throughput_and_share_over_a_window():
    epochs = _epochs(np.linspace(0, 1, 11))
    assert throughput(epochs, 5) == pytest.approx(100 / 1e6 * 1e9)
    assert local_share(epochs, 10) == pytest.approx(1.0)


def test_quick_mode_shows_a_row_at_the_rules_limit_as_smoke():
    """A run holding within two of the rule's ten periods: the coarser scale may move the
    count by two, so quick mode shows the row as SMOKE with why; 13 or 7 it judges."""
    import pandas as pd

    from cxlsim.validation import SMOKE
    from cxlsim.validation import tpp
    from cxlsim.validation.steady import Window
    from cxlsim.validation.tpp_runs import Judged

    def run(total):
        return ("TPP", Judged(pd.DataFrame(), Window(0, total, "NUMA-scan pass", 0.0, 0,
                                                     total >= 10, total)))

    tpp._quick[0] = True
    try:
        for total, smoked in ((7, False), (8, True), (10, True), (12, True), (13, False)):
            out = tpp._judge("T6.2", [16.0, 22.0], "x", require=tpp._steady(run(total)))
            assert (out.status == SMOKE) == smoked, total
        assert "TPP 10 NUMA-scan passes in the run" in tpp._judge(
            "T6.2", [16.0, 22.0], "x", require=tpp._steady(run(10))).note
    finally:
        tpp._quick[0] = False
    assert tpp._judge("T6.2", [16.0, 22.0], "x", require=tpp._steady(run(10))).status != SMOKE
