"""Experiments: loading, running the routes kind, run folders, and input errors."""

from __future__ import annotations

import json
import os
import stat

import pandas as pd
import pytest
import yaml

import cxlsim
from conftest import GEN5_LANE, REPO, SWITCH_POOL, SWITCH_POOL_ROUTES, line_of
from cxlsim.config import dump_yaml
from cxlsim.errors import InputError, Location
from cxlsim.experiments import (ExperimentSpec, RunResult, experiment_kinds, load_experiment,
                                write_run_folder)
from cxlsim.experiments.kinds.routes import RoutesExperiment


@pytest.fixture(scope="module")
def result() -> RunResult:
    return cxlsim.run(SWITCH_POOL_ROUTES)


def test_routes_kind_is_registered():
    assert experiment_kinds()["routes"] is RoutesExperiment
    assert issubclass(RoutesExperiment, ExperimentSpec)


def test_run_returns_metrics_and_routes_table(result):
    assert result.experiment == "switch-pool-routes"
    assert isinstance(result.config, RoutesExperiment)
    assert result.metrics["routes"] == 4
    assert result.metrics["latency_min_ns"] == result.metrics["latency_max_ns"] == 194.0
    assert result.metrics["bandwidth_min_GBps"] == pytest.approx(8 * GEN5_LANE / 1e9)
    table = result.tables["routes"]
    assert list(table.columns) == ["host", "device", "links", "path", "latency_ns",
                                   "bandwidth_GBps"]
    assert len(table) == 4
    assert sorted(table["device"]) == ["cxl0", "cxl1", "cxl2", "cxl3"]
    assert (table["latency_ns"] == 194.0).all()
    assert (table["path"] == "host0 > rp0 > sw0 > " + table["device"]).all()
    assert set(result.figures) == {"topology", "routes"}


def test_run_accepts_a_str_path_and_overrides():
    res = cxlsim.run(str(SWITCH_POOL_ROUTES), overrides=["seed=3", "name=other"])
    assert res.config.seed == 3
    assert res.experiment == "other"


def test_to_json_dict_is_json_safe(result):
    payload = json.loads(result.to_json())
    assert set(payload) == {"experiment", "metrics", "tables"}
    assert payload["metrics"]["routes"] == 4
    assert len(payload["tables"]["routes"]) == 4
    assert payload["tables"]["routes"][0]["latency_ns"] == 194.0


def test_to_json_turns_nan_into_null(result):
    res = RunResult("x", result.config, {"a": float("nan"), "b": float("inf")},
                    {"t": pd.DataFrame({"v": [1.0, float("nan")]})})
    assert json.loads(res.to_json()) == {"experiment": "x", "metrics": {"a": None, "b": None},
                                         "tables": {"t": [{"v": 1.0}, {"v": None}]}}


# --------------------------------------------------------------------------- run folders

