"""Compiled (numba) hot paths of the epoch-level memory model.

Layout. The set-associative structures a kernel call touches -- TLB arrays, caches --
live in one flat ``int64`` buffer (an :class:`~cxlsim.memory.cache.Arena`); a structure
is described by a geometry row ``(offset, sets - 1, ways)`` of an ``int64[n, 3]`` table.
Set ``s`` is the ``ways`` words from ``offset + ways * s``, one per way: the way's tag
(the full key; ``-1``: empty) shifted left by ``RANK_BITS``, over its LRU rank (0 = most
recently used; the ranks of a set are always a permutation of ``0 .. ways-1``, empty
ways ranking oldest). The set of key ``k`` is ``k & (sets - 1)`` (``sets`` is a power of
two). A cache shared by the cores of a complex is one region of their common buffer.

Why this shape: a lookup is two branch-free passes over one set's words, which the
compiler vectorises -- find the key's rank; then age every entry younger than the
key's entry (a hit) or than the oldest entry (a miss), and give that entry the key at
rank 0. The second pass is skipped when the key already is the most recent (as the
page walk's upper-level entries nearly always are). So a 64-way fully associative TLB
is a few vector operations, and a set is as compact as its tags alone (host cache
misses on the simulated L3's sets are a large part of a chunk's time). One flat buffer
indexed with unsigned integers keeps numba from tuple dispatch and negative-index
checks in the loop (each measured 3x slower).

:func:`access_chunk` runs a chunk of virtual addresses through one core: TLB levels,
then (after a miss everywhere) the page walk, whose references to page-table entries go
through the data caches like any load, then the data reference itself. The upper levels
of a walk nearly always read the line they read last time, still the most recent of its
set in the nearest cache; the kernel remembers where that line sat and, when one load
shows it is still there at rank 0, counts the hit without scanning the set -- exactly
what :func:`lookup` would have done (a hit on the most recent entry changes nothing).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Bits of virtual address translated by one level of the x86-64 radix tree (512 entries).
LEVEL_BITS = 9
#: Bytes of one page-table entry.
PTE_BYTES = 8
#: Low bits of an entry holding its LRU rank (so at most 256 ways); the tag is above.
RANK_BITS = 8
RANK_MASK = (1 << RANK_BITS) - 1


@njit(cache=True, inline="always")
def lookup(state: np.ndarray, offset: int, mask: int, ways: int, key: int) -> bool:
    """Look ``key`` up in the structure ``(offset, mask = sets - 1, ways)`` of ``state``
    and make it the most recently used entry of its set.

    Returns True on a hit. On a miss the key replaces the set's least recently used entry.
    """
    n = np.uint64(ways)
    row = np.uint64(offset + (key & mask) * ways)
    found = 0  # the key's rank + 1, or 0 if absent
    for p in range(n):
        entry = state[row + p]
        found += ((entry >> RANK_BITS) == key) * ((entry & RANK_MASK) + 1)
    if found == 1:  # already the most recent: nothing changes (the walk's upper levels)
        return True
    # The entry to become the most recent: the key's own on a hit, the oldest on a miss.
    # Every entry younger than it ages by one.
    rank = found - 1 if found else ways - 1
    for p in range(n):
        entry = state[row + p]
        r = entry & RANK_MASK
        state[row + p] = key << RANK_BITS if r == rank else entry + (r < rank)
    return found > 0


@njit(cache=True, inline="always")
def mru_position(state: np.ndarray, offset: int, mask: int, ways: int, key: int) -> int:
    """Index in ``state`` of ``key``'s entry, which must be the most recent of its set."""
    n = np.uint64(ways)
    row = np.uint64(offset + (key & mask) * ways)
    word = key << RANK_BITS
    at = np.uint64(0)
    for p in range(n):
        at += (state[row + p] == word) * p
    return row + at


@njit(cache=True)
def lookup_many(state: np.ndarray, geometry: np.ndarray, keys: np.ndarray,
                hits: np.ndarray) -> None:
    """:func:`lookup` every key in turn in the structure of geometry row ``geometry``;
    ``hits[i]`` is True where ``keys[i]`` hit."""
    offset, mask, ways = geometry[0], geometry[1], geometry[2]
    for i in range(keys.shape[0]):
        hits[i] = lookup(state, offset, mask, ways, keys[i])


