"""Safe configuration loading: files that would exhaust memory or the stack are refused
with one line, pydantic's phrases never reach the user, every problem of a file is shown
at once, and values that only fail at run time are refused when read."""

from __future__ import annotations

import pytest

from conftest import REPO
from cxlsim.config import parse_assignment, source
from cxlsim.config.source import MAX_DEPTH, MAX_VALUES
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.topology import load_topology

ONE_EXPANDER = """\
name: t
nodes:
  - {name: host0, type: host}
  - {name: rp0, preset: devices/root-port, host: host0}
  - {name: cxl0, preset: devices/cxl-type3-expander}
links:
  - {from: rp0, to: cxl0, preset: links/cxl-gen5-x8}
"""


def _error(load, path, *args) -> str:
    with pytest.raises(InputError) as info:
        load(path, *args)
    return str(info.value)


# -- resource limits ------------------------------------------------------------------

def test_the_limits_are_modest():
    assert MAX_DEPTH == 64 and MAX_VALUES == 200_000


def test_billion_laughs_is_refused_before_anything_is_built(write):
    text = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
        for prev, name in zip("abcdefghi", "bcdefghij"))  # 9^10 values if built
    path = write("lol.yaml", text)
    assert _error(load_topology, path) == (
        f"{path}:6:12: f[1]: aliases expand to more than 200,000 values; refusing to build it")


def test_a_file_too_large_to_build_is_refused(write, monkeypatch):
    monkeypatch.setattr(source, "MAX_VALUES", 10)
    path = write("big.yaml", "nodes: [" + ", ".join(["x"] * 20) + "]\n")
    assert _error(load_topology, path) == (
        f"{path}:1:30: nodes[7]: the file holds more than 10 values; refusing to build it")


def test_deep_nesting_is_refused(write):
    path = write("deep.yaml", "nodes: " + "[" * 5000 + "]" * 5000 + "\n")
    assert _error(load_topology, path) == f"{path}:1:71: nested too deeply (at most 64 levels)"


def test_aliases_nesting_deeply_together_are_refused(write):
    # each anchor is 40 levels deep and holds the one before: 80 levels when expanded
    path = write("chain.yaml", "a: &a " + "[" * 40 + "1" + "]" * 40 + "\n"
                 "b: " + "[" * 40 + "*a" + "]" * 40 + "\n")
    assert _error(load_topology, path) == (
        f"{path}:2:44: nested too deeply (at most 64 levels, counting what alias *a "
        "stands for)")


def test_recursive_alias_is_refused(write):
    path = write("r.yaml", "name: t\nnodes: &n [{name: h, type: host, x: *n}]\n")
    assert _error(load_topology, path) == (
        f"{path}:2:37: nodes[0].x: recursive alias: *n stands for a node that contains it")


@pytest.mark.parametrize("text", [
    "[" + ".".join(["a"] * 3000) + "]\nx = 1\n",   # tables built without recursion
    ".".join(["a"] * 3000) + " = 1\n",
    "a = " + "[" * 5000 + "]" * 5000 + "\n",         # the TOML parser's own recursion
])
def test_deep_toml_is_refused(write, text):
    path = write("deep.toml", text)
    message = _error(load_topology, path)
    assert message in (f"{path}: a: nested too deeply (at most 64 levels)",
                       f"{path}: nested too deeply (at most 64 levels)")


def test_presets_naming_presets_cannot_nest_without_bound(write):
    for k in range(8):  # each preset names the next 9 levels down: 72 levels in all
        write(f"models/p{k}.yaml", "{a: " * 8 + f"{{preset: p{k + 1}}}" + "}" * 8 + "\n")
    write("models/p8.yaml", "x: 1\n")
    path = write("t.yaml", "name: t\nnodes: [{preset: p0}]\n")
    assert _error(load_topology, path) == (
        f"{path.parent / 'models' / 'p6.yaml'}:1:29: a.a.a.a.a.a.a: nested too deeply "
        "(at most 64 levels, counting the presets named on the way)")


def test_set_values_have_the_limits_of_a_file():
    with pytest.raises(InputError) as info:
        parse_assignment("x=" + "[" * 100 + "]" * 100)
    assert str(info.value).endswith(" as YAML (nested too deeply (at most 64 levels))")
    bomb = "[&a [1, 1, 1, 1, 1, 1, 1, 1], &b [*a, *a, *a, *a, *a, *a, *a, *a], " \
        "&c [*b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c], " \
        "&e [*d, *d, *d, *d, *d, *d, *d, *d], [*e, *e, *e, *e, *e, *e, *e, *e]]"
    with pytest.raises(InputError) as info:
        parse_assignment("x=" + bomb)
    assert str(info.value) == (f"--set x={bomb}: cannot read value {bomb!r} as YAML "
                               "(aliases expand to more than 200,000 values; refusing to "
                               "build it)")
    with pytest.raises(InputError) as info:
        parse_assignment("a." * 70 + "b=1")
    assert str(info.value) == f"--set {'a.' * 70}b=1: key nested too deeply (at most 64 levels)"


