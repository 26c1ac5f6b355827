"""Memory-access traces: the native columnar format, importers and exporters for the
common tools' formats, seeded synthetic generators, and summaries.

    from cxlsim.traces import open_trace, generate, import_trace
    generate("zipfian", 1_000_000, seed=1, out="zipf.arrow", params=["theta=0.9"])
    for chunk in open_trace("zipf.arrow").chunks(["addr", "op"]):
        ...  # numpy arrays, one chunk (1 Mi records) at a time
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cxlsim.lazy import lazy_attributes

_WHERE = {
    **dict.fromkeys(("FORMATS", "ImportReport", "export_trace", "import_trace"), ".formats"),
    **dict.fromkeys(("KINDS", "generate"), ".generators"),
    **dict.fromkeys(("TraceInfo", "trace_info"), ".info"),
    **dict.fromkeys(("ANON", "CLOCKS", "FIELDS", "FILE", "READ", "WRITE", "Trace",
                     "TraceMeta", "TraceWriter", "open_trace", "write_trace"), ".native"),
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_attributes(__name__, _WHERE)

if TYPE_CHECKING:  # what the names are, for type checkers and IDEs
    from cxlsim.traces.formats import FORMATS, ImportReport, export_trace, import_trace
    from cxlsim.traces.generators import KINDS, generate
    from cxlsim.traces.info import TraceInfo, trace_info
    from cxlsim.traces.native import (
        ANON, CLOCKS, FIELDS, FILE, READ, WRITE, Trace, TraceMeta, TraceWriter, open_trace,
        write_trace)
