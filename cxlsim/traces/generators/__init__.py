"""Seeded synthetic trace generators; :data:`KINDS` lists them by name.

The same kind, record count, seed and parameters give the same trace, bit for bit: all
draws come from one :func:`cxlsim.engine.rng.make_rng` stream in a fixed order.
"""

from __future__ import annotations

import shlex
from contextlib import closing
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from cxlsim.engine.rng import make_rng
from cxlsim.errors import InputError, unknown
from cxlsim.prefetch import prefetched
from cxlsim.traces.generators import kv, patterns, popularity, redis, tpp
from cxlsim.traces.generators.base import Kind
from cxlsim.traces.native import REQUIRED, TraceMeta, TraceWriter, file_bytes
from cxlsim.traces.params import parse_params

KINDS: dict[str, Kind] = {k.name: k for k in (
    *popularity.KINDS, *patterns.KINDS, *kv.KINDS, *redis.KINDS, *tpp.KINDS)}

__all__ = ["KINDS", "Kind", "generate", "trace_bytes"]


def generate(kind: str, n: int, seed: int, out: str | Path,
             params: Sequence[str] = (), advance: Callable[[int], object] | None = None
             ) -> Path:
    """Write ``n`` records of generator ``kind`` (``params``: ``"k=v"`` strings) seeded
    with ``seed`` to the native trace ``out``; return its path. ``advance(m)`` is told of
    every ``m`` records written (a progress bar)."""
    if kind not in KINDS:
        raise InputError(unknown("generator", kind, KINDS), location="cxlsim trace gen")
    if n < 0:
        raise InputError(f"expected a record count of 0 or more; found {n}", location="--n")
    spec = KINDS[kind]
    p = parse_params(spec.params, params, flag="--param", owner=f"generator {kind}")
    source = shlex.join(["gen", kind, f"--n={n}", f"--seed={seed}", *params])
    meta = TraceMeta(clock="ns", regions=dict(spec.regions), source=source)
    # the next chunk is generated while this one is written
    with TraceWriter(out, meta) as writer, \
            closing(prefetched(spec.stream(p, make_rng(seed), n))) as stream:
        done = 0
        while done < n:
            chunk = next(stream)
            m = min(len(chunk["addr"]), n - done)
            index = np.arange(done, done + m, dtype=np.uint64)
            writer.write({**{k: v[:m] for k, v in chunk.items()},
                          "time": _times(index, p["interval"]),
                          "thread": (index % np.uint64(p["threads"])).astype(np.uint32),
                          **({} if "size" in chunk else
                             {"size": np.full(m, p["size"], np.uint32)})})
            done += m
            if advance is not None:
                advance(m)
    return Path(out)


def trace_bytes(kind: str, n: int) -> int:
    """Bytes on disk of the file :func:`generate` writes for ``n`` records of generator
    ``kind``, at most: 25-28 a record."""
    return file_bytes((*REQUIRED, *KINDS[kind].columns), n)


def _times(index: np.ndarray, interval: float) -> np.ndarray:
    """Time stamps (ns) of records ``index`` spaced ``interval`` ns apart."""
    if float(interval).is_integer():  # exact and faster in integers
        return index * np.uint64(interval)
    return (index * interval).astype(np.uint64)
