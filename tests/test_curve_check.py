"""kind: curve-check — a memory target's model against measured curves, point by point."""

from __future__ import annotations

import pytest

from conftest import REPO
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.memory.curvefile import write_curves
from cxlsim.memory.epoch import MemorySystem
from cxlsim.memory.loaded import model_curves
from cxlsim.topology import load_topology

MESS = REPO / "experiments" / "mess-graviton3.yaml"


def test_the_model_against_its_own_curves_has_no_error(tmp_path):
    topology = REPO / "topologies" / "graviton3.yaml"
    node = MemorySystem.from_topology(load_topology(topology)).nodes["dram0"]
    write_curves(tmp_path / "own.csv", model_curves(node.targets[0], read_fractions=(1.0, 0.5)))
    path = tmp_path / "check.yaml"
    path.write_text(f"name: own\nkind: curve-check\ntopology: {topology}\n"
                    "curves: {dram0: own.csv}\n")
    summary = load_experiment(path).run().tables["summary"]
    assert list(summary["read_fraction"]) == [1.0, 0.5]
    assert summary["mean_abs_error_ns"].max() < 1e-6


def test_mess_graviton3_within_the_rows_tolerance():
    """Both Graviton3 curves within T8.1 / T8.2's 10 ns; the 64 % curve's maximum within
    T8.4's 5 % (the all-read maximum is T8.3's miss: the model sustains the peak).

    The bound's history: 3 ns while the DRAM's timings were fitted (all reads 2.1 ns);
    6 ns from 6a686c3, which derived them from JEDEC and moved all reads to 5.0 ns
    without saying so in the test; now the rows' own 10 ns, because the controller's
    scheduling (refresh stalls and write drains as an M/G/1 bus) gives 7.1 ns at all
    reads and brings the 64 % curve from 20.2 to 7.2 ns: a bound tighter than the
    rows' would pin a value, not the model's claim."""
    result = load_experiment(MESS).run()
    summary = result.tables["summary"].set_index("read_fraction")
    assert summary["mean_abs_error_ns"].max() < 10
    assert summary.loc[0.64, "model_capacity_GBps"] == pytest.approx(
        summary.loc[0.64, "measured_max_GBps"], rel=0.05)
    assert summary.loc[1.0, "model_capacity_GBps"] == pytest.approx(307.2)
    points = result.tables["points"]
    assert set(points.columns) >= {"bandwidth_GBps", "measured_ns", "model_ns", "error_ns"}
    assert "model vs measured" in result.figures


def test_a_band_out_of_order_is_named():
    with pytest.raises(InputError) as info:
        load_experiment(MESS, ["band=[0.9, 0.1]"])
    assert str(info.value) == ("--set band=[0.9, 0.1]: band: expected two fractions "
                               "0 <= low < high <= 1; found (0.9, 0.1)")


def test_curves_for_an_unknown_target_are_named(tmp_path):
    path = tmp_path / "check.yaml"
    path.write_text(MESS.read_text().replace("  dram0: ../models", f"  cxl9: {REPO}/models"))
    with pytest.raises(InputError) as info:
        load_experiment(path)
    assert str(info.value).endswith(
        "curves: curves for 'cxl9', which is not a memory target of the topology; "
        "targets: dram0")
