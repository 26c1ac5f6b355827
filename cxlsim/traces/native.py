"""The native trace format: an Arrow IPC file (Feather v2) of fixed-size record batches.

Why Arrow IPC rather than Parquet or a home-made layout of numpy arrays: it is columnar;
each record batch is a chunk that can be read on its own; its buffers are stored
uncompressed and aligned, so a chunk costs one copy from the file (none when the file is
memory-mapped with ``pyarrow.memory_map``) and becomes numpy arrays without decoding --
Parquet spends most of its time decoding pages and cannot be mapped; and pandas, pyarrow,
polars or DuckDB open the file without cxlsim. It is compact through narrow column types
(25 bytes a record with the required columns) rather than compression.

One row per memory access; the required columns always exist, the optional ones only when
the source knows them (see :data:`FIELDS`). The schema metadata key ``cxlsim`` holds JSON
with the ``clock`` (what ``time`` counts), the names of region tags and the ``source``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from cxlsim.errors import InputError
from cxlsim.mm.placement import ANON, FILE, PAGE_TYPES  # ``page_type`` codes and names
from cxlsim.traces.files import atomic_output

#: A chunk of records: column name -> numpy array, all of the same length.
Columns = dict[str, np.ndarray]

READ, WRITE = 0, 1            # ``op`` codes

#: Records per chunk (Arrow record batch) in files cxlsim writes: 25 MiB of columns.
CHUNK_RECORDS = 1 << 20

#: Bytes a file takes beyond its columns' values, at most: its schema and footer (about
#: 1.2 kB), and each chunk's header and padding (0.2-0.6 kB; measured with every column).
_FILE_EXTRA, _CHUNK_EXTRA = 4096, 1024

#: What the ``time`` column counts.
CLOCKS = {
    "ns": "nanoseconds since the start of the trace",
    "instructions": "instructions retired before the access",
    "sequence": "position in the source (the source has no clock)",
}

_META_KEY = b"cxlsim"
_FORMAT = "cxlsim-trace"
_VERSION = 1


@dataclass(frozen=True)
class Field:
    """One column of the native format."""

    name: str
    dtype: np.dtype
    required: bool
    doc: str


FIELDS = (
    Field("time", np.dtype(np.uint64), True, "time stamp, in the unit the clock names"),
    Field("addr", np.dtype(np.uint64), True, "byte address"),
    Field("op", np.dtype(np.uint8), True, "0 read, 1 write"),
    Field("size", np.dtype(np.uint32), True, "bytes accessed; 0 when the source does not say"),
    Field("thread", np.dtype(np.uint32), True, "CPU or thread that made the access"),
    Field("page_type", np.dtype(np.uint8), False, "0 anonymous, 1 file-backed, 2 shmem"),
    Field("region", np.dtype(np.uint16), False, "region tag; names in the metadata"),
    Field("weight", np.dtype(np.uint32), False,
          "accesses the record stands for (sample period, DAMON nr_accesses); 1 if absent"),
)
FIELD = {f.name: f for f in FIELDS}
REQUIRED = tuple(f.name for f in FIELDS if f.required)
OPTIONAL = tuple(f.name for f in FIELDS if not f.required)


@dataclass(frozen=True)
class TraceMeta:
    """What a trace says about itself: its clock, region tag names and origin."""

    clock: str = "ns"
    regions: Mapping[int, str] = field(default_factory=dict)
    source: str = ""

    def to_json(self) -> bytes:
        return json.dumps({"format": _FORMAT, "version": _VERSION, "clock": self.clock,
                           "regions": {str(k): v for k, v in sorted(self.regions.items())},
                           "source": self.source}).encode()


def file_bytes(names: Iterable[str], records: int) -> int:
    """Bytes on disk of a native file of ``records`` records with columns ``names``
    written by :class:`TraceWriter`, at most (a few kB over the values)."""
    per_record = sum(FIELD[n].dtype.itemsize for n in names)
    return records * per_record + _FILE_EXTRA + -(-records // CHUNK_RECORDS) * _CHUNK_EXTRA


def _schema(names: Iterable[str], meta: TraceMeta) -> pa.Schema:
    return pa.schema([(n, pa.from_numpy_dtype(FIELD[n].dtype)) for n in names],
                     metadata={_META_KEY: meta.to_json()})


class TraceWriter:
    """Write a native trace chunk by chunk; the file appears only when closed cleanly.

    The first :meth:`write` fixes which optional columns the file has. ``addr`` and
    ``op`` are needed in every chunk; a missing ``time`` counts records, a missing
    ``size`` or ``thread`` is 0.
    """

    def __init__(self, path: str | Path, meta: TraceMeta = TraceMeta(),
                 chunk_records: int = CHUNK_RECORDS) -> None:
        if meta.clock not in CLOCKS:
            raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, not {meta.clock!r}")
        self.path = Path(path)
        self.meta = meta
        self.records = 0
        self._chunk = chunk_records
        self._names: tuple[str, ...] | None = None
        self._pending: list[Columns] = []
        self._pending_n = 0
        self._stack = ExitStack()
        tmp = self._stack.enter_context(atomic_output(self.path))
        self._sink = self._stack.enter_context(pa.OSFile(str(tmp), "wb"))
        self._ipc: ipc.RecordBatchFileWriter | None = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if exc is None:
            self.close()
        else:
            self._stack.__exit__(kind, exc, tb)

    def write(self, columns: Mapping[str, Any]) -> None:
        """Append the records in ``columns`` (arrays of equal length)."""
        n = len(columns["addr"])
        if self._names is None:
            self._start(tuple(k for k in OPTIONAL if k in columns))
        assert self._names is not None
        extra = set(columns) - set(self._names) - set(REQUIRED)
        if extra:
            raise ValueError(f"columns {sorted(extra)} are not in this trace's schema")
        chunk: Columns = {}
        for name in self._names:
            if name in columns:
                chunk[name] = np.asarray(columns[name], dtype=FIELD[name].dtype)
            elif name == "time":
                start = self.records + self._pending_n
                chunk[name] = np.arange(start, start + n, dtype=np.uint64)
            elif name in ("size", "thread"):
                chunk[name] = np.zeros(n, FIELD[name].dtype)
            else:
                raise ValueError(f"column {name!r} is missing from a chunk")
            if len(chunk[name]) != n:
                raise ValueError(f"column {name!r} has {len(chunk[name])} values, not {n}")
        if n:
            self._pending.append(chunk)
            self._pending_n += n
        if self._pending_n >= self._chunk:
            self._flush(final=False)

    def close(self) -> None:
        """Write what is pending and the footer, then move the file into place."""
        if self._names is None:
            self._start(())
        self._flush(final=True)
        self._stack.close()

    def _start(self, optional: tuple[str, ...]) -> None:
        self._names = REQUIRED + optional
        # Arrow's thread pool makes writing 20x slower here; one thread streams fastest.
        options = ipc.IpcWriteOptions(use_threads=False)
        self._ipc = self._stack.enter_context(
            ipc.new_file(self._sink, _schema(self._names, self.meta), options=options))

    def _flush(self, final: bool) -> None:
        if not self._pending:
            return
        assert self._ipc is not None and self._names is not None
        merged = self._pending[0] if len(self._pending) == 1 else {
            k: np.concatenate([c[k] for c in self._pending]) for k in self._names}
        total = self._pending_n
        end = total if final else total - total % self._chunk
        for start in range(0, end, self._chunk):
            stop = min(start + self._chunk, end)
            self._ipc.write_batch(pa.record_batch(
                [pa.array(merged[k][start:stop]) for k in self._names], names=list(self._names)))
        self.records += end
        self._pending = [{k: v[end:] for k, v in merged.items()}] if end < total else []
        self._pending_n = total - end


def write_trace(path: str | Path, columns: Mapping[str, Any],
                meta: TraceMeta = TraceMeta()) -> Path:
    """Write one chunk of columns as a native trace at ``path``; return the path."""
    with TraceWriter(path, meta) as writer:
        writer.write(columns)
    return Path(path)


class Trace:
    """An open native trace: its metadata, record count and chunked reading.

    Reading goes one record batch at a time through ordinary file reads, so memory stays
    bounded by one chunk whatever the file size.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        where = str(self.path)
        try:
            with pa.OSFile(where) as f:
                reader = ipc.open_file(f)
                schema = reader.schema
                self.count = reader.count_rows()
        except FileNotFoundError:
            raise InputError("no such file", location=where) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc}", location=where) from None
        except pa.ArrowInvalid:
            raise InputError(_not_native(self.path), location=where) from None
        self.meta = _read_meta(schema, where)
        self.fields = tuple(schema.names)
        for name, kind in zip(schema.names, schema.types):
            if name not in FIELD or kind != pa.from_numpy_dtype(FIELD[name].dtype):
                raise InputError(f"column {name!r} of type {kind} is not a native trace column; "
                                 f"expected {_expected_columns()}", location=where)
        missing = [n for n in REQUIRED if n not in self.fields]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)}", location=where)

    def chunks(self, columns: Iterable[str] | None = None) -> Iterator[Columns]:
        """Yield the records chunk by chunk as numpy arrays, only ``columns`` if given."""
        names = self._select(columns)
        wanted = [self.fields.index(n) for n in names]
        options = ipc.IpcReadOptions(included_fields=wanted)
        with pa.OSFile(str(self.path)) as f:
            reader = ipc.open_file(f, options=options)
            for i in range(reader.num_record_batches):
                try:
                    batch = reader.get_batch(i)
                except (pa.ArrowInvalid, OSError) as exc:
                    raise InputError(f"chunk {i} cannot be read ({exc}); the file is damaged",
                                     location=str(self.path)) from None
                yield {n: batch.column(n).to_numpy() for n in names}

    def read(self, columns: Iterable[str] | None = None) -> Columns:
        """The whole trace in memory (for small traces)."""
        names = self._select(columns)
        parts = list(self.chunks(names))
        if not parts:
            return {n: np.zeros(0, FIELD[n].dtype) for n in names}
        return {n: np.concatenate([p[n] for p in parts]) for n in names}

    def _select(self, columns: Iterable[str] | None) -> list[str]:
        if columns is None:
            return list(self.fields)
        names = list(columns)
        unknown = [n for n in names if n not in self.fields]
        if unknown or not names:
            raise ValueError(f"columns {unknown or names} are not in {self.fields}")
        return [n for n in self.fields if n in names]  # file order


