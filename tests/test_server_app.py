"""The server application's demand ceiling and request-latency rise (T4.5's diagnostic)."""

from __future__ import annotations

import pytest

from conftest import REPO
from cxlsim.apps.server import (demand_ceiling, first_workers, latency_rise, serve,
                               steeper_from)
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
    assert steeper_from(system, app, spec.modes["cxl"], spec.modes["ram"], 0.01,
                        range(8, 49, 8), mlp) is None


def test_steeper_from_returns_the_first_count(spec, system):
    slow, fast, m = spec.modes["cxl"], spec.modes["ram"], spec.thread_mlp
    at = {n: latency_rise(system, spec.app, slow, n, m) - latency_rise(system, spec.app,
                                                                        fast, n, m)
          for n in (16, 32, 48)}
    assert at[16] < at[32] < at[48]
    assert steeper_from(system, spec.app, slow, fast, at[32], (16, 32, 48), m) == 32
    assert steeper_from(system, spec.app, slow, fast, at[48] * 2, (16, 32, 48), m) is None


def test_first_workers_bisects():
    calls = []

    def reached(n):
        calls.append(n)
        return n >= 37

    assert first_workers(range(1, 101), reached) == 37 and len(calls) <= 8
    assert first_workers(range(1, 30), reached) is None
    assert first_workers([], reached) is None
