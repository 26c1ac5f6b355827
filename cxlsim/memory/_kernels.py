"""Compiled (numba) hot paths of the epoch-level memory model.

Layout. The set-associative structures a kernel call touches -- TLB arrays, caches --
live in one flat buffer of unsigned words (an :class:`~cxlsim.memory.cache.Arena`,
``uint32`` unless a structure's tags need ``uint64``); a structure is described by a
geometry row ``(offset, sets - 1, ways, log2(sets), stride)`` of an ``int64[n, 5]``
table. The set of key ``k`` is ``k & (sets - 1)`` (``sets`` is a power of two) and its
tag is ``k >> log2(sets)`` (the set bits are implied by where the tag sits), stored plus
one. Set ``s`` is the ``ways`` words from ``offset + stride * s``: its tags in LRU order,
most recent first, empty ways (0) last (``stride``, :func:`~cxlsim.memory.cache.set_stride`,
pads a set to stay within a host cache line). A cache shared by the cores of a complex is
one region of their common buffer.

Why this shape: host cache misses on the simulated L3's sets are the largest part of a
chunk's time, so a set is as compact as its tags alone -- 4 bytes a way, no rank, the
order itself is the LRU state (12 ways: 48 bytes in one host cache line; 64-bit words
holding a tag over a rank took 96 bytes, two lines; packed without padding, one set in
two spanned two lines: 11 % slower on ``bench_memory``). A lookup first compares the most
recent tag (the page walk's upper-level entries nearly always are that one: one load),
else finds the tag's position, shifts the younger tags down by one and puts the tag
first -- on a miss the oldest falls off the end. A set padded to 8, 16, 32 or 64 words
(5-32 ways and 49-64: every TLB and cache of the shipped CPUs but one 4-way TLB array)
does that in a handful of host vector instructions on the whole set
(:func:`_set_update`): 2-3x
faster than loops over its words, ``bench_memory`` 9.0 -> 13.3 M/s on one core. One
flat buffer indexed with unsigned integers keeps numba from tuple dispatch and
negative-index checks in the loop (each measured 3x slower).

:func:`access_chunk` runs a chunk of virtual addresses through one core: TLB levels,
then (after a miss everywhere) the page walk, whose references to page-table entries go
through the data caches like any load, then the data reference itself. While it does,
the host prefetches what a later access will need from host memory: the last-level cache
sets of the data line and leaf page-table entry ``ahead`` accesses on, and the page's
frame and node twice as far on. A prefetch changes no state. It pays once the simulated
state outgrows the host's caches: a Xeon 6 trace run's L3 (then 12 MiB of tags) and
16 MiB of page arrays took ~40% less time with it, while a pointer chase over 1 MiB of L3
tags and 4,096 pages, its state staying in the host's caches, ran 10% slower (and the T3
check's EPYC chase 1.19 -> 1.78 s); the L2's sets, which stay in the host's caches,
gained nothing. Hence two thresholds: :data:`PREFETCH_BYTES` for a core run on its own
(a pointer chase), and :data:`PREFETCH_BYTES_CORES`, a host core's L2, for cores run
together (:mod:`cxlsim.memory.cores`), which a trace run calls between its own per-epoch
work, which evicts the state from the host's caches: a sampled run's 1.5-3 MiB took ~40%
less time with it too.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: Bits of virtual address translated by one level of the x86-64 radix tree (512 entries).
LEVEL_BITS = 9
#: Bytes of one page-table entry.
PTE_BYTES = 8
#: Most ways of a structure (a lookup scans its set).
MAX_WAYS = 256
#: Accesses ahead of the current one whose host memory is prefetched (see above).
AHEAD = 16
#: Bytes of structures and page arrays from which a kernel call prefetches.
PREFETCH_BYTES = 8 << 20
#: The same for the cores of a complex run together (see above).
PREFETCH_BYTES_CORES = 1 << 20


@intrinsic
def prefetch(typingctx, array, index):
    """Hint the host CPU to fetch ``array[index]`` into its caches (no effect on state)."""

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [i8p], ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        # a write (the set will be updated), high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(1), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@njit(cache=True, inline="always")
def set_row(offset: int, mask: int, stride: int, key: int) -> np.uint64:
    """Index in the buffer of the first word of ``key``'s set."""
    return np.uint64(offset + (key & mask) * stride)


