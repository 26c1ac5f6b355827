"""``kind: epyc-latency``: knees from the curve, the experiment file, the T3 check."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.experiments.kinds.epyc_latency import find_knees
from cxlsim.validation import PASS
from cxlsim.validation.caches import epyc_l3_tlb

BLOCKS = np.array([1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32], dtype=float)


def test_a_flat_curve_has_no_knee():
    assert find_knees(BLOCKS, np.full(BLOCKS.size, 12.0), 0.05) == []


def test_knees_are_where_the_slope_jumps():
    latency = np.where(BLOCKS <= 8, 14.0, 14.0 * (BLOCKS / 8) ** 0.5)   # bends at 8
    latency = np.where(BLOCKS <= 16, latency, 100.0)                   # jumps after 16
    knees = find_knees(BLOCKS, latency, 0.05)
    assert [k for k, _ in knees] == [8.0, 16.0]
    assert knees[0][1] == pytest.approx(0.5 * np.log(2))  # ln(latency) per doubling
    assert knees[1][1] > knees[0][1]


def test_a_small_bend_is_below_the_threshold():
    latency = np.where(BLOCKS <= 8, 14.0, 14.0 * (BLOCKS / 8) ** 0.01)
    assert find_knees(BLOCKS, latency, 0.05) == []


def test_the_experiment_file_runs_small(repo):
    spec = load_experiment(repo / "experiments/epyc7452-latency.yaml", [
        "blocks=[2 MiB, 4 MiB, 8 MiB, 12 MiB, 16 MiB, 24 MiB]", "compare_block=12 MiB"])
    result = spec.run()
    points = result.tables["points"]
    assert len(points) == 12 and set(points["page_size"]) == {"4 KiB", "2 MiB"}
    large = points[points["page_size"] == "2 MiB"]
    assert (large["walks_per_load"] == 0).all()      # 4 GiB of TLB reach
    small = points[points["page_size"] == "4 KiB"].set_index("block_MiB")
    assert small.loc[8, "walks_per_load"] == 0 and small.loc[12, "walks_per_load"] > 0.25
    m = result.metrics
    assert m["latency_ratio_4KiB_over_2MiB"] > 1 > m["bandwidth_ratio_4KiB_over_2MiB"]
    assert set(result.figures) == {"latency", "bandwidth"}
    assert result.figures["latency"].layout.xaxis.type == "log"


@pytest.mark.parametrize("override, message", [
    ("blocks=[4 MiB, 2 MiB, 8 MiB]", "blocks must be strictly ascending"),
    ("compare_block=100 MiB", "compare_block must be one of the blocks"),
    ("page_sizes=[4 KiB, 64 KiB]", "page sizes must be distinct, each 4 KiB, 2 MiB or 1 GiB"),
])
def test_bad_experiments_are_rejected(repo, override, message):
    with pytest.raises(InputError, match=message):
        load_experiment(repo / "experiments/epyc7452-latency.yaml", [override])


def test_t3_check_passes_quick():
    outcomes = epyc_l3_tlb(True)
    assert sorted(outcomes) == ["T3.1", "T3.2", "T3.3", "T3.4", "T3.5"]
    for target, outcome in outcomes.items():
        assert outcome.status == PASS, (target, outcome)
    assert outcomes["T3.1"].simulated.startswith("8 MiB")
    assert outcomes["T3.2"].simulated.startswith("16 MiB")