# -- plain words instead of pydantic's ------------------------------------------------

@pytest.mark.parametrize("old, new, where, message", [
    ("{name: host0, type: host}", "{name: host0}", "nodes[0]",
     "missing 'type'; expected one of 'host', 'root_port', 'switch', 'cxl_device', "
     "'accelerator', 'pcie_device', 'dram'"),
    ("type: host}", "type: hots}", "nodes[0].type", "unknown type 'hots'; did you mean 'host'?"),
    ("{name: host0, type: host}", "[host0, host]", "nodes[0]",
     "expected a mapping of keys to values; found a list ['host0', 'host']"),
    ("type: host}", "type: host, sockets: 1.5}", "nodes[0].sockets",
     "expected a whole number; found 1.5"),
    ("type: host}", "type: host, cores: .inf}", "nodes[0].cores",
     "expected a finite number; found inf"),
    ("name: t", "name: [t]", "name", "expected text; found a list ['t']"),
    ("name: t", "name:", "name", "expected text; found nothing (null)"),
    ("type: host}", "type: host, frequency: true}", "nodes[0].frequency",
     "expected a frequency such as '2.35 GHz' or '800 MHz'; found true (not a number or a "
     "string with a unit)"),
    ("  - {name: host0, type: host}", "  - {name: host0, type: dram, attached_to: cxl0, "
     "burst_lines: .nan}", "nodes[0].burst_lines", "expected a finite number; found nan"),
    ("links:\n  - {from: rp0, to: cxl0, preset: links/cxl-gen5-x8}", "links: {}", "links",
     "expected a list; found an empty mapping"),
    ("preset: links/cxl-gen5-x8}", "preset: links/cxl-gen5-x8, retimers: -1}",
     "links[0].retimers", "expected greater than or equal to 0; found -1"),
    ("preset: links/cxl-gen5-x8}", "preset: links/cxl-gen5-x8, width: 3}",
     "links[0].width", "expected 1, 2, 4, 8 or 16; found 3"),
    ("preset: links/cxl-gen5-x8}", "preset: links/cxl-gen5-x8, protocol: cxx}",
     "links[0].protocol", "expected 'pcie' or 'cxl'; found 'cxx'; did you mean 'cxl'?"),
    ("preset: links/cxl-gen5-x8}", "preset: links/cxl-gen5-x8, protocol: zzz}",
     "links[0].protocol", "expected 'pcie' or 'cxl'; found 'zzz'"),
])
def test_schema_problems_in_plain_words(write, old, new, where, message):
    assert old in ONE_EXPANDER
    path = write("t.yaml", ONE_EXPANDER.replace(old, new))
    first = _error(load_topology, path).splitlines()[0]
    assert first.startswith(f"{path}:") and first.endswith(f": {where}: {message}")


def test_empty_node_list():
    with pytest.raises(InputError) as info:
        load_topology(REPO / "topologies" / "switch-pool.yaml", ["nodes=[]"])
    assert str(info.value) == "--set nodes=[]: nodes: expected at least 1 item; found none"


@pytest.mark.parametrize("setting, message", [
    ("topology=5", "topology: expected a mapping of keys to values; found 5"),
    ("sweep={grid: {}}", "sweep.grid: expected at least 1 item; found none"),
    ("sweep=[1]", "sweep: expected a mapping of keys to values; found a list [1]"),
])
def test_experiment_schema_problems_in_plain_words(setting, message):
    with pytest.raises(InputError) as info:
        load_experiment(REPO / "experiments" / "switch-pool-routes.yaml", [setting])
    assert str(info.value) == f"--set {setting}: {message}"


def test_a_union_says_what_each_member_expected_once(tmp_path):
    from cxlsim.config import load_document, validate_document
    from cxlsim.config.base import StrictModel

    class Penalties(StrictModel):
        cxl_penalty: float | list[float]

    path = tmp_path / "p.yaml"
    path.write_text("cxl_penalty: 0.6\n")
    with pytest.raises(InputError) as info:
        validate_document(Penalties, load_document(path, ["cxl_penalty=null"]))
    assert str(info.value) == ("--set cxl_penalty=null: cxl_penalty: expected a "
                               "number or a list; found nothing (null)")


def test_a_union_member_that_took_the_mapping_explains_it(tmp_path):
    """``trace: str | GeneratedTrace`` given a mapping with a bad key inside: the problem
    inside it, not first a line saying a text was expected."""
    from cxlsim.config import load_document, validate_document
    from cxlsim.config.base import StrictModel

    class Inner(StrictModel):
        n: int

    class Outer(StrictModel):
        trace: str | Inner

    path = tmp_path / "u.yaml"
    path.write_text("trace: {n: x}\n")
    with pytest.raises(InputError) as info:
        validate_document(Outer, load_document(path))
    assert str(info.value) == f"{path}:1:12: trace.n: expected a whole number; found 'x'"


# -- every problem of a file at once --------------------------------------------------

