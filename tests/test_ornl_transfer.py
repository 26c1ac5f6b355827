"""The ornl-transfer experiment: DES vs closed form at every size, T1 numbers, overrides."""

import pytest

from conftest import REPO
from cxlsim.analytic import ornl
from cxlsim.experiments import load_experiment

ORNL = REPO / "experiments" / "ornl-transfer.yaml"


@pytest.fixture(scope="module")
def result():
    return load_experiment(ORNL, ["sizes.per_octave=1", "chunks.stop=16 MiB"]).run()


def test_des_agrees_with_the_closed_form_within_one_percent_at_every_size(result):
    transfer = result.tables["transfer"]
    assert transfer["size_B"].min() == 64 and transfer["size_B"].max() == 2**30
    assert transfer["rel_err"].abs().max() < 0.01


def test_t1_numbers_come_out_of_the_simulation(result):
    m = result.metrics
    assert m["speedup_first_size_p0.6"] == pytest.approx(14.0, rel=0.01)
    assert m["crossover_KiB_p0.6"] == pytest.approx(12.7, rel=0.01)
    assert m["crossover_KiB_p0.9"] == pytest.approx(76.5, rel=0.01)
    assert m["speedup_first_size_p0.9"] < 18.7 * 0.9  # T1.4 is not reachable at p = 0.9
    assert m["latency_only_ratio"] == pytest.approx(18.67, rel=1e-3)


def test_des_crossover_equals_the_exact_closed_form_crossover(result):
    for row in result.tables["crossover"].itertuples():
        assert row.crossover_B == row.crossover_analytic_B == ornl.crossover(row.cxl_penalty)


def test_figures_2_3_and_5_are_drawn(result):
    assert {"Figure 2: transfer time", "Figure 3: relative transfer time",
            "Figure 5: total transfer time vs chunk size"} <= set(result.figures)


def test_a_single_penalty_from_the_command_line_gives_plain_metric_names():
    spec = load_experiment(ORNL, ["link.cxl_penalty=0.75", "sizes.stop=64 B", "chunks=null"])
    m = spec.run().metrics
    assert m["speedup_first_size"] == pytest.approx(ornl.speedup(64, 0.75), rel=0.01)
    assert m["crossover_KiB"] * 1024 == ornl.crossover(0.75)


def test_a_penalty_outside_zero_to_one_is_rejected_with_the_key():
    from cxlsim.errors import InputError
    with pytest.raises(InputError, match=r"--set link.cxl_penalty=1.5: link.cxl_penalty: "
                                         r"a cxl_penalty is a fraction in \(0, 1\); found 1.5"):
        load_experiment(ORNL, ["link.cxl_penalty=1.5"])
