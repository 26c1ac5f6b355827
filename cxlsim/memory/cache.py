"""Set-associative LRU structures, and the data caches built on them.

A :class:`SetAssociative` is a region of an :class:`Arena`, the flat buffer the
kernels of :mod:`cxlsim.memory._kernels` work on; the structures of one core (and the
caches its complex shares) live in one arena so that one kernel call reaches them all.
A cache level is described by :class:`CacheParams`: capacity, associativity, line size,
load-to-use latency in core cycles, and how many cores share one instance (1 for a
private L1/L2, the cores of a complex for an L3).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
import cxlsim.memory._kernels as _kernels
from cxlsim.units import Size


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class Arena:
    """A growable flat buffer of unsigned words holding the state of set-associative
    structures: ``uint32`` (half the host memory traffic of 64-bit words) until a tag
    needs more bits, then ``uint64``. A way holds its tag plus one; an empty way is 0,
    so a new structure is zeroed memory, which the host hands out untouched (a Xeon 6's
    192 MiB L3 is 16 MiB of words, which a small run touches a fraction of; filling them
    took 6 ms a run). ``buffer`` is the words in use, a view of a store with half as
    much again as room (untouched, so no resident memory): a complex's later cores,
    built after its large shared cache, fit without copying it (the T6 checks, copying
    the buffer at each structure, took 0.44 s of 3.9 s building their cores).

    The store starts on a host cache line and every structure on a multiple of
    :data:`LINE_WORDS`, so that a set padded by :func:`set_stride` never straddles two
    host lines (see there)."""

    #: The word of an empty way.
    empty = 0

    def __init__(self) -> None:
        self._store = _aligned_zeros(0, np.uint32)
        self.buffer = self._store

    def allocate(self, words: int) -> int:
        """Append ``words`` empty words, from a multiple of :data:`LINE_WORDS`, and
        return their offset."""
        offset = -(-self.buffer.size // LINE_WORDS) * LINE_WORDS
        need = offset + words
        if need > self._store.size:
            store = _aligned_zeros(need + need // 2, self._store.dtype)
            store[:self.buffer.size] = self.buffer
            self._store = store
        self.buffer = self._store[:need]
        return offset

    def fit(self, tag: int) -> None:
        """Widen the words to 64 bits if ``tag`` (plus one) does not fit them."""
        if tag >= np.iinfo(self.buffer.dtype).max:
            store = _aligned_zeros(self._store.size, np.uint64)
            store[:self.buffer.size] = self.buffer
            self._store, self.buffer = store, store[:self.buffer.size]


#: 32-bit words in a host cache line (64 B).
LINE_WORDS = 16


def _aligned_zeros(words: int, dtype: type) -> np.ndarray:
    """``words`` zeros of ``dtype`` starting on a 64 B boundary (numpy's large arrays
    start 16 B past a page: every other 64 B set would span two host lines)."""
    size = np.dtype(dtype).itemsize
    raw = np.zeros(words + 64 // size, dtype)
    start = (-raw.ctypes.data % 64) // size
    return raw[start:start + words]


def set_stride(ways: int) -> int:
    """Words from one set to the next: ``ways`` rounded up to a power of two up to a
    host cache line's :data:`LINE_WORDS`, to a multiple of it beyond. A set then lies
    within one host line (two for 64-bit words, aligned), where 12 ways packed at 48 B
    spanned two lines one time in two: the simulated L3's sets are the host cache misses
    that bound a kernel call's speed. Costs a Xeon 6's L3 a third more words (16 MiB)."""
    if ways >= LINE_WORDS:
        return -(-ways // LINE_WORDS) * LINE_WORDS
    return 1 << (ways - 1).bit_length()


class SetAssociative:
    """A set-associative structure with true LRU replacement in every set.

    Keys are non-negative integers below 2^55 (line or page numbers); the set of a key
    is its low bits, so ``sets`` must be a power of two; at most 256 ways. The state
    lives in ``arena`` (a new one by default); ``geometry`` is its row for the kernels.
    """

    def __init__(self, sets: int, ways: int, arena: Arena | None = None) -> None:
        if not _power_of_two(sets):
            raise ValueError(f"the number of sets must be a power of two, got {sets}")
        if not 1 <= ways <= _kernels.MAX_WAYS:
            raise ValueError(f"ways must be from 1 to {_kernels.MAX_WAYS}, got {ways}")
        self.arena = Arena() if arena is None else arena
        self.sets, self.ways = sets, ways
        stride = set_stride(ways)
        self.geometry = np.array([self.arena.allocate(sets * stride), sets - 1, ways,
                                  sets.bit_length() - 1, stride], dtype=np.int64)

    @property
    def state(self) -> np.ndarray:
        """A view ``[set, way]`` of the structure's tags, most recent first."""
        offset, stride = int(self.geometry[0]), int(self.geometry[4])
        words = self.arena.buffer[offset:offset + self.sets * stride]
        return words.reshape(self.sets, stride)[:, :self.ways]

    def fit(self, key: int) -> None:
        """Make the arena's words wide enough for keys up to ``key``."""
        self.arena.fit(key >> int(self.geometry[3]))

    def access(self, keys: np.ndarray) -> np.ndarray:
        """Look every key up in turn (filling on a miss); a bool array, True for a hit."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        if keys.size:
            if keys.min() < 0 or keys.max() >= 1 << 55:
                raise ValueError("keys must be in [0, 2^55)")
            self.fit(int(keys.max()))
        hits = np.empty(keys.shape[0], dtype=np.bool_)
        _kernels.lookup_many(self.arena.buffer, self.geometry, keys, hits)
        return hits

    def contents(self, set_index: int) -> list[int]:
        """The keys held in one set, most recently used first."""
        tags = self.state[set_index]
        shift = int(self.geometry[3])
        return [(int(t) - 1) << shift | set_index for t in tags if t != self.arena.empty]

    def flush(self) -> None:
        """Empty every set."""
        self.state[:] = self.arena.empty

    def invalidate(self, keys: np.ndarray) -> None:
        """Drop ``keys`` where present: the entries older than each move up one and an
        empty way becomes the set's oldest, as if the key had never been filled."""
        state, shift = self.state, int(self.geometry[3])
        for key in np.unique(np.asarray(keys, dtype=np.int64)):
            row = state[key & (self.sets - 1)]
            way = np.flatnonzero(row == (key >> shift) + 1)
            if way.size:
                row[way[0]:-1] = row[way[0] + 1:].copy()
                row[-1] = self.arena.empty


