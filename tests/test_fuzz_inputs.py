"""Fuzzing every parser a user's file reaches: whatever the bytes, the answer is a
result or one :class:`InputError` -- never another exception, never a hang. Experiment
and topology documents are also generated from the schemas, and the shipped ones
mutated by kind of mistake; each loads or is refused with located one-line problems,
and the command line exits 2 with them, leaving nothing behind."""

from __future__ import annotations

import contextlib
import io
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXPERIMENTS, REPO, TOPOLOGIES, key_paths
from cxlsim.cli import main
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment, trace_setup
from cxlsim.experiments.spec import experiment_kinds
from cxlsim.memory.curvefile import load_curve_file
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.watermarks import WMARK_MIN
from cxlsim.tiered.policies import POLICIES
from cxlsim.topology import load_topology
from cxlsim.topology.schema import TopologySpec
from cxlsim.traces.formats import FORMATS, import_trace
from cxlsim.traces.generators import KINDS as GENERATORS

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

#: YAML-ish text: structure characters, anchors, tags, units and a few known keys.
_TOKENS = st.sampled_from([
    "\n", "  ", "- ", ": ", "{", "}", "[", "]", ",", "&a ", "*a", "<<: ", "!!str ", "!!int ",
    "!!python/object ", "#", "'", '"', "---\n", "...\n", "?", "|", ">", "~", "null", "true",
    "1e400", "-1", "0", "0x10", "nan", "64 B", "8 GiB", "90 ns", "0 GB/s", "x16", "name",
    "kind", "topology", "nodes", "links", "type", "host", "switch", "cxl_device", "from", "to",
    "preset", "links/cxl-gen5-x8", "sweep", "grid", "seed", "routes", "\t", "\\", "%", "@",
])
yaml_text = st.lists(_TOKENS, max_size=60).map("".join)

_EXPERIMENT = (REPO / "experiments" / "switch-pool-routes.yaml").read_text()
_TOPOLOGY = (REPO / "topologies" / "switch-pool.yaml").read_text()


def _only_input_errors(load, path: Path) -> None:
    try:
        load(path)
    except InputError as exc:
        assert str(exc) and "Traceback" not in str(exc)


_TMP = tempfile.TemporaryDirectory(prefix="cxlsim-fuzz-")  # removed when the run ends


def _write(name: str, text: str | bytes) -> Path:
    """``text`` as file ``name`` in a fresh folder (an example never sees another's files)."""
    folder = Path(tempfile.mkdtemp(dir=_TMP.name))
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@FUZZ
@given(text=yaml_text)
def test_random_yaml_experiments(text):
    _only_input_errors(load_experiment, _write("e.yaml", text))


@FUZZ
@given(text=yaml_text)
def test_random_yaml_topologies(text):
    _only_input_errors(load_topology, _write("t.yaml", text))


def _mutations(text: str) -> st.SearchStrategy[str]:
    """``text`` with one line's value replaced by a random YAML scalar or collection."""
    lines = text.splitlines()
    values = st.one_of(st.sampled_from(["", "null", "[]", "{}", "-1", "0", "1e400", "nan",
                                        "0 GB/s", "1 GiB", "x", "[1, [2, [3]]]", "*nope",
                                        "{from: a}", "'", "!!binary AAAA"]),
                       st.text(max_size=12).map(lambda t: yaml.safe_dump(t).split("\n")[0]))

    def mutate(i: int, value: str) -> str:
        line = lines[i % len(lines)]
        key, sep, _ = line.partition(": ")
        new = list(lines)
        new[i % len(lines)] = f"{key}{sep or ': '}{value}"
        return "\n".join(new) + "\n"

    return st.builds(mutate, st.integers(0, 10**6), values)


@FUZZ
@given(text=_mutations(_EXPERIMENT))
def test_mutated_experiment_file(text):
    _only_input_errors(load_experiment, _write("e.yaml", text.replace(
        "../topologies/", f"{REPO / 'topologies'}/")))


@FUZZ
@given(text=_mutations(_TOPOLOGY))
def test_mutated_topology_file(text):
    _only_input_errors(load_topology, _write("t.yaml", text))


