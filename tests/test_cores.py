"""Cores run together with their next chunks' private passes run ahead: the same
statistics and caches, to the bit, as running every core's chunk one after another --
with TLB shootdowns, flushes, other calls and unexpected chunks in between."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cxlsim.memory.cores as cores_module
from cxlsim.memory import CoreMemory, access_cores
from test_memory_hierarchy import GiB, SPLIT_CPUS, _table

BETWEEN = ("nothing", "invalidate", "flush", "other chunks", "alone", "no upcoming")


def _twins(cpu_name: str, per: int, nodes: int, data):
    """Cores per complex (at most what the CPU shares), two identical complexes -- one run
    core by core, one together -- the few addresses drawn (spots) and a drawer of an
    epoch's chunks over them."""
    cpu = SPLIT_CPUS[cpu_name]
    per = min(per, min(n for n in cpu.sharing if n > 1))
    pt = _table(4096, 64, nodes, shuffled=True)
    memory_ns = [50.3, 81.7, 133.1][:nodes]

    def build() -> list[CoreMemory]:
        first = CoreMemory(cpu, pt, memory_ns)
        return [first] + [CoreMemory(cpu, pt, memory_ns, complex_of=first)
                          for _ in range(per - 1)]

    spots = data.draw(st.lists(st.integers(0, 64 * 4096 - 8), min_size=1, max_size=64))

    def epoch() -> list[np.ndarray]:
        return [GiB + np.array(data.draw(st.lists(st.sampled_from(spots), max_size=300)),
                               dtype=np.int64) for _ in range(per)]

    return per, build(), build(), spots, epoch


def _toy_pair() -> tuple[CoreMemory, CoreMemory]:
    """Two toy cores sharing one complex (one L3) over an 8-page table."""
    cpu = SPLIT_CPUS["toy"]
    pt = _table(4096, 8)
    a = CoreMemory(cpu, pt)
    return a, CoreMemory(cpu, pt, complex_of=a)


def _steps() -> list[list[np.ndarray]]:
    """Six calls' chunks for two cores, each call one page further on."""
    return [[np.full(5000, GiB + k * 4096) for k in (i, i + 1)] for i in range(6)]


@contextmanager
def _run_ahead() -> Iterator[None]:
    """Every call runs ahead on a helper thread, whatever the chunk sizes."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cores_module, "_PARALLEL_ACCESSES", 0)
        mp.setattr(cores_module, "_THREADS", 2)
        yield


def _same(want: list, got: list) -> None:
    """The cores' results of a call equal those of the same cores run alone."""
    for w, g in zip(want, got):
        assert g.latency_ns == w.latency_ns and g.walks == w.walks
        assert (g.tlb_hits == w.tlb_hits).all()
        assert (g.data == w.data).all() and (g.walk_refs == w.walk_refs).all()


@settings(max_examples=50, deadline=None)
@given(cpu=st.sampled_from(["toy", "narrow", "shared L2"]), per=st.integers(2, 4),
       nodes=st.integers(1, 3), data=st.data())
def test_running_ahead_changes_nothing(cpu, per, nodes, data):
    per, alone, together, spots, epoch = _twins(cpu, per, nodes, data)

    with _run_ahead():
        current = epoch()
        for _ in range(data.draw(st.integers(1, 5))):
            upcoming = epoch()
            between = data.draw(st.sampled_from(BETWEEN))
            want = [a.access(chunk) for a, chunk in zip(alone, current)]
            got = access_cores(together, current, None,
                               None if between == "no upcoming" else (together, upcoming))
            _same(want, got)
            # what the caller does before the next call, to both sets of cores alike
            vpns = np.array(data.draw(st.lists(st.integers(0, 63), max_size=5))) + GiB // 4096
            c = data.draw(st.integers(0, per - 1))
            if between == "invalidate":
                alone[c].invalidate_pages(vpns)
                together[c].invalidate_pages(vpns)
            elif between == "flush":
                alone[c].flush_tlbs()
                together[c].flush_tlbs()
            elif between == "alone":
                extra = GiB + np.array(spots[:3], dtype=np.int64)
                alone[c].access(extra)
                together[c].access(extra)
            elif between == "other chunks":  # the next call is not what was announced
                upcoming = epoch()
            current = upcoming
        for a, b in zip(alone, together):
            b.complex.cancel()  # nothing runs ahead any more: the states compare
            assert (a.arena.buffer == b.arena.buffer).all()


def test_an_error_ahead_is_raised_by_the_call_that_needs_it():
    """An unmapped page in the announced chunks: the helper stops, the state is put
    back, and the next call raises it itself."""
    a, b = _toy_pair()
    good = np.full(5000, GiB)
    bad = np.full(5000, GiB + 64 * 4096)  # past the mapped region
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cores_module, "_THREADS", 2)
        access_cores([a, b], [good, good], None, ([a, b], [good, bad]))
        with pytest.raises(IndexError, match="not mapped"):
            access_cores([a, b], [good, bad])
        assert a.complex.ahead is None


def test_ctrl_c_or_a_stop_in_a_pass_the_caller_runs_itself_ends_the_run():
    """Not an error of the passes run ahead (which the call would undo and run again):
    a KeyboardInterrupt or a stop signal's SystemExit goes on up."""
    class Record:
        cores = [None, None]

        def run(self, first: int, stop: int) -> None:
            raise KeyboardInterrupt

    ahead = object.__new__(cores_module.Lookahead)  # the helper has claimed no core yet
    ahead.record, ahead.error, ahead._lock, ahead._next, ahead._stop = (
        Record(), None, threading.Lock(), 0, False)
    ahead._job = Future()
    ahead._job.set_result(None)
    with pytest.raises(KeyboardInterrupt):
        ahead.finish()


