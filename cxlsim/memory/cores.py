"""Cores run together: a complex's private passes on the host's CPUs, its shared levels
in core order, and the next chunks' private passes run ahead while the caller works.

:func:`access_cores` gives every core the statistics, and every cache the state, that
running the cores' chunks one after another gives, to the last bit. The cores of one
complex (one arena, one page table) with a shared cache level run split
(:mod:`cxlsim.memory._kernels`, "cores of a complex"): their TLBs and private caches
first, the cores in parallel on host threads, then the shared levels and memory nodes
in core order.

Running ahead. A core's private pass depends on its chunk and on its own TLBs and
private caches alone -- not on the shared levels, not on the memory nodes' latencies,
not on which node a page is on (the shared pass reads that). So when the caller knows
the next chunks (a trace run's next epoch, ``upcoming``), their private passes start on
a helper thread as soon as this call's are done, and run while this call's shared pass
and the caller's own work between the calls (a trace run's page placement, policies,
equilibrium) go on; the next call takes their record if it is for the very same cores
and chunk arrays. Anything that changes a core's TLBs or caches meanwhile -- a TLB
shootdown, a flush, a call outside this protocol -- first undoes them: it waits for
the helper, restores the private state saved before it started, and the next call runs
its private passes itself. The result is the same to the bit either way.

Shootdowns need not undo them. A caller that moves pages between calls (a trace run)
flushes and invalidates through :func:`flush_tlbs` and :func:`invalidate_pages`. A
full flush empties a TLB whatever it held: when the gap before a call flushed, the
passes run ahead from emptied TLBs, betting that the next gap flushes too, and a flush
there (with any invalidation after it) is only noted. An invalidation of pages the
saved TLBs do not hold changes nothing and is only noted too. The next call takes the
record if the bet held; undoing puts what was noted in place.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import cxlsim.memory._kernels as _kernels
from cxlsim.memory.hierarchy import ChunkStats, Complex, CoreMemory

#: Host threads running the private passes of a complex's cores: the process's CPUs,
#: or the share a process pool gives each of its workers (:data:`THREADS_ENV`).
_THREADS = max(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1, 1)
#: Environment variable a pool's worker reads its host threads from (validate, sweeps:
#: two workers on two CPUs each run single-threaded rather than contend).
THREADS_ENV = "CXLSIM_THREADS"


def _threads() -> int:
    return max(min(int(os.environ.get(THREADS_ENV, _THREADS)), _THREADS), 1)
#: Fewest accesses of a call worth a second thread (its hand-off costs ~0.1 ms).
_PARALLEL_ACCESSES = 4096
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(_THREADS - 1, thread_name_prefix="cxlsim-private")
    return _POOL


def _forget_pool() -> None:
    global _POOL
    _POOL = None  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)

#: The complexes whose TLBs were flushed (:func:`flush_tlbs`) since their last call.
_FLUSHED: weakref.WeakSet[Complex] = weakref.WeakSet()


def flush_tlbs(cores: Sequence[CoreMemory]) -> None:
    """Empty every TLB of ``cores`` (:meth:`CoreMemory.flush_tlbs`), keeping private
    passes that run ahead from emptied TLBs (see the module docstring)."""
    for core in cores:
        _FLUSHED.add(core.complex)
        ahead = core.complex.ahead
        if ahead is None or not ahead.absorb(core, None):
            core.flush_tlbs()


def invalidate_pages(cores: Sequence[CoreMemory], vpns: np.ndarray) -> None:
    """Drop virtual page numbers ``vpns`` from every TLB of ``cores``
    (:meth:`CoreMemory.invalidate_pages`), keeping private passes run ahead from a
    state where that changes nothing (see the module docstring)."""
    for core in cores:
        ahead = core.complex.ahead
        if ahead is None or not ahead.absorb(core, vpns):
            core.invalidate_pages(vpns)


def access_cores(cores: Sequence[CoreMemory], chunks: Sequence[np.ndarray],
                 memory_ns: Sequence[float] | None = None,
                 upcoming: tuple[Sequence[CoreMemory], Sequence[np.ndarray]] | None = None
                 ) -> list[ChunkStats]:
    """Run ``chunks[i]`` through ``cores[i]``, each after the previous one: the same
    statistics and state as ``[core.access(chunk, memory_ns) for ...]``, to the last bit.

    ``upcoming``: the cores and chunks of the next call, whose private passes may run
    ahead (see the module docstring); pass the very same arrays to that call.
    """
    if len(cores) != len(chunks):
        raise ValueError(f"{len(cores)} cores but {len(chunks)} chunks")
    out: list[ChunkStats | None] = [None] * len(cores)
    groups: dict[int, list[int]] = {}
    for i, core in enumerate(cores):
        groups.setdefault(id(core.complex), []).append(i)
    for group in groups.values():
        members = [cores[i] for i in group]
        split = next((c for c, n in enumerate(members[0].cpu.sharing) if n > 1), None)
        if (len(group) < 2 or split is None
                or any(m.page_table is not members[0].page_table for m in members)):
            for i in group:
                out[i] = cores[i].access(chunks[i], memory_ns)
            continue
        after = None
        if upcoming is not None:
            pairs = [(c, x) for c, x in zip(*upcoming) if c.complex is members[0].complex]
            after = ([c for c, _ in pairs], [x for _, x in pairs]) if len(pairs) > 1 else None
        for i, stats in zip(group, _access_complex(members, [chunks[i] for i in group],
                                                   memory_ns, split, after)):
            out[i] = stats
    return out  # type: ignore[return-value]


class _Record:
    """Private passes of a complex's cores over their chunks: what the shared pass
    needs (:func:`cxlsim.memory._kernels.private_passes`)."""

    def __init__(self, cores: list[CoreMemory], chunks: list[np.ndarray], split: int) -> None:
        self.cores, self.chunks, self.split = cores, chunks, split
        first, pt = cores[0], cores[0].page_table
        sizes = np.array([c.size for c in chunks], dtype=np.int64)
        self.bounds = np.concatenate([[0], np.cumsum(sizes)])
        self.vaddrs = np.concatenate(chunks) if chunks else np.empty(0, np.int64)
        per_code = _kernels.codes_per_access(len(first.tlbs), pt.levels)
        self.codes, self.lines = _scratch(first.complex, self.vaddrs.size * per_code,
                                          self.vaddrs.size * (pt.levels + 1))
        n = len(cores)
        self.tlb_counts = np.zeros((n, len(first.tlbs) + 1), dtype=np.int64)
        self.counts = np.zeros((n, 2, len(first.caches) + first.memory_ns.size),
                               dtype=np.int64)
        self.written = np.zeros((n, 2), dtype=np.int64)
        # what the kernels add: TLB lookups, then private hits of walk and data references
        self.adds = np.concatenate([first._tlb_ns, first._cache_ns[:split],
                                    first._cache_ns[:split]])
        self.tlbs = np.stack([c._tlb_geometry for c in cores])
        self.geometry = np.stack([c._cache_geometry for c in cores])
        held = first.arena.buffer.nbytes + pt.frames.nbytes + pt.nodes.nbytes
        self.ahead = _kernels.AHEAD if held >= _kernels.PREFETCH_BYTES_CORES else 0

    def matches(self, cores: Sequence[CoreMemory], chunks: Sequence[np.ndarray]) -> bool:
        """Whether this is the record of exactly these cores and chunk arrays."""
        return (len(cores) == len(self.cores)
                and all(a is b for a, b in zip(cores, self.cores))
                and all(a is b for a, b in zip(chunks, self.chunks)))

    def run(self, first_core: int, last_core: int) -> None:
        """The private passes of cores ``first_core`` to ``last_core - 1`` (no GIL)."""
        first, pt = self.cores[0], self.cores[0].page_table
        _kernels.private_passes(
            first_core, last_core, self.vaddrs, self.bounds, pt.frames, pt.va_base,
            pt.page_shift, pt.table_base, pt.table_node, first.arena.buffer, self.tlbs,
            self.geometry, self.split, first._line_shift, self.adds, self.tlb_counts,
            self.counts, self.ahead, self.codes, self.lines, self.written)

    def run_all(self) -> None:
        """Every core's private pass, in contiguous runs of cores on the host threads."""
        n = len(self.cores)
        threads = min(n, _threads())
        cuts = np.searchsorted(self.bounds, np.arange(1, threads) * self.vaddrs.size / threads)
        cuts = np.unique(np.clip(np.concatenate([[0], cuts, [n]]), 0, n))
        runs = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
        if len(runs) > 1 and self.vaddrs.size >= _PARALLEL_ACCESSES:
            pending = [_pool().submit(self.run, a, b) for a, b in runs[1:]]
            try:
                self.run(*runs[0])
            finally:  # no thread goes on changing the state once this returns or raises
                for job in pending:
                    job.result()
        else:
            self.run(0, n)

    def shared(self, memory_ns: Sequence[float] | None) -> list[ChunkStats]:
        """The shared levels and memory nodes, core by core, and every core's stats."""
        first, pt = self.cores[0], self.cores[0].page_table
        nodes_ns = np.array([core._nodes_ns(memory_ns) for core in self.cores])
        if self.adds.size + 1 + 2 * nodes_ns.shape[1] > np.iinfo(np.uint16).max:
            raise ValueError(f"too many memory nodes ({nodes_ns.shape[1]}) for one kernel call")
        n_cache = len(first.caches)
        width = n_cache + nodes_ns.shape[1]
        if self.counts.shape[2] != width:  # more or fewer nodes than the cores were built
            counts = np.zeros((*self.counts.shape[:2], width), np.int64)  # with: the
            counts[..., :n_cache] = self.counts[..., :n_cache]  # private passes' columns
            self.counts = counts
        totals = np.zeros(len(self.cores))
        _kernels.shared_passes(self.vaddrs, self.bounds, first.arena.buffer, self.geometry,
                               self.split, self.adds, first._cache_ns, nodes_ns, self.counts,
                               totals, self.ahead, self.codes, self.lines, self.written,
                               pt.va_base, pt.page_shift, pt.nodes)
        return [ChunkStats(int(self.bounds[c + 1] - self.bounds[c]), float(totals[c]),
                           self.tlb_counts[c, :-1], int(self.tlb_counts[c, -1]),
                           self.counts[c, 0], self.counts[c, 1], n_cache)
                for c in range(len(self.cores))]