def test_write_run_folder(result, tmp_path):
    out = write_run_folder(result, tmp_path / "runs" / "r1", report=True)
    assert out == tmp_path / "runs" / "r1"
    assert sorted(p.name for p in out.iterdir()) == [
        ".cxlsim-run", "config.resolved.yaml", "metrics.json", "report.html", "routes.parquet"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["r1"]     # no temp folder left

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics == {"experiment": "switch-pool-routes",
                       "metrics": json.loads(result.to_json())["metrics"]}
    table = pd.read_parquet(out / "routes.parquet")
    pd.testing.assert_frame_equal(table, result.tables["routes"])
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "switch-pool-routes" in html
    assert "<td>31.51 GB/s</td>" in html  # the metrics in display units
    assert (out / "config.resolved.yaml").read_text() == dump_yaml(result.config)
    assert load_experiment(out / "config.resolved.yaml") == result.config


def test_a_run_folder_has_no_report_unless_asked(result, tmp_path):
    """report.html holds plotly.js (megabytes): written only with ``report``, and then
    whole, for reading offline."""
    out = write_run_folder(result, tmp_path / "r")
    assert not (out / "report.html").exists() and (out / "metrics.json").is_file()
    html = (write_run_folder(result, out, report=True) / "report.html").read_text()
    assert html.count("plotly.js v") == 1 and 'src="https://cdn.plot.ly' not in html


def test_write_run_folder_replaces_an_older_run(result, tmp_path):
    out = write_run_folder(result, tmp_path / "r")
    (out / "stale.txt").write_text("old")
    write_run_folder(result, out)
    assert not (out / "stale.txt").exists()
    assert (out / "metrics.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def _boom(_result):
    raise RuntimeError("report failed")


def test_failed_write_leaves_no_folder(result, tmp_path, monkeypatch):
    monkeypatch.setattr("cxlsim.experiments.output.report_html", _boom)
    with pytest.raises(RuntimeError, match="report failed"):
        write_run_folder(result, tmp_path / "r", report=True)
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_older_run(result, tmp_path, monkeypatch):
    out = write_run_folder(result, tmp_path / "r")
    (out / "keep.txt").write_text("old")
    monkeypatch.setattr("cxlsim.experiments.output.report_html", _boom)
    with pytest.raises(RuntimeError):
        write_run_folder(result, out, report=True)
    assert [p.name for p in tmp_path.iterdir()] == ["r"]
    assert (out / "keep.txt").read_text() == "old"


def test_run_folder_permissions_follow_the_umask(result, tmp_path):
    old = os.umask(0o022)
    try:
        out = write_run_folder(result, tmp_path / "r")
        (tmp_path / "plain").mkdir()
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE((tmp_path / "plain").stat().st_mode)


# --------------------------------------------------------------------------- errors

def KINDS() -> str:
    """The registered kinds as the message lists them (other kinds may be added)."""
    return ", ".join(sorted(experiment_kinds()))


def _experiment(write, body: str, name: str = "exp.yaml"):
    return write(name, body)


def test_unknown_kind(write):
    path = _experiment(write, f"name: e\nkind: routs\ntopology: {SWITCH_POOL}\n")
    with pytest.raises(InputError) as info:
        load_experiment(path)
    assert str(info.value) == (f"{path}:2:7: kind: expected 'kind' to be one of {KINDS()}; "
                               "found 'routs'")


def test_missing_kind(write):
    path = _experiment(write, f"name: e\ntopology: {SWITCH_POOL}\n")
    with pytest.raises(InputError) as info:
        load_experiment(path)
    assert info.value.key == "kind"
    assert info.value.message == f"expected 'kind' to be one of {KINDS()}; missing"


#: The shipped topologies, as the message lists them.
SHIPPED = sorted(p.stem for p in (REPO / "topologies").glob("*.yaml"))


def test_missing_topology_file(write, tmp_path):
    path = _experiment(write, "name: e\nkind: routes\ntopology: ../nothere.yaml\n",
                       name="sub/exp.yaml")
    with pytest.raises(InputError) as info:
        load_experiment(path)
    missing = tmp_path / "sub" / ".." / "nothere.yaml"
    assert str(info.value) == (f"{path}:3:11: topology: topology file {str(missing)!r} not "
                               "found (paths are relative to the experiment file; shipped "
                               f"topologies: {', '.join(SHIPPED)})")


def test_a_shipped_topology_by_name(write):
    path = _experiment(write, "name: e\nkind: routes\ntopology: switch-pool\n")
    assert load_experiment(path).topology.name == "switch-pool"


def test_missing_topology_key(write):
    path = _experiment(write, "name: e\nkind: routes\n")
    with pytest.raises(InputError, match=r"exp\.yaml:1:1: topology: missing required key"):
        load_experiment(path)


def test_experiment_must_be_a_mapping(write):
    path = _experiment(write, "- a\n- b\n")
    with pytest.raises(InputError, match="an experiment file must hold a mapping of keys"):
        load_experiment(path)


def test_unknown_experiment_key(write):
    path = _experiment(write, f"name: e\nkind: routes\nsede: 3\ntopology: {SWITCH_POOL}\n")
    with pytest.raises(InputError) as info:
        load_experiment(path)
    assert str(info.value) == f"{path}:3:7: sede: unknown key 'sede'; did you mean 'seed'?"


def test_error_inside_the_topology_file_names_that_file(write, tmp_path):
    topo = write("topo.yaml", SWITCH_POOL.read_text().replace("hop_latency", "hop_latncy"))
    path = _experiment(write, "name: e\nkind: routes\ntopology: topo.yaml\n")
    with pytest.raises(InputError) as info:
        load_experiment(path)
    assert info.value.location.source == str(topo)
    assert info.value.location.line == line_of(topo, "hop_latncy")
    assert info.value.key == "topology.nodes[2].hop_latncy"
    assert info.value.message == "unknown key 'hop_latncy'; did you mean 'hop_latency'?"


def test_graph_error_inside_the_topology_file_names_that_file(write):
    topo = write("topo.yaml", SWITCH_POOL.read_text().replace("host: host0", "host: sw0"))
    path = _experiment(write, "name: e\nkind: routes\ntopology: topo.yaml\n")
    with pytest.raises(InputError) as info:
        load_experiment(path)
    line = line_of(topo, "host: sw0")
    column = topo.read_text().splitlines()[line - 1].index("sw0") + 1
    assert info.value.location == Location(str(topo), line, column)
    assert "'sw0' is not a host node" in info.value.message


def test_graph_error_key_is_the_experiment_key_path():
    with pytest.raises(InputError) as info:
        load_experiment(SWITCH_POOL_ROUTES, ["topology.links[1].to=cxl9"])
    assert info.value.key == "topology.links[1].to"
    assert info.value.location.source == "--set topology.links[1].to=cxl9"
    assert ": topology.links[1].to: link to unknown node 'cxl9'" in str(info.value)


def test_inline_topology(write):
    topo = yaml.safe_load(dump_yaml(cxlsim.load_topology(SWITCH_POOL).spec))
    path = _experiment(write, yaml.safe_dump({"name": "inline", "kind": "routes",
                                              "topology": topo}))
    assert load_experiment(path).run().metrics["routes"] == 4


def test_toml_experiment(write):
    path = _experiment(write, f'name = "t"\nkind = "routes"\ntopology = "{SWITCH_POOL}"\n',
                       name="exp.toml")
    assert load_experiment(path) == load_experiment(SWITCH_POOL_ROUTES,
                                                    ["name=t", "description="])


# --------------------------------------------------------------------------- --set

def test_set_topology_width_changes_route_bandwidth(write):
    single = REPO / "topologies" / "single-expander.yaml"
    path = _experiment(write, f"name: e\nkind: routes\ntopology: {single}\n")
    before = load_experiment(path).run().tables["routes"]["bandwidth_GBps"]
    after = load_experiment(path, ["topology.links[0].width=8"]).run()
    assert after.config.topology.links[0].width == 8
    assert list(before) == pytest.approx([16 * GEN5_LANE / 1e9])
    assert list(after.tables["routes"]["bandwidth_GBps"]) == pytest.approx([8 * GEN5_LANE / 1e9])


def test_set_switch_pool_uplink_width():
    base = cxlsim.run(SWITCH_POOL_ROUTES).tables["routes"]
    x8 = cxlsim.run(SWITCH_POOL_ROUTES, ["topology.links[0].width=8"])
    x4 = cxlsim.run(SWITCH_POOL_ROUTES, ["topology.links[0].width=4"])
    assert x8.config.topology.links[0].width == 8
    # the x8 downstream links already bound the routes; a x4 uplink becomes the bottleneck
    assert list(x8.tables["routes"]["bandwidth_GBps"]) == list(base["bandwidth_GBps"])
    assert list(x4.tables["routes"]["bandwidth_GBps"]) == pytest.approx(
        [4 * GEN5_LANE / 1e9] * 4)
    assert x4.metrics["bandwidth_min_GBps"] == pytest.approx(4 * GEN5_LANE / 1e9)


def test_set_error_names_the_set():
    with pytest.raises(InputError) as info:
        load_experiment(SWITCH_POOL_ROUTES, ["topology.links[0].width=3"])
    assert str(info.value) == ("--set topology.links[0].width=3: topology.links[0].width: "
                               "expected 1, 2, 4, 8 or 16; found 3")


def test_set_negative_seed():
    with pytest.raises(InputError, match=r"^--set seed=-1: seed: expected greater than or "
                                         r"equal to 0; found -1$"):
        load_experiment(SWITCH_POOL_ROUTES, ["seed=-1"])
