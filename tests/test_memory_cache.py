"""Set-associative LRU structures (the compiled lookup) against a plain reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from cxlsim.memory import CacheParams, SetAssociative
from cxlsim.memory.cache import LINE_WORDS, Arena
from cxlsim.memory.reference import LruSets


@settings(max_examples=80, deadline=None)
@given(sets_log2=st.integers(0, 4), ways=st.integers(1, 20) | st.sampled_from([31, 64]),
       keys=st.lists(st.integers(0, 200), max_size=400))
def test_hits_match_the_reference(sets_log2, ways, keys):
    """Every padding (sets of 5-8 ways and 9-16 ways take the vector update, the others
    the word loop): the reference's hits and LRU order, the padding words untouched."""
    sets = 1 << sets_log2
    fast, ref = SetAssociative(sets, ways), LruSets(sets, ways)
    hits = fast.access(np.array(keys, dtype=np.int64))
    assert hits.tolist() == [ref.lookup(k) for k in keys]
    for s in range(sets):  # same contents, same LRU order
        assert fast.contents(s) == list(reversed(ref.sets[s]))
    offset, stride = int(fast.geometry[0]), int(fast.geometry[4])
    words = fast.arena.buffer[offset:offset + sets * stride].reshape(sets, stride)
    assert (words[:, ways:] == fast.arena.empty).all()


@settings(max_examples=40, deadline=None)
@given(sets_log2=st.integers(0, 4), ways=st.sampled_from([1, 3, 6, 12, 16]),
       keys=st.lists(st.integers(0, 40) | st.integers(2**32 - 40, 2**32 + 40)
                     | st.integers(2**55 - 40, 2**55 - 1), max_size=300))
def test_tags_too_wide_for_32_bits_widen_the_words_exactly(sets_log2, ways, keys):
    """Words start at 32 bits and widen to 64 at the first tag that does not fit; the
    hits and the LRU order are the reference's either way."""
    sets = 1 << sets_log2
    fast, ref = SetAssociative(sets, ways), LruSets(sets, ways)
    hits = [bool(fast.access(np.array([k]))[0]) for k in keys]
    assert hits == [ref.lookup(k) for k in keys]
    wide = any(k >> sets_log2 >= 2**32 - 1 for k in keys)
    assert fast.arena.buffer.dtype == (np.uint64 if wide else np.uint32)
    for s in range(sets):
        assert fast.contents(s) == list(reversed(ref.sets[s]))

def test_lru_evicts_the_least_recently_used():
    c = SetAssociative(1, 4)
    assert not c.access(np.array([1, 2, 3, 4])).any()
    assert c.access(np.array([1])).all()             # 1 becomes the most recent
    assert not c.access(np.array([5])).any()         # evicts 2, the least recent
    assert c.contents(0) == [5, 1, 4, 3]
    assert c.access(np.array([1, 3, 4, 5])).all()
    assert not c.access(np.array([2])).any()


def test_a_cyclic_pattern_one_larger_than_the_set_never_hits():
    c = SetAssociative(1, 8)
    assert not c.access(np.tile(np.arange(9), 5)).any()
    c.flush()
    assert c.access(np.tile(np.arange(8), 5)).sum() == 32  # fits: only the first lap misses


def test_keys_map_to_sets_by_their_low_bits():
    c = SetAssociative(4, 1)
    c.access(np.array([0, 1, 2, 3, 4]))
    assert [c.contents(s) for s in range(4)] == [[4], [1], [2], [3]]


