"""A sweep's baseline: each point's metrics against the point differing only in one key."""

from __future__ import annotations

import pytest

from cxlsim.errors import InputError
from cxlsim.experiments.spec import Baseline
from cxlsim.experiments.sweep import run_file

from test_sweep import HOP, HOP_NS, WIDTH, write_experiment

GRID = f'{{"{WIDTH}": [4, 8, 16], "{HOP}": ["50 ns", "90 ns"]}}'


def _with_baseline(tmp_path, baseline, heatmaps="[latency_min_ns_loss]"):
    path = write_experiment(tmp_path, GRID, heatmaps)
    text = path.read_text().rstrip("\n")
    path.write_text(f"{text[:-1]}, baseline: {baseline}}}\n")  # into the sweep mapping
    return path


def test_each_point_is_compared_with_its_baseline(tmp_path):
    path = _with_baseline(tmp_path, f'{{key: "{HOP}", value: 50 ns, metrics: [latency_min_ns]}}')
    result = run_file(path, jobs=1)
    by = result.tables["points"].set_index([WIDTH, HOP_NS])
    for width in (4, 8, 16):
        base = by.loc[(width, 50), "latency_min_ns"]
        assert by.loc[(width, 50), "latency_min_ns_loss"] == 0
        assert by.loc[(width, 90), "latency_min_ns_loss"] == pytest.approx(
            (base + 40) / base - 1)                     # +40 ns slower: a positive loss
    assert "latency_min_ns_loss" in result.figures


@pytest.mark.parametrize("metric, point, base, loss", [
    ("app_time_s", 1.2, 1.0, 0.2), ("latency_min_ns", 90, 100, -0.1),
    ("accesses_per_s", 0.8, 1.0, 0.2), ("traffic_share_dram", 0.5, 0.4, -0.25)])
def test_a_loss_is_positive_when_the_point_does_worse(metric, point, base, loss):
    assert Baseline.loss(metric, point, base) == pytest.approx(loss)


@pytest.mark.parametrize("baseline, message", [
    ("{key: seed, value: 1, metrics: [latency_min_ns]}", "baseline.key: 'seed' is not a key"),
    (f'{{key: "{HOP}", value: 70 ns, metrics: [latency_min_ns]}}',
     "baseline.value: '70 ns' is not one of the grid's values"),
    (f'{{key: "{HOP}", value: 50 ns, metrics: [nope]}}',
     "sweep.baseline.metrics[0]: 'nope' is not a numeric metric"),
])
def test_a_bad_baseline_is_named(tmp_path, baseline, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run_file(_with_baseline(tmp_path, baseline), jobs=1)


def test_a_grid_without_its_baseline_is_refused_before_it_starts(tmp_path):
    with pytest.raises(InputError) as err:
        run_file("policy-compare", ["sweep.grid.policy=[tpp, static]"],
                 out=tmp_path / "out")
    assert ("baseline.value: 'all-local' is not one of the grid's values of policy (tpp, "
            "static): every point is compared with its baseline point (policy = all-local), "
            "so the grid must hold it; add all-local to sweep.grid.policy, or drop the "
            "comparison (--set sweep.baseline=null)") in str(err.value)
    assert not (tmp_path / "out").exists()


def test_the_policy_comparison_sweeps_policies_against_all_local():
    """experiments/policy-compare.yaml, shortened to a small unscaled run whose scanner
    acts within it (short clocks set here: the file keeps the kernel's): every point of
    the grid validates and the table holds the loss against all-local, the local share
    and the migrations."""
    from conftest import REPO

    result = run_file(REPO / "experiments" / "policy-compare.yaml", [
        "trace.n=60000", "epoch=5000", "scale=1", "real_threads=2",
        "trace.params={footprint: 64 MiB, threads: 2}",
        "numa_balancing={scan_delay: 100 us, scan_period: 100 us, scan_period_max: 6 ms, "
        "scan_size: 4 MiB, max_scan_rate: 25600 GB/s}",
        "sweep.grid={policy: [all-local, static, numab-tiering, autotiering], "
        "'topology.nodes[1].capacity': [13 MiB], trace.generate: [phases]}"], jobs=1)
    table = result.tables["points"].set_index("policy")
    assert (table.loc["all-local", "accesses_per_s_loss"] == 0).all()
    assert (table.loc["all-local", "traffic_share_dram"] == 1).all()
    assert (table.loc["static", "migrations_per_s"] == 0).all()
    for moving in ("numab-tiering", "autotiering"):
        assert (table.loc[moving, "migrations_per_s"] > 0).all()
    assert (table.loc[["static", "numab-tiering", "autotiering"], "accesses_per_s_loss"]
            > 0).all()
    assert set(result.figures) == {"accesses_per_s_loss", "traffic_share_dram",
                                   "migrations_per_s"}
