"""The native trace format: writing, chunked reading, metadata, and damaged files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from cxlsim.errors import InputError
from cxlsim.traces.native import (
    CHUNK_RECORDS, FIELDS, REQUIRED, TraceMeta, TraceWriter, open_trace, write_trace)


def _columns(n: int, **extra: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n)
    return {"time": np.arange(n, dtype=np.uint64) * 3,
            "addr": rng.integers(0, 1 << 48, n, dtype=np.uint64),
            "op": rng.integers(0, 2, n, dtype=np.uint8),
            "size": np.full(n, 64, np.uint32), "thread": np.arange(n, dtype=np.uint32) % 4,
            **extra}


def test_round_trip_keeps_columns_types_and_metadata(tmp_path):
    n = 1000
    cols = _columns(n, page_type=np.arange(n, dtype=np.uint8) % 2,
                    region=np.full(n, 7, np.uint16), weight=np.full(n, 5003, np.uint32))
    meta = TraceMeta(clock="instructions", regions={7: "heap"}, source="test")
    write_trace(tmp_path / "t.arrow", cols, meta)
    trace = open_trace(tmp_path / "t.arrow")
    assert trace.count == n
    assert trace.fields == tuple(f.name for f in FIELDS)
    assert trace.meta == meta
    back = trace.read()
    for f in FIELDS:
        assert back[f.name].dtype == f.dtype
        np.testing.assert_array_equal(back[f.name], cols[f.name])


def test_chunks_are_bounded_and_columns_selectable(tmp_path):
    path = tmp_path / "t.arrow"
    with TraceWriter(path, chunk_records=1000) as writer:
        for _ in range(5):  # 5 pieces of 700 records -> chunks of 1000, 1000, 1000, 500
            writer.write(_columns(700))
    trace = open_trace(path)
    sizes = [len(c["addr"]) for c in trace.chunks(["op", "addr"])]
    assert sizes == [1000, 1000, 1000, 500]
    assert set(next(trace.chunks(["op", "addr"]))) == {"op", "addr"}
    assert trace.count == 3500


def test_missing_columns_take_defaults(tmp_path):
    path = write_trace(tmp_path / "t.arrow", {"addr": np.arange(5), "op": np.zeros(5)})
    back = open_trace(path).read()
    assert open_trace(path).fields == REQUIRED
    assert back["time"].tolist() == [0, 1, 2, 3, 4]  # records counted
    assert back["size"].tolist() == [0] * 5 and back["thread"].tolist() == [0] * 5


def test_empty_trace(tmp_path):
    path = write_trace(tmp_path / "t.arrow", {"addr": np.zeros(0), "op": np.zeros(0)})
    trace = open_trace(path)
    assert trace.count == 0 and trace.read()["addr"].size == 0


def test_failed_write_leaves_nothing(tmp_path):
    path = tmp_path / "t.arrow"
    with pytest.raises(RuntimeError):
        with TraceWriter(path, chunk_records=10) as writer:
            writer.write(_columns(25))
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_file_is_memory_mappable_without_copies(tmp_path):
    path = write_trace(tmp_path / "t.arrow", _columns(100))
    with pa.memory_map(str(path)) as source:
        table = ipc.open_file(source).read_all()
    addr = table.column("addr").chunk(0)
    view = addr.to_numpy(zero_copy_only=True)
    assert view.base is not None and len(view) == 100


def test_not_a_trace(tmp_path):
    path = tmp_path / "x.arrow"
    path.write_text("time,addr\n")
    with pytest.raises(InputError) as err:
        open_trace(path)
    assert str(err.value) == (f"{path}: not a cxlsim trace (expected an Arrow IPC file written "
                              "by cxlsim; import other formats with 'cxlsim trace convert IN "
                              "OUT --from FORMAT')")


def test_missing_file():
    with pytest.raises(InputError, match=r"^nope\.arrow: no such file$"):
        open_trace("nope.arrow")


def test_truncated_file_says_how_many_records_survive(tmp_path):
    path = tmp_path / "t.arrow"
    with TraceWriter(path, chunk_records=1000) as writer:
        writer.write(_columns(3000))
    data = path.read_bytes()
    cut = tmp_path / "cut.arrow"
    cut.write_bytes(data[:int(len(data) * 0.8)])
    with pytest.raises(InputError) as err:
        open_trace(cut)
    assert str(err.value) == (f"{cut}: truncated cxlsim trace: the file ends without its "
                              "footer; 2,000 whole records precede the cut")


def test_arrow_file_of_another_kind(tmp_path):
    path = tmp_path / "other.arrow"
    table = pa.table({"x": [1, 2]})
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(InputError, match="an Arrow file but not a cxlsim trace"):
        open_trace(path)


def test_wrong_column_type(tmp_path):
    meta = {b"cxlsim": TraceMeta().to_json()}
    table = pa.table({"time": pa.array([1], pa.int32()), "addr": pa.array([1], pa.uint64())},
                     metadata=meta)
    bad = tmp_path / "bad.arrow"
    with pa.OSFile(str(bad), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(InputError, match=r"column 'time' of type int32 is not a native trace "
                                         r"column; expected time \(uint64\)"):
        open_trace(bad)


def test_default_chunk_is_a_mebirecord():
    assert CHUNK_RECORDS == 1 << 20