def _scratch(complex_: Complex, codes: int, lines: int) -> tuple[np.ndarray, np.ndarray]:
    """Record buffers of a complex, kept between calls: two pairs, used in turn, so a
    record run ahead never writes where the current one is being read."""
    bufs = complex_.scratch
    if len(bufs) < 2:
        bufs[:] = [(np.empty(0, np.uint16), np.empty(0, np.int64))] * 2
    have_codes, have_lines = bufs[0]
    if have_codes.size < codes or have_lines.size < lines:
        bufs[0] = (np.empty(max(codes, have_codes.size), np.uint16),
                   np.empty(max(lines, have_lines.size), np.int64))
    bufs.reverse()  # the next record gets the other pair
    return bufs[1]


class Lookahead:
    """A record's private passes running ahead on a helper thread, from the private
    state saved in :attr:`saved` -- with every TLB emptied first when ``flushed`` (a
    flush is expected before the next call); the caller claims the cores the helper
    has not started (:meth:`finish`), or undoes it all (:meth:`undo`)."""

    def __init__(self, record: _Record, flushed: bool = False) -> None:
        self.record = record
        buffer = record.cores[0].arena.buffer
        self.rows = np.concatenate([c.private_rows for c in record.cores])
        self.saved = [buffer[o:o + (m + 1) * s].copy() for o, m, _, _, s in self.rows.tolist()]
        self.flushed = flushed
        self.was_flushed = [False] * len(record.cores)  # a flush noted, by core
        if flushed:
            for core in record.cores:
                for tlb in core.tlbs:
                    tlb.flush()
        self._lock = threading.Lock()
        self._next = 0
        self._stop = False
        self.error: BaseException | None = None
        self._job = _pool().submit(self._work)

    def _claim(self) -> int | None:
        with self._lock:
            if self._stop or self._next >= len(self.record.cores):
                return None
            self._next += 1
            return self._next - 1

    def _work(self) -> None:
        while (c := self._claim()) is not None:
            try:
                self.record.run(c, c + 1)
            except BaseException as exc:  # the next call runs the passes itself
                self.error = exc
                with self._lock:
                    self._stop = True

    def absorb(self, core: CoreMemory, vpns: np.ndarray | None) -> bool:
        """Note a flush (``vpns`` None) or an invalidation of ``vpns`` in ``core``'s
        TLBs before the next call, if the passes run ahead assumed it or it changes
        nothing; False if they must be undone first."""
        c = next((i for i, mine in enumerate(self.record.cores) if mine is core), None)
        if c is None:
            return False
        if vpns is None:
            if self.flushed:
                self.was_flushed[c] = True
            return self.flushed
        if self.was_flushed[c]:
            return True  # empty TLBs
        keys = np.asarray(vpns, dtype=np.int64)
        per_core = len(self.rows) // len(self.record.cores)
        for (_, m, ways, shift, stride), words in zip(
                self.rows[c * per_core:c * per_core + len(core.tlbs)].tolist(),
                self.saved[c * per_core:]):
            held = words.reshape(m + 1, stride)[keys & m, :ways]
            if (held == ((keys >> shift) + 1).astype(words.dtype)[:, None]).any():
                return False
        return True

    def finish(self) -> _Record | None:
        """The finished record (the caller runs the cores the helper has not started),
        or None (undone) if a private pass failed or a flush it assumed did not come."""
        while self.error is None and (c := self._claim()) is not None:
            try:
                self.record.run(c, c + 1)
            except Exception as exc:  # not Ctrl-C or a stop signal: those end the run
                self.error = exc
        self._job.result()
        if self.error is not None or (self.flushed and not all(self.was_flushed)):
            self.undo()
            return None
        return self.record

    def undo(self) -> None:
        """Stop the helper and put the private state back as it was before it ran,
        with the flushes noted since."""
        with self._lock:
            self._stop = True
        self._job.result()
        buffer = self.record.cores[0].arena.buffer
        for (o, m, _, _, s), words in zip(self.rows.tolist(), self.saved):
            buffer[o:o + (m + 1) * s] = words
        for core, flushed in zip(self.record.cores, self.was_flushed):
            for tlb in core.tlbs if flushed else ():
                tlb.flush()


