"""The one CXL device model (``devices/cxl-controller``: a request queue a DRAM channel)
and the quantities identified from one published number each
(:mod:`cxlsim.validation.identified`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from conftest import REPO, refused
from cxlsim.engine import Simulation
from cxlsim.memory.expander import ExpanderTarget
from cxlsim.topology import load_topology
from cxlsim.topology.elaborate import System
from cxlsim.validation.identified import (CHANNEL_QUEUE, QUANTITIES, TRACKERS, identify,
                                          leave_one_out, nearest)
from cxlsim.validation.fidelity import identified_section

SINGLE = REPO / "topologies" / "single-expander.yaml"


def expander(channels: int, *device: str):
    """single-expander.yaml with ``channels`` of DDR5 behind its device, whose node's
    fields ``device`` (``key=value``) are set."""
    data = yaml.safe_load(SINGLE.read_text(encoding="utf-8"))
    data["nodes"].append({"name": "cxl0_dram", "type": "dram", "attached_to": "cxl0",
                          "preset": "memory/ddr5-4800", "channels": channels,
                          "capacity": "64 GiB"})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "expander.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        topology = load_topology(path, [f"nodes[3].{d}" for d in device])
    return topology, ExpanderTarget(topology, "host0", "cxl0")


@pytest.mark.parametrize("channels", [1, 2, 4])
def test_the_queue_scales_with_the_channels_at_both_levels(channels):
    topology, cxl = expander(channels, "channel_queue=8")
    assert topology.request_limit("cxl0") == cxl.request_buffer == 8 * channels
    assert cxl.limits(1.0)["request buffer"] == pytest.approx(
        8 * channels * 64 / cxl.idle_latency * 1e9)
    path = System(Simulation(1), topology).mem_path("host0", "cxl0")
    assert path.req_credits.credits == 8 * channels  # the host's credits


def test_a_device_wide_buffer_below_the_channels_queues_holds():
    topology, cxl = expander(4, "channel_queue=8", "request_buffer=20")
    assert cxl.request_buffer == 20
    assert expander(1, "channel_queue=8", "request_buffer=20")[1].request_buffer == 8
    assert expander(2)[1].request_buffer is None  # neither: no limit


def test_a_channel_queue_needs_a_dram_and_a_positive_depth(capsys):
    refused(capsys, ["topology", "show", str(SINGLE), "--set", "nodes[3].channel_queue=8"],
            "nodes[3].channel_queue: channel_queue (8) counts requests per channel of the "
            "device's DRAM, but no dram node is attached to 'cxl0'")
    refused(capsys, ["topology", "show", str(SINGLE), "--set", "nodes[3].channel_queue=0"],
            "nodes[3].channel_queue: expected greater than or equal to 1; found 0")


def test_the_modules_with_a_published_bandwidth_share_one_controller():
    """CZ120 (T8.5), the CXL-A-like expander (T8.6) and Selectel's cards (T4) are the one
    device model: the same latencies and queue a channel; the CMM modules (T5) are not
    (their maker's 36 GB/s a module rules the queue out)."""
    parts = {}
    for name, device in (("cz120", "cz0"), ("one-channel-expander", "cxl0"),
                         ("selectel-xeon6-cxl", "cxl1"), ("hmsdk-cmm", "cmm2")):
        spec = load_topology(REPO / "topologies" / f"{name}.yaml").graph.nodes[device]["spec"]
        parts[name] = (spec.controller_latency, spec.media_latency, spec.channel_queue,
                       spec.request_buffer)
    assert parts["cz120"] == parts["one-channel-expander"] == parts["selectel-xeon6-cxl"] \
        == (30.0, 50.0, CHANNEL_QUEUE.held(), None)
    assert parts["hmsdk-cmm"] == (30.0, 50.0, None, None)


def test_nearest_finds_the_whole_value_by_bisection():
    calls = []

    def simulate(v: int) -> float:
        calls.append(v)
        return 0.25 * v

    assert nearest(simulate, 10.1, 1, 1000) == 40 and len(calls) < 16
    assert nearest(simulate, 10.2, 1, 1000) == 41  # 10.25 is nearer than 10.0
    assert nearest(simulate, 0.0, 8, 1000) == 8  # the target below the range: its end
    assert nearest(simulate, 999.0, 8, 1000) == 1000


def test_the_models_hold_the_values_their_rows_identify():
    for quantity in QUANTITIES:
        assert identify(quantity, quantity.row) == quantity.held()
        assert quantity.low <= quantity.held() <= quantity.high


def test_the_leave_one_out_of_the_controllers_queue_agrees():
    """Identified on CXL-A (one channel, all reads) it predicts CZ120 (two channels, 2:1)
    within ±10 %, and back: the queue scales with the channels."""
    there, back = leave_one_out(CHANNEL_QUEUE)
    assert (there.source, there.predicted, back.source) == ("T8.6", "T8.5", "T8.5")
    assert there.holds and back.holds
    assert there.text().startswith("T8.5 35.0 GB/s (-2.7% from 36 GB/s)")


def test_the_leave_one_out_of_the_trackers_agrees():
    """Identified on T5.1 the count predicts T5.2 within its ±3 points, and back: with the
    DRAM controller's read/write switching modelled, both mixes want nearly one count
    (before it, 610 against 541 and T5.2 5 points over)."""
    there, back = leave_one_out(TRACKERS)
    assert there.value == TRACKERS.held() and abs(back.value - there.value) < 30
    assert there.holds and back.holds
    section = "\n".join(identified_section())
    assert "| trackers (models/cpus/xeon6.yaml) | 642 |" in section
    assert section.count("agree within the rows' tolerances") >= 2
    assert "not applied to T5's CMM modules" in section
