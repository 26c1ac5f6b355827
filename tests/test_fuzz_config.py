"""Fuzzing the configuration loaders with damaged copies of the shipped topology and
experiment files: whatever the damage, the answer is a result or an InputError whose
every problem names an existing file (or the ``--set`` that caused it) -- never another
exception."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXPERIMENTS, REPO, TOPOLOGIES, key_paths
from cxlsim.config import format_path, load_document
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.topology import load_topology

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

#: Shipped files by kind: their text with the topology references made absolute, so
#: that a copy in a temporary folder still finds them.
FILES = {"topology": TOPOLOGIES, "experiment": EXPERIMENTS}
SHIPPED = {kind: {p.name: p.read_text().replace("../topologies/", f"{REPO / 'topologies'}/")
                  for p in paths} for kind, paths in FILES.items()}
LOADERS = {"topology": load_topology, "experiment": load_experiment}

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "0 GB/s", "1e400 GiB", "-1 ns", "nan ns", "64 GBps", "x16", "host0",
                     "cxl0", "sw0.dp0", "rp0.", "links/cxl-gen5-x8", "devices/root-port",
                     "nope/nothing", "cxl_device", "switch", "host", "dram", "0", "1"]),
    st.text(max_size=8))
VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["type", "name", "from", "to", "x",
                                                         "preset", "grid"]), inner,
                                        max_size=3), max_leaves=6)
#: Text no serializer writes: broken syntax, aliases, tags.
RAW = st.sampled_from(["*nope", "&a", "&a [1, *a]", "!!binary x", "!!int x", "'", "{", "[",
                       "}", "? x", "<<: 1", "- x", "|", ">", "%", "@", "`", "\t"])


def flow(value) -> str:
    """``value`` as one line of YAML flow text."""
    return yaml.safe_dump([value], default_flow_style=True, width=float("inf")).strip()[1:-1]


@st.composite
def damaged(draw, texts: dict[str, str]) -> tuple[str, str]:
    """A shipped file (name, text) with one to three lines damaged, or cut short."""
    name = draw(st.sampled_from(sorted(texts)))
    lines = texts[name].splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        key, sep, value = lines[i].partition(": ")
        action = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "raw",
                                       "indent", "truncate"]))
        if action == "delete":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            other_key, other_sep, other_value = lines[j].partition(": ")
            if sep and other_sep:
                lines[i], lines[j] = f"{key}: {other_value}", f"{other_key}: {value}"
        elif action in ("replace", "raw"):
            new = flow(draw(VALUES)) if action == "replace" else draw(RAW)
            lines[i] = f"{key}: {new}" if sep else new
        elif action == "indent":
            lines[i] = draw(st.sampled_from(["  ", " ", "- "])) + lines[i]
        else:
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
            del lines[i + 1:]
        if not lines:
            break
    return name, "\n".join(lines) + "\n"


def _parent(data, path):
    for key in path[:-1]:
        data = data[key]
    return data


@st.composite
def altered(draw, texts: dict[str, str]) -> tuple[str, str]:
    """A shipped file (name, text) with one to three values deleted, replaced by random
    ones, or swapped with another value of the file."""
    name = draw(st.sampled_from(sorted(texts)))
    data = yaml.safe_load(texts[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = list(key_paths(data))[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["delete", "replace", "swap"]))
        if action == "delete":
            del _parent(data, path)[path[-1]]
        elif action == "replace":
            _parent(data, path)[path[-1]] = draw(VALUES)
        else:
            other = draw(st.sampled_from(paths))
            if path[:len(other)] != other and other[:len(path)] != path:  # neither inside
                a, b = _parent(data, path), _parent(data, other)
                a[path[-1]], b[other[-1]] = b[other[-1]], a[path[-1]]
    return name, yaml.safe_dump(data, sort_keys=False)


def only_input_errors(load, path: Path, overrides: tuple[str, ...] = ()) -> None:
    """``load`` succeeds or raises an InputError whose every problem says where it is."""
    try:
        load(path, overrides)
    except InputError as exc:
        for problem in (exc, *exc.also):
            where = problem.location
            assert where is not None, str(exc)
            assert where.source.startswith("--set ") or Path(where.source).is_file(), str(exc)
        assert str(exc).startswith(str(exc.location))


_TMP = tempfile.TemporaryDirectory(prefix="cxlsim-fuzz-config-")  # removed at exit


def write(name: str, text: str) -> Path:
    """``text`` as file ``name`` in a folder of its own."""
    path = Path(tempfile.mkdtemp(dir=_TMP.name)) / name
    path.write_text(text, encoding="utf-8")
    return path


@FUZZ
@given(kind=st.sampled_from(sorted(SHIPPED)), data=st.data())
def test_damaged_shipped_files(kind, data):
    name, text = data.draw(damaged(SHIPPED[kind]))
    only_input_errors(LOADERS[kind], write(name, text))


@FUZZ
@given(kind=st.sampled_from(sorted(SHIPPED)), data=st.data())
def test_altered_shipped_files(kind, data):
    name, text = data.draw(altered(SHIPPED[kind]))
    only_input_errors(LOADERS[kind], write(name, text))


#: Every key path of every shipped file, to aim ``--set`` at.
KEY_PATHS = {kind: {path.name: sorted(format_path(p) for p in load_document(path).locations if p)
                    for path in paths} for kind, paths in FILES.items()}


@FUZZ
@given(kind=st.sampled_from(sorted(SHIPPED)), data=st.data())
def test_random_set_overrides(kind, data):
    name = data.draw(st.sampled_from(sorted(SHIPPED[kind])))
    key = data.draw(st.sampled_from(KEY_PATHS[kind][name]) | st.sampled_from(
        ["x", "nodes[99].x", "links[0].from.x", "a.b[0]", "preset", "nodes[0].preset"]))
    value = data.draw(VALUES.map(flow) | RAW)
    only_input_errors(LOADERS[kind], write(name, SHIPPED[kind][name]), (f"{key}={value}",))


_TOML = st.sampled_from([
    "\n", "name = 't'\n", "[[nodes]]\n", "[[links]]\n", "name = 'h'\n", "type = 'host'\n",
    "type = 'switch'\n", "ports = 2\n", "from = 'h'\n", "to = 's'\n", "preset = 'x'\n",
    "generation = 5\n", "capacity = '1e400 GiB'\n", "x = inf\n", "x = nan\n", "[a.b.c]\n",
    "a.b.c = 1\n", "x = [[[[1]]]]\n", "x = {a = {b = 1}}\n", "[nodes]\n", "=", "[", "'",
    "x = 1979-05-27T07:32:00Z\n", "x = 0x1F\n", "x = 1_000\n", "\"", "\\u0000",
])


@FUZZ
@given(text=st.lists(_TOML, max_size=30).map("".join))
def test_random_toml_topologies(text):
    only_input_errors(load_topology, write("t.toml", text))