_TRACE_FORMATS = sorted(name for name in FORMATS if name not in ("champsim", "damon"))
_TEXT_TRACE = st.lists(st.one_of(
    st.sampled_from(["time,addr,op,size,thread", "addr,op", "# clock: ns", "0,0x10,R,64,0",
                     "0x10 R", "LD 0x20", "W 0x30 8", "I 0x40,4", "0x7f: R 0x1000",
                     "# region 1: heap", ",,,,", "R", "0x", "18446744073709551616,0,R"]),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)),
    max_size=12).map("\n".join)


@FUZZ
@given(fmt=st.sampled_from(_TRACE_FORMATS), text=_TEXT_TRACE)
def test_random_text_traces(fmt, text):
    src = _write("in.txt", text)
    out = src.with_name("out.arrow")
    try:
        import_trace(src, out, fmt)
    except InputError:
        assert not out.exists()  # nothing written half-way


@FUZZ
@given(fmt=st.sampled_from(["champsim", "damon"]), data=st.binary(max_size=256))
def test_random_binary_traces(fmt, data):
    src = _write("in.bin", data)
    try:
        import_trace(src, src.with_name("out.arrow"), fmt)
    except InputError:
        pass


@FUZZ
@given(text=st.lists(st.sampled_from([
    "read_fraction,bandwidth,latency", "1.0,0 GB/s,90 ns", "0.5,10 GB/s,120 ns", "0.5,x,1",
    "name: d", "curves:", "  - read_fraction: 1", "    points: [[0 GB/s, 90 ns]]",
    "    points: [[5 GB/s, 80 ns], [1 GB/s, 90 ns]]", "- ", "[", ",,", "1e400,1,1"]),
    max_size=8).map("\n".join), suffix=st.sampled_from([".csv", ".yaml", ".toml"]))
def test_random_curve_files(text, suffix):
    _only_input_errors(load_curve_file, _write(f"c{suffix}", text))


def test_the_fuzzers_cover_every_trace_format():
    assert set(_TRACE_FORMATS) | {"champsim", "damon"} == set(FORMATS)


# -- documents from the schemas, and the shipped ones mutated by kind of mistake -------
#
# The property: a document loads, or every problem the InputError lists is one line
# naming an existing file (or the --set) and the key or the line -- whatever the values.
# Derandomized, so CI sees the same examples on every run.

SCHEMA_FUZZ = settings(max_examples=200, deadline=None, derandomize=True,
                       suppress_health_check=[HealthCheck.too_slow,
                                              HealthCheck.data_too_large])

SCHEMAS = {"topology": TopologySpec.model_json_schema(),
           **{kind: cls.model_json_schema() for kind, cls in experiment_kinds().items()}}
SHIPPED_TOPOLOGIES = sorted(p.stem for p in TOPOLOGIES)

#: Names the files use, so that generated references sometimes resolve.
_NAMES = st.sampled_from([
    "host0", "dram0", "cxl0", "cxl1", "rp0", "rp1", "sw0", "acc0", "x", "", "cpus/xeon6",
    "links/cxl-gen5-x8", "devices/root-port", "devices/cxl-type3-expander", "static", "tpp",
    "damon", "zipfian", "uniform", "read", "0"])
_ODD_NUMBERS = st.sampled_from([0, -1, 1, 3, 2**63, 2**64 + 1, 10**30, -10**30, 1e308,
                                -0.0, 5e-324, math.nan, math.inf, -math.inf])
#: Quantities: good, negative, huge, not numbers, unknown units, the wrong dimension.
_QUANTITIES = st.sampled_from([
    "5 parsecs", "90 ns", "-1 ns", "0 ns", "1e400 GiB", "nan ns", "inf GB/s", "2.4 GHz",
    "8 GiB", "64 B", "0.5 B", "x16", "32 GT/s", "100 %", "150 %", "1e-30 s", "3 GiB/s",
    "1 MB/s", "90ns", "9 9 ns", "ns", "1e18 s", "18446744073709551616 B"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), _ODD_NUMBERS,
                     _QUANTITIES, _NAMES, st.text(max_size=6))


#: Keys whose text names a node, and the names a topology's nodes mostly get.
_NODE_KEYS = {"name", "from", "to", "host", "attached_to", "device", "node", "upstream"}
_NODE_NAMES = st.sampled_from(["host0", "dram0", "cxl0", "cxl1", "rp0", "rp1", "sw0", "acc0"])
#: Presets that make a value valid at once (a key's value is sometimes one of them).
_PRESETS = {"cpu": [{"preset": "cpus/xeon6"}, {"preset": "cpus/epyc-7452"}],
            "nodes": [{"preset": "devices/root-port", "host": "host0"},
                      {"preset": "devices/cxl-type3-expander"}, {"preset": "devices/cz120"}],
            "links": [{"preset": "links/cxl-gen5-x8"}, {"preset": "links/pcie-gen3-x16"}]}


