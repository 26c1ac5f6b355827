"""The ``cxlsim`` command line: output, JSON modes, run folders and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import REPO, SWITCH_POOL, SWITCH_POOL_ROUTES, refused
from cxlsim.cli import main
from cxlsim.experiments import load_experiment
from cxlsim.validation import ROW_KEYS, verdict
from cxlsim.validation.markdown import summary

STATUSES = {"PASS", "FAIL", "EXPLAINED", "CALIBRATED", "SMOKE", "NOT MODELLED"}


def test_topology_show_prints_four_routes(capsys):
    assert main(["topology", "show", str(SWITCH_POOL)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Topology switch-pool: One host, one CXL switch")
    assert "4 host->device routes" in out
    rows = [line for line in out.splitlines() if line.startswith("host0 -> ")]
    assert [r.split()[2] for r in rows] == ["cxl0", "cxl1", "cxl2", "cxl3"]
    for row in rows:
        assert "194 ns" in row and "31.51 GB/s" in row
        assert row.endswith("host0 > rp0 > sw0 > " + row.split()[2])
    assert "rp0 -- sw0.up" in out and "63.02 GB/s" in out
    assert err == ""


def test_topology_show_with_set(capsys):
    assert main(["topology", "show", str(SWITCH_POOL), "--set", "links[0].width=4",
                 "--set", "nodes[2].hop_latency=10 ns"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("host0 -> ")]
    assert len(rows) == 4
    assert all("114 ns" in r and "15.75 GB/s" in r for r in rows)


def test_topology_show_html(capsys, tmp_path):
    out_file = tmp_path / "topo.html"
    assert main(["topology", "show", str(SWITCH_POOL), "--html", str(out_file)]) == 0
    assert f"wrote {out_file}" in capsys.readouterr().err
    text = out_file.read_text()
    assert "<html" in text and "plotly" in text.lower()
    assert "sw0" in text


def test_run_json(capsys, tmp_path):
    out_dir = tmp_path / "run"
    assert main(["run", str(SWITCH_POOL_ROUTES), "--json", "--out", str(out_dir)]) == 0
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert set(payload) == {"experiment", "metrics", "tables"}
    assert payload["experiment"] == "switch-pool-routes"
    assert payload["metrics"]["routes"] == 4
    assert len(payload["tables"]["routes"]) == 4
    assert err.strip() == f"run folder: {out_dir}"
    assert (out_dir / "metrics.json").is_file()


def test_run_prints_metrics_and_writes_runs_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(SWITCH_POOL_ROUTES), "--set", "seed=2"]) == 0
    out, err = capsys.readouterr()
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert lines == {"routes": "4", "latency_min_ns": "194 ns", "latency_max_ns": "194 ns",
                     "bandwidth_min_GBps": "31.51 GB/s"}  # in display units
    assert "run folder: runs/switch-pool-routes" in err
    assert not (tmp_path / "runs" / "switch-pool-routes" / "report.html").exists()
    assert main(["run", str(SWITCH_POOL_ROUTES), "--report"]) == 0
    assert (tmp_path / "runs" / "switch-pool-routes-2" / "report.html").is_file()


@pytest.fixture
def quick_rows(quick_validation, monkeypatch):
    """``cxlsim validate --quick`` answers with the session's one run of the checks."""
    def canned(quick, progress, jobs, only, on_row=None):
        for row in quick_validation:
            if on_row is not None:
                on_row(dict(row))
        return [dict(row) for row in quick_validation]

    monkeypatch.setattr("cxlsim.validation.run.validate", canned)
    return quick_validation


def test_validate_json(capsys, quick_rows):
    code = main(["validate", "--json", "--quick"])
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert isinstance(rows, list) and rows
    for row in rows:
        assert list(row) == list(ROW_KEYS)
        assert set(row) == {"id", "quantity", "published", "simulated", "tolerance", "status"}
        assert verdict(row["status"]) in STATUSES
        if row["status"] == "NOT MODELLED":
            assert row["simulated"] is None
    targets = yaml.safe_load((REPO / "cxlsim" / "validation" / "targets.yaml").read_text())
    ids = [str(t["id"]) for t in targets]
    assert [row["id"] for row in rows] == ids
    assert any(row["status"] == "FAIL" for row in rows) and code == 1  # honest FAILs


