"""Single-core memory micro-benchmarks over a block: pointer chase and sequential read.

* :func:`pointer_chase` -- latency. The block's lines are linked in one random cycle
  (a random cyclic permutation); each load's address is the value the previous load
  returned, so loads are dependent and their latencies add. One lap visits every line
  of the block exactly once, in the random order.
* :func:`sequential_read` -- bandwidth. The block is read front to back, one load per
  64 B line (the other loads to a line hit the L1 and are free). The loads are
  independent: with ``cpu.mlp`` of them in flight at a time, Little's law gives the
  time of the stream as the sum of the loads' latencies divided by ``mlp`` (a
  latency-bound figure: no prefetchers, no limit from load ports or datapaths).

Both map the block at a 1 GiB-aligned virtual address (first touch in address order,
as a benchmark initialising its buffer does), run ``warmup_laps`` laps to reach steady
state, then measure ``loads`` loads (default one full lap) on a fresh core of
:class:`~cxlsim.memory.CpuParams` ``cpu``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cxlsim.memory import ChunkStats, CoreMemory, CpuParams, PageTable

#: Virtual address of the block: aligned for every page size.
BLOCK_VA = 2**30


@dataclass(frozen=True)
class BlockRun:
    """The measured loads of one run over one block."""

    stats: ChunkStats
    ns_per_load: float      # time per load (dependent: latency; overlapped: time / loads)
    bytes_per_s: float      # one line delivered per load


def chase_lap(block: int, line: int, rng: np.random.Generator) -> np.ndarray:
    """Addresses of one lap of a pointer chase over ``block`` bytes at :data:`BLOCK_VA`.

    Visiting ``lap[0], lap[1], ...`` and back to ``lap[0]`` is following the pointers
    ``next[lap[i]] = lap[i + 1]`` of one random cycle through all the lines.
    """
    return BLOCK_VA + rng.permutation(block // line).astype(np.int64) * line


def _core(cpu: CpuParams, block: int, page_size: int) -> CoreMemory:
    if block < cpu.caches[0].line or block % cpu.caches[0].line:
        raise ValueError(f"the block must be a whole number of {cpu.caches[0].line} B lines, "
                         f"got {block} B")
    table = PageTable(page_size, BLOCK_VA, -(-block // page_size) * page_size)
    table.map(BLOCK_VA, block)
    return CoreMemory(cpu, table)


def _measure(core: CoreMemory, lap: np.ndarray, warmup_laps: int, loads: int | None) -> ChunkStats:
    for _ in range(warmup_laps):
        core.access(lap)
    return core.access(lap if loads is None else np.resize(lap, loads))


def pointer_chase(cpu: CpuParams, block: int, page_size: int = 4096, *,
                  rng: np.random.Generator, warmup_laps: int = 1,
                  loads: int | None = None) -> BlockRun:
    """Latency of dependent loads around a random cycle through ``block`` bytes."""
    line = cpu.caches[0].line
    core = _core(cpu, block, page_size)
    stats = _measure(core, chase_lap(block, line, rng), warmup_laps, loads)
    return BlockRun(stats, stats.latency_ns / stats.accesses,
                    line * stats.accesses / stats.latency_ns * 1e9)


def sequential_read(cpu: CpuParams, block: int, page_size: int = 4096, *,
                    warmup_laps: int = 1, loads: int | None = None) -> BlockRun:
    """Bandwidth of reading ``block`` bytes front to back with ``cpu.mlp`` loads in flight."""
    line = cpu.caches[0].line
    core = _core(cpu, block, page_size)
    lap = BLOCK_VA + np.arange(block // line, dtype=np.int64) * line
    stats = _measure(core, lap, warmup_laps, loads)
    elapsed = stats.latency_ns / cpu.mlp
    return BlockRun(stats, elapsed / stats.accesses, line * stats.accesses / elapsed * 1e9)
