"""A core's TLB -> walk -> caches -> memory path: the kernel against the plain reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from conftest import REPO
from cxlsim.config import load_document, validate_document
from cxlsim.memory import CoreMemory, CpuParams, PageTable, ReferenceCore, access_cores

GiB = 2**30

#: A toy CPU at 1 GHz (1 cycle = 1 ns), small enough to miss and walk often.
TOY = CpuParams(
    name="toy", cores=4, frequency=1e9, mlp=4, memory_latency=50.0,
    tlbs=[
        {"name": "L1 DTLB", "latency_cycles": 0, "arrays": [
            {"page_size": 4096, "entries": 4, "ways": 4},
            {"page_size": 2**21, "entries": 4, "ways": 4},
            {"page_size": 2**30, "entries": 2, "ways": 2}]},
        {"name": "L2 DTLB", "latency_cycles": 3, "arrays": [
            {"page_size": 4096, "entries": 16, "ways": 4},
            {"page_size": 2**21, "entries": 8, "ways": 2},
            {"page_size": 2**30, "entries": 4, "ways": 4}]}],
    caches=[
        {"name": "L1D", "size": 512, "ways": 2, "latency_cycles": 2},
        {"name": "L2", "size": 2048, "ways": 4, "latency_cycles": 5},
        {"name": "L3", "size": 8192, "ways": 8, "latency_cycles": 11, "shared_by": 4}])


#: TOY with 16-set L1D and L2: the page-table lines' tags fit 32-bit words (TOY's 4-set
#: L1D needs 64-bit ones), so the kernel runs on a ``uint32`` arena.
NARROW = TOY.model_copy(update={"caches": [
    TOY.caches[0].model_copy(update={"size": 2048}),
    TOY.caches[1].model_copy(update={"size": 8192, "ways": 8}),
    TOY.caches[2]]})


def _table(page_size: int, pages: int, nodes: int = 1, shuffled: bool = False) -> PageTable:
    """Pages spread over the nodes round robin, first touched in address or shuffled order."""
    pt = PageTable(page_size, va_base=GiB, va_size=pages * page_size)
    order = np.random.default_rng(pages).permutation(pages) if shuffled else range(pages)
    for p in order:
        pt.map(GiB + int(p) * page_size, page_size, node=int(p) % nodes)
    return pt


def _outcome(stats) -> tuple:
    """(TLB level hit or None, walk references served per level, data served) of one access."""
    hit = np.flatnonzero(stats.tlb_hits)
    return (int(hit[0]) if hit.size else None, stats.walk_refs.tolist(),
            int(np.flatnonzero(stats.data)[0]))


@settings(max_examples=40, deadline=None)
@given(page_size=st.sampled_from([4096, 2**21, 2**30]), nodes=st.integers(1, 3),
       shuffled=st.booleans(), narrow=st.booleans(), data=st.data())
def test_every_access_matches_the_reference(page_size, nodes, shuffled, narrow, data):
    pages = {4096: 64, 2**21: 4, 2**30: 2}[page_size]
    pt = _table(page_size, pages, nodes, shuffled)
    memory_ns = [50.0, 80.0, 130.0][:nodes]
    cpu = NARROW if narrow else TOY
    core, ref = CoreMemory(cpu, pt, memory_ns), ReferenceCore(cpu, pt, memory_ns)
    assert core.arena.buffer.dtype == (np.uint32 if narrow else np.uint64)
    # Hot spots, so that every level both hits and misses.
    spots = data.draw(st.lists(st.integers(0, pages * page_size - 8), min_size=1, max_size=96))
    trace = data.draw(st.lists(st.sampled_from(spots), max_size=300))
    walk_refs = np.zeros(3 + nodes, dtype=int)
    for offset in trace:
        va = GiB + offset
        got, want = core.access(np.array([va])), ref.access(va)
        walk = np.bincount(np.array(want.walk, dtype=int), minlength=3 + nodes)
        assert _outcome(got) == (want.tlb_level, walk.tolist(), want.data)
        assert got.latency_ns == pytest.approx(want.latency_ns, rel=1e-12)
        walk_refs += walk
    # The whole trace as one chunk (where the kernel skips scans of the walk's upper
    # levels it can prove would hit) ends in the same counts and the same cache state.
    whole = CoreMemory(cpu, pt, memory_ns)
    stats = whole.access(GiB + np.array(trace, dtype=np.int64))
    assert stats.walk_refs.tolist() == walk_refs.tolist()
    for mine, theirs in zip(whole.caches, core.caches):
        assert [mine.contents(s) for s in range(mine.sets)] == \
            [theirs.contents(s) for s in range(theirs.sets)]


def test_a_chunk_equals_its_accesses_one_by_one():
    pt = _table(4096, 64)
    addresses = GiB + np.random.default_rng(3).integers(0, 64 * 4096, 2000)
    whole = CoreMemory(TOY, pt).access(addresses)
    single = CoreMemory(TOY, pt)
    parts = [single.access(addresses[i:i + 1]) for i in range(addresses.size)]
    assert whole.accesses == 2000
    assert whole.latency_ns == pytest.approx(sum(p.latency_ns for p in parts))
    assert whole.walks == sum(p.walks for p in parts)
    assert (whole.data == sum(p.data for p in parts)).all()
    assert (whole.walk_refs == sum(p.walk_refs for p in parts)).all()
    assert whole.tlb_hits.sum() + whole.walks == 2000



@settings(max_examples=30, deadline=None)
@given(narrow=st.booleans(), data=st.data())
def test_prefetching_ahead_changes_nothing(narrow, data):
    """The kernel prefetches only for large state (PREFETCH_BYTES); forced on for a toy
    core, a chunk ends in the same counts, latency and cache state as without it."""
    import cxlsim.memory._kernels as kernels

    pt = _table(4096, 64, nodes=2, shuffled=True)
    cpu = NARROW if narrow else TOY
    offsets = data.draw(st.lists(st.integers(0, 64 * 4096 - 8), min_size=40, max_size=400))
    chunk = GiB + np.array(offsets, dtype=np.int64)
    plain = CoreMemory(cpu, pt, [50.0, 80.0]).access(chunk)
    core = CoreMemory(cpu, pt, [50.0, 80.0])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernels, "PREFETCH_BYTES", 0)
        ahead = core.access(chunk)
    again = CoreMemory(cpu, pt, [50.0, 80.0])
    again.access(chunk)
    assert ahead.latency_ns == plain.latency_ns and ahead.walks == plain.walks
    assert (ahead.tlb_hits == plain.tlb_hits).all() and (ahead.data == plain.data).all()
    assert (ahead.walk_refs == plain.walk_refs).all()
    assert (core.arena.buffer == again.arena.buffer).all()

#: Test CPUs for cores run together: a clock whose cycles are not whole nanoseconds (the
#: latency sums then depend on their order); TOY's L2 shared by pairs (two shared
#: levels); nothing shared (each core on its own).
_ODD = {"frequency": 2.7e9}
SPLIT_CPUS = {
    "toy": TOY.model_copy(update=_ODD),
    "narrow": NARROW.model_copy(update=_ODD),
    "shared L2": TOY.model_copy(update={**_ODD, "caches": [
        TOY.caches[0], TOY.caches[1].model_copy(update={"shared_by": 2}), TOY.caches[2]]}),
    "private": TOY.model_copy(update={**_ODD, "caches": [
        *TOY.caches[:2], TOY.caches[2].model_copy(update={"shared_by": 1})]}),
}


@settings(max_examples=40, deadline=None)
@given(cpu=st.sampled_from(sorted(SPLIT_CPUS)), page_size=st.sampled_from([4096, 2**21]),
       nodes=st.integers(1, 3), complexes=st.integers(1, 2), per=st.integers(1, 4),
       threaded=st.booleans(), prefetch=st.booleans(), data=st.data())
def test_cores_run_together_as_one_after_another(cpu, page_size, nodes, complexes, per,
                                                 threaded, prefetch, data):
    """access_cores (private passes, in parallel when ``threaded``, then the shared
    levels in core order) gives every core the counts and latency, to the last bit, and
    the caches the words that running the cores one after another gives."""
    import cxlsim.memory._kernels as kernels
    import cxlsim.memory.cores as cores_module

    cpu = SPLIT_CPUS[cpu]
    limit = min((n for n in cpu.sharing if n > 1), default=1)
    if limit == 1:  # nothing shared: every core on its own
        complexes, per = complexes * per, 1
    per = min(per, limit)
    pages = {4096: 64, 2**21: 4}[page_size]
    pt = _table(page_size, pages, nodes, shuffled=True)
    memory_ns = [50.3, 81.7, 133.1][:nodes]

    def build() -> list[CoreMemory]:
        cores = []
        for _ in range(complexes):
            first = CoreMemory(cpu, pt, memory_ns)
            cores += [first] + [CoreMemory(cpu, pt, memory_ns, complex_of=first)
                                for _ in range(per - 1)]
        return cores

    alone, together = build(), build()
    # the complexes' cores interleaved in some order
    order = data.draw(st.permutations(range(len(alone))))
    spots = data.draw(st.lists(st.integers(0, pages * page_size - 8), min_size=1, max_size=64))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cores_module, "_PARALLEL_ACCESSES", 0 if threaded else 1 << 62)
        mp.setattr(cores_module, "_THREADS", 2 if threaded else 1)
        mp.setattr(kernels, "PREFETCH_BYTES", 0 if prefetch else kernels.PREFETCH_BYTES)
        mp.setattr(kernels, "PREFETCH_BYTES_CORES",
                   0 if prefetch else kernels.PREFETCH_BYTES_CORES)
        for _ in range(data.draw(st.integers(1, 3))):
            chunks = [GiB + np.array(data.draw(st.lists(st.sampled_from(spots), max_size=200)),
                                     dtype=np.int64) for _ in order]
            latency = data.draw(st.sampled_from([None, [x + 7.9 for x in memory_ns]]))
            want = [alone[c].access(chunk, latency) for c, chunk in zip(order, chunks)]
            got = access_cores([together[c] for c in order], chunks, latency)
            for w, g in zip(want, got):
                assert g.accesses == w.accesses and g.latency_ns == w.latency_ns
                assert g.walks == w.walks and (g.tlb_hits == w.tlb_hits).all()
                assert (g.data == w.data).all() and (g.walk_refs == w.walk_refs).all()
            for a, b in zip(alone, together):
                assert a.arena.buffer.dtype == b.arena.buffer.dtype
                assert (a.arena.buffer == b.arena.buffer).all()


def test_cores_run_together_raise_on_an_unmapped_page():
    import cxlsim.memory.cores as cores_module

    pt = PageTable(4096, va_base=GiB, va_size=8 * 4096)
    pt.map(GiB, 4096)
    a = CoreMemory(TOY, pt)
    b = CoreMemory(TOY, pt, complex_of=a)
    good, bad = np.full(5000, GiB), np.full(5000, GiB + 4096)
    for threads in (1, 2):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(cores_module, "_THREADS", threads)
            for chunks in ([good, bad], [bad, good]):
                with pytest.raises(IndexError, match="not mapped"):
                    access_cores([a, b], chunks)
    with pytest.raises(ValueError, match="2 cores but 1 chunks"):
        access_cores([a, b], [good])


@pytest.mark.parametrize("page_size, levels", [(4096, 4), (2**21, 3), (2**30, 2)])
def test_a_cold_access_walks_every_level_through_the_caches(page_size, levels):
    core = CoreMemory(TOY, _table(page_size, 2))
    cold = core.access(np.array([GiB]))
    assert cold.walks == 1 and cold.walk_refs.sum() == levels
    assert cold.walk_refs[3] == levels and cold.memory.tolist() == [1]  # all from memory
    assert cold.latency_ns == 0 + 3 + levels * 50 + 50
    warm = core.access(np.array([GiB + 8]))  # same page and line: L1 TLB and L1D hits
    assert warm.walks == 0 and warm.tlb_hits.tolist() == [1, 0] and warm.data[0] == 1
    assert warm.latency_ns == 2


def test_cores_of_a_complex_share_only_the_shared_caches():
    pt = _table(4096, 4)
    a = CoreMemory(TOY, pt)
    b = CoreMemory(TOY, pt, complex_of=a)
    a.access(np.array([GiB]))
    second = b.access(np.array([GiB]))
    assert second.walks == 1                        # b's TLBs are its own ...
    assert second.data.tolist()[:3] == [0, 0, 1]     # ... but a's line is in the shared L3
    assert b.caches[2] is a.caches[2] and b.caches[0] is not a.caches[0]
    CoreMemory(TOY, pt, complex_of=b)
    CoreMemory(TOY, pt, complex_of=a)
    with pytest.raises(ValueError, match="a complex of toy has at most 4 cores"):
        CoreMemory(TOY, pt, complex_of=a)


def test_memory_nodes_and_their_latencies():
    pt = _table(4096, 2, nodes=2)
    core = CoreMemory(TOY, pt, memory_ns=[50.0, 200.0])
    core.access(np.array([GiB]))
    far = core.access(np.array([GiB + 4096]))      # page 1 lives on node 1
    assert far.memory.tolist() == [0, 1]
    walk_ns = far.walk_refs @ [2, 5, 11, 50, 200]  # served by L1D, L2, L3, node 0, node 1
    assert far.walk_refs.sum() == 4 and far.walk_refs[4] == 0  # page tables on node 0
    assert far.latency_ns == 3 + walk_ns + 200
    assert core.access(np.array([GiB + 4096]), memory_ns=[50.0, 90.0]).latency_ns == 2
    with pytest.raises(ValueError, match="memory_ns must give a non-negative latency"):
        CoreMemory(TOY, pt)


def test_unmapped_access_raises():
    pt = PageTable(4096, va_base=GiB, va_size=8 * 4096)
    pt.map(GiB, 4096)
    core = CoreMemory(TOY, pt)
    for va in (GiB + 4096, GiB - 64, GiB + 8 * 4096):
        with pytest.raises(IndexError, match="not mapped"):
            core.access(np.array([va]))


def test_cpu_params_are_checked():
    data = TOY.model_dump()
    data["caches"][1]["line"] = 128
    with pytest.raises(ValidationError, match="every cache level must have the same line size"):
        CpuParams.model_validate(data)
    data = TOY.model_dump()
    data["cores"] = 6
    with pytest.raises(ValidationError, match="L3 is shared by 4 cores, which does not divide"):
        CpuParams.model_validate(data)


def test_the_epyc_7452_preset(repo):
    cpu = validate_document(CpuParams, load_document(repo / "models/cpus/epyc-7452.yaml"))
    assert [c.name for c in cpu.caches] == ["L1D", "L2", "L3"]
    assert cpu.caches[2].size == 16 * 2**20 and cpu.caches[2].shared_by == "complex"
    assert cpu.cores_per_complex == 4 and cpu.sharing == (1, 1, 4)
    assert cpu.tlbs[1].build(4096).sets * cpu.tlbs[1].build(4096).ways == 2048
    assert cpu.cycles_to_ns(40) == pytest.approx(40 / 3.35)


# --------------------------------------------------------------------------- scaling a CPU

def _preset(name: str, overrides: list[str] = ()) -> CpuParams:
    return validate_document(CpuParams, load_document(REPO / f"models/cpus/{name}.yaml",
                                                      list(overrides)))


@pytest.mark.parametrize("name, cores, sharing", [
    ("epyc-7452", 32, (1, 1, 4)), ("xeon6", 48, (1, 1, 48))])
def test_presets_share_their_l3_as_before(name, cores, sharing):
    """The shipped presets keep the L3 sharing they had as explicit counts."""
    cpu = _preset(name)
    assert cpu.cores == cores and cpu.sharing == sharing


@settings(max_examples=30, deadline=None)
@given(complexes=st.integers(1, 32))
def test_a_preset_scales_by_whole_complexes(complexes):
    """cores may be any multiple of cores_per_complex: the CCX stays four cores; the
    Xeon's socket-wide L3 follows the core count."""
    epyc = _preset("epyc-7452", [f"cores={4 * complexes}"])
    assert epyc.sharing == (1, 1, 4)
    xeon = _preset("xeon6", [f"cores={complexes}"])
    assert xeon.sharing == (1, 1, complexes)


