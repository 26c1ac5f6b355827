"""``kind: cache-vs-dma``: CXL.cache line requests with a window in flight against one DMA."""

from __future__ import annotations

import pytest

from conftest import REPO, refused
from cxlsim.experiments import load_experiment
from cxlsim.link.tlp import completion_wire_bytes, phy_config, tlp_bandwidth, write_wire_bytes
from cxlsim.topology import Topology

EXPERIMENT = REPO / "experiments" / "cache-vs-dma.yaml"
SMALL = ["sizes=[64 B, 1 KiB, 16 KiB]", "in_flight=[1, 4]"]
MiB = 2**20


def _spec(overrides=()):
    spec = load_experiment(EXPERIMENT, list(overrides))
    return spec, Topology.from_spec(spec.topology)


def test_a_small_run_has_every_point_and_a_crossover_per_window():
    result = load_experiment(EXPERIMENT, [*SMALL, "ops=[read]"]).run()
    points, crossover = result.tables["points"], result.tables["crossover"]
    assert len(points) == 3 * 2 * 2
    assert set(points["method"]) == {"CXL.cache", "DMA"}
    assert (points["bandwidth_GBps"] == points["size_B"] / points["time_ns"]).all()
    assert list(crossover["in_flight"]) == [1, 4]
    assert result.metrics["crossovers_found"] == 2 and result.metrics["crossovers_missing"] == 0
    assert "transfer time" in result.figures


def test_one_line_in_flight_one_takes_the_unloaded_read_latency():
    spec, topo = _spec()
    system = spec.system(topo)
    path = system.cache_path(spec.host, spec.device, credits=spec.credits)
    done: list[float] = []
    path.read(lambda _txn: done.append(system.sim.now), "RdCurr")
    system.sim.run()
    assert spec.cache_ns(topo, 64, 1, "read") == pytest.approx(done[0], rel=1e-12)
    assert spec.cache_ns(topo, 1, 1, "read") == pytest.approx(done[0], rel=1e-12)


@pytest.mark.parametrize("op", ["read", "write"])
@pytest.mark.parametrize("in_flight", [1, 4])
def test_few_lines_in_flight_are_latency_bound(op, in_flight):
    spec, topo = _spec()
    one = spec.cache_ns(topo, 64, 1, op)
    for lines in (4, 16, 64):
        assert spec.cache_ns(topo, 64 * lines, in_flight, op) == pytest.approx(
            lines / in_flight * one, rel=0.02)


def test_a_large_dma_streams_at_the_links_tlp_rate():
    spec, topo = _spec()
    cfg = phy_config(spec.system(topo).device_link(spec.host, spec.device)[0].params)
    ns_per_byte = 1e9 / tlp_bandwidth(cfg)
    for op, wire in (("read", completion_wire_bytes), ("write", write_wire_bytes)):
        t1, t2, t4 = (spec.dma_ns(topo, k * MiB, op) for k in (1, 2, 4))
        assert t4 - t2 == pytest.approx(wire(2 * MiB, cfg) * ns_per_byte, rel=2e-3)
        ideal = [k * MiB * ns_per_byte for k in (1, 2, 4)]
        ratios = [t / i for t, i in zip((t1, t2, t4), ideal)]
        assert 1 < ratios[2] < ratios[1] < ratios[0] < 1.2


def test_the_crossover_moves_to_larger_sizes_with_more_lines_in_flight():
    sizes = "sizes=[64 B, 256 B, 1 KiB, 4 KiB, 16 KiB, 64 KiB]"
    result = load_experiment(EXPERIMENT, [sizes]).run()
    for _, part in result.tables["crossover"].groupby("op"):
        sizes = list(part.sort_values("in_flight")["crossover_B"])
        assert all(s > 0 for s in sizes)
        assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    points = result.tables["points"].set_index(["op", "size_B", "in_flight", "method"])
    spec, topo = _spec()
    for _, row in result.tables["crossover"].iterrows():
        n, k, op = int(row["crossover_B"]), int(row["in_flight"]), row["op"]
        assert spec.dma_ns(topo, n, op) <= spec.cache_ns(topo, n, k, op)
        assert spec.dma_ns(topo, n - 1, op) > spec.cache_ns(topo, n - 1, k, op)
        assert points.loc[(op, 64, k, "CXL.cache"), "time_ns"] < \
            points.loc[(op, 64, k, "DMA"), "time_ns"]


def test_a_worse_link_never_makes_anything_faster():
    base = load_experiment(EXPERIMENT, SMALL).run().tables["points"]
    slow = load_experiment(EXPERIMENT, [*SMALL, "topology.links[0].latency=100 ns"]).run() \
        .tables["points"]
    assert (slow["time_ns"] >= base["time_ns"]).all()
    assert (slow["time_ns"] > base["time_ns"]).all()


TOPOLOGY = """
name: t
nodes:
  - {name: host0, type: host, sockets: 1, cores: 8}
  - {name: rp0, type: root_port, host: host0}
  - {name: acc0, type: cxl_device, cxl_type: 2, capacity: 64 GiB, controller_latency: 30 ns,
     media_latency: 50 ns, media_bandwidth: 76.8 GB/s}
  %s
links:
  %s
"""
DRAM = "- {name: dram0, type: dram, attached_to: host0, channels: 8, latency: 110 ns}"
SWITCH = "- {name: sw0, type: switch, ports: 4, hop_latency: 90 ns}"
DIRECT = "- {from: rp0, to: acc0, preset: links/cxl-gen5-x16}"
SWITCHED = ("- {from: rp0, to: sw0, preset: links/cxl-gen5-x16}\n"
            "  - {from: sw0, to: acc0, preset: links/cxl-gen5-x16}")


@pytest.mark.parametrize("topology, overrides, message", [
    (None, ["device=host0"], "device: 'host0' is not a CXL Type 1 or 2 device or "
     "accelerator; expected a CXL Type 1 or 2 device or accelerator: 'acc0'"),
    (None, ["host=rp0"], "host: 'rp0' is not a host; expected a host: 'host0'"),
    (None, ["sizes=[64 B, 0]"], "sizes[1]: expected greater than 0; found 0"),
    (None, ["in_flight=[0, 4]"],
     "in_flight[0]: expected greater than or equal to 1; found 0"),
    (None, ["ops=[copy]"], "ops[0]: expected 'read' or 'write'; found 'copy'"),
    ((f"{DRAM}\n  {SWITCH}", SWITCHED), [], "device: 'acc0' is not on its own CXL link to a "
     "root port of 'host0'; CXL.cache and the device's DMA engine use that link"),
    (("", DIRECT), [], "host: 'host0' has no dram node attached; the data moved lives in "
     "the host's memory"),
])
def test_bad_input_gets_one_clear_line(capsys, tmp_path, topology, overrides, message):
    experiment = EXPERIMENT
    if topology is not None:
        (tmp_path / "t.yaml").write_text(TOPOLOGY % topology)
        experiment = tmp_path / "e.yaml"
        experiment.write_text("name: e\nkind: cache-vs-dma\ntopology: t.yaml\nhost: host0\n"
                              "device: acc0\n")
    argv = ["run", str(experiment), "--out", str(tmp_path / "r")]
    for o in overrides:
        argv += ["--set", o]
    refused(capsys, argv, message)
    assert not (tmp_path / "r").exists()