def from_schema(node: dict, defs: dict, depth: int = 0, key: str = "") -> st.SearchStrategy:
    """Values of a JSON schema (pydantic's), with the odd and the wrong mixed in where a
    user would get them wrong: numbers at and past their bounds, units; node names and
    presets where the key takes them, so that some documents get past the first check."""
    if depth > 8 or not isinstance(node, dict):
        return _SCALARS
    if "$ref" in node:
        return from_schema(defs[node["$ref"].rsplit("/", 1)[-1]], defs, depth + 1, key)
    examples = [st.sampled_from(node["examples"]), _QUANTITIES] if "examples" in node else []
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.one_of(st.sampled_from(node["enum"]), _NAMES)
    members = node.get("anyOf") or node.get("oneOf")
    if members:
        return st.one_of(*examples, *(from_schema(m, defs, depth + 1, key) for m in members))
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and "properties" not in node:
            return st.dictionaries(_NAMES, from_schema(extra, defs, depth + 1), max_size=3)
        props = {k: from_schema(v, defs, depth + 1, k)
                 for k, v in node.get("properties", {}).items()}
        required = set(node.get("required", ())) | {  # a union's tag too
            k for k, v in node.get("properties", {}).items() if "const" in v}
        mapping = st.fixed_dictionaries({k: v for k, v in props.items() if k in required},
                                        optional={k: v for k, v in props.items()
                                                  if k not in required})
        if key in _PRESETS:
            named = st.tuples(st.sampled_from(_PRESETS[key]), _NODE_NAMES).map(
                lambda preset_name: {**preset_name[0], "name": preset_name[1]})
            return named | mapping
        return mapping
    if kind == "array":
        return st.lists(from_schema(node.get("items", {}), defs, depth + 1, key),
                        min_size=min(node.get("minItems", 0), 3), max_size=4)
    low = node.get("minimum", node.get("exclusiveMinimum"))
    high = node.get("maximum", node.get("exclusiveMaximum"))
    if kind == "integer":
        return st.one_of(st.integers(int(low) if low is not None else -2**40,
                                     int(high) if high is not None else 2**40), _ODD_NUMBERS)
    if kind == "number":
        return st.one_of(*examples, st.floats(low, high, allow_nan=False), _ODD_NUMBERS)
    if kind == "string" and key in _NODE_KEYS:
        return st.one_of(_NODE_NAMES, _NAMES)
    if kind == "string":
        return st.one_of(*examples, _NAMES, st.text(max_size=8))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _SCALARS


def schema_at(node: dict, defs: dict, path: tuple) -> dict | None:
    """The schema of the value at key path ``path`` (the first union member having it)."""
    for part in path:
        todo, node = [node], None
        while todo and node is None:
            here = todo.pop(0)
            if "$ref" in here:
                todo.append(defs[here["$ref"].rsplit("/", 1)[-1]])
            elif here.get("anyOf") or here.get("oneOf"):
                todo.extend(here.get("anyOf") or here.get("oneOf"))
            elif isinstance(part, int) and here.get("type") == "array":
                node = here.get("items", {})
            elif isinstance(part, str) and part in here.get("properties", {}):
                node = here["properties"][part]
            elif isinstance(part, str) and isinstance(here.get("additionalProperties"), dict):
                node = here["additionalProperties"]
        if node is None:
            return None
    return node


@st.composite
def generated_experiments(draw) -> dict:
    """An experiment of any kind from its schema, on a shipped or a generated topology."""
    kind = draw(st.sampled_from(sorted(set(SCHEMAS) - {"topology"})))
    schema = SCHEMAS[kind]
    doc = {**draw(from_schema(schema, schema.get("$defs", {}))), "kind": kind}
    if "topology" in doc or draw(st.booleans()):
        doc["topology"] = draw(st.sampled_from(SHIPPED_TOPOLOGIES) | st.just(doc.get(
            "topology")))
    return doc


def generated_topologies() -> st.SearchStrategy:
    schema = SCHEMAS["topology"]
    return from_schema(schema, schema["$defs"])


def _at(data, path):
    for key in path:
        data = data[key]
    return data


