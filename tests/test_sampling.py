"""Spatial sampling: which pages are kept, the scaled core, and how far its estimates
land from the exact run (the error the docs report)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.config import load_document, validate_document
from cxlsim.errors import InputError
from cxlsim.memory import CoreMemory, CpuParams, PageTable
from cxlsim.memory.sampling import kept_pages, scaled_cpu
from cxlsim.mm.migrate import MigrationParams, Migrator
from cxlsim.traces.generators.zipf import ScrambledZipfian
from conftest import REPO

XEON6 = validate_document(CpuParams, load_document(REPO / "models/cpus/xeon6.yaml"))


def test_the_scaled_core_has_a_kth_of_every_structure():
    cpu = scaled_cpu(XEON6, 4)
    dtlb, stlb = (t.arrays[0] for t in cpu.tlbs)
    assert (dtlb.entries, dtlb.ways, stlb.entries, stlb.ways) == (24, 6, 512, 16)
    assert [t.arrays[0].page_size for t in cpu.tlbs] == [4096, 4096]  # its page size only
    assert [(c.sets, c.ways) for c in cpu.caches] == [(16, 12), (512, 16), (65536, 12)]
    assert [c.latency_cycles for c in cpu.caches] == [c.latency_cycles for c in XEON6.caches]
    one_set = scaled_cpu(XEON6, 32).tlbs[0].arrays[0]  # 16 sets of 6: one set of 3
    assert (one_set.entries, one_set.ways) == (3, 3)
    assert scaled_cpu(XEON6, 1) is XEON6


@pytest.mark.parametrize("k, message", [
    (3, "the sampling factor must be a power of two (1, 2, 4, ...), got 3"),
    (64, "L1 DTLB has 96 entries, which a sampling factor of 64 does not divide"),
])
def test_a_factor_that_does_not_fit_is_refused(k, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        scaled_cpu(XEON6, k)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 3000), k=st.sampled_from([1, 2, 4, 8]), seed=st.integers(0, 9),
       stratified=st.booleans())
def test_kept_pages_are_renumbered_in_order(n, k, seed, stratified):
    counts = np.random.default_rng(seed).zipf(1.5, n) if stratified else None
    rank = kept_pages(n, k, seed, counts)
    kept = rank[rank >= 0]
    assert kept.tolist() == list(range(kept.size))  # dense, in page order
    if stratified:  # one page of each k consecutive ones by accesses (a last, partial
        order = np.argsort(-counts, kind="stable")  # group of r: with probability r / k)
        groups = np.arange(n) // k
        per_group = np.bincount(groups[rank[order] >= 0], minlength=-(-n // k))
        assert per_group[:n // k].tolist() == [1] * (n // k) and per_group[n // k:].max(
            initial=0) <= 1
    elif n >= 1000:
        assert abs(kept.size - n / k) < 5 * np.sqrt(n / k)
    assert np.array_equal(rank, kept_pages(n, k, seed, counts))  # the seed decides


def test_seeds_draw_different_samples():
    assert not np.array_equal(kept_pages(4096, 4, 1), kept_pages(4096, 4, 2))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sampled_core_estimates_the_exact_one(seed):
    """A zipfian over 64 MiB: eight times fewer pages on a core eight times smaller
    estimate the latency, walks and memory references within 2 %."""
    rng = np.random.default_rng(seed)
    pages = ScrambledZipfian(16384, 0.99).draw(rng.random(600_000))
    vaddrs = (pages.astype(np.int64) << 12) | (rng.integers(0, 64, pages.size) << 6)
    table = PageTable(4096, 0, 64 << 20)
    table.map(0, table.va_size)
    exact = CoreMemory(XEON6, table).access(vaddrs)
    rank = kept_pages(16384, 8, seed, np.bincount(pages, minlength=16384))
    small = PageTable(4096, 0, (int(rank.max()) + 1) * 4096)
    small.map(0, small.va_size)
    keep = rank[pages] >= 0
    est = CoreMemory(scaled_cpu(XEON6, 8), small).access(
        rank[pages[keep]] << 12 | (vaddrs[keep] & 4095))
    assert est.accesses < exact.accesses / 4
    for got, want in ((est.latency_ns, exact.latency_ns), (est.walks, exact.walks),
                      (est.memory.sum(), exact.memory.sum())):
        assert got * 8 == pytest.approx(want, rel=0.02)


def test_a_shootdown_reaches_only_the_kept_pages():
    table = PageTable(4096, 0, 64 * 4096)
    table.map(0, table.va_size)
    core = CoreMemory(XEON6, table)
    core.access(np.arange(8) << 12)
    vpns = np.array([-1, 0, -1, 1] + [-1] * 60)  # pages 1 and 3 are the core's 0 and 1
    Migrator(MigrationParams(), [core], np.random.default_rng(), vpns).shootdown(
        np.array([1, 2, 3]))
    walks = core.access(np.arange(8) << 12).walks
    assert walks == 2  # the core's pages 0 and 1 left its TLBs, the others stayed


def _trace_memory(tmp_path, *overrides):
    from cxlsim.experiments import load_experiment
    path = tmp_path / "tm.yaml"
    path.write_text("""name: tm
kind: trace-memory
topology: selectel-xeon6-cxl
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0, cxl1]}
trace: {generate: zipfian, n: 400000, params: {footprint: 256MiB, threads: 2, scrambled: true}}
epoch: 25000
mempolicy: --interleave=0,1
""")
    return load_experiment(path, list(overrides)).run()


def test_a_sampled_trace_run_estimates_the_exact_one(tmp_path):
    """One page in four through cores a quarter the size, three samples: application
    time within 3 %, each node's memory references within 2 % (measured: at most 1.2 %
    and 0.7 %)."""
    exact = _trace_memory(tmp_path)
    refs = exact.tables["nodes"]["memory_refs"].to_numpy()
    for seed in (1, 2, 3):
        run = _trace_memory(tmp_path, "sample=4", f"seed={seed}")
        assert run.metrics["sample"] == 4 and run.metrics["accesses"] == 400_000
        assert run.metrics["app_time_s"] == pytest.approx(exact.metrics["app_time_s"],
                                                          rel=0.03)
        assert run.tables["nodes"]["memory_refs"].to_numpy() == pytest.approx(refs, rel=0.02)


@pytest.mark.parametrize("value, message", [
    ("3", "sample: the sampling factor must be a power of two (1, 2, 4, ...), got 3"),
    ("64", "L1 DTLB has 96 entries, which a sampling factor of 64 does not divide"),
    ("0", "sample: expected greater than or equal to 1; found 0"),
    ("32", "sample: 1 page in 32 keeps about 1,999 of the trace's 63,995 pages; a sample "
           "needs at least 4,096"),
])
def test_a_bad_sampling_factor_is_named(tmp_path, value, message):
    with pytest.raises(InputError) as info:
        _trace_memory(tmp_path, f"sample={value}")
    assert message in str(info.value)
