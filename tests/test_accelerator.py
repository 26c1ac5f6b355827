"""Compute engines: speed from throughput or a measured time, runs served in order."""

import pytest
from pydantic import ValidationError

from cxlsim.devices.accelerator import ComputeEngine, ComputeEngineParams
from cxlsim.engine import Simulation


def test_measured_time_and_throughput_give_the_same_speed():
    a = ComputeEngineParams(time=70.9e6, per=15_384_616)
    b = ComputeEngineParams(throughput=15_384_616 / 70.9e-3)
    assert a.ns_per_byte == pytest.approx(b.ns_per_byte)


def test_runs_queue_behind_each_other_with_their_setup():
    sim = Simulation()
    engine = ComputeEngine(sim, "k", {"throughput": 1e9, "setup": 5.0})  # 1 B/ns
    ends = []
    for n in (100, 50):
        engine.run(n).callbacks.append(lambda ev: ends.append(sim.now))
    sim.run()
    assert ends == [105.0, 160.0]


@pytest.mark.parametrize("fields", [{}, {"throughput": 1e9, "time": 1.0, "per": 1},
                                    {"time": 1.0}])
def test_exactly_one_way_of_giving_the_speed(fields):
    with pytest.raises(ValidationError, match="give either 'throughput' or both 'time' and 'per'"):
        ComputeEngineParams(**fields)