def test_validate_with_checks(capsys, monkeypatch):
    """Rows of implemented checks carry their value, status and note; a FAIL exits 1."""
    from cxlsim.validation import FAIL, PASS, Outcome

    checks = [(("T1.1",), lambda quick: {"T1.1": Outcome("14.02x", PASS)}),
              (("T1.2", "T1.3"), lambda quick: {"T1.2": Outcome("9 KiB", FAIL, "too small"),
                                                "T1.3": Outcome("76.4 KiB", PASS)})]
    monkeypatch.setattr("cxlsim.validation.run.registered_checks", lambda: checks)
    assert main(["validate", "--json", "--jobs", "1"]) == 1  # lambdas: one process
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["T1.1"]["simulated"] == "14.02x" and rows["T1.1"]["status"] == "PASS"
    assert rows["T1.2"]["status"] == "FAIL" and rows["T1.3"]["status"] == "PASS"
    assert rows["T2.1"]["status"] == "NOT MODELLED" and rows["T2.1"]["simulated"] is None
    assert all(list(row) == list(ROW_KEYS) for row in rows.values())
    assert main(["validate", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "Notes:\nT1.2: too small" in out
    assert out.strip().splitlines()[-1].startswith("2 PASS, 1 FAIL, ")


def test_validate_prints_a_line_per_row_then_the_counts(capsys, quick_rows):
    code = main(["validate"])  # quick mode: the default
    out = capsys.readouterr().out
    first = quick_rows[0]
    assert out.splitlines()[0].startswith(f"{first['id']:<6} {first['status']:<10} "
                                          f"{first['simulated']} | published")
    assert "T1.1" in out and "T7.4" in out
    summary = " ".join(out.strip().split("\n\n")[-1].splitlines())  # lines break between counts
    total = sum(int(part.split()[0]) for part in summary.split(", "))
    assert total == len(yaml.safe_load(
        (REPO / "cxlsim" / "validation" / "targets.yaml").read_text()))
    assert code == 1


def test_resolve_prints_yaml_that_loads_back_equal(capsys, tmp_path):
    assert main(["resolve", str(SWITCH_POOL_ROUTES), "--set", "seed=7",
                 "--set", "topology.links[1].width=4"]) == 0
    out = capsys.readouterr().out
    data = yaml.safe_load(out)
    assert data["seed"] == 7 and data["topology"]["links"][1]["width"] == 4
    path = tmp_path / "resolved.yaml"
    path.write_text(out)
    expected = load_experiment(SWITCH_POOL_ROUTES, ["seed=7", "topology.links[1].width=4"])
    assert load_experiment(path) == expected


def _bad_cases(tmp_path):
    bad_kind = tmp_path / "bad-kind.yaml"
    bad_kind.write_text(f"name: e\nkind: nope\ntopology: {SWITCH_POOL}\n")
    missing_topo = tmp_path / "missing-topo.yaml"
    missing_topo.write_text("name: e\nkind: routes\ntopology: nothere.yaml\n")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("name: [\n")
    wrong_suffix = tmp_path / "topo.json"
    wrong_suffix.write_text("{}")
    return {
        "missing file": (["topology", "show", str(tmp_path / "nope.yaml")], "no such file"),
        "wrong suffix": (["topology", "show", str(wrong_suffix)], "unknown file type '.json'"),
        "invalid yaml": (["topology", "show", str(bad_yaml)], "invalid YAML"),
        "malformed set": (["topology", "show", str(SWITCH_POOL), "--set", "links[0]width=8"],
                          "malformed key"),
        "bad set value": (["topology", "show", str(SWITCH_POOL), "--set", "links[0].width=3"],
                          "links[0].width: expected 1, 2, 4, 8 or 16; found 3"),
        "set preset": (["resolve", str(SWITCH_POOL_ROUTES), "--set", "topology.preset=x"],
                       "--set topology.preset=x: topology.preset: unknown preset 'x'"),
        "capacity share without a trace": (
            ["resolve", str(SWITCH_POOL_ROUTES), "--set", "topology.nodes[cxl0].capacity=35 %"],
            "topology.nodes[cxl0].capacity: '35 %' is a share of a trace's footprint, which only "
            "a trace-memory experiment resolves (against its trace); expected a size such as "
            "'2 GiB'"),
        "unknown item name": (["resolve", str(SWITCH_POOL_ROUTES), "--set",
                               "topology.nodes[cxl9].capacity=1 GiB"],
                              "--set topology.nodes[cxl9].capacity=1 GiB: topology.nodes: no "
                              "item named 'cxl9'; names: host0, rp0, sw0, cxl0,"),
        "unknown kind": (["run", str(bad_kind), "--out", str(tmp_path / "r")],
                         "; found 'nope'"),
        "missing topology": (["resolve", str(missing_topo)], "nothere.yaml' not found"),
        "graph error": (["run", str(SWITCH_POOL_ROUTES), "--out", str(tmp_path / "r"),
                         "--set", "topology.links[1].to=cxl9"], "unknown node 'cxl9'"),
    }


@pytest.mark.parametrize("case", ["missing file", "wrong suffix", "invalid yaml",
                                  "malformed set", "bad set value", "set preset",
                                  "unknown item name", "capacity share without a trace",
                                  "unknown kind", "missing topology", "graph error"])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, case):
    argv, fragment = _bad_cases(tmp_path)[case]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1
    assert err.startswith("cxlsim: error: ")
    assert fragment in err
    if case == "unknown kind":
        assert "expected 'kind' to be one of " in err and "routes" in err
    assert "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["topology", "show"])
    assert info.value.code == 2
    assert "the following arguments are required: file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


QUOTE = "; a --set value with spaces must be quoted: --set "


@pytest.mark.parametrize("argv, stray, hint", [
    (["resolve", "trace-memory", "--set", "topology.nodes[dram0].latency=10", "ns"], "ns",
     QUOTE + "'topology.nodes[dram0].latency=10 ns'"),
    (["run", "ornl-sweep", "--set=sweep.grid.seed=[1,", "2]", "--jobs", "2"], "2]",
     QUOTE + "'sweep.grid.seed=[1, 2]'"),
    (["resolve", "trace-memory", "stray"], "stray", ""),  # not after a --set value
])
def test_an_unquoted_set_value_gets_a_hint_to_quote(capsys, argv, stray, hint):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"cxlsim: error: unrecognized arguments: {stray}{hint}")


