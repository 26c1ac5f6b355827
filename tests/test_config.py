"""Configuration files: YAML/TOML loading with positions, presets, --set overrides,
strict validation messages and the resolved-YAML round trip."""

from __future__ import annotations

import copy
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from conftest import EXPERIMENTS, SWITCH_POOL, SWITCH_POOL_ROUTES, TOPOLOGIES, line_of
from cxlsim.config import (Document, apply_overrides, dump_yaml, expand_presets, find_preset,
                           load_document, load_file, parse_assignment, parse_yaml,
                           validate_document)
from cxlsim.config.source import parse_toml
from cxlsim.errors import InputError, Location
from cxlsim.experiments import load_experiment
from cxlsim.topology import TopologySpec, load_topology

# --------------------------------------------------------------------------- YAML


def test_yaml_records_line_and_column_of_every_value():
    text = "name: t\nnodes:\n  - name: host0\n    type: host\n    cores: many\n"
    doc = parse_yaml(text, "f.yaml")
    assert doc.data == {"name": "t", "nodes": [{"name": "host0", "type": "host",
                                                 "cores": "many"}]}
    assert doc.locations[("name",)] == Location("f.yaml", 1, 7)
    assert doc.locations[("nodes", 0)] == Location("f.yaml", 3, 5)
    assert doc.locations[("nodes", 0, "cores")] == Location("f.yaml", 5, 12)
    assert doc.locate(("nodes", 0, "cores", "deeper")) == Location("f.yaml", 5, 12)
    assert doc.locate(("nothing",)) == doc.locations[()]


def test_validation_error_names_file_line_column_and_key(write):
    path = write("t.yaml", """\
        name: t
        nodes:
          - name: host0
            type: host
            cores: many
        """)
    with pytest.raises(InputError) as info:
        load_topology(path)
    err = info.value
    assert err.location == Location(str(path), 5, 12)
    assert err.key == "nodes[0].cores"
    assert str(err).startswith(f"{path}:5:12: nodes[0].cores: expected a whole number; "
                              "found 'many'")
    assert "found 'many'" in str(err)
    assert "\n" not in str(err)


def test_missing_required_key_points_at_the_enclosing_mapping(write):
    path = write("t.yaml", """\
        name: t
        nodes:
          - {name: host0, type: host}
          - {name: sw0, type: switch}
        """)
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert str(info.value) == f"{path}:4:5: nodes[1].ports: missing required key"


@pytest.mark.parametrize("text, line, key", [
    ("name: a\nname: b\n", 2, "name"),
    ("a:\n  x: 1\n  y: 2\n  x: 3\n", 4, "a.x"),
    ("l:\n  - {k: 1, k: 2}\n", 2, "l[0].k"),
])
def test_duplicate_yaml_keys_are_rejected(text, line, key):
    with pytest.raises(InputError) as info:
        parse_yaml(text, "d.yaml")
    assert info.value.location.line == line
    assert info.value.key == key
    assert f"duplicate key {key.rsplit('.', 1)[-1].split(']')[-1]!r}" in str(info.value)
    assert str(info.value).startswith(f"d.yaml:{line}:")


def test_duplicate_node_key_in_a_topology_file(write):
    path = write("t.yaml", """\
        name: t
        nodes:
          - {name: host0, type: host}
        links: []
        nodes: []
        """)
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert str(info.value) == f"{path}:5:1: nodes: duplicate key 'nodes'"


def test_yaml_merge_key_can_be_overridden():
    doc = parse_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n", "m.yaml")
    assert doc.data["other"] == {"x": 3, "y": 2}
    assert doc.data["base"] == {"x": 1, "y": 2}
    assert doc.locations[("other", "x")] == Location("m.yaml", 4, 6)
    # the first mapping of a merge list wins; an override of a nested mapping drops
    # the positions of the merged one
    doc = parse_yaml("a: &a {x: 1, n: {p: 1}}\nb: &b {x: 2, z: 2}\n"
                     "o:\n  <<: [*a, *b]\n  n: {q: 2}\n", "m.yaml")
    assert doc.data["o"] == {"x": 1, "z": 2, "n": {"q": 2}}
    assert ("o", "n", "p") not in doc.locations
    # two keys written in the same mapping are still a duplicate
    with pytest.raises(InputError) as info:
        parse_yaml("base: &b {x: 1}\nother:\n  <<: *b\n  x: 3\n  x: 4\n", "m.yaml")
    assert str(info.value) == "m.yaml:5:3: other.x: duplicate key 'x'"