@settings(max_examples=30, deadline=None)
@given(cores=st.integers(1, 200).filter(lambda n: n % 4))
def test_cores_not_a_multiple_of_the_complex_are_refused(cores):
    data = TOY.model_dump()
    data["caches"][2]["shared_by"] = "complex"
    data.update(cores=cores, cores_per_complex=4)
    with pytest.raises(ValidationError) as err:
        CpuParams.model_validate(data)
    assert (f"cores: {cores} is not a multiple of cores_per_complex (4, the cores sharing "
            "one L3); expected a multiple of 4, or set cores_per_complex too") in str(err.value)


def test_cores_per_complex_needs_a_level_shared_by_the_complex():
    data = TOY.model_dump()
    data["cores_per_complex"] = 2
    with pytest.raises(ValidationError) as err:
        CpuParams.model_validate(data)
    assert ("cores_per_complex (2) is set but no cache level has shared_by: complex; expected "
            "shared_by: complex on the level the complex shares (e.g. the L3), or "
            "cores_per_complex: null") in str(err.value)


def test_a_complex_of_a_scaled_preset():
    """A complex of the scaled EPYC still has four cores sharing one L3 instance."""
    cpu = _preset("epyc-7452", ["cores=16"])
    pt = _table(4096, 4)
    a = CoreMemory(cpu, pt)
    others = [CoreMemory(cpu, pt, complex_of=a) for _ in range(3)]
    assert all(o.caches[2] is a.caches[2] and o.caches[1] is not a.caches[1] for o in others)
    with pytest.raises(ValueError, match="a complex of AMD EPYC 7452 has at most 4 cores"):
        CoreMemory(cpu, pt, complex_of=a)
