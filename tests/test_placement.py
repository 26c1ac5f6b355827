"""One Placement per footprint: the policies, the kernel and the page table share it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.memory.hierarchy import CoreMemory, CpuParams
from cxlsim.memory.pagetable import PageTable
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.lru import ACTIVE, INACTIVE, NONE
from cxlsim.mm.mempolicy import MemPolicy, PagePlacement
from cxlsim.mm.numa import Numa
from cxlsim.mm.placement import (ANON, DEMOTED, FILE, PROMOTED, SHMEM, Placement,
                                     policy_shares)
from cxlsim.tiered.trace_survey import survey

MiB = 2**20
#: A toy CPU at 1 GHz with small TLBs and caches.
TOY = CpuParams(
    name="toy", cores=1, frequency=1e9, mlp=4, memory_latency=50.0,
    tlbs=[{"name": "DTLB", "latency_cycles": 0, "arrays": [
        {"page_size": 4096, "entries": 4, "ways": 4}]}],
    caches=[{"name": "L1D", "size": 512, "ways": 2, "latency_cycles": 2}])


def dram_cxl(dram: int = 64 * MiB, cxl: int = 64 * MiB) -> Numa:
    return Numa({"nodes": [{"cpus": 8, "memory": dram}, {"memory": cxl}],
                 "distances": [[10, 20], [20, 10]]})


ops = st.lists(st.tuples(st.sampled_from(["alloc", "migrate", "kswapd", "free"]),
                         st.integers(0, 1), st.integers(1, 12000), st.integers(0, 2**31)),
               min_size=1, max_size=12)


@settings(deadline=None, max_examples=40)
@given(first=st.integers(0, 12000), ops=ops, files=st.integers(0, 8000), swap=st.booleans())
def test_kernel_operations_keep_every_page_on_one_node(first, ops, files, swap):
    """Whatever the kernel does (allocate with fallback and reclaim, migrate, demote,
    free), each page is on one node or none: the placement's counts per node are the
    kernel's used pages, exactly the resident pages are on LRU lists, and the flags
    say how a page last moved."""
    n = 12000
    types = np.where(np.arange(n) < files, FILE, ANON)
    placement = Placement(n, page_type=types)
    mem = KernelMemory(dram_cxl(32 * MiB), placement, {"demotion_enabled": True, "swap": swap})
    mem.alloc(np.arange(first), 0)  # DRAM holds 8192 pages: the rest fall back to CXL
    for op, node, k, seed in ops:
        rng = np.random.default_rng(seed)
        resident = np.flatnonzero(placement.node >= 0)
        try:
            if op == "alloc":
                free = np.flatnonzero(placement.node < 0)
                mem.alloc(rng.permutation(free)[:k], node)
            elif op == "migrate":
                pages = resident[placement.node[resident] != node]
                mem.migrate(rng.permutation(pages)[:k], node)
            elif op == "kswapd":
                mem.wake_kswapd(0)
                mem.kswapd()
            elif resident.size:
                mem.free(rng.permutation(resident)[:k])
        except Exception as err:  # OutOfMemoryError: the pages before it stay placed
            assert type(err).__name__ == "OutOfMemoryError"
        counts = placement.counts(n_nodes=2)
        assert counts.tolist() == (mem.capacity - mem.nr_free).tolist()
        assert counts.tolist() == mem.lru_sizes().sum(axis=(1, 2)).tolist()
        assert ((placement.node >= 0) == (mem.lru != NONE)).all()
        assert (placement.page_type == types).all()          # types never change
        assert not (placement.flags[placement.node < 0]).any()
        assert not (placement.flags[placement.node == 0] & DEMOTED).any()  # demoted: to cxl
        assert not (placement.flags[placement.node == 1] & PROMOTED).any()


@settings(deadline=None, max_examples=60)
@given(moves=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), max_size=30),
       window=st.integers(1, 4))
def test_placement_moves_and_pingpongs_match_a_reference(moves, window):
    """Pages move one at a time by epoch; a page going back to the node it last left
    within ``pingpong`` epochs is a ping-pong."""
    p = Placement(3, pingpong=window)
    p.place(np.arange(3), 0)
    node, left, when, bounces = [0, 0, 0], [-1, -1, -1], [0, 0, 0], 0
    for epoch, (page, dest) in enumerate(moves):
        p.epoch = epoch
        if node[page] == dest:
            continue
        p.move(np.array([page]), dest)
        bounces += left[page] == dest and epoch - when[page] <= window
        left[page], when[page], node[page] = node[page], epoch, dest
    assert p.node.tolist() == node and p.left.tolist() == left
    assert p.pingpongs == bounces
    assert p.counts(n_nodes=4).tolist() == np.bincount(node, minlength=4).tolist()


@settings(deadline=None, max_examples=40)
@given(w=st.lists(st.integers(1, 6), min_size=2, max_size=3), rounds=st.integers(1, 20),
       extra=st.integers(0, 500))
def test_first_touch_places_every_page_once_and_interleave_is_policy_shares(w, rounds, extra):
    """A process's pages are on the nodes the machine's free counts lost, and over whole
    rounds weighted interleave places exactly policy_shares of them on each node."""
    numa = Numa({"nodes": [{"cpus": 4, "memory": 64 * MiB}] + [{"memory": 64 * MiB}] * 2})
    nodes = list(range(len(w)))
    proc = PagePlacement(numa, MemPolicy(mode="weighted-interleave", nodes=nodes,
                                         weights=dict(zip(nodes, w))))
    area = proc.mmap(rounds * sum(w))
    heap = proc.mmap(extra + 1, "-p 2")
    proc.touch(area)
    proc.touch(heap)
    counts = proc.placement.counts(n_nodes=3)
    assert counts.tolist() == (numa.capacity - numa.free).tolist()
    assert counts.sum() == proc.placement.n_pages
    assert proc.placement.shares(slice(area.start, area.stop)) == \
        pytest.approx(policy_shares(dict(zip(nodes, w))))
    assert (proc.placement.alloc_epoch == 0).all()


def test_page_table_and_kernel_see_the_same_nodes_after_migrations():
    numa = dram_cxl()
    placement = Placement(256)
    mem = KernelMemory(numa, placement)
    table = PageTable(va_size=256 * 4096, placement=placement)
    table.map(0, table.va_size, node=None)
    table.max_node = 1
    mem.alloc(np.arange(256), 0)
    moved, _ = mem.migrate(np.arange(0, 256, 2), 1)
    assert moved.size == 128
    assert table.nodes is mem.node is placement.node          # one array, no copies
    assert table.translate(4096)[1] == 0 and table.translate(0)[1] == 1
    stats = CoreMemory(TOY, table, [100.0, 200.0]).access(np.arange(256) * 4096)
    assert stats.data[stats.caches:].tolist() == [128, 128]  # each page's line misses once
    with pytest.raises(ValueError, match="placement holds 256 pages"):
        PageTable(va_size=512 * 4096, placement=placement)


def test_a_reclaimed_page_is_on_no_node_for_the_page_table():
    table = PageTable(va_size=4 * 4096, placement=Placement(4))
    table.map(0, 2 * 4096, node=1)
    assert table.nodes.tolist() == [1, 1, -1, -1]
    table.placement.free(np.array([0]))
    with pytest.raises(IndexError, match="no memory node"):
        CoreMemory(TOY, table, [100.0, 100.0]).access(np.array([0]))


def test_page_types_come_from_the_trace():
    addr = np.array([5, 1, 5, 9, 1, 3], np.uint64) << np.uint64(12)
    kinds = np.array([FILE, ANON, ANON, FILE, FILE, ANON], np.uint8)

    def chunks():
        for part in (slice(0, 3), slice(3, 6)):
            yield {"addr": addr[part], "thread": np.zeros(3, np.uint32),
                   "page_type": kinds[part]}

    found = survey(chunks)
    # pages in first-seen order 5, 1, 9, 3; each takes its first record's type
    assert found.page_type.tolist() == [FILE, ANON, FILE, ANON]
    placement = Placement(found.footprint, page_type=found.page_type)
    mem = KernelMemory(dram_cxl(), placement)
    mem.alloc(np.arange(4), 0)
    assert mem.lru_sizes()[0, :, INACTIVE].tolist() == [2, 2]  # anon, file lists
    assert mem.lru_sizes()[0, :, ACTIVE].tolist() == [0, 0]
    with pytest.raises(ValueError, match="page_type must give one of the codes"):
        Placement(2, page_type=np.array([0, 3]))


def test_shmem_pages_keep_their_type_and_live_on_the_anon_lists():
    """tmpfs and shared anonymous pages are swap-backed: the kernel ages and reclaims
    them with anon, while the placement keeps them apart."""
    numa = Numa({"nodes": [{"cpus": 1, "memory": "64 MiB"}]})
    placement = Placement(4, page_type=np.array([ANON, SHMEM, FILE, SHMEM]))
    mem = KernelMemory(numa, placement)
    mem.alloc(np.arange(4), 0)
    assert mem.lru_sizes()[0, :, INACTIVE].tolist() == [3, 1]   # anon list: anon + shmem
    assert placement.page_type.tolist() == [ANON, SHMEM, FILE, SHMEM]


@given(epochs=st.lists(st.lists(st.integers(0, 9), max_size=20), max_size=8))
def test_accesses_and_last_access_epochs(epochs):
    p = Placement(10)
    p.place(np.arange(6), 1)
    p.place(np.arange(6, 8), 0)  # pages 8 and 9 are not resident
    for e, ids in enumerate(epochs):
        p.epoch = e
        per_node = p.access(np.array(ids, np.int64), n_nodes=2)
        distinct = set(ids)
        assert per_node.tolist() == [len(distinct & {6, 7}), len(distinct & set(range(6)))]
    flat = [i for ids in epochs for i in ids]
    assert p.accesses.tolist() == np.bincount(flat, minlength=10).tolist()
    assert p.last_access.tolist() == [max((e for e, ids in enumerate(epochs) if i in ids),
                                          default=-1) for i in range(10)]


def test_access_to_a_page_out_of_range_changes_nothing():
    p = Placement(4)
    with pytest.raises(IndexError, match=r"page ids must be in \[0, 4\), got 4"):
        p.access(np.array([1, 4]), np.array([1, 1]))
    assert not p.accesses.any()