def test_yaml_merge_key_without_override():
    doc = parse_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  z: 3\n", "m.yaml")
    assert doc.data["other"] == {"x": 1, "y": 2, "z": 3}


def test_recursive_yaml_anchor_is_an_input_error():
    with pytest.raises(InputError) as info:
        parse_yaml("a: &x [*x]\n", "r.yaml")
    assert str(info.value) == "r.yaml:1:8: a[0]: recursive alias: *x stands for a node that contains it"
    for text in ("a: &x {b: *x}\n", "a: &x {<<: *x}\n", "a: &x {b: {<<: *x}}\n"):
        with pytest.raises(InputError, match=r"^r\.yaml:1:\d+: .*recursive alias"):
            parse_yaml(text, "r.yaml")


def test_shared_yaml_anchor_is_not_recursive():
    doc = parse_yaml("a: &x [1, 2]\nb: [*x, *x]\n", "s.yaml")
    assert doc.data == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


@pytest.mark.parametrize("key, found", [("~", "None"), ("null", "None"), ("1", "1"),
                                        ("on", "True"), ("[a]", "a list")])
def test_yaml_keys_must_be_text(key, found):
    with pytest.raises(InputError) as info:
        parse_yaml(f"nodes:\n  - {{name: h}}\n  - {{{key}: 1}}\n", "k.yaml")
    assert str(info.value) == (f"k.yaml:3:6: nodes[1]: keys must be text; found {found} "
                               "(put the key in quotes)")
    assert parse_yaml(f"'{key}': 1\n", "k.yaml").data == {key: 1}


@pytest.mark.parametrize("text, line, fragment", [
    ("a: 1\nb: [1, 2\n", 3, "expected ',' or ']'"),
    ("a:\n\t- 1\n", 2, "found character '\\t' that cannot start any token"),
    ("a: 1\n---\nb: 2\n", 2, "but found another document"),
    ("a: !!python/object:os.system x\n", 1, "could not determine a constructor"),
])
def test_invalid_yaml_message_has_position(write, text, line, fragment):
    path = write("bad.yaml", text)
    with pytest.raises(InputError) as info:
        load_file(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{line}:")
    assert "invalid YAML: " in msg and fragment in msg
    assert "\n" not in msg


def test_empty_yaml_text_is_an_empty_mapping():
    assert parse_yaml("# nothing\n", "e.yaml").data == {}


@pytest.mark.parametrize("name, text", [("e.yaml", ""), ("e.yaml", "# nothing yet\n"),
                                        ("e.yml", "{}\n"), ("e.toml", "")])
def test_an_empty_file_says_so(write, name, text):
    with pytest.raises(InputError) as info:
        load_file(write(name, text))
    assert str(info.value) == f"{write(name, text)}: the file is empty: it holds no keys"


def test_an_empty_experiment_topology_or_preset_says_so(tmp_path, capsys):
    """Not "kind missing" or "name: missing required key": the file itself is empty."""
    from cxlsim.cli import main

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "mine.yaml").write_text("# to be written\n")
    (tmp_path / "experiment.yaml").write_text("")
    (tmp_path / "topology.yaml").write_text("")
    (tmp_path / "uses.yaml").write_text(
        "name: t\nnodes:\n  - {name: h0, type: host, preset: mine}\nlinks: []\n")
    for argv, empty in [(["resolve", "experiment.yaml"], "experiment.yaml"),
                        (["topology", "show", "topology.yaml"], "topology.yaml"),
                        (["topology", "show", "uses.yaml"], "models/mine.yaml")]:
        assert main([argv[0], *argv[1:-1], str(tmp_path / argv[-1])]) == 2
        assert capsys.readouterr().err == (
            f"cxlsim: error: {tmp_path / empty}: the file is empty: it holds no keys\n")


def test_yml_suffix_is_yaml(write):
    assert load_file(write("a.yml", "a: 1\n")).data == {"a": 1}


# --------------------------------------------------------------------------- TOML, files