class CacheParams(StrictModel):
    """One level of data cache."""

    name: str = Field(description="level name, e.g. 'L1D'")
    size: Size = Field(description="capacity of one instance")
    ways: int = Field(ge=1, description="associativity")
    line: Size = Field(64, description="line size")
    latency_cycles: int = Field(ge=0, description="load-to-use latency of a hit here, core cycles")
    shared_by: Annotated[int, Field(ge=1)] | Literal["complex"] = Field(
        1, description="cores sharing one instance (1 = private), or 'complex': the CPU's "
                       "cores_per_complex, e.g. a CCX's L3")

    @model_validator(mode="after")
    def _geometry(self) -> CacheParams:
        if not _power_of_two(self.line):
            raise ValueError(f"line size must be a power of two, got {self.line} B")
        sets, rest = divmod(self.size, self.line * self.ways)
        if rest or not _power_of_two(sets):
            raise ValueError(f"size / (line x ways) must be a power-of-two number of sets; "
                             f"{self.size} B / ({self.line} B x {self.ways}) is not")
        return self

    @property
    def sets(self) -> int:
        return self.size // (self.line * self.ways)

    def build(self, arena: Arena | None = None) -> SetAssociative:
        """An empty instance of this cache, indexed by line number."""
        return SetAssociative(self.sets, self.ways, arena)