def test_real_exit_code_of_a_bad_input(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "cxlsim.cli", "topology", "show",
                           str(tmp_path / "nope.yaml")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    shipped = sorted(p.stem for p in (REPO / "topologies").glob("*.yaml"))
    assert proc.stderr.splitlines() == [
        f"cxlsim: error: {tmp_path / 'nope.yaml'}: no such file, nor a topology shipped with "
        f"cxlsim (shipped: {', '.join(shipped)})"]


def test_real_exit_code_of_a_good_run(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "cxlsim.cli", "topology", "show",
                           str(SWITCH_POOL)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "4 host->device routes" in proc.stdout


def test_kinds_lists_every_kind(capsys):
    from cxlsim.experiments import experiment_kinds

    assert main(["kinds"]) == 0
    out = capsys.readouterr().out
    table, use = out.split("\n\nUse: ")
    listed = [line.split()[0] for line in table.splitlines()[2:]
              if line[0] != " "]  # wrapped descriptions go on indented lines
    assert listed == sorted(experiment_kinds())
    assert use.startswith("an experiment file's kind: NAME; its fields: cxlsim schema NAME")


def test_schema_describes_every_field_with_units_and_defaults(capsys):
    from cxlsim.experiments import experiment_kinds

    for kind, cls in experiment_kinds().items():
        assert main(["schema", kind]) == 0
        out = capsys.readouterr().out
        rows = {line.split()[0] for line in out.splitlines() if line and not line[0].isspace()}
        assert set(cls.model_fields) <= rows, kind
    assert main(["schema", "bias"]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:6] == ["coherence_latency", "quantity,", "e.g.", "'90", "ns'",
                                    "90"] for line in out.splitlines())
    assert "--set 'field=80 ns'" in out


def test_schema_json_and_unknown_kind(capsys):
    assert main(["schema", "topology", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "TopologySpec"
    assert main(["schema", "nope"]) == 2
    assert capsys.readouterr().err.startswith(
        "cxlsim: error: KIND: unknown kind 'nope'; expected 'topology', an experiment kind "
        "(app-tiering, ")
    assert main(["schema", "tp"]) == 2
    assert capsys.readouterr().err.endswith(" colloid); did you mean 'tpp'?\n")


def test_schema_lists_a_policys_tunables_with_the_kernels_defaults(capsys):
    from cxlsim.tiered.policies import POLICIES

    assert main(["schema", "tpp"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[:3] for line in out.splitlines() if line.startswith("demote_")] == [
        ["demote_scale_factor", "integer", "200"]]
    assert "--set policy_params.TUNABLE=value" in out
    for name, policy in POLICIES.items():
        assert main(["schema", name]) == 0
        out = capsys.readouterr().out
        rows = {line.split()[0] for line in out.splitlines() if line and not line[0].isspace()}
        assert set(policy.Params.model_fields) <= rows, name
        assert policy.Params.model_fields or "(no fields of its own)" in out, name


def test_shipped_experiments_by_name_from_python(tmp_path):
    import cxlsim

    assert cxlsim.load_experiment("ornl-transfer").name == "ornl-transfer"
    result = cxlsim.run("ornl-transfer", out=tmp_path / "run")
    assert result.experiment == "ornl-transfer" and result.metrics
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())


def test_a_bad_name_lists_the_shipped_ones(capsys, tmp_path):
    import cxlsim

    with pytest.raises(cxlsim.InputError) as info:
        cxlsim.run("ornl-transfr")
    assert str(info.value).startswith(
        "ornl-transfr: no such file, nor an experiment shipped with cxlsim; did you mean "
        "'ornl-transfer'? (shipped: app-cxl-vs-ram, bias, ")
    refused(capsys, ["run", "ornl-transfr", "--out", str(tmp_path / "r")],
            "did you mean 'ornl-transfer'?")
    refused(capsys, ["resolve", "nothing-like-it"], "(shipped: app-cxl-vs-ram, bias, ")
    assert not (tmp_path / "r").exists()


def test_validate_fits_the_width(capsys, quick_rows, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    main(["validate", "--quick"])
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 100
    assert "Notes:" in lines  # each note wrapped under the table
    monkeypatch.setenv("COLUMNS", "40")  # the counts break between counts, never inside one
    main(["validate", "--quick"])
    counts = capsys.readouterr().out.strip().split("\n\n")[-1].splitlines()
    assert len(counts) > 1 and all(len(line) <= 40 for line in counts)
    assert " ".join(counts) == summary(quick_rows)
    main(["validate", "--quick", "--json"])  # JSON as it was: one row a line's object
    assert json.loads(capsys.readouterr().out) == [
        {k: row[k] for k in ROW_KEYS} for row in quick_rows]


def test_schema_fits_the_width(capsys, monkeypatch):
    from cxlsim.experiments import experiment_kinds
    from cxlsim.tiered.policies import POLICIES

    monkeypatch.setenv("COLUMNS", "100")
    for kind in ["topology", *experiment_kinds(), *POLICIES]:
        assert main(["schema", kind]) == 0
        assert max(map(len, capsys.readouterr().out.splitlines())) <= 100, kind


def test_output_off_a_terminal_is_100_columns_wide(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([sys.executable, "-m", "cxlsim.cli", "schema", "trace-memory"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(map(len, lines)) == 100  # wrapped to the fallback width, not narrower


def test_kernel_quantities_print_in_the_kernels_units(capsys, tmp_path):
    """The kernel's rate limits in MiB/s and its sysctls in ms (its MB/s is 2^20 B/s);
    the files of results keep numbers in base units."""
    assert main(["schema", "trace-memory"]) == 0
    out = capsys.readouterr().out
    assert "65536 MiB/s" in out and "68.719476736 GB/s" not in out
    sets = ["numa_balancing.scan_period=2 s"]
    assert main(["resolve", "trace-memory", *[a for kv in sets for a in ("--set", kv)]]) == 0
    resolved = capsys.readouterr().out
    assert "promote_rate_limit: 65536 MiB/s" in resolved
    assert "scan_period: 2000 ms" in resolved and "max_scan_rate: 2560 MiB/s" in resolved
    path = tmp_path / "resolved.yaml"
    path.write_text(resolved)
    spec = load_experiment(path)
    assert spec == load_experiment("trace-memory", sets)  # the same numbers, to the bit
    assert spec.migration.promote_rate_limit == 65536 * 2**20


def test_a_reader_that_goes_away_ends_the_command_quietly():
    """``cxlsim schema topology | head -1``: no 'Broken pipe' error, the shell's status."""
    proc = subprocess.Popen([sys.executable, "-m", "cxlsim.cli", "schema", "topology"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.close()  # the reader is gone before the first line is written
    assert proc.stderr.read() == b""
    assert proc.wait() == 141
