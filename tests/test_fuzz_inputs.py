"""Fuzzing every parser a user's file reaches: whatever the bytes, the answer is a
result or one :class:`InputError` -- never another exception, never a hang."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.memory.curvefile import load_curve_file
from cxlsim.topology import load_topology
from cxlsim.traces.formats import FORMATS, import_trace

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