SWITCH_POOL_TOML = """\
name = "switch-pool"
description = '''
One host, one CXL switch, four Type 3 memory expanders behind it (a memory pool). The host's x16 link to the switch is shared by all four devices.
'''

[[nodes]]
name = "host0"
type = "host"
sockets = 1
cores = 32
frequency = "2.4 GHz"
dram_channels = 8

[[nodes]]
name = "rp0"
preset = "devices/root-port"
host = "host0"

[[nodes]]
name = "sw0"
type = "switch"
ports = 8
hop_latency = "90 ns"

[[nodes]]
name = "cxl0"
preset = "devices/cxl-type3-expander"

[[nodes]]
name = "cxl1"
preset = "devices/cxl-type3-expander"

[[nodes]]
name = "cxl2"
preset = "devices/cxl-type3-expander"

[[nodes]]
name = "cxl3"
preset = "devices/cxl-type3-expander"

[[links]]
from = "rp0"
to = "sw0.up"
preset = "links/cxl-gen5-x16"

[[links]]
from = "sw0.dp0"
to = "cxl0"
preset = "links/cxl-gen5-x8"

[[links]]
from = "sw0.dp1"
to = "cxl1"
preset = "links/cxl-gen5-x8"

[[links]]
from = "sw0.dp2"
to = "cxl2"
preset = "links/cxl-gen5-x8"

[[links]]
from = "sw0.dp3"
to = "cxl3"
preset = "links/cxl-gen5-x8"
"""


def test_toml_topology_validates_equal_to_the_yaml_one(write):
    from_toml = load_topology(write("switch-pool.toml", SWITCH_POOL_TOML))
    from_yaml = load_topology(SWITCH_POOL)
    assert from_toml.spec == from_yaml.spec
    assert from_toml.routes == from_yaml.routes


def test_toml_validation_error_names_file_and_key(write):
    path = write("t.toml", SWITCH_POOL_TOML.replace('ports = 8', 'ports = "eight"'))
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert str(info.value).startswith(f"{path}: nodes[2].ports: expected a whole number; "
                                      "found 'eight'")