#: The shipped files' data, topology references absolute (a copy elsewhere finds them).
SHIPPED = {"experiment": {p.name: yaml.safe_load(p.read_text().replace(
    "../topologies/", f"{REPO / 'topologies'}/")) for p in EXPERIMENTS},
    "topology": {p.name: yaml.safe_load(p.read_text()) for p in TOPOLOGIES}}
MISTAKES = ["type", "delete", "extreme", "unit", "nest", "unknown key", "schema"]


@st.composite
def mutated(draw, kind: str) -> dict:
    """A shipped file's data (an experiment's topology inline or not) with one or two
    mistakes of a kind: a wrong type, a key deleted, an extreme number, an unknown unit,
    deep nesting, an unknown key, or another value its schema allows."""
    name = draw(st.sampled_from(sorted(SHIPPED[kind])))
    data = yaml.safe_load(yaml.safe_dump(SHIPPED[kind][name]))  # a copy
    schema = SCHEMAS["topology" if kind == "topology" else data["kind"]]
    if kind == "experiment" and isinstance(data.get("topology"), str) and draw(st.booleans()):
        data["topology"] = yaml.safe_load(Path(data["topology"]).read_text())
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(list(key_paths(data))[1:]))
        parent, key = _at(data, path[:-1]), path[-1]
        mistake = draw(st.sampled_from(MISTAKES))
        if mistake == "type":
            parent[key] = draw(st.sampled_from([[], {}, "text", 7, 2.5, True, None, [[1]],
                                                {"a": {"b": 1}}]))
        elif mistake == "delete":
            del parent[key]
        elif mistake == "extreme":
            parent[key] = draw(_ODD_NUMBERS)
        elif mistake == "unit":
            parent[key] = draw(_QUANTITIES)
        elif mistake == "nest":
            value = parent[key]
            for _ in range(draw(st.sampled_from([2, 20, 63, 64, 100]))):
                value = draw(st.sampled_from([[value], {"x": value}]))
            parent[key] = value
        elif mistake == "unknown key":
            target = parent[key] if isinstance(parent[key], dict) else parent
            if isinstance(target, dict):
                target[draw(st.sampled_from(["bogus", f"{key}s", str(key)[:-1] or "k"]))] = 1
        else:
            sub = schema_at(schema, schema.get("$defs", {}), path)
            parent[key] = draw(_SCALARS if sub is None else
                               from_schema(sub, schema.get("$defs", {})))
        if not isinstance(data, dict) or not data:
            break
    return data


@st.composite
def policies_and_generators(draw) -> dict:
    """trace-memory.yaml with a policy's tunables from its Params' schema (under policy
    or policy_params), a generator's parameters with odd values, and some of the
    kernel's, the scanner's, the monitor's and migration's settings from their schemas."""
    data = yaml.safe_load(yaml.safe_dump(SHIPPED["experiment"]["trace-memory.yaml"]))
    schema = SCHEMAS["trace-memory"]
    for block in ("kernel", "numa_balancing", "damon", "migration"):
        if draw(st.booleans()):
            data[block] = draw(from_schema(schema_at(schema, schema["$defs"], (block,)),
                                           schema["$defs"]))
    name = draw(st.sampled_from(sorted(POLICIES)))
    schema = POLICIES[name].Params.model_json_schema()
    tunables = draw(from_schema(schema, schema.get("$defs", {})) | st.dictionaries(
        _NAMES, _SCALARS, max_size=2))
    if draw(st.booleans()):
        data["policy"] = {"name": name, **tunables}
    else:
        data["policy"], data["policy_params"] = name, tunables
    generator = draw(st.sampled_from(sorted(GENERATORS)))
    params = sorted(GENERATORS[generator].params)
    data["trace"] = {"generate": generator, "n": draw(st.integers(1, 10**6) | _ODD_NUMBERS),
                     "params": draw(st.dictionaries(st.sampled_from(params) | _NAMES,
                                                    _SCALARS, max_size=3))}
    return data


