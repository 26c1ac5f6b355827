"""Every name discoverable (issue 33): what ships and what each name is, the names taken
from any folder, numbered and named links, and the messages that point a user to a
name."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import cxlsim
from conftest import REPO, refused, write_text
from cxlsim.catalog import CATEGORIES, LIMIT, brief
from cxlsim.cli import _parser, main
from cxlsim.experiments import load_experiment
from cxlsim.resources import shipped


def _listed(out: str) -> list[str]:
    """The names of a ``cxlsim list CATEGORY`` table (wrapped cells are indented)."""
    table = out.split("\n\nUse: ")[0]
    return [line.split()[0] for line in table.splitlines()[2:] if not line.startswith(" ")]


def test_list_names_every_category_briefly(capsys):
    assert main(["list"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the lines wrap anywhere
    for name, category in CATEGORIES.items():
        assert f"{name} ({len(category.entries())}): " in out
        assert f"use: {' '.join(category.usage.split())}" in out
    for name in [*shipped("experiments"), *shipped("topologies"), "cpus/epyc-7452", "tpp",
                 "zipfian", "perf-mem", "trace-memory"]:
        assert f" {name}," in out or f" {name} " in out, name
    assert out.endswith("Each with a line on it: cxlsim list CATEGORY")


@pytest.mark.parametrize("category, names", [
    ("experiments", shipped("experiments")),
    ("topologies", shipped("topologies")),
    ("presets", sorted(p.relative_to(REPO / "models").with_suffix("").as_posix()
                       for p in (REPO / "models").rglob("*.yaml"))),
    ("policies", ["static", "oracle", "all-local", "all-cxl", "default-linux", "demotion",
                  "tpp", "numab-tiering", "numa-balancing", "autotiering", "memtis", "damon",
                  "colloid"]),
    ("generators", None),
    ("formats", ["native", "csv", "lackey", "pin", "ramulator", "ramulator-cpu", "champsim",
                 "perf-mem", "perf-script", "damon"]),
])
def test_list_a_category_gives_each_name_a_line(capsys, category, names):
    from cxlsim.traces.generators import KINDS

    assert main(["list", category]) == 0
    out = capsys.readouterr().out
    assert _listed(out) == (names if names is not None else list(KINDS))
    assert out.startswith(f"{CATEGORIES[category].noun} ")
    assert all(CATEGORIES[category].entries().values())  # every name has its line


def test_the_lines_come_from_the_files(capsys):
    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert list(listed) == list(CATEGORIES)
    assert listed["topologies"]["switch-pool"] == \
        "One host, one CXL switch, four Type 3 memory expanders behind it."
    assert listed["presets"]["cpus/xeon6"] == \
        "Intel Xeon 6 6700P-series: the memory side of one core, for cxlsim.memory.CpuParams."
    assert listed["policies"]["all-local"] == "Every page on the local node."
    assert listed["formats"]["lackey"] == "valgrind --tool=lackey --trace-mem=yes; read"
    described = yaml.safe_load((REPO / "experiments/policy-compare.yaml").read_text())
    assert described["description"].startswith(listed["experiments"]["policy-compare"][:-4])


def test_an_unknown_category_is_named(capsys):
    refused(capsys, ["list", "experiment"], "CATEGORY: unknown category 'experiment'; "
            "expected one of experiments, topologies, presets, policies, generators, formats, "
            "kinds; did you mean 'experiments'?")


@pytest.mark.parametrize("text, expected", [
    ("One host (a pool). More.", "One host."),
    ("By P. Esmaili et al. (MICRO) and e.g. ``x``: all. Next.", "By P. Esmaili et al. and e.g. x: all."),
    ("A " + "long clause, " * 12 + "end.", "A " + "long clause, " * 7 + "long clause ..."),
    ("no sentence end", "no sentence end"),
])
def test_brief_takes_the_first_sentence_without_asides(text, expected):
    assert brief(text) == expected


@given(st.text(alphabet=st.sampled_from("ab .,;:()[]-"), max_size=400))
def test_brief_is_never_longer_than_its_limit(text):
    assert len(brief(text)) <= LIMIT


def test_version_names_the_package_and_where_it_runs_from(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert re.fullmatch(r"cxlsim \S+ from \S+ \(Python 3\.\d+\.\d+\)\n", out), out
    assert f"from {REPO / 'cxlsim'} " in out


def test_the_source_version_is_the_projects():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert cxlsim.__version__ == project["version"]


def test_a_shipped_topology_is_shown_by_name_from_any_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["topology", "show", "switch-pool"]) == 0
    assert capsys.readouterr().out.startswith("Topology switch-pool: One host, one CXL switch")
    assert cxlsim.load_topology("switch-pool").spec.name == "switch-pool"
    refused(capsys, ["topology", "show", "switch-pol"],
            "switch-pol: no such file, nor a topology shipped with cxlsim; did you mean "
            "'switch-pool'? (shipped: a64fx, cz120, ")


def test_topology_show_numbers_the_links(capsys):
    assert main(["topology", "show", "switch-pool"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if " -- " in line]
    assert [row.split()[:2] for row in rows] == [
        ["0", "rp0"], ["1", "sw0.dp0"], ["2", "sw0.dp1"], ["3", "sw0.dp2"], ["4", "sw0.dp3"]]
    assert "Link # is the N of --set links[N].FIELD=VALUE" in out
    assert "name" not in out.split("\n#")[1].splitlines()[0]  # no link has one


def test_a_named_link_is_shown_and_set_by_its_name(capsys, tmp_path):
    text = (REPO / "topologies/switch-pool.yaml").read_text().replace(
        "{from: rp0, to: sw0.up,", "{name: uplink, from: rp0, to: sw0.up,")
    path = write_text(tmp_path, "pool.yaml", text)
    assert main(["topology", "show", str(path), "--set", "links[uplink].width=4"]) == 0
    out = capsys.readouterr().out
    assert "#  name    link" in out
    assert re.search(r"\n0  uplink  rp0 -- sw0.up +cxl +32 GT/s +x4 ", out)
    assert "15.75 GB/s" in out  # the routes cross the narrowed uplink
    refused(capsys, ["topology", "show", str(path), "--set", "links[up].width=4"],
            "--set links[up].width=4: links: no item named 'up'; names: uplink")


def test_an_unknown_cpu_preset_lists_the_cpus(capsys):
    refused(capsys, ["resolve", "trace-memory", "--set", "cpu.preset=cpus/epyc-7453"],
            "--set cpu.preset=cpus/epyc-7453: cpu.preset: unknown preset 'cpus/epyc-7453'; "
            "expected one of cpus/epyc-7452, cpus/xeon6; did you mean 'cpus/epyc-7452'? "
            "(looked for models/cpus/epyc-7453.yaml in: ")


def test_every_command_a_description_names_exists():
    """A field's description that sends the user to ``cxlsim WORD`` names a command
    there is (trace-memory's policy pointed to a ``cxlsim describe`` there was not)."""
    from cxlsim.config.describe import describe_fields, nested_models
    from cxlsim.experiments import experiment_kinds
    from cxlsim.tiered.policies import POLICIES
    from cxlsim.topology import TopologySpec

    commands = next(a for a in _parser()._actions if a.dest == "command").choices
    models = [TopologySpec, *experiment_kinds().values(), *(p.Params for p in POLICIES.values())]
    named = {word for model in models for sub in (model, *nested_models(model))
             for row in describe_fields(sub)
             for word in re.findall(r"\bcxlsim ([a-z][\w-]*)", row["description"])}
    assert named and named <= set(commands), named - set(commands)


def test_resolve_shows_a_capacity_share_and_its_bytes(capsys, tmp_path):
    assert main(["resolve", "trace-memory"]) == 0
    out = capsys.readouterr().out
    dram0 = yaml.safe_load(out)["topology"]["nodes"][1]
    assert dram0["name"] == "dram0" and dram0["capacity"] == "20 %"
    assert "capacity: 4 KiB" not in out
    # 20 % of the 262,144 pages of the trace's 1 GiB: 52,428 pages
    assert ("# capacity as a share of the trace's footprint (zipfian's footprint: 1 GiB; the "
            "run takes\n# the share of the pages the trace touches, at most that many):\n"
            "#   dram0: 20 % -> 214,745,088 B (204.8 MiB)\n") in out
    resolved = write_text(tmp_path, "resolved.yaml", out)  # read back, the same experiment
    assert load_experiment(resolved) == load_experiment("trace-memory")


def test_resolve_shows_a_share_of_a_trace_file_unresolved(capsys, tmp_path):
    write_text(tmp_path, "t.arrow", "")
    path = write_text(tmp_path, "t.yaml", """\
        name: t
        kind: trace-memory
        topology: single-expander
        cpu: {preset: cpus/xeon6}
        nodes: {dram: [dram0], cxl: [cxl0]}
        trace: t.arrow
        """)
    assert main(["resolve", str(path), "--set", "topology.nodes[dram0].capacity=30 %"]) == 0
    assert ("# capacity as a share of the trace's footprint, resolved when the trace is "
            "read:\n#   dram0: 30 %\n") in capsys.readouterr().out


def test_a_share_keeps_the_bounds_runs_shared():
    """A bound's runs differing only in a share are one run (``run_key``), as before the
    share was shown on its node."""
    keys = {load_experiment("trace-memory", ["policy=all-local",
                                             f"topology.nodes[dram0].capacity={share} %"]
                            ).run_key() for share in (20, 40)}
    assert len(keys) == 1 and None not in keys


def test_an_uninstalled_cxlsim_gives_the_sources_version(monkeypatch):
    import importlib.metadata

    from cxlsim.resources import VERSION, version

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert version() == VERSION