def test_a_page_on_no_node_is_an_error_in_the_shared_pass():
    cpu = SPLIT_CPUS["toy"]
    pt = _table(4096, 8)
    pt.placement.node[3] = -1  # reclaimed
    a = CoreMemory(cpu, pt)
    b = CoreMemory(cpu, pt, complex_of=a)
    with pytest.raises(IndexError, match="no memory node"):
        access_cores([a, b], [np.full(10, GiB), np.full(10, GiB + 3 * 4096)])


def test_a_caller_that_keeps_undoing_is_run_ahead_for_less_often():
    """Each undo doubles the calls that do not run ahead (1, 2, ... up to 16); a
    record taken resets it."""
    a, b = _toy_pair()
    chunks = _steps()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cores_module, "_THREADS", 2)
        ran_ahead = []
        for i in range(5):
            access_cores([a, b], chunks[i], None, ([a, b], chunks[i + 1]))
            ran_ahead.append(a.complex.ahead is not None)
            a.invalidate_pages(np.array([GiB // 4096]))  # a shootdown between calls
        assert ran_ahead == [True, False, True, False, False]
        assert (a.complex.backoff, a.complex.skip) == (2, 0)
        access_cores([a, b], chunks[0], None, ([a, b], chunks[0]))  # runs ahead
        access_cores([a, b], chunks[0], None, ([a, b], chunks[0]))  # taken
        assert a.complex.backoff == 0 and a.complex.ahead is not None


def test_a_pool_worker_runs_on_its_share_of_the_cpus(monkeypatch):
    """CXLSIM_THREADS (set by validate's and sweeps' workers) caps the host threads:
    at one, nothing runs ahead and the private passes stay on the caller's thread."""
    a, b = _toy_pair()
    chunks = [np.full(5000, GiB), np.full(5000, GiB + 4096)]
    monkeypatch.setattr(cores_module, "_THREADS", 2)
    monkeypatch.setenv(cores_module.THREADS_ENV, "1")
    access_cores([a, b], chunks, None, ([a, b], chunks))
    assert a.complex.ahead is None
    monkeypatch.setenv(cores_module.THREADS_ENV, "2")
    access_cores([a, b], chunks, None, ([a, b], chunks))
    assert a.complex.ahead is not None


def test_a_pool_worker_gets_an_even_share(monkeypatch):
    from cxlsim.experiments import sweep

    monkeypatch.setenv(cores_module.THREADS_ENV, "")  # restored after the test
    monkeypatch.setattr(sweep, "_exit_with_parent", lambda parent: None)
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 8)
    sweep._start_worker(1, 3)
    assert cores_module._threads() == min(2, cores_module._THREADS)


def test_node_latencies_for_more_nodes_than_the_cores_were_built_with():
    """A call may give latencies for more nodes than the cores' own: the counts have a
    column per node given, as one core's access does."""
    a, b = _toy_pair()
    alone = CoreMemory(SPLIT_CPUS["toy"], a.page_table)
    chunk = GiB + np.arange(0, 8 * 4096, 64)
    got = access_cores([a, b], [chunk, chunk], [90.0, 140.0, 200.0])
    want = alone.access(chunk, [90.0, 140.0, 200.0])
    assert got[0].data.tolist() == want.data.tolist() and got[0].data.size == 3 + 3


# --- shootdowns through cores.flush_tlbs / invalidate_pages between calls ---------

OPS = ("invalidate", "flush", "flush all", "invalidate all", "other chunks", "alone")


@settings(max_examples=100, deadline=None)
@given(cpu=st.sampled_from(["toy", "narrow", "shared L2"]), per=st.integers(2, 4),
       nodes=st.integers(1, 3), data=st.data())
def test_shootdowns_between_calls_change_no_result(cpu, per, nodes, data):
    per, alone, together, spots, epoch = _twins(cpu, per, nodes, data)

    with _run_ahead():
        current = epoch()
        for _ in range(data.draw(st.integers(1, 8))):
            upcoming = epoch()
            want = [a.access(chunk) for a, chunk in zip(alone, current)]
            got = access_cores(together, current, None, (together, upcoming))
            _same(want, got)
            for op in data.draw(st.lists(st.sampled_from(OPS), max_size=4)):
                vpns = np.array(data.draw(st.lists(st.integers(0, 80), max_size=5)),
                                dtype=np.int64) + GiB // 4096
                c = data.draw(st.integers(0, per - 1))
                if op == "invalidate":
                    alone[c].invalidate_pages(vpns)
                    cores_module.invalidate_pages([together[c]], vpns)
                elif op == "invalidate all":
                    for a in alone:
                        a.invalidate_pages(vpns)
                    cores_module.invalidate_pages(together, vpns)
                elif op == "flush":
                    alone[c].flush_tlbs()
                    cores_module.flush_tlbs([together[c]])
                elif op == "flush all":
                    for a in alone:
                        a.flush_tlbs()
                    cores_module.flush_tlbs(together)
                elif op == "alone":
                    extra = GiB + np.array(spots[:3], dtype=np.int64)
                    alone[c].access(extra)
                    together[c].access(extra)
                elif op == "other chunks":
                    upcoming = epoch()
            current = upcoming
        for a, b in zip(alone, together):
            b.complex.cancel()
            assert (a.arena.buffer == b.arena.buffer).all()


def test_kept_when_a_flush_came():
    a, b = _toy_pair()
    chunks = _steps()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cores_module, "_THREADS", 2)
        kept = []
        for i in range(5):
            access_cores([a, b], chunks[i], None, ([a, b], chunks[i + 1]))
            ahead = a.complex.ahead
            cores_module.flush_tlbs([a, b])
            kept.append(a.complex.ahead is ahead and ahead is not None)
        assert kept == [False, False, True, True, True]