def _resize(builder: ir.IRBuilder, value: ir.Value, ty: ir.IntType) -> ir.Value:
    """``value`` (an unsigned integer) as an integer of type ``ty``."""
    if value.type.width < ty.width:
        return builder.zext(value, ty)
    return builder.trunc(value, ty) if value.type.width > ty.width else value


def _set_update(lanes: int):
    """An intrinsic ``update(state, row, tag, ways) -> hit`` for a set padded to ``lanes``
    words (:func:`~cxlsim.memory.cache.set_stride`), in host vector instructions.

    What :func:`_update_words` does, without loops or branches: load the set's ``lanes``
    words as one vector; compare each of its first ``ways`` with ``tag`` (a bit mask);
    the tag's position is the mask's lowest set bit, or the oldest way's (``ways - 1``)
    when no bit is set; the words up to that position move one way older (the vector
    shifted by one lane, selected lane by lane), the tag goes first, the vector is
    stored back. Words past ``ways`` (the padding) are never compared and keep their
    values; the row must have ``lanes`` words of its own, as every set a
    :class:`~cxlsim.memory.cache.SetAssociative` pads has. A lookup of a set in the
    host's caches takes 2.5-4 ns instead of 5.5-11 ns.
    """

    @intrinsic
    def update(typingctx, state, row, tag, ways):
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            first = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            word = context.get_data_type(aryty.dtype)
            vector, i32 = ir.VectorType(word, lanes), ir.IntType(32)
            lane_ty, bits_ty = ir.VectorType(i32, lanes), ir.IntType(lanes)
            undef = ir.Constant(vector, ir.Undefined)

            def splat(value: ir.Value, ty: ir.VectorType) -> ir.Value:
                empty = ir.Constant(ty, ir.Undefined)
                one = builder.insert_element(empty, value, i32(0))
                return builder.shuffle_vector(one, empty, ir.Constant(lane_ty, [0] * lanes))

            where = builder.bitcast(first, vector.as_pointer())
            old = builder.load(where, align=word.width // 8)
            ways = _resize(builder, args[3], i32)
            lane = ir.Constant(lane_ty, list(range(lanes)))
            same = builder.and_(builder.icmp_unsigned("==", old, splat(args[2], vector)),
                                builder.icmp_unsigned("<", lane, splat(ways, lane_ty)))
            bits = builder.bitcast(same, bits_ty)
            hit = builder.icmp_unsigned("!=", bits, ir.Constant(bits_ty, 0))
            oldest = builder.shl(ir.Constant(bits_ty, 1),
                                 _resize(builder, builder.sub(ways, i32(1)), bits_ty))
            cttz = builder.module.declare_intrinsic(
                "llvm.cttz", [bits_ty], ir.FunctionType(bits_ty, [bits_ty, ir.IntType(1)]))
            at = builder.call(cttz, [builder.or_(bits, oldest), ir.Constant(ir.IntType(1), 1)])
            at = _resize(builder, at, i32)
            older = builder.shuffle_vector(old, undef,
                                           ir.Constant(lane_ty, [0, *range(lanes - 1)]))
            moved = builder.select(builder.icmp_unsigned("<=", lane, splat(at, lane_ty)),
                                   older, old)
            builder.store(builder.insert_element(moved, args[2], i32(0)), where,
                          align=word.width // 8)
            return hit

        if not (isinstance(state, types.Array) and state.ndim == 1 and state.layout == "C"
                and isinstance(state.dtype, types.Integer) and not state.dtype.signed):
            return None  # the set's words are read as one vector: a contiguous buffer only
        return types.boolean(state, row, state.dtype, ways), codegen

    return update


_update64 = _set_update(64)
_update32 = _set_update(32)
_update16 = _set_update(16)
_update8 = _set_update(8)


@njit(cache=True, inline="always")
def lookup(state: np.ndarray, offset: int, mask: int, ways: int, shift: int, stride: int,
           key: int) -> bool:
    """Look ``key`` up in the structure ``(offset, mask = sets - 1, ways, shift =
    log2(sets), stride)`` of ``state`` and make it the most recently used entry of its set.

    Returns True on a hit. On a miss the key replaces the set's least recently used entry.
    Sets padded to 8, 16, 32 or 64 words are updated in vector instructions
    (:func:`_set_update`), others by a loop over the words; the two give the same state
    (tested).
    """
    row = set_row(offset, mask, stride, key)
    tag = state.dtype.type((key >> shift) + 1)  # 0 is an empty way
    if state[row] == tag:  # already the most recent: nothing changes
        return True
    if stride == 16:
        return _update16(state, row, tag, ways)
    if stride == 8:
        return _update8(state, row, tag, ways)
    if stride == 64:
        return _update64(state, row, tag, ways)
    if stride == 32:
        return _update32(state, row, tag, ways)
    return _update_words(state, row, tag, ways)


@njit(cache=True, inline="always")
def _update_words(state: np.ndarray, row: np.uint64, tag: int, ways: int) -> bool:
    """:func:`lookup` of a set of any padding, past its first word, one word at a time."""
    n, one = np.uint64(ways), np.uint64(1)
    at = np.uint64(0)  # the tag's position (0: absent, as position 0 was checked)
    for p in range(one, n):
        at += np.uint64(state[row + p] == tag) * p
    end = at if at else n - one
    prev = tag
    for p in range(end + one):  # the entries younger than the tag's (or all but the oldest) age
        cur = state[row + p]
        state[row + p] = prev
        prev = cur
    return at > 0


@njit(cache=True)
def lookup_many(state: np.ndarray, geometry: np.ndarray, keys: np.ndarray,
                hits: np.ndarray) -> None:
    """:func:`lookup` every key in turn in the structure of geometry row ``geometry``;
    ``hits[i]`` is True where ``keys[i]`` hit."""
    offset, mask, ways = geometry[0], geometry[1], geometry[2]
    shift, stride = geometry[3], geometry[4]
    for i in range(keys.shape[0]):
        hits[i] = lookup(state, offset, mask, ways, shift, stride, keys[i])


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


@njit(cache=True, inline="always")
def mapped_page(va: int, va_base: int, page_shift: int, frames: np.ndarray) -> int:
    """Index of ``va``'s page in ``frames``, or -1 if that page is not mapped."""
    page = (va - va_base) >> page_shift
    return page if va >= va_base and page < frames.shape[0] and frames[page] >= 0 else -1



@njit(cache=True, inline="always")
def prefetch_page(vaddrs: np.ndarray, i: int, va_base: int, page_shift: int,
                  frames: np.ndarray, nodes: np.ndarray) -> None:
    """Prefetch the frame and node of access ``i``'s page, if it is in range."""
    page = (vaddrs[i] - va_base) >> page_shift
    if 0 <= page < frames.shape[0]:
        prefetch(frames, page)
        prefetch(nodes, page)



@njit(cache=True, inline="always")
def reference(ref: int, walk: int, va: int, page: int, frames: np.ndarray,
              nodes: np.ndarray, page_shift: int, offset_mask: int, levels: int,
              table_base: np.ndarray, table_node: int, line_shift: int) -> tuple:
    """Reference ``ref`` of an access: the walk's entries first (``walk`` of them, none
    after a TLB hit), then the data: (kind 1 walk / 0 data, memory node, line)."""
    if ref < walk:
        entry = pte_address(va, ref, levels, page_shift, table_base)
        return 1, table_node, entry >> line_shift
    return 0, nodes[page], ((frames[page] << page_shift) | (va & offset_mask)) >> line_shift


@njit(cache=True)
def access_chunk(vaddrs, frames, nodes, va_base, page_shift, table_base, table_node,
                 state, tlbs, tlb_ns, caches, cache_ns, line_shift, memory_ns,
                 tlb_counts, counts, ahead) -> float:
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
    * ``ahead``: how many accesses ahead to prefetch (0: none).
    """
    n_tlb = tlbs.shape[0]
    n_cache = caches.shape[0]
    levels = table_base.shape[0]
    offset_mask = (1 << page_shift) - 1
    total = 0.0
    n = vaddrs.shape[0]
    for i in range(n):
        if ahead and i + 2 * ahead < n:
            prefetch_page(vaddrs, i + 2 * ahead, va_base, page_shift, frames, nodes)
        if ahead and i + ahead < n:
            va = vaddrs[i + ahead]
            page = mapped_page(va, va_base, page_shift, frames)
            if page >= 0:
                last = caches[n_cache - 1]
                line = ((frames[page] << page_shift) | (va & offset_mask)) >> line_shift
                prefetch(state, set_row(last[0], last[1], last[4], line))
                line = pte_address(va, levels - 1, levels, page_shift, table_base) >> line_shift
                prefetch(state, set_row(last[0], last[1], last[4], line))
        va = vaddrs[i]
        page = mapped_page(va, va_base, page_shift, frames)
        if page < 0:
            raise IndexError("access to a virtual page that is not mapped")
        if nodes[page] < 0:
            raise IndexError("access to a virtual page on no memory node (not resident)")
        vpn = va >> page_shift
        t = 0
        while t < n_tlb:
            total += tlb_ns[t]
            if lookup(state, tlbs[t, 0], tlbs[t, 1], tlbs[t, 2], tlbs[t, 3], tlbs[t, 4],
                      vpn):
                break
            t += 1
        tlb_counts[t] += 1
        # The walk's references (if every TLB level missed), then the data reference.
        walk = levels if t == n_tlb else 0
        for ref in range(walk + 1):
            kind, node, line = reference(ref, walk, va, page, frames, nodes, page_shift,
                                         offset_mask, levels, table_base, table_node,
                                         line_shift)
            served = n_cache
            for c in range(n_cache):  # inline: a helper function here runs 3x slower
                if lookup(state, caches[c, 0], caches[c, 1], caches[c, 2], caches[c, 3],
                          caches[c, 4], line):
                    served = c
                    break
            if served < n_cache:
                counts[kind, served] += 1
                total += cache_ns[served]
            else:
                counts[kind, n_cache + node] += 1
                total += memory_ns[node]
    return total


# --------------------------------------------------------------------- cores of a complex
#
# The cores of a complex share their last cache levels, which see the cores' references
# in core order (core 0's chunk, then core 1's), as if each core's chunk ran through
# :func:`access_chunk` after the previous core's. A core's TLBs and private caches never
# depend on what a shared level answers (a miss fills whatever the next level says), nor
# on which node a page is on, so the work splits exactly: :func:`private_pass`, one core
# at a time and the cores in parallel (host threads, see
# :func:`cxlsim.memory.cores.access_cores`), runs a chunk through the TLBs and private
# caches and records, in order, what the shared pass must do; :func:`shared_pass`,
# serially in core order, runs those records through the shared levels and the memory
# nodes, reads each data reference's node (so the private pass may run before pages are
# placed), and adds the latencies up in the very order :func:`access_chunk` does
# (floating-point sums depend on it).
#
# The record of a core is one stream of ``uint16`` codes: code ``k < len(adds)`` adds
# ``adds[k]`` (``adds`` holds the TLB levels' latencies, the private cache levels' for a
# page-walk reference, then the same for a data reference: each access ends with exactly
# one data code, hit or miss); any other code is a reference that missed every private
# level, its line the next one of the core's ``lines``: ``len(adds)`` a data reference
# (its node is its page's), above it ``1 | node << 1`` a page-walk reference. TLB and
# walk adds of exactly 0.0 are left out (``x + 0.0 == x`` for every sum of non-negative
# latencies, which starts at +0.0).

def codes_per_access(n_tlb: int, levels: int) -> int:
    """Codes of one access at most: a TLB lookup per level, then the walk's ``levels``
    references and the data reference."""
    return n_tlb + levels + 1


@njit(cache=True)
def private_pass(vaddrs, frames, va_base, page_shift, table_base, table_node, state, tlbs,
                 caches, split, line_shift, adds, tlb_counts, counts, ahead, codes,
                 lines) -> tuple:
    """Run ``vaddrs`` through one core's TLBs and its private cache levels (the first
    ``split`` rows of ``caches``); count what they serve (``tlb_counts``, ``counts`` as in
    :func:`access_chunk`) and write the shared pass's record into ``codes`` and ``lines``.
    Returns (codes written, lines written)."""
    n_tlb = tlbs.shape[0]
    n_add = adds.shape[0]
    levels = table_base.shape[0]
    offset_mask = (1 << page_shift) - 1
    n = vaddrs.shape[0]
    k = 0  # codes written
    m = 0  # lines written
    for i in range(n):
        if ahead and i + 2 * ahead < n:
            page = (vaddrs[i + 2 * ahead] - va_base) >> page_shift
            if 0 <= page < frames.shape[0]:
                prefetch(frames, page)
        va = vaddrs[i]
        # inline, as in access_chunk: the checks behind a helper that raises cost 10 %
        page = mapped_page(va, va_base, page_shift, frames)
        if page < 0:
            raise IndexError("access to a virtual page that is not mapped")
        vpn = va >> page_shift
        t = 0
        while t < n_tlb:
            if adds[t] != 0.0:
                codes[k] = t
                k += 1
            if lookup(state, tlbs[t, 0], tlbs[t, 1], tlbs[t, 2], tlbs[t, 3], tlbs[t, 4],
                      vpn):
                break
            t += 1
        tlb_counts[t] += 1
        walk = levels if t == n_tlb else 0
        for ref in range(walk + 1):
            if ref < walk:
                kind = 1
                line = pte_address(va, ref, levels, page_shift, table_base) >> line_shift
            else:
                kind = 0
                line = ((frames[page] << page_shift) | (va & offset_mask)) >> line_shift
            served = split
            for c in range(split):
                if lookup(state, caches[c, 0], caches[c, 1], caches[c, 2], caches[c, 3],
                          caches[c, 4], line):
                    served = c
                    break
            if served < split:
                counts[kind, served] += 1
                code = n_tlb + served + (1 - kind) * split
                if kind == 0 or adds[code] != 0.0:
                    codes[k] = code
                    k += 1
            else:
                codes[k] = n_add + (1 | (table_node << 1) if kind else 0)
                k += 1
                lines[m] = line
                m += 1
    return k, m


@njit(cache=True, inline="always")
def page_node(vaddrs: np.ndarray, i: int, va_base: int, page_shift: int,
              nodes: np.ndarray) -> int:
    """The node of access ``i``'s page (a mapped page: the private pass checked)."""
    return nodes[(vaddrs[i] - va_base) >> page_shift]


@njit(cache=True)
def shared_pass(state, caches, split, cache_ns, memory_ns, adds, codes, lines, counts,
                ahead, vaddrs, va_base, page_shift, nodes) -> float:
    """Run a core's record (:func:`private_pass` of ``vaddrs``) through the shared cache
    levels (rows ``split`` on of ``caches``) and the memory nodes (``nodes[page]`` of
    each data reference; -1, not resident, is an error); count what they serve into
    ``counts`` and return the core's total latency (ns)."""
    n_cache = caches.shape[0]
    n_add = adds.shape[0]
    first_data = n_add - split  # codes from here on end an access
    last = caches[n_cache - 1]
    n_line = lines.shape[0]
    n = vaddrs.shape[0]
    total = 0.0
    m = 0
    i = 0  # the access being run
    for k in range(codes.shape[0]):
        code = np.int64(codes[k])
        if code < n_add:
            total += adds[code]
            if code >= first_data:
                if page_node(vaddrs, i, va_base, page_shift, nodes) < 0:
                    raise IndexError("access to a virtual page on no memory node "
                                     "(not resident)")
                i += 1
            continue
        if ahead and m + ahead < n_line:
            prefetch(state, set_row(last[0], last[1], last[4], lines[m + ahead]))
        if ahead and i + ahead < n:
            prefetch(nodes, (vaddrs[i + ahead] - va_base) >> page_shift)
        line = lines[m]
        m += 1
        ref = code - n_add
        kind, node = ref & 1, ref >> 1
        if kind == 0:
            node = page_node(vaddrs, i, va_base, page_shift, nodes)
            if node < 0:
                raise IndexError("access to a virtual page on no memory node (not resident)")
            i += 1
        served = n_cache
        for c in range(split, n_cache):
            if lookup(state, caches[c, 0], caches[c, 1], caches[c, 2], caches[c, 3],
                          caches[c, 4], line):
                served = c
                break
        if served < n_cache:
            counts[kind, served] += 1
            total += cache_ns[served]
        else:
            counts[kind, n_cache + node] += 1
            total += memory_ns[node]
    return total


@njit(cache=True, nogil=True)
def private_passes(first, last, vaddrs, bounds, frames, va_base, page_shift, table_base,
                   table_node, state, tlbs, caches, split, line_shift, adds, tlb_counts,
                   counts, ahead, codes, lines, written) -> None:
    """:func:`private_pass` of cores ``first`` to ``last - 1`` of a complex, each on its
    chunk ``vaddrs[bounds[c]:bounds[c + 1]]``: ``tlbs[c]``, ``caches[c]``,
    ``tlb_counts[c]``, ``counts[c]`` are core ``c``'s; its record goes to ``codes`` and
    ``lines`` from ``bounds[c]`` times the words an access may need
    (:func:`codes_per_access`, ``len(table_base) + 1``), and how much it wrote to
    ``written[c]``. Releases the GIL: threads run disjoint ranges of cores."""
    per_code = codes.shape[0] // max(vaddrs.shape[0], 1)
    per_line = lines.shape[0] // max(vaddrs.shape[0], 1)
    for c in range(first, last):
        lo, hi = bounds[c], bounds[c + 1]
        # counters local to the call: the cores' rows may share host cache lines
        tlb_c = np.zeros(tlb_counts.shape[1], dtype=np.int64)
        cnt = np.zeros((counts.shape[1], counts.shape[2]), dtype=np.int64)
        k, m = private_pass(vaddrs[lo:hi], frames, va_base, page_shift, table_base,
                            table_node, state, tlbs[c], caches[c], split, line_shift, adds,
                            tlb_c, cnt, ahead, codes[lo * per_code:hi * per_code],
                            lines[lo * per_line:hi * per_line])
        written[c, 0] = k
        written[c, 1] = m
        # added word by word: an array's += compiles numba's broadcasting and its
        # error message, 3 s of the first run's compilation, for nothing here
        for t in range(tlb_c.shape[0]):
            tlb_counts[c, t] += tlb_c[t]
        for kind in range(cnt.shape[0]):
            for j in range(cnt.shape[1]):
                counts[c, kind, j] += cnt[kind, j]


@njit(cache=True, nogil=True)
def shared_passes(vaddrs, bounds, state, caches, split, adds, cache_ns, memory_ns, counts,
                  totals, ahead, codes, lines, written, va_base, page_shift, nodes) -> None:
    """:func:`shared_pass` of every core of a complex in core order, after
    :func:`private_passes` (same layout); ``memory_ns[c]`` is core ``c``'s node latencies,
    ``totals[c]`` gets its total latency. Releases the GIL."""
    per_code = codes.shape[0] // max(vaddrs.shape[0], 1)
    per_line = lines.shape[0] // max(vaddrs.shape[0], 1)
    for c in range(bounds.shape[0] - 1):
        at_code, at_line = bounds[c] * per_code, bounds[c] * per_line
        totals[c] = shared_pass(state, caches[c], split, cache_ns, memory_ns[c], adds,
                                codes[at_code:at_code + written[c, 0]],
                                lines[at_line:at_line + written[c, 1]], counts[c], ahead,
                                vaddrs[bounds[c]:bounds[c + 1]], va_base, page_shift, nodes)