def open_trace(path: str | Path) -> Trace:
    """Open a native trace for reading; :class:`InputError` if it is not one."""
    return Trace(path)


def _expected_columns() -> str:
    return ", ".join(f"{f.name} ({f.dtype})" for f in FIELDS)


def _read_meta(schema: pa.Schema, where: str) -> TraceMeta:
    raw = (schema.metadata or {}).get(_META_KEY)
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise InputError("an Arrow file but not a cxlsim trace (no 'cxlsim' metadata)",
                         location=where)
    if data.get("version") != _VERSION or data.get("clock") not in CLOCKS:
        raise InputError(f"unsupported cxlsim trace version {data.get('version')!r} or clock "
                         f"{data.get('clock')!r}; expected version {_VERSION} and a clock "
                         f"in {', '.join(CLOCKS)}", location=where)
    regions = {int(k): str(v) for k, v in (data.get("regions") or {}).items()}
    return TraceMeta(clock=data["clock"], regions=regions, source=str(data.get("source", "")))


def _not_native(path: Path) -> str:
    """Why ``path`` did not open: truncated (and how much is left) or another format."""
    with open(path, "rb") as f:
        head = f.read(8)
    if not head.startswith(b"ARROW1"):
        return ("not a cxlsim trace (expected an Arrow IPC file written by cxlsim; "
                "import other formats with 'cxlsim trace convert IN OUT --from FORMAT')")
    records = 0
    try:
        with pa.memory_map(str(path)) as mapped:
            mapped.seek(8)  # the stream follows the 8-byte file magic
            for batch in ipc.open_stream(mapped):
                records += batch.num_rows
    except (pa.ArrowInvalid, OSError):
        pass
    return (f"truncated cxlsim trace: the file ends without its footer; {records:,} whole "
            "records precede the cut")