@njit(cache=True, inline="always")
def pte_address(va: int, level: int, levels: int, page_shift: int, table_base: np.ndarray) -> int:
    """Physical address of the entry translating ``va`` at ``level`` (0 = root).

    The tables of one level are laid out one after another in virtual-address order
    from ``table_base[level]``, so the entry's index is the virtual address shifted by
    the bits the levels below translate, and neighbouring pages have neighbouring
    entries (eight to a 64 B line), as in a freshly built radix tree.
    """
    shift = page_shift + LEVEL_BITS * (levels - 1 - level)
    return table_base[level] + (va >> shift) * PTE_BYTES


@njit(cache=True)
def access_chunk(vaddrs, frames, nodes, va_base, page_shift, table_base, table_node,
                 state, tlbs, tlb_ns, caches, cache_ns, line_shift, memory_ns,
                 tlb_counts, counts) -> float:
    """Run ``vaddrs`` through one core's TLBs, page walker and caches; total latency (ns).

    The latencies of all the chunk's accesses are summed, as for dependent loads.

    * ``frames[i]``, ``nodes[i]``: physical frame and memory node of virtual page
      ``(va - va_base) >> page_shift`` (frame -1: not mapped; node -1: not resident).
    * ``table_base[level]``, ``table_node``: where the page tables live (see
      :func:`pte_address`); ``len(table_base)`` is the number of levels walked.
    * ``state``: the buffer holding every structure; ``tlbs[t]``, ``caches[c]``: the
      geometry rows of the TLB levels (for this page size) and cache levels, nearest
      first. ``tlb_ns[t]`` is the lookup time of TLB level ``t``, paid by every access
      reaching it; ``cache_ns[c]`` the load-to-use latency of a hit in cache level ``c``;
      ``memory_ns[node]`` that of an access to memory node ``node``.
    * Counters (incremented): ``tlb_counts[t]`` hits in TLB level ``t``, and
      ``tlb_counts[len(tlbs)]`` page walks; ``counts[0]`` and ``counts[1]`` the data and
      page-walk references served per cache level, then per memory node.
    """
    n_tlb = tlbs.shape[0]
    n_cache = caches.shape[0]
    levels = table_base.shape[0]
    offset_mask = (1 << page_shift) - 1
    total = 0.0
    # Per walk level above the leaf: the line its entry was last read from, and where
    # that line's entry sits in the nearest cache (valid while it is still there at rank 0).
    hint_line = np.full(levels, -1, dtype=np.int64)
    hint_at = np.zeros(levels, dtype=np.uint64)
    for i in range(vaddrs.shape[0]):
        va = vaddrs[i]
        page = (va - va_base) >> page_shift
        if va < va_base or page >= frames.shape[0] or frames[page] < 0:
            raise IndexError("access to a virtual page that is not mapped")
        if nodes[page] < 0:
            raise IndexError("access to a virtual page on no memory node (not resident)")
        vpn = va >> page_shift
        t = 0
        while t < n_tlb:
            total += tlb_ns[t]
            if lookup(state, tlbs[t, 0], tlbs[t, 1], tlbs[t, 2], vpn):
                break
            t += 1
        tlb_counts[t] += 1
        # The walk's references (if every TLB level missed), then the data reference.
        walk = levels if t == n_tlb else 0
        for ref in range(walk + 1):
            upper = ref < levels - 1 and ref < walk and n_cache > 0
            if ref < walk:
                kind, node = 1, table_node
                line = pte_address(va, ref, levels, page_shift, table_base) >> line_shift
                if upper and hint_line[ref] == line and state[hint_at[ref]] == line << RANK_BITS:
                    counts[1, 0] += 1
                    total += cache_ns[0]
                    continue
            else:
                kind, node = 0, nodes[page]
                line = ((frames[page] << page_shift) | (va & offset_mask)) >> line_shift
            served = n_cache
            for c in range(n_cache):  # inline: a helper function here runs 3x slower
                if lookup(state, caches[c, 0], caches[c, 1], caches[c, 2], line):
                    served = c
                    break
            if upper:
                hint_line[ref] = line
                hint_at[ref] = mru_position(state, caches[0, 0], caches[0, 1], caches[0, 2], line)
            if served < n_cache:
                counts[kind, served] += 1
                total += cache_ns[served]
            else:
                counts[kind, n_cache + node] += 1
                total += memory_ns[node]
    return total
