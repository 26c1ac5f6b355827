"""Curve files: measured loaded-latency curves in place of a memory target's model."""

from __future__ import annotations

import math

import pytest
import yaml

from conftest import REPO, line_of
from cxlsim.cli import main
from cxlsim.config import dump_yaml
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.memory import (CurveTarget, Demand, DramTarget, MemorySystem, load_curve_file,
                           load_curves, model_curves, write_curves)
from cxlsim.topology import load_topology

MLC = REPO / "experiments" / "mlc-loaded-latency.yaml"
HEADER = "read_fraction,bandwidth_GBps,latency_ns\n"


def test_model_curves_round_trip_through_csv(tmp_path, ddr5):
    target = DramTarget(ddr5.model_copy(update={"channels": 8, "latency": 110.0}), "dram0")
    path = tmp_path / "dram0.csv"
    write_curves(path, model_curves(target, points=64))
    curve = load_curves(path)
    assert isinstance(curve, CurveTarget) and curve.name == "dram0"
    for r in (1.0, 0.5):
        assert curve.capacity(r) == pytest.approx(0.98 * target.capacity(r), rel=1e-6)
        for u in (0.2, 0.6, 0.85):
            bw = u * target.capacity(r)
            assert curve.read_latency(bw * r, bw * (1 - r)) == pytest.approx(
                target.read_latency(bw * r, bw * (1 - r)), rel=0.01)
    assert math.isinf(curve.read_latency(target.capacity(1.0)))


def test_yaml_curves_calibrate_a_target(write):
    path = write("measured.yaml", """\
        name: measured
        source: a test
        curves:
          - read_fraction: 1.0
            points: [[0 GB/s, 100 ns], [100 GB/s, 120 ns], [200 GB/s, 300 ns]]
        """)
    curve = load_curves(path)
    assert curve.name == "measured"
    assert curve.idle_latency == 100.0 and curve.capacity(1.0) == 200e9
    assert curve.read_latency(150e9) == pytest.approx(210.0)
    ms = MemorySystem.from_topology(load_topology(REPO / "topologies/selectel-xeon6-cxl.yaml"),
                                    curves={"dram0": curve})
    eq = ms.solve([Demand(47, 16, {"dram0": 1.0})])
    assert eq.bandwidth < 200e9 and eq.latency["dram0"] > 120


def _csv(write, body: str):
    return write("m.csv", HEADER + body)


@pytest.mark.parametrize("body, line, message", [
    ("1,0,100\n1,10,x\n", 3, "latency_ns: expected a non-negative number; found 'x'"),
    ("1,0,100\n1,-3,120\n", 3, "bandwidth_GBps: expected a non-negative number; found '-3'"),
    ("1,0,100\n1,10\n", 3, "latency_ns: expected a non-negative number; found ''"),
    ("1.5,0,100\n1.5,10,120\n", 2, "read_fraction: expected a fraction in (0, 1]; found 1.5"),
    ("1,0,100\n1,10,120\n0.5,0,100\n0.5,0,130\n", 5,
     "at read fraction 0.5: bandwidth must increase from point to point; point 1 (0 B/s) "
     "does not exceed point 0 (0 B/s)"),
    ("1,0,100\n1,10,90\n", 3, "at read fraction 1: latency must not fall as bandwidth rises; "
                             "point 1 (90 ns) is below point 0 (100 ns)"),
])
def test_csv_mistakes_name_the_line(write, body, line, message):
    path = _csv(write, body)
    with pytest.raises(InputError) as info:
        load_curve_file(path)
    assert str(info.value) == f"{path}:{line}: {message}"


def test_csv_file_level_mistakes(write):
    path = write("cols.csv", "read_fraction,bandwidth\n1,2\n")
    with pytest.raises(InputError) as info:
        load_curve_file(path)
    assert str(info.value) == (f"{path}:1: expected the columns read_fraction, "
                               "bandwidth_GBps, latency_ns; missing bandwidth_GBps, latency_ns")
    path = _csv(write, "1,0,100\n")
    with pytest.raises(InputError, match="at read fraction 1: expected at least two points"):
        load_curve_file(path)
    path = _csv(write, "\n")
    with pytest.raises(InputError, match="no points"):
        load_curve_file(path)
    path = write("m.json", "{}")
    with pytest.raises(InputError, match="a curve file must be .csv, .yaml, .yml or .toml"):
        load_curve_file(path)