def test_invalid_toml_message(write):
    path = write("bad.toml", "a = \nb = 2\n")
    with pytest.raises(InputError) as info:
        load_file(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: invalid TOML: ")
    assert "line 1" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("name", ["t.json", "t.txt", "t"])
def test_unknown_file_suffix(write, name):
    path = write(name, "a: 1\n")
    with pytest.raises(InputError) as info:
        load_file(path)
    suffix = Path(name).suffix
    assert str(info.value) == (f"{path}: unknown file type {suffix!r}; "
                               "expected .yaml, .yml or .toml")


def test_missing_file(tmp_path):
    path = tmp_path / "nothere.yaml"
    with pytest.raises(InputError) as info:
        load_file(path)
    assert str(info.value) == f"{path}: no such file (expected a .yaml/.yml/.toml file)"


def test_a_folder_is_not_a_file(tmp_path):
    (tmp_path / "d.yaml").mkdir()
    with pytest.raises(InputError, match="no such file"):
        load_file(tmp_path / "d.yaml")


# --------------------------------------------------------------------------- presets

MINI = """\
name: mini
nodes:
  - {name: host0, type: host}
  - {name: rp0, type: root_port, host: host0}
  - {name: cxl0, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}
links:
  - {from: rp0, to: cxl0, preset: PRESET EXTRA}
"""


def _mini(write, preset: str, extra: str = "") -> Path:
    return write("topo/mini.yaml", MINI.replace("PRESET EXTRA", preset + extra))


def test_fields_beside_preset_override_the_preset(write):
    write("models/links/base.yaml", "protocol: cxl\ngeneration: 5\nwidth: 16\n"
                                    "port_latency: 10 ns\n")
    topo = load_topology(_mini(write, "links/base", ", width: 4, latency: 3 ns"))
    link = topo.spec.links[0]
    assert (link.generation, link.width, link.port_latency, link.latency) == (5, 4, 10.0, 3.0)


def test_nested_presets_merge_in_order(write):
    write("models/links/base.yaml", "protocol: pcie\ngeneration: 4\nwidth: 16\n"
                                    "port_latency: 10 ns\nlatency: 1 ns\n")
    write("models/links/mid.yaml", "preset: links/base\nwidth: 8\nlatency: 5 ns\n")
    topo = load_topology(_mini(write, "links/mid", ", port_latency: 2 ns"))
    link = topo.spec.links[0]
    assert link.protocol == "pcie" and link.generation == 4     # from base
    assert (link.width, link.latency) == (8, 5.0)               # from mid
    assert link.port_latency == 2.0                             # written beside preset
    assert topo.routes[0].latency == 2 * 2.0 + 5.0


def test_shipped_nested_preset_x8_inherits_from_x16():
    topo = load_topology(SWITCH_POOL)
    up, down = topo.spec.links[0], topo.spec.links[1]
    assert (up.width, down.width) == (16, 8)
    for link in (up, down):
        assert (link.protocol, link.generation, link.flit_mode, link.port_latency) == \
            ("cxl", 5, "68B", 10.0)


def test_preset_merge_is_deep_for_mappings_and_replaces_lists(write):
    write("models/p.yaml", "a: {b: 1, c: 2}\nl: [1, 2, 3]\nkeep: yes\n")
    doc = expand_presets(load_file(write("x.yaml", "preset: p\na: {c: 3}\nl: [9]\n")))
    assert doc.data == {"a": {"b": 1, "c": 3}, "l": [9], "keep": True}


def test_presets_next_to_the_file_win_over_the_project(write):
    write("models/devices/root-port.yaml", "type: root_port\nlatency: 7 ns\n")
    path = write("topo/t.yaml", """\
        name: t
        nodes:
          - {name: host0, type: host}
          - {name: rp0, preset: devices/root-port, host: host0}
          - {name: cxl0, preset: devices/cxl-type3-expander}
        links:
          - {from: rp0, to: cxl0, generation: 5}
        """)
    topo = load_topology(path)
    assert topo.spec.nodes[1].latency == 7.0                   # the local models/ folder
    assert topo.spec.nodes[2].capacity == 256 * 2**30          # the project's models/
    assert find_preset("devices/root-port", str(path)) == \
        (path.parents[1] / "models/devices/root-port.yaml").resolve()


def test_error_in_a_preset_field_points_into_the_preset_file(write):
    preset = write("models/links/bad.yaml", "generation: 5\nwidth: 3\n")
    with pytest.raises(InputError) as info:
        load_topology(_mini(write, "links/bad"))
    assert info.value.location == Location(str(preset.resolve()), 2, 8)
    assert info.value.key == "links[0].width"


def test_unknown_preset_message(write):
    path = _mini(write, "links/nope")
    with pytest.raises(InputError) as info:
        load_topology(path)
    msg = str(info.value)
    line = line_of(path, "links/nope")
    assert msg.startswith(f"{path}:{line}:")
    assert ": links[0].preset: unknown preset 'links/nope'; expected one of " \
           "links/cxl-gen5-x16, links/cxl-gen5-x8, links/ornl-gen3-x16, links/pcie-gen3-x16 " \
           "(looked for models/links/nope.yaml in: " in msg
    assert str(Path(__file__).resolve().parents[1] / "models") in msg


def test_an_unknown_preset_lists_its_folder_and_the_files_own(write):
    write("models/links/mine.yaml", "generation: 5\nwidth: 8\n")
    with pytest.raises(InputError) as info:
        load_topology(_mini(write, "links/mien"))
    assert "unknown preset 'links/mien'; expected one of links/cxl-gen5-x16, " \
           "links/cxl-gen5-x8, links/mine, links/ornl-gen3-x16, links/pcie-gen3-x16; did " \
           "you mean 'links/mine'?" in str(info.value)


@pytest.mark.parametrize("name, says", [
    ("cpu/xeon6", "unknown preset 'cpu/xeon6': models/ has no folder cpu/ (its folders: "
                  "apps, cpus, curves, devices, links, memory); did you mean 'cpus/xeon6'? "
                  "(looked for models/cpu/xeon6.yaml in: "),
    ("xeon6", "unknown preset 'xeon6': models/ has no presets outside its folders (its "
              "folders: apps, cpus, curves, devices, links, memory); did you mean "
              "'cpus/xeon6'?")])
def test_an_unknown_preset_folder_lists_the_folders(write, name, says):
    with pytest.raises(InputError) as info:
        load_topology(_mini(write, name))
    assert says in str(info.value)


@pytest.mark.parametrize("value", ["3", "''", "[a]"])
def test_preset_name_must_be_a_string(write, value):
    path = _mini(write, value)
    with pytest.raises(InputError, match=r"links\[0\]\.preset: expected a preset name such as"):
        load_topology(path)


def test_preset_file_must_hold_a_mapping(write):
    write("models/links/list.yaml", "- 1\n- 2\n")
    with pytest.raises(InputError, match="a preset file must hold a mapping of fields"):
        load_topology(_mini(write, "links/list"))


def test_preset_cycle_message(write):
    a = write("models/a.yaml", "preset: b\ngeneration: 5\n")
    b = write("models/b.yaml", "width: 8\npreset: a\n")
    with pytest.raises(InputError) as info:
        load_topology(_mini(write, "a"))
    err = info.value
    assert err.message == "preset 'a' refers back to itself"
    assert err.location == Location(str(b.resolve()), 2, 9)
    assert err.key == "preset"
    assert a.exists()


def test_preset_naming_itself(write):
    write("models/self.yaml", "preset: self\n")
    with pytest.raises(InputError, match="preset 'self' refers back to itself"):
        load_topology(_mini(write, "self"))


def test_same_preset_twice_is_not_a_cycle(write):
    write("models/leaf.yaml", "generation: 5\n")
    write("models/left.yaml", "preset: leaf\nwidth: 4\n")
    doc = expand_presets(load_file(write("x.yaml", "a: {preset: left}\nb: {preset: leaf}\n")))
    assert doc.data == {"a": {"generation": 5, "width": 4}, "b": {"generation": 5}}


# --------------------------------------------------------------------------- --set

@pytest.mark.parametrize("text, path", [
    ("a=1", ("a",)),
    ("a.b[2].c=1", ("a", "b", 2, "c")),
    ("links[0].width=1", ("links", 0, "width")),
    ("m[1][2]=1", ("m", 1, 2)),
    ("nodes[dram0].capacity=1", ("nodes", "dram0", "capacity")),
    ("n[cxl0_dram][0]=1", ("n", "cxl0_dram", 0)),
    ("with-dash.under_score=1", ("with-dash", "under_score")),
    ("  a.b  =1", ("a", "b")),
])
def test_set_key_paths(text, path):
    assert parse_assignment(text)[0] == path


@pytest.mark.parametrize("raw, value", [
    ("8", 8), ("0.75", 0.75), ("40 ns", "40 ns"), ("[1, 2]", [1, 2]), ("true", True),
    ("{a: 1}", {"a": 1}), ("null", None), ("", ""), ("'8'", "8"), ("a=b", "a=b"),
    (" 8", 8), ("links/cxl-gen5-x8", "links/cxl-gen5-x8"),
])
def test_set_values_are_read_as_yaml(raw, value):
    assert parse_assignment(f"k={raw}") == (("k",), value)


@pytest.mark.parametrize("text", ["a..b=1", "1a=2", "links[0x].width=1", "links[0]width=8",
                                  "a.b[]=1", "a.=1", "a b=1", "links[-1].width=1"])
def test_malformed_set_keys(text):
    key = text.partition("=")[0].strip()
    with pytest.raises(InputError) as info:
        parse_assignment(text)
    assert str(info.value) == (
        f"--set {text}: malformed key {key!r}; expected KEY=VALUE, e.g. "
        "topology.links[0].cxl_penalty=0.75 or links[0].width=8")


@pytest.mark.parametrize("text", ["noequals", "=3", "  =3"])
def test_set_needs_key_and_equals(text):
    with pytest.raises(InputError) as info:
        parse_assignment(text)
    assert str(info.value) == (f"--set {text}: expected KEY=VALUE, e.g. "
                               "topology.links[0].cxl_penalty=0.75 or links[0].width=8")


def test_set_value_that_is_not_yaml():
    with pytest.raises(InputError) as info:
        parse_assignment("links[0].width=[1,")
    assert str(info.value) == ("--set links[0].width=[1,: cannot read value '[1,' as YAML "
                               "(invalid YAML: expected the node content, but found "
                               "'<stream end>')")


def _doc() -> Document:
    return load_document(SWITCH_POOL)


def test_set_changes_one_value_and_leaves_the_document_alone():
    doc = _doc()
    before = copy.deepcopy(doc.data)
    new = apply_overrides(doc, ["links[0].width=8", "nodes[2].hop_latency=70 ns",
                                "description=changed"])
    assert doc.data == before
    assert new.data["links"][0]["width"] == 8
    assert new.data["nodes"][2]["hop_latency"] == "70 ns"
    assert new.data["description"] == "changed"
    assert new.locations[("links", 0, "width")] == Location("--set links[0].width=8")
    spec = validate_document(TopologySpec, new)
    assert spec.links[0].width == 8 and spec.nodes[2].hop_latency == 70.0


def test_set_names_a_list_item_by_its_name():
    new = apply_overrides(_doc(), ["nodes[sw0].hop_latency=70 ns"])
    at = [n["name"] for n in new.data["nodes"]].index("sw0")
    assert new.data["nodes"][at]["hop_latency"] == "70 ns"
    assert new.locations[("nodes", at, "hop_latency")] == \
        Location("--set nodes[sw0].hop_latency=70 ns")


@pytest.mark.parametrize("setting, key", [
    ("nodes[sw0].hop_latency=-1 ns", "nodes[sw0].hop_latency"),
    ("nodes[sw0]={name: sw0, type: switch, ports: 5, hop_latency: -1 ns}",
     "nodes[sw0].hop_latency"),  # below the item set
    ("nodes[2].hop_latency=-1 ns", "nodes[2].hop_latency"),  # an index stays an index
])
def test_an_error_names_a_list_item_as_the_set_did(setting, key):
    """``--set nodes[sw0]...`` is reported as ``nodes[sw0]``, not by the item's index."""
    with pytest.raises(InputError) as info:
        validate_document(TopologySpec, apply_overrides(_doc(), [setting]))
    assert str(info.value).startswith(f"--set {setting}: {key}: expected a time")


@pytest.mark.parametrize("setting, message", [
    ("topology.nodes[cxl0].capacity=-1 GiB", "topology.nodes[cxl0].capacity: expected a size"),
    # the graph check, which reads the topology without the key's "topology."
    ("topology.nodes[cxl1].name=cxl0", "topology.nodes[cxl1].name: duplicate node name"),
])
def test_an_experiments_topology_item_is_named_as_the_set_did(setting, message):
    from cxlsim.experiments import load_experiment

    with pytest.raises(InputError) as info:
        load_experiment(SWITCH_POOL_ROUTES, [setting])
    assert str(info.value).startswith(f"--set {setting}: {message}")


@pytest.mark.parametrize("text, message", [
    ("nodes[sw9].hop_latency=70 ns", "nodes: no item named 'sw9'; names: host0, "),
    ("links[rp0].width=8", "links: no item named 'rp0'; names: none: its items have no "
                           "name"),
    ("description[x]=1", "description is not a list"),
    ("preset=x", "a preset's name is set as KEY.preset=NAME, for the mapping at KEY"),
    ("nodes[1].preset.x=1", "a preset's name is set as KEY.preset=NAME, for the mapping at "
                            "KEY"),
    ("links[0].preset=links/nope", "links[0].preset: unknown preset 'links/nope'"),
])
def test_a_bad_item_name_or_preset_set_is_named(text, message):
    """An unknown item name lists the names; a preset is set at KEY.preset only."""
    with pytest.raises(InputError) as info:
        apply_overrides(_doc(), [text])
    assert str(info.value).startswith(f"--set {text}: {message}")


def test_set_applies_in_order():
    new = apply_overrides(_doc(), ["links[0].width=8", "links[0].width=4"])
    assert new.data["links"][0]["width"] == 4


def test_set_creates_missing_mappings():
    new = apply_overrides(Document({"a": 1}, "x"), ["b.c.d=2"])
    assert new.data == {"a": 1, "b": {"c": {"d": 2}}}


def test_set_replaces_a_subtree_and_its_locations():
    new = apply_overrides(_doc(), ["links[0]={from: rp0, to: sw0.up, generation: 4}"])
    assert new.data["links"][0] == {"from": "rp0", "to": "sw0.up", "generation": 4}
    assert all(p[:2] != ("links", 0) or loc.source.startswith("--set")
               for p, loc in new.locations.items())


def test_error_in_a_set_value_names_the_set():
    doc = apply_overrides(_doc(), ["links[0].width=3"])
    with pytest.raises(InputError) as info:
        validate_document(TopologySpec, doc)
    assert str(info.value) == ("--set links[0].width=3: links[0].width: "
                               "expected 1, 2, 4, 8 or 16; found 3")


@pytest.mark.parametrize("text, message", [
    ("links[9].width=8", "--set links[9].width=8: links[9]: no such list item"),
    ("links[5]=x", "--set links[5]=x: links[5]: no list item 5 to set"),
    ("nodes[0][1]=x", "--set nodes[0][1]=x: nodes[0][1]: no list item 1 to set"),
    ("name.x=3", "--set name.x=3: name is not a mapping"),
    ("links.x=3", "--set links.x=3: links is not a mapping"),
])
def test_set_path_that_does_not_fit_the_data(text, message):
    with pytest.raises(InputError) as info:
        apply_overrides(_doc(), [text])
    assert str(info.value) == message


def test_setting_a_preset_makes_the_mapping_the_presets():
    new = apply_overrides(_doc(), ["links[0].preset=links/cxl-gen5-x8", "links[0].width=4"])
    want = expand_presets(Document({"preset": "links/cxl-gen5-x8"}, "x")).data
    assert new.data["links"][0] == {**want, "width": 4}
    assert new.locations[("links", 0)] == Location("--set links[0].preset=links/cxl-gen5-x8")


def test_set_on_a_non_mapping_document():
    with pytest.raises(InputError, match="does not hold a mapping at its top level"):
        apply_overrides(Document([1, 2], "x"), ["a=1"])


_IDENT = st.text(string.ascii_letters + "_", min_size=1, max_size=8).filter(
    lambda s: s != "preset")
_VALUE = st.one_of(st.integers(-10**6, 10**6), st.booleans(),
                   st.text(string.ascii_lowercase, min_size=1, max_size=6).filter(
                       lambda s: yaml.safe_load(s) == s))


@given(keys=st.lists(_IDENT, min_size=1, max_size=4), value=_VALUE)
def test_set_round_trip_property(keys, value):
    """``k1.k2...=v`` parses to its path and value, and applying it sets exactly that."""
    text = ".".join(keys) + "=" + yaml.safe_dump(value, default_flow_style=True).strip()
    text = text.removesuffix("...").strip()
    path, parsed = parse_assignment(text)
    assert path == tuple(keys) and parsed == value
    original = Document({"other": {"x": [1, 2]}}, "x")
    new = apply_overrides(original, [text])
    node = new.data
    for key in keys:
        node = node[key]
    assert node == value
    assert original.data == {"other": {"x": [1, 2]}}
    if keys[0] != "other":
        assert new.data["other"] == {"x": [1, 2]}


# --------------------------------------------------------------------------- unknown keys

@pytest.mark.parametrize("old, new, key, hint", [
    ("hop_latency: 90 ns", "hop_latncy: 90 ns", "nodes[2].hop_latncy", "'hop_latency'"),
    ("{name: host0, type: host,", "{name: host0, type: host, coers: 3,", "nodes[0].coers",
     "'cores'"),
    ("to: cxl0, preset", "to: cxl0, widht: 4, preset", "links[1].widht", "'width'"),
    ("description: >", "descripton: >", "descripton", "'description'"),
])
def test_unknown_key_did_you_mean(write, old, new, key, hint):
    text = SWITCH_POOL.read_text(encoding="utf-8")
    assert old in text
    path = write("topologies/sp.yaml", text.replace(old, new, 1))
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert info.value.key == key
    assert info.value.message == f"unknown key {key.rsplit('.', 1)[-1]!r}; did you mean {hint}?"
    assert info.value.location.source == str(path)
    assert info.value.location.line == line_of(path, key.rsplit(".", 1)[-1] + ":")


def test_unknown_key_far_from_any_lists_allowed_keys():
    doc = Document({"name": "t", "nodes": [{"name": "h", "type": "host", "zzzzzz": 1}]}, "x")
    with pytest.raises(InputError) as info:
        validate_document(TopologySpec, doc)
    assert info.value.message.startswith("unknown key 'zzzzzz'; expected one of: ")
    assert "cores" in info.value.message and "dram_channels" in info.value.message


# --------------------------------------------------------------------------- resolved YAML

@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
def test_topology_dump_loads_back_equal(tmp_path, path):
    topo = load_topology(path)
    text = dump_yaml(topo.spec)
    assert "preset" not in text
    out = tmp_path / path.name
    out.write_text(text, encoding="utf-8")
    again = load_topology(out)
    assert again.spec == topo.spec
    assert again.routes == topo.routes
    assert dump_yaml(again.spec) == text


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.name)
def test_experiment_dump_loads_back_equal(tmp_path, path):
    spec = load_experiment(path)
    text = dump_yaml(spec)
    out = tmp_path / "elsewhere" / path.name
    out.parent.mkdir()
    out.write_text(text, encoding="utf-8")
    again = load_experiment(out)
    assert type(again) is type(spec)
    assert again == spec
    assert dump_yaml(again) == text


