"""The server application's demand ceiling, request-latency rise and the grid of the
workers and MLPs its source leaves open (T4.3's and T4.5's ranges)."""

from __future__ import annotations

import pytest

from conftest import REPO
from cxlsim.apps.server import demand_ceiling, latency_rise, plausible_grid, serve
from cxlsim.experiments import load_experiment

APP = REPO / "experiments" / "app-cxl-vs-ram.yaml"


@pytest.fixture(scope="module")
def spec():
    return load_experiment(APP)


@pytest.fixture(scope="module")
def system(spec):
    return spec.memory()


def test_demand_ceiling_is_the_unbounded_mlp_limit(spec, system):
    app = spec.app.model_copy(update={"gap_max": spec.app.gap_min, "gap_points": 1})
    ceiling = demand_ceiling(app, 48)
    assert ceiling == pytest.approx(48 * 64 / app.read_fraction / 150)   # 30.7 GB/s
    for mode in ("ram", "cxl"):
        drawn = [serve(system, app, spec.modes[mode], 48, m)["bandwidth_GBps"]
                 for m in (1.5, 16, 1e9)]
        assert drawn == sorted(drawn) and drawn[-1] == pytest.approx(ceiling, rel=2e-3)


def test_latency_rise_is_the_sweeps(spec, system):
    sweep = spec.run().tables["threads"]
    for mode in ("ram", "cxl"):
        lat = sweep[sweep["mode"] == mode]["request_latency_us"].to_numpy()
        assert latency_rise(system, spec.app, spec.modes[mode], 48, spec.thread_mlp) \
            == pytest.approx(lat[-1] / lat[0] - 1, rel=1e-9)


@pytest.mark.parametrize("mlp", [1.0, 1.5, 4.0, 9.6, 16.0])
def test_no_mlp_makes_cxl_visibly_steeper_at_48_workers(spec, system, mlp):
    """T4.5's diagnostic: the report's >= 150 ns between accesses keeps 48 workers far
    below the CXL pair's capacity, so no MLP makes the rise differ by a point."""
    app = spec.app.model_copy(update={"mlp": mlp})
    cxl, ram = (latency_rise(system, app, spec.modes[m], 48, mlp) for m in ("cxl", "ram"))
    assert 0 < cxl - ram < 0.01
    grid = plausible_grid(system, app, spec.modes["cxl"], spec.modes["ram"], range(8, 49, 8),
                          [mlp])
    assert (grid["steeper"] < 0.01).all()


def test_the_grid_is_serve_and_latency_rise_at_each_point(spec, system):
    slow, fast = spec.modes["cxl"], spec.modes["ram"]
    grid = plausible_grid(system, spec.app, slow, fast, (16, 96), (1.5, 16))
    assert list(zip(grid.threads, grid.mlp)) == [(16, 1.5), (96, 1.5), (16, 16), (96, 16)]
    for point in grid.itertuples():
        app = spec.app.model_copy(update={"mlp": point.mlp})
        rates = [serve(system, app, w, point.threads, point.mlp)["throughput_rps"]
                 for w in (slow, fast)]
        assert point.throughput_change == pytest.approx(rates[0] / rates[1] - 1, rel=1e-12)
        assert point.steeper == pytest.approx(
            latency_rise(system, app, slow, point.threads, point.mlp)
            - latency_rise(system, app, fast, point.threads, point.mlp), rel=1e-12)
    # more workers and fewer accesses in flight both cost CXL more
    by = grid.set_index(["threads", "mlp"])["throughput_change"]
    assert by[96, 16] < by[16, 16] and by[16, 1.5] < by[16, 16]