def _access_complex(cores: list[CoreMemory], chunks: list[np.ndarray],
                    memory_ns: Sequence[float] | None, split: int,
                    upcoming: tuple[list[CoreMemory], list[np.ndarray]] | None
                    ) -> list[ChunkStats]:
    """:func:`access_cores` for cores of one complex on one page table."""
    complex_ = cores[0].complex
    chunks = [np.ascontiguousarray(c, dtype=np.int64) for c in chunks]
    flushed = complex_ in _FLUSHED  # since the last call: likely again before the next
    _FLUSHED.discard(complex_)
    record = None
    if complex_.ahead is not None and complex_.ahead.record.matches(cores, chunks):
        ahead, complex_.ahead = complex_.ahead, None
        record = ahead.finish()
        complex_.backoff = 0
    complex_.cancel()  # ahead on other chunks
    if record is None:
        record = _Record(cores, chunks, split)
        record.run_all()
    if upcoming is not None and _threads() > 1 and sum(c.size for c in upcoming[1]) \
            >= _PARALLEL_ACCESSES:
        if complex_.skip:
            complex_.skip -= 1
        else:
            complex_.ahead = Lookahead(_Record(upcoming[0], [
                np.ascontiguousarray(c, dtype=np.int64) for c in upcoming[1]], split),
                flushed)
    try:
        return record.shared(memory_ns)
    except BaseException:
        complex_.cancel()  # the caller will not come back for what runs ahead
        raise
