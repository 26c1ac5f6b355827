"""convert(native -> X -> native) keeps every field X can hold (hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cxlsim.traces.formats import export_trace, import_trace
from cxlsim.traces.native import CLOCKS, FIELD, OPTIONAL, TraceMeta, open_trace, write_trace

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _values(name: str, n: int) -> st.SearchStrategy:
    limit = {"op": 1, "page_type": 1}.get(name, np.iinfo(FIELD[name].dtype).max)
    return st.lists(st.integers(0, limit), min_size=n, max_size=n)


@st.composite
def traces(draw) -> tuple[dict[str, np.ndarray], TraceMeta]:
    n = draw(st.integers(0, 30))
    optional = draw(st.sets(st.sampled_from(OPTIONAL)))
    cols = {name: np.array(draw(_values(name, n)), FIELD[name].dtype)
            for name in ("time", "addr", "op", "size", "thread", *sorted(optional))}
    name = st.text("abcdefghij _-.:0123456789", min_size=1, max_size=12).map(str.strip)
    regions = draw(st.dictionaries(st.integers(0, 0xFFFF), name.filter(bool), max_size=3))
    return cols, TraceMeta(clock=draw(st.sampled_from(list(CLOCKS))), regions=regions)


def _round_trip(cols, meta, fmt: str, *options: str):
    with tempfile.TemporaryDirectory() as tmp:
        native = write_trace(Path(tmp) / "a.arrow", cols, meta)
        export_trace(native, Path(tmp) / "x", fmt, options)
        import_trace(Path(tmp) / "x", Path(tmp) / "b.arrow", fmt, options)
        back = open_trace(Path(tmp) / "b.arrow")
        return back.read(), back.meta


@SETTINGS
@given(traces())
def test_csv_holds_everything(trace):
    cols, meta = trace
    back, back_meta = _round_trip(cols, meta, "csv")
    assert set(back) == set(cols)
    for name, values in cols.items():
        np.testing.assert_array_equal(back[name], values, err_msg=name)
    assert (back_meta.clock, back_meta.regions) == (meta.clock, meta.regions)


@SETTINGS
@given(traces())
def test_ramulator_holds_addresses_and_operations(trace):
    cols, meta = trace
    back, back_meta = _round_trip(cols, meta, "ramulator")
    np.testing.assert_array_equal(back["addr"], cols["addr"])
    np.testing.assert_array_equal(back["op"], cols["op"])
    assert back_meta.clock == "sequence"


@st.composite
def instruction_traces(draw) -> dict[str, np.ndarray]:
    """Instructions with up to 4 loads and 2 stores each (loads first), non-zero addresses."""
    time, addr, op = [], [], []
    now = 0
    for _ in range(draw(st.integers(0, 12))):
        now += draw(st.integers(0, 3)) + (1 if time else 0)
        loads = draw(st.lists(st.integers(1, 2**64 - 1), max_size=4))
        stores = draw(st.lists(st.integers(1, 2**64 - 1), max_size=2))
        for a, o in [(a, 0) for a in loads] + [(a, 1) for a in stores]:
            time.append(now)
            addr.append(a)
            op.append(o)
    return {"time": np.array(time, np.uint64), "addr": np.array(addr, np.uint64),
            "op": np.array(op, np.uint8)}


@SETTINGS
@given(instruction_traces(), st.sampled_from(["standard", "load-type", "cloudsuite"]))
def test_champsim_holds_instructions_addresses_and_operations(cols, variant):
    back, back_meta = _round_trip(cols, TraceMeta(clock="instructions"), "champsim",
                                  f"variant={variant}")
    for name in ("time", "addr", "op"):
        np.testing.assert_array_equal(back[name], cols[name], err_msg=name)
    assert back_meta.clock == "instructions"