def test_dump_writes_units_and_aliases():
    data = yaml.safe_load(dump_yaml(load_topology(SWITCH_POOL).spec))
    assert data["nodes"][1]["latency"] == "64 ns"
    assert data["nodes"][3]["capacity"] == "256 GiB"
    assert data["links"][0]["from"] == "rp0" and data["links"][0]["to"] == "sw0.up"
    assert data["nodes"][2]["port_bandwidth"] is None  # null is kept: it may override a default


@given(lat=st.floats(0, 1e12, allow_nan=False), bw=st.floats(1e-3, 1e15, allow_nan=False),
       cap=st.integers(1, 2**60))
def test_dump_round_trip_property(lat, bw, cap):
    data = {"name": "t", "nodes": [
        {"name": "h", "type": "host"},
        {"name": "sw", "type": "switch", "ports": 2, "hop_latency": f"{lat!r} ns",
         "port_bandwidth": f"{bw!r} B/s"},
        {"name": "c", "type": "cxl_device", "cxl_type": 3, "capacity": cap,
         "media_latency": f"{lat!r} ns" if lat else "1 ns"}]}
    spec = TopologySpec.model_validate(data)
    assert validate_document(TopologySpec, parse_yaml(dump_yaml(spec), "d.yaml")) == spec


def _laughs(levels: int) -> str:
    """A YAML "billion laughs": each level lists ten aliases of the one before."""
    names = [chr(ord("a") + i) for i in range(levels + 1)]
    text = f"{names[0]}: &{names[0]} [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for prev, name in zip(names, names[1:]):
        text += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]\n"
    return text


