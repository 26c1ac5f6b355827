"""Memory-access traces: the native columnar format, importers and exporters for the
common tools' formats, seeded synthetic generators, and summaries.

    from cxlsim.traces import open_trace, generate, import_trace
    generate("zipfian", 1_000_000, seed=1, out="zipf.arrow", params=["theta=0.9"])
    for chunk in open_trace("zipf.arrow").chunks(["addr", "op"]):
        ...  # numpy arrays, one chunk (1 Mi records) at a time
"""

from __future__ import annotations

from cxlsim.traces.formats import FORMATS, ImportReport, export_trace, import_trace
from cxlsim.traces.generators import KINDS, generate
from cxlsim.traces.info import TraceInfo, trace_info
from cxlsim.traces.native import (
    ANON, CLOCKS, FIELDS, FILE, READ, WRITE, Trace, TraceMeta, TraceWriter, open_trace,
    write_trace)

__all__ = [
    "ANON", "CLOCKS", "FIELDS", "FILE", "FORMATS", "KINDS", "READ", "WRITE", "ImportReport",
    "Trace", "TraceInfo", "TraceMeta", "TraceWriter", "export_trace", "generate",
    "import_trace", "open_trace", "trace_info", "write_trace",
]
