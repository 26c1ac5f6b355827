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
    192 MiB L3 is 12 MiB of words, which a small run touches a fraction of; filling them
    took 6 ms a run). ``buffer`` is the words in use, a view of a store with half as
    much again as room (untouched, so no resident memory): a complex's later cores,
    built after its large shared cache, fit without copying it (the T6 checks, copying
    the buffer at each structure, took 0.44 s of 3.9 s building their cores)."""

    #: The word of an empty way.
    empty = 0

    def __init__(self) -> None:
        self._store = np.zeros(0, dtype=np.uint32)
        self.buffer = self._store

    def allocate(self, words: int) -> int:
        """Append ``words`` empty words and return their offset."""
        offset = self.buffer.size
        need = offset + words
        if need > self._store.size:
            store = np.zeros(need + need // 2, self._store.dtype)
            store[:offset] = self.buffer
            self._store = store
        self.buffer = self._store[:need]
        return offset

    def fit(self, tag: int) -> None:
        """Widen the words to 64 bits if ``tag`` (plus one) does not fit them."""
        if tag >= np.iinfo(self.buffer.dtype).max:
            self._store = self.buffer = self.buffer.astype(np.uint64)


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
        self.geometry = np.array([self.arena.allocate(sets * ways), sets - 1, ways,
                                  sets.bit_length() - 1], dtype=np.int64)

    @property
    def state(self) -> np.ndarray:
        """A view ``[set, way]`` of the structure's tags, most recent first."""
        offset = int(self.geometry[0])
        return self.arena.buffer[offset:offset + self.sets * self.ways].reshape(self.sets, -1)

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
