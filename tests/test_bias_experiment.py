"""``kind: bias``: phases composed from simulated pieces, the break-even reuse and the report."""

import json
import math

import pytest

import cxlsim
from cxlsim.experiments.kinds.bias import BiasExperiment, break_even, pays_from
from cxlsim.experiments.loader import load_experiment
from cxlsim.topology import Topology

from conftest import REPO

BIAS = REPO / "experiments" / "bias.yaml"
SMALL = ["sizes=[4 KiB, 64 KiB]", "reuse=[1, 2, 16]"]


@pytest.fixture(scope="module")
def result():
    return cxlsim.run(BIAS, overrides=SMALL)


def _pieces(*overrides, size=64 * 1024):
    spec = load_experiment(BIAS, [*SMALL, *overrides])
    return spec.pieces(Topology.from_spec(spec.topology), size, spec.burst)


def test_kind_is_registered_and_the_file_loads():
    spec = load_experiment(BIAS)
    assert isinstance(spec, BiasExperiment)
    assert spec.sizes[0] == 4096 and spec.sizes[-1] == 64 * 2**20


def test_tables_cover_every_size_reuse_and_policy(result):
    phases = result.tables["phases"]
    assert len(phases) == 2 * 3 * 3
    assert set(phases["policy"]) == {"host bias", "device bias", "flip"}
    host = phases[phases["policy"] == "host bias"]
    assert (host["speedup_vs_host"] == 1).all()
    assert set(result.figures) == {"phase time", "flip speedup", "break-even reuse"}


def test_flipping_pays_only_above_the_break_even_reuse(result):
    pieces, phases = result.tables["pieces"], result.tables["phases"]
    flip = phases[phases["policy"] == "flip"]
    for _, row in pieces.iterrows():
        r_star = row["break_even_reuse"]
        assert 1 < r_star < 16
        at = flip[flip["size"] == row["size"]].set_index("reuse")["speedup_vs_host"]
        assert at[1] < 1 < at[16]
        assert (at[2] > 1) == (2 > r_star)
    assert "flipping to device bias beats staying in host bias from 2 passes" in \
        result.metrics["flip_pays"]


def test_device_bias_is_the_lower_bound(result):
    phases = result.tables["phases"].pivot_table(index=["size", "reuse"], columns="policy",
                                                 values="time_ns")
    assert (phases["device bias"] < phases["flip"]).all()
    assert (phases["device bias"] < phases["host bias"]).all()


def test_later_passes_repeat_so_phases_compose():
    spec = load_experiment(BIAS, SMALL)
    topology = Topology.from_spec(spec.topology)
    size = 16 * 1024
    host = spec.simulate(topology, size, spec.burst, ["access"] * 4)
    assert host[0] > host[1]  # the first pass writes the host's modified lines back
    assert host[1] == pytest.approx(host[2]) == pytest.approx(host[3])
    flip = spec.simulate(topology, size, spec.burst,
                         ["flip_to_device", "access", "access", "access", "flip_to_host"])
    assert flip[1] == pytest.approx(flip[2]) == pytest.approx(flip[3])
    pieces = spec.pieces(topology, size, spec.burst)
    assert sum(host) == pytest.approx(pieces["host_pass1_ns"] + 3 * pieces["host_pass_ns"])
    assert sum(flip) == pytest.approx(pieces["flip_in_ns"] + 3 * pieces["device_pass_ns"]
                                      + pieces["flip_out_ns"])


def test_break_even_falls_when_host_coherence_gets_slower():
    fast = break_even(_pieces("coherence_latency=90 ns"))
    slow = break_even(_pieces("coherence_latency=400 ns"))
    assert 1 < slow < fast


def test_break_even_rises_with_what_the_device_must_flush_on_the_way_back():
    assert break_even(_pieces("device_dirty_fraction=0 %")) < break_even(
        _pieces("device_dirty_fraction=100 %"))


def test_a_slow_transition_agent_needs_more_reuse():
    assert break_even(_pieces("flip_mlp=8")) > 5 * break_even(_pieces("flip_mlp=64"))


def test_flipping_pays_at_any_reuse_when_host_bias_passes_are_slow():
    assert break_even(_pieces("access_mlp=8")) == 0.0


def test_a_slow_flip_command_needs_more_reuse_on_small_data():
    small = break_even(_pieces("flip_setup=5 us", size=4096))
    large = break_even(_pieces("flip_setup=5 us", size=1 << 20))
    assert small > 5 * large


def test_pays_from_is_the_next_whole_pass():
    assert pays_from(1.07) == 2 and pays_from(0.0) == 1 and pays_from(3.0) == 4
    assert pays_from(math.inf) is None


def test_batching_error_is_measured_and_small(result):
    assert 0 < result.metrics["burst_error"] < 0.03


def test_metrics_are_json_safe(result):
    data = json.loads(result.to_json())
    assert data["metrics"]["break_even_reuse_4KiB"] > 1


def test_sizes_are_whole_pages(write):
    path = write("b.yaml", f"""\
        name: b
        kind: bias
        topology: {REPO / 'topologies' / 'type2-accelerator.yaml'}
        sizes: [6000 B]
        """)
    with pytest.raises(cxlsim.errors.InputError, match="whole number of 4096 B pages"):
        load_experiment(path)
