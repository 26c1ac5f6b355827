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
    by = result.tables["penalties"].set_index("cxl_penalty")
    assert by.loc[0.6, "speedup_first_size"] == pytest.approx(14.0, rel=0.01)
    assert by.loc[0.6, "crossover_KiB"] == pytest.approx(12.7, rel=0.01)
    assert by.loc[0.9, "crossover_KiB"] == pytest.approx(76.5, rel=0.01)
    assert by.loc[0.9, "speedup_first_size"] < 18.7 * 0.9  # T1.4 is not reachable at p = 0.9
    assert result.metrics["latency_only_ratio"] == pytest.approx(18.67, rel=1e-3)
    # metric names never depend on the config: per-penalty numbers live in the table
    assert set(result.metrics) == {"max_rel_err_des_vs_analytic", "latency_only_ratio"}


def test_des_crossover_equals_the_exact_closed_form_crossover(result):
    for row in result.tables["penalties"].itertuples():
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


@pytest.mark.parametrize("overrides, message", [
    (["sizes={start: 1 GiB, stop: 64 B}"],
     "sizes: stop (64 B) must not be below start (1,073,741,824 B)"),
    (["chunks={total: 1 GB, start: 1 MiB, stop: 4 KiB}"],
     "chunks: stop (4,096 B) must not be below start (1,048,576 B)"),
])
def test_inconsistent_fields_are_refused(overrides, message):
    from cxlsim.errors import InputError
    with pytest.raises(InputError) as err:
        load_experiment(ORNL, overrides)
    assert message in str(err.value)


def test_a_topology_is_refused_not_ignored(tmp_path):
    from cxlsim.errors import InputError
    path = tmp_path / "ornl.yaml"
    path.write_text(ORNL.read_text() + f"topology: {REPO / 'topologies' / 'switch-pool.yaml'}\n")
    with pytest.raises(InputError) as err:
        load_experiment(path)
    assert (": topology: ornl-transfer runs the ORNL model's own link ('link:'), not a "
            "topology's; remove 'topology:'") in str(err.value)
    assert (
        "topology: ornl-transfer runs the ORNL model's own link ('link:'), not a topology's; "
        "remove 'topology:'") in str(err.value)