TWO_DEVICES = ONE_EXPANDER.replace(
    "  - {name: cxl0, preset: devices/cxl-type3-expander}\n",
    "  - {name: rp1, preset: devices/root-port, host: host0}\n"
    "  - {name: cxl0, preset: devices/cxl-type3-expander}\n"
    "  - {name: cxl1, preset: devices/cxl-type3-expander}\n")


def test_schema_and_graph_problems_are_shown_together(write):
    path = write("t.yaml", TWO_DEVICES.replace("preset: links/cxl-gen5-x8}", "width: 8}")
                 + "  - {from: rp1, to: cxl9, preset: links/cxl-gen5-x8}\n")
    assert _error(load_topology, path).splitlines() == [
        f"{path}:9:5: links[0]: a link needs a 'generation' (1-6) or a 'rate' such as "
        "'32 GT/s'",
        f"  also: {path}:10:21: links[1].to: link to unknown node 'cxl9'; known nodes: cxl0, "
        "cxl1, host0, rp0, rp1"]


def test_an_independent_unreachable_node_is_shown_with_a_schema_problem(write):
    path = write("t.yaml", TWO_DEVICES.replace("preset: links/cxl-gen5-x8}", "width: 8}"))
    assert _error(load_topology, path).splitlines() == [
        f"{path}:9:5: links[0]: a link needs a 'generation' (1-6) or a 'rate' such as "
        "'32 GT/s'",
        f"  also: {path}:7:12: nodes[4].name: cxl_device 'cxl1' cannot be reached from any "
        "host"]


def test_a_part_cut_off_by_a_reported_problem_is_not_reported_again(write):
    path = write("t.yaml", TWO_DEVICES + "  - {from: rp0, to: cxl1, preset: links/cxl-gen5-x8}\n")
    assert _error(load_topology, path) == (
        f"{path}:10:12: links[1].from: port rp0.0 is already used by links[0]")


def test_graph_checks_skip_a_node_whose_own_fields_are_wrong(write):
    path = write("t.yaml", ONE_EXPANDER.replace("{name: cxl0, preset: devices/cxl-type3-expander}",
                                                "{name: cxl0, preset: devices/cxl-type3-expander, "
                                                "capacity: lots}")
                 + "  - {from: rp0, to: host0, preset: links/cxl-gen5-x8}\n")
    # no "link to unknown node 'cxl0'": cxl0 is left out, not unknown
    assert _error(load_topology, path).splitlines() == [
        f"{path}:5:64: nodes[2].capacity: expected a size such as '64 B', '8 GiB' or '8 GB'; "
        "found 'lots' (not a number followed by a unit)",
        f"  also: {path}:8:12: links[1].from: port rp0.0 is already used by links[0]"]


# -- accepted though wrong ------------------------------------------------------------

@pytest.mark.parametrize("device, message", [
    ("{name: cxl0, type: cxl_device, cxl_type: 3}",
     "a CXL Type 3 device has memory: missing capacity and controller_latency/media_latency; "
     "a preset such as 'devices/cxl-type3-expander' gives them"),
    ("{name: cxl0, type: cxl_device, cxl_type: 3, capacity: 16 GiB}",
     "a CXL Type 3 device has memory: missing controller_latency/media_latency; a preset "
     "such as 'devices/cxl-type3-expander' gives them"),
    ("{name: cxl0, type: cxl_device, cxl_type: 2, media_latency: 80 ns}",
     "a CXL Type 2 device has memory: missing capacity"),
])
def test_a_device_with_memory_needs_it_described(write, device, message):
    path = write("t.yaml", ONE_EXPANDER.replace(
        "{name: cxl0, preset: devices/cxl-type3-expander}", device))
    assert _error(load_topology, path) == f"{path}:5:5: nodes[2]: {message}"


def test_a_type1_device_needs_no_memory(write):
    path = write("t.yaml", ONE_EXPANDER.replace(
        "{name: cxl0, preset: devices/cxl-type3-expander}",
        "{name: cxl0, type: cxl_device, cxl_type: 1}"))
    assert load_topology(path).graph.nodes["cxl0"]["spec"].capacity == 0


@pytest.mark.parametrize("setting, message", [
    ("links[0].rate=0 GT/s", "links[0].rate: expected a transfer rate such as '32 GT/s' or "
     "'6400 MT/s'; found '0 GT/s' (must be greater than zero)"),
    ("nodes[0].frequency=0 GHz", "nodes[0].frequency: expected a frequency such as "
     "'2.35 GHz' or '800 MHz'; found '0 GHz' (must be greater than zero)"),
    ("nodes[2].capacity=1e400 GiB", "nodes[2].capacity: expected a size such as '64 B', "
     "'8 GiB' or '8 GB'; found '1e400 GiB' (too large)"),
    ("nodes[2].media_bandwidth=0 GB/s", "nodes[2].media_bandwidth: expected a bandwidth such "
     "as '64 GB/s' or '25 Gb/s'; found '0 GB/s' (must be greater than zero)"),
])
def test_zero_and_infinite_quantities_are_refused(write, setting, message):
    path = write("t.yaml", ONE_EXPANDER)
    assert _error(load_topology, path, [setting]) == f"--set {setting}: {message}"