def test_alias_expansion_is_capped():
    with pytest.raises(InputError) as err:
        parse_yaml(_laughs(8), "lol.yaml")  # 10^9 values if built
    assert str(err.value) == ("lol.yaml:6:8: f[0]: aliases expand to more than 200,000 "
                              "values; refusing to build it")
    assert parse_yaml(_laughs(3), "ok.yaml").data["d"][0][0][0] == ["lol"] * 10  # 10^4: fine


def test_merge_expansion_is_capped():
    text = "a: &a {" + ", ".join(f"k{i}: {i}" for i in range(10)) + "}\n"
    for prev, name in zip("abcdefgh", "bcdefghi"):
        text += f"{name}: &{name} {{<<: [" + ", ".join([f"*{prev}"] * 10) + "]}\n"
    with pytest.raises(InputError, match=r"^merge\.yaml:\d+:\d+: .*aliases expand to more than "
                                         r"200,000 values"):
        parse_yaml(text, "merge.yaml")


@pytest.mark.parametrize("text, where", [
    ("x: " + "[" * 5000 + "]" * 5000, "deep.yaml:1:67"),
    ("x:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 80)) + "  " * 80 + "v: 1\n",
     "deep.yaml:65:"),
])
def test_deep_nesting_is_refused(text, where):
    with pytest.raises(InputError) as err:
        parse_yaml(text, "deep.yaml")
    assert str(err.value).startswith(where)
    assert "nested too deeply (at most 64 levels)" in str(err.value)


def test_deep_toml_is_refused():
    with pytest.raises(InputError, match=r"deep\.toml: nested too deeply"):
        parse_toml("x = " + "[" * 5000 + "]" * 5000, "deep.toml")


def test_a_parsed_yaml_text_is_reused_but_each_document_is_its_own():
    """parse_yaml parses one text once; a caller changing its data changes nobody else's."""
    from cxlsim.config.source import _parsed_yaml, parse_yaml

    text = "a: {b: [1, 2]}\nc: 3\n"
    first = parse_yaml(text, "same.yaml")
    hits = _parsed_yaml.cache_info().hits
    second = parse_yaml(text, "same.yaml")
    assert _parsed_yaml.cache_info().hits == hits + 1
    first.data["a"]["b"].append(99)
    assert second.data == {"a": {"b": [1, 2]}, "c": 3}
    assert parse_yaml(text, "same.yaml").data["a"]["b"] == [1, 2]
