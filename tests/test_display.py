"""Metrics as ``cxlsim run`` prints them: grouped, in the display unit their name gives,
never in e-notation; ``--json`` keeps the exact values."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from cxlsim.cli import main
from cxlsim.experiments.display import GROUP_ABOVE, group_of, metric_text, metrics_text

#: Names of every kind's metrics, one or two of each way of naming a unit.
NAMES = ["app_time_s", "local_ns", "request_latency_us_min_threads_cxl", "accesses_per_s",
         "throughput_rps_cxl", "bandwidth_GBps_dram_only_rw1", "first_knee_MiB_l2",
         "crossover_KiB", "traffic_share_cxl0", "utilisation_cxl", "latency_only_ratio",
         "max_rel_err_des_vs_analytic", "pgmigrate_success", "points", "case.region.node0"]

#: A trace-memory run's metrics, as metrics.json holds them.
TRACE_RUN = {
    "app_time_s": 11.520216, "accesses": 250000000, "accesses_per_s": 21700923.4,
    "cores": 2, "epochs": 3815, "mean_memory_latency_ns": 202.3469,
    "traffic_share_dram": 0.370494, "traffic_share_cxl": 0.629506, "pages_anon": 262144,
    "pgpromote_success": 2130751, "tlb_shootdown_ns": 79545800.0,
    "migrations_per_s": 372643.2, "policy_acted": True, "policy_idle_reason": "",
    "local_ns": 6452740000.0, "local_share": 0.560122, "loss_copy_traffic_share": 0.00020569,
    "scale": 16, "clock_kswapd_interval_ns": 62500.0}


def test_each_value_in_the_unit_its_name_gives():
    shown = {name: metric_text(name, value) for name, value in TRACE_RUN.items()}
    assert shown == {
        "app_time_s": "11.52 s", "accesses": "250,000,000", "accesses_per_s": "21.7 M/s",
        "cores": "2", "epochs": "3,815", "mean_memory_latency_ns": "202.3 ns",
        "traffic_share_dram": "37.05 %", "traffic_share_cxl": "62.95 %",
        "pages_anon": "262,144", "pgpromote_success": "2,130,751",
        "tlb_shootdown_ns": "79.55 ms", "migrations_per_s": "372.6 k/s",
        "policy_acted": "yes", "policy_idle_reason": "-", "local_ns": "6.453 s",
        "local_share": "56.01 %", "loss_copy_traffic_share": "0.02057 %", "scale": "16",
        "clock_kswapd_interval_ns": "62.5 us"}
    assert metric_text("throughput_rps_cxl", 3000.0) == "3 kreq/s"
    assert metric_text("bandwidth_GBps_x", 37.5) == "37.5 GB/s"
    assert metric_text("crossover_KiB", 12.75) == "12.75 KiB"
    assert metric_text("first_knee_MiB_l2", float("nan")) == "n/a"
    assert metric_text("latency_only_ratio", 18.666666) == "18.67"


def test_a_long_list_is_grouped_by_name_and_unit():
    text = metrics_text(TRACE_RUN)
    headings = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert headings == ["run", "time", "throughput", "traffic per node", "pages",
                        "kernel counters", "policy", "loss breakdown", "scaling"]
    assert "\n\ntime\n  app_time_s                11.52 s\n" in text
    assert "\n  loss_copy_traffic_share   0.02057 %\n" in text  # a loss before a share
    assert group_of("migrations_per_s") == "kernel counters"


def test_a_short_list_stays_one_list_in_its_own_order():
    metrics = {"max_rel_err_des_vs_analytic": 0.0103, "speedup_first_size": 14.18,
               "crossover_KiB": 12.75, "latency_only_ratio": 18.67}
    assert len(metrics) <= GROUP_ABOVE
    assert metrics_text(metrics).splitlines() == [
        "max_rel_err_des_vs_analytic  0.0103", "speedup_first_size           14.18",
        "crossover_KiB                12.75 KiB", "latency_only_ratio           18.67"]


@given(st.sampled_from(NAMES),
       st.one_of(st.just(0.0), st.floats(1e-6, 1e15), st.floats(-1e15, -1e-6),
                 st.integers(-10 ** 15, 10 ** 15)))
def test_never_in_e_notation(name, value):
    assert not re.search(r"\d[eE][+-]?\d", metric_text(name, value))


def test_the_trace_run_prints_in_display_units_and_json_stays_exact(capsys, tmp_path):
    small = ["trace.n=12288", "epoch=4096", "trace.params.footprint=4MiB"]
    sets = [arg for kv in small for arg in ("--set", kv)]
    assert main(["run", "trace-memory", *sets, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\d[eE][+-]?\d", out)
    assert "\nloss breakdown\n" in out and re.search(r"\n  local_ns +[\d.]+ [mu]?s\n", out)
    assert main(["run", "trace-memory", *sets, "--json", "--out", str(tmp_path / "b")]) == 0
    exact = json.loads(capsys.readouterr().out)["metrics"]
    assert isinstance(exact["local_ns"], float) and exact["epochs"] == 3


def test_a_relative_loss_is_a_percentage_whatever_it_is_a_loss_of():
    from cxlsim.experiments.display import metric_text

    assert metric_text("accesses_per_s_loss", 0.02792) == "2.792 %"
    assert metric_text("accesses_per_s", 2.17e7) == "21.7 M/s"