def test_structures_sharing_an_arena_keep_their_state():
    arena = Arena()
    a = SetAssociative(2, 2, arena)
    a.access(np.array([1, 2, 3]))
    b = SetAssociative(8, 4, arena)  # grows (copies) the buffer
    b.access(np.arange(50))
    assert a.contents(0) == [2] and a.contents(1) == [3, 1]
    assert a.access(np.array([1, 2, 3])).all()


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=12))
def test_an_arena_grows_keeping_every_word_and_no_more(sizes):
    """The buffer is the words handed out, each structure from the next host cache line,
    empty when handed out, earlier ones unchanged however the store grows behind it."""
    arena, written, end = Arena(), [], 0
    for k, n in enumerate(sizes):
        offset = arena.allocate(n)
        assert offset == -(-end // LINE_WORDS) * LINE_WORDS and arena.buffer.size == offset + n
        assert (arena.buffer[end:] == arena.empty).all()
        assert arena.buffer.ctypes.data % 64 == 0
        arena.buffer[offset:] = k
        written.append((offset, n, k))
        end = offset + n
    for offset, n, k in written:
        assert (arena.buffer[offset:offset + n] == k).all()


@settings(max_examples=40, deadline=None)
@given(ways=st.integers(1, 40), log_sets=st.integers(0, 6), before=st.integers(0, 100),
       wide=st.booleans())
def test_no_set_spans_more_host_cache_lines_than_its_words_fill(ways, log_sets, before,
                                                               wide):
    """Padded and aligned, 32-bit or (widened after it was built) 64-bit words, a set
    lies in as few host cache lines as its words fill: 12 ways, 48 B, in one."""
    arena = Arena()
    arena.allocate(before)
    c = SetAssociative(2**log_sets, ways, arena)
    if wide:
        arena.fit(2**40)
    size = arena.buffer.itemsize
    for s in range(c.sets):
        first = c.state[s].ctypes.data
        lines = (first + ways * size - 1) // 64 - first // 64 + 1
        assert lines == -(-ways * size // 64)


@pytest.mark.parametrize("args, message", [
    ((3, 2), "the number of sets must be a power of two, got 3"),
    ((2, 0), "ways must be from 1 to 256, got 0"),
    ((1, 257), "ways must be from 1 to 256, got 257"),
])
def test_bad_geometry_is_rejected(args, message):
    with pytest.raises(ValueError, match=message):
        SetAssociative(*args)


def test_keys_out_of_range_are_rejected():
    with pytest.raises(ValueError, match=r"keys must be in \[0, 2\^55\)"):
        SetAssociative(1, 1).access(np.array([-1]))


def test_cache_params_geometry():
    l3 = CacheParams(name="L3", size=16 * 2**20, ways=16, latency_cycles=40, shared_by=4)
    assert l3.sets == 16384 and l3.line == 64
    assert l3.build().sets == 16384
    with pytest.raises(ValidationError, match="power-of-two number of sets"):
        CacheParams(name="L2", size=3 * 2**17, ways=8, latency_cycles=12)
    with pytest.raises(ValidationError, match="line size must be a power of two, got 48 B"):
        CacheParams(name="L1", size=48 * 64, ways=1, line=48, latency_cycles=4)


@settings(max_examples=60, deadline=None)
@given(sets_log2=st.integers(0, 3), ways=st.sampled_from([1, 2, 4, 8]),
       before=st.lists(st.integers(0, 60), max_size=200),
       dropped=st.lists(st.integers(0, 60), max_size=20),
       after=st.lists(st.integers(0, 60), max_size=200))
def test_invalidated_keys_are_gone_as_if_never_filled(sets_log2, ways, before, dropped, after):
    """A TLB shootdown: invalidated keys miss next time, and the set behaves as an LRU
    from which they were removed (the reference drops them from its list)."""
    sets = 1 << sets_log2
    fast, ref = SetAssociative(sets, ways), LruSets(sets, ways)
    fast.access(np.array(before, dtype=np.int64))
    for k in before:
        ref.lookup(k)
    fast.invalidate(np.array(dropped, dtype=np.int64))
    for k in set(dropped):
        ref.sets[k % sets].pop(k, None)
    hits = fast.access(np.array(after, dtype=np.int64))
    assert hits.tolist() == [ref.lookup(k) for k in after]
    for s in range(sets):
        assert fast.contents(s) == list(reversed(ref.sets[s]))


def test_a_set_is_updated_in_a_contiguous_buffer_only():
    """The vector update reads a set's padded words as one block: a strided view of a
    buffer (whose words are not one block) is refused when compiled, not corrupted."""
    from numba.core.errors import TypingError

    from cxlsim.memory import _kernels

    big = np.zeros(64, np.uint32)
    hits = np.zeros(6, np.bool_)
    with pytest.raises(TypingError):
        _kernels.lookup_many(big[::2], np.array([0, 0, 5, 0, 8]), np.arange(6), hits)
    assert not big.any()