@pytest.mark.parametrize("points, key, message", [
    ("[[0 GB/s, 100 ns], [100 GB/s, 120 ns], [90 GB/s, 300 ns]]", "curves[0].points",
     "bandwidth must increase from point to point; point 2 (90 GB/s) does not exceed "
     "point 1 (100 GB/s)"),
    ("[[0 GB/s, 100 ns], [100, 120 ns]]", "curves[0].points[1][0]",
     "expected a bandwidth such as"),
    ("[[0 GB/s, 100 ns]]", "curves[0].points", "at least 2 items"),
    # the Mess files count latency in CPU cycles: a curve file takes time, not cycles
    ("[[0 GB/s, 250 cycles], [10 GB/s, 260 cycles]]", "curves[0].points[0][1]",
     "found '250 cycles' (unknown unit 'cycles')"),
])
def test_yaml_mistakes_name_the_line_and_key(write, points, key, message):
    path = write("m.yaml", f"curves:\n  - read_fraction: 1.0\n    points: {points}\n")
    with pytest.raises(InputError) as info:
        load_curve_file(path)
    assert str(info.value).startswith(f"{path}:3:")
    assert info.value.key == key and message in info.value.message


def test_yaml_read_fractions_must_differ(write):
    path = write("m.yaml", "curves:\n"
                           "  - {read_fraction: 1, points: [[0 GB/s, 90 ns], [9 GB/s, 99 ns]]}\n"
                           "  - {read_fraction: 1, points: [[0 GB/s, 90 ns], [8 GB/s, 99 ns]]}\n")
    with pytest.raises(InputError, match="read fractions must differ"):
        load_curve_file(path)


def _mlc_with_curves(write, curves: str):
    text = MLC.read_text(encoding="utf-8").replace(
        "topology: ../topologies/", f"topology: {REPO}/topologies/")
    return write("exp/mlc.yaml", text + curves)


def test_an_experiment_runs_on_measured_curves(write, tmp_path):
    # A DRAM "measured" at half the model's capacity: RAM-only bandwidth halves.
    topology = load_topology(REPO / "topologies/selectel-xeon6-cxl.yaml")
    model = MemorySystem.from_topology(topology).nodes["dram0"].targets[0]
    lines = [HEADER.strip()]
    for c in model_curves(model, read_fractions=(1.0, 0.5)):
        lines += [f"{c.read_fraction},{b / 2e9},{lat}" for b, lat in zip(c.bandwidth, c.latency)]
    write("exp/curves/dram0.csv", "\n".join(lines) + "\n")
    path = _mlc_with_curves(write, "curves:\n  dram0: curves/dram0.csv\nstream: false\n")
    # the host's trackers off in both, so that DRAM alone limits the RAM-only point
    spec = load_experiment(path, ["delays=[0 ns, 1000 ns]", "cpu.trackers=null"])
    assert set(spec.curves) == {"dram0"}
    measured = spec.run().metrics
    plain = load_experiment(MLC, ["delays=[0 ns, 1000 ns]", "stream=false",
                                  "cpu.trackers=null"]).run().metrics
    key = "bandwidth_GBps_delay0_ram"
    # near saturation both sit just below their capacity (the banks' gentle rise keeps
    # a latency-bound point a few per cent off exactly half)
    assert measured[key] == pytest.approx(plain[key] / 2, rel=0.08)
    # The resolved form carries the curves inline, units written out, and loads back equal.
    resolved = tmp_path / "resolved.yaml"
    resolved.write_text(dump_yaml(spec), encoding="utf-8")
    point = yaml.safe_load(resolved.read_text(encoding="utf-8"))["curves"]["dram0"]["curves"][0]
    assert point["points"][0][1].endswith(" ns")
    assert load_experiment(resolved) == spec


@pytest.mark.parametrize("curves, fragment", [
    ("curves:\n  dram9: x.csv\n", "curve file"),
    ("curves:\n  dram0: nothere.csv\n", "nothere.csv' not found (paths are relative to the "
                                        "experiment file)"),
    ("curves:\n  cxl9:\n    curves: [{read_fraction: 1, points: [[0 GB/s, 90 ns], "
     "[9 GB/s, 99 ns]]}]\n", "curves for 'cxl9', which is not a memory target of the "
                             "topology; targets: dram0, cxl0, cxl1"),
])
def test_bad_curves_in_an_experiment_exit_2(write, capsys, tmp_path, curves, fragment):
    if "dram9" in curves:
        write("exp/x.csv", HEADER + "1,0,100\n1,5,90\n")
        fragment = f"{tmp_path / 'exp' / 'x.csv'}:3: at read fraction 1: latency must not fall"
    path = _mlc_with_curves(write, curves)
    assert main(["run", str(path), "--out", str(tmp_path / "r")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and fragment in err
    if "cxl9" in curves:
        assert err.startswith(f"cxlsim: error: {path}:{line_of(path, 'cxl9:')}:")
    assert not (tmp_path / "r").exists()
