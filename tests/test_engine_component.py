"""Tests for components, seeded RNGs and whole simulation runs."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from pydantic import Field, ValidationError

from cxlsim.config.base import StrictModel
from cxlsim.engine import Component, Simulation, make_rng


class Server(Component):
    """A single FIFO server with deterministic service time (the D of M/D/1)."""

    class Params(StrictModel):
        service_ns: float = Field(10.0, gt=0, description="Service time per request in ns")
        arrival_rate: float = Field(0.05, gt=0, description="Poisson arrival rate per ns")

    def __init__(self, sim, name, params=None, parent=None):
        super().__init__(sim, name, params, parent)
        self.resource = simpy.Resource(self.env, capacity=1)
        self.latency = self.tally("latency")
        self.queue = self.level("queue")
        self.done = self.counter("done")
        self.env.process(self._arrivals())

    def _arrivals(self):
        while True:
            yield self.env.timeout(self.sim.rng.exponential(1.0 / self.params.arrival_rate))
            self.env.process(self._serve(self.env.now))

    def _serve(self, arrived):
        self.queue.add(1, self.env.now)
        with self.resource.request() as req:
            yield req
            yield self.env.timeout(self.params.service_ns)
        self.queue.add(-1, self.env.now)
        self.latency.record(self.env.now - arrived, self.env.now)
        self.done.add()


def run_md1(seed, point=0, until=200_000.0, warmup=1_000.0):
    sim = Simulation(seed=seed, point=point, warmup=warmup)
    host = Component(sim, "host0")
    Server(sim, "server", parent=host)
    sim.run(until=until)
    return sim


def test_dotted_paths_children_and_walk():
    sim = Simulation()
    host = Component(sim, "host0")
    link = Component(sim, "link", parent=host)
    port = Component(sim, "port", parent=link)
    dev = Component(sim, "dev0")
    assert [c.path for c in sim.components] == ["host0", "dev0"]
    assert host.children == [link] and link.children == [port]
    assert port.path == "host0.link.port" and port.name == "port" and port.parent is link
    assert [c.path for c in host.walk()] == ["host0", "host0.link", "host0.link.port"]
    assert [c.path for c in sim.walk()] == ["host0", "host0.link", "host0.link.port", "dev0"]
    assert port.env is sim.env and dev.sim is sim


def test_bad_names_and_parents():
    sim = Simulation()
    host = Component(sim, "host0")
    Component(sim, "link", parent=host)
    for bad in ["", "a.b"]:
        with pytest.raises(ValueError):
            Component(sim, bad)
    with pytest.raises(ValueError, match="duplicate"):
        Component(sim, "link", parent=host)
    with pytest.raises(ValueError, match="duplicate"):
        Component(sim, "host0")
    with pytest.raises(ValueError, match="another simulation"):
        Component(Simulation(), "x", parent=host)


def test_component_stats_are_registered_under_path():
    sim = Simulation()
    link = Component(sim, "link", parent=Component(sim, "host0"))
    link.counter("flits").add(3)
    assert sim.stats.counter("host0.link.flits").value == 3
    assert link.tally("latency") is sim.stats.tally("host0.link.latency")
    assert link.level("credits") is sim.stats.level("host0.link.credits")


def test_params_defaults_dict_and_instance():
    sim = Simulation()
    assert Server(sim, "a").params == Server.Params()
    b = Server(sim, "b", {"service_ns": 4})
    assert isinstance(b.params, Server.Params) and b.params.service_ns == 4.0
    p = Server.Params(arrival_rate=0.01)
    assert Server(sim, "c", p).params is p
    assert isinstance(Component(sim, "d").params, StrictModel)


def test_params_validation():
    sim = Simulation()
    with pytest.raises(ValidationError, match="servce_ns"):
        Server(sim, "a", {"servce_ns": 4})
    with pytest.raises(ValidationError):
        Server(sim, "b", {"service_ns": -1})
    with pytest.raises(ValidationError):
        Server.Params().service_ns = 3        # frozen
    with pytest.raises(TypeError):
        Server(sim, "c", StrictModel())
    assert "a" not in [c.name for c in sim.components]


def test_params_fields_are_documented():
    for name, field in Server.Params.model_fields.items():
        assert field.description, name


def test_rng_same_seed_same_draws_and_points_differ():
    a, b = make_rng(42, 3), make_rng(42, 3)
    np.testing.assert_array_equal(a.random(100), b.random(100))
    x = make_rng(42, 0).random(100)
    assert not np.array_equal(x, make_rng(42, 1).random(100))
    assert not np.array_equal(x, make_rng(43, 0).random(100))
    np.testing.assert_array_equal(x, make_rng(42).random(100))


def test_simulation_owns_rng_and_clock():
    sim = Simulation(seed=7, point=2)
    np.testing.assert_array_equal(sim.rng.random(10), make_rng(7, 2).random(10))
    assert sim.now == 0.0
    sim.run(until=123.5)
    assert sim.now == 123.5


def test_md1_run_is_deterministic_and_plausible():
    first, second = run_md1(seed=1), run_md1(seed=1)
    m1, m2 = first.metrics(), second.metrics()
    assert m1 == m2
    assert first.stats_frame().equals(second.stats_frame())
    assert run_md1(seed=1, point=1).metrics() != m1
    # M/D/1 with rho = 0.5, S = 10 ns: mean wait rho*S / (2(1-rho)) = 5, so latency 15 ns.
    assert m1["host0.server.latency.mean"] == pytest.approx(15.0, rel=0.05)
    assert m1["host0.server.latency.min"] == pytest.approx(10.0)
    assert m1["host0.server.done.rate"] == pytest.approx(0.05, rel=0.05)


def test_warmup_boundary_is_shared_by_counters_and_tallies():
    sim = Simulation(warmup=10.0)
    c, t = sim.stats.counter("c"), sim.stats.tally("t")

    def ticker(env):
        while True:
            c.add()
            t.record(1.0, env.now)
            yield env.timeout(5.0)

    sim.env.process(ticker(sim.env))
    sim.run(until=10.0)      # stops at the warm-up instant: nothing measured yet
    assert c.value == 0 and t.count == 0
    sim.run(until=21.0)      # ticks at 0, 5, 10, 15, 20; the last three are measured
    assert c.value == 3 and t.count == 3