def as_file(data, name: str) -> Path:
    """``data`` as YAML in a folder of its own (``.nan``, ``.inf`` and big numbers kept)."""
    return _write(name, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def loads_or_located(load, path: Path):
    """``load(path)``'s result, or None after an InputError each of whose problems is one
    line naming an existing file (or the ``--set``) and its key or line."""
    try:
        return load(path)
    except InputError as exc:
        for problem in (exc, *exc.also):
            where = problem.location
            assert where is not None, str(exc)
            assert Path(where.source).is_file() or where.source.startswith("--set "), str(exc)
            assert problem.key or where.line is not None, str(exc)
            assert "\n" not in problem.headline() and "Traceback" not in str(exc), str(exc)
    return None


@SCHEMA_FUZZ
@given(data=generated_experiments())
def test_experiments_from_the_schemas(data):
    loads_or_located(load_experiment, as_file(data, "e.yaml"))


@SCHEMA_FUZZ
@given(data=generated_topologies())
def test_topologies_from_the_schema(data):
    loads_or_located(load_topology, as_file(data, "t.yaml"))


@SCHEMA_FUZZ
@given(data=mutated("experiment"))
def test_shipped_experiments_with_mistakes(data):
    loads_or_located(load_experiment, as_file(data, "e.yaml"))


@SCHEMA_FUZZ
@given(data=mutated("topology"))
def test_shipped_topologies_with_mistakes(data):
    loads_or_located(load_topology, as_file(data, "t.yaml"))


@SCHEMA_FUZZ
@given(data=policies_and_generators() | mutated("experiment"))
def test_policy_tunables_and_generator_parameters(data):
    """What loads, the run can build its machine from: the NUMA nodes, the kernel's
    memory, the policy, the scanner and the monitor (a movable node that does not exist
    was a traceback at run time)."""
    spec = loads_or_located(load_experiment, as_file(data, "e.yaml"))
    if spec is not None and spec.kind == "trace-memory":
        numa = trace_setup.numa_of(spec)
        kernel = KernelMemory(numa, 64, spec.kernel)
        policy = POLICIES[spec.policy]
        policy(numa, 64, spec.mempolicy, np.ones(64, np.int64) if policy.needs_counts else None,
               kernel.capacity - kernel.wmark[:, WMARK_MIN], spec._params)
        trace_setup.scanner_of(spec), trace_setup.damon_of(spec)


def resolve(path: Path) -> tuple[int, str, str]:
    """``cxlsim resolve PATH`` in this process, from an empty working folder, which it
    must leave empty: the exit status, stdout and stderr."""
    here, work = Path.cwd(), Path(tempfile.mkdtemp(dir=_TMP.name))
    out, err = io.StringIO(), io.StringIO()
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["resolve", str(path)])
    finally:
        os.chdir(here)
    assert list(work.iterdir()) == []
    return status, out.getvalue(), err.getvalue()


def refused_or_resolved(status: int, out: str, err: str) -> None:
    """Exit 0 with the resolved YAML, or 2 with only located problems on stderr."""
    if status == 0:
        assert err == "" and isinstance(yaml.safe_load(out), dict)
        return
    assert status == 2 and out == "", err
    first, *also = err.splitlines()
    assert first.startswith("cxlsim: error: ") and "Traceback" not in err, err
    assert all(line.startswith("  also: ") for line in also), err


@settings(SCHEMA_FUZZ, max_examples=60)
@given(data=st.one_of(mutated("experiment"), generated_experiments(),
                      policies_and_generators()))
def test_the_command_line_exits_2_with_the_problems_and_writes_nothing(data):
    refused_or_resolved(*resolve(as_file(data, "e.yaml")))


@pytest.mark.parametrize("text", [
    "name: x\nkind: trace-memory\ntopology: single-expander\ncpu: {preset: cpus/xeon6}\n"
    "nodes: {dram: [dram0], cxl: [cxl0]}\ntrace: {generate: uniform, n: 10, params: "
    "{footprint: 5 parsecs}}\n",
    "name: x\nkind: routes\ntopology: {name: t, nodes: [[[[{}]]]]}\n",
    "- 1\n",
])
def test_the_installed_command_refuses_in_one_line(text, tmp_path):
    """The console script itself (a fresh interpreter): status 2, located lines on
    stderr, no traceback, nothing written where it ran."""
    path = tmp_path / "in" / "e.yaml"
    path.parent.mkdir()
    path.write_text(text)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-m", "cxlsim", "resolve", str(path)], cwd=work,
                          capture_output=True, text=True, timeout=120)
    refused_or_resolved(done.returncode, done.stdout, done.stderr)
    assert done.returncode == 2 and str(path) in done.stderr.splitlines()[0]
    assert list(work.iterdir()) == []
