"""TLB shootdowns between epochs (``cores.flush_tlbs`` / ``invalidate_pages``) keep the
private passes that ran ahead when they can, and every result stays what cores run one
by one give, to the bit: random sequences of flushes, invalidations, lone accesses and
changed next chunks between calls (issue 26 item 8's run-ahead through shootdowns)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cxlsim.memory.cores as cores_module
from cxlsim.memory import CoreMemory, access_cores
from test_memory_hierarchy import GiB, SPLIT_CPUS, _table

OPS = ("invalidate", "flush", "flush all", "invalidate all", "other chunks", "alone")


@settings(max_examples=100, deadline=None)
@given(cpu=st.sampled_from(["toy", "narrow", "shared L2"]), per=st.integers(2, 4),
       nodes=st.integers(1, 3), data=st.data())
def test_shootdowns_between_calls_change_no_result(cpu, per, nodes, data):
    cpu = SPLIT_CPUS[cpu]
    per = min(per, min(n for n in cpu.sharing if n > 1))
    pt = _table(4096, 64, nodes, shuffled=True)
    memory_ns = [50.3, 81.7, 133.1][:nodes]

    def build():
        first = CoreMemory(cpu, pt, memory_ns)
        return [first] + [CoreMemory(cpu, pt, memory_ns, complex_of=first) for _ in range(per - 1)]

    alone, together = build(), build()
    spots = data.draw(st.lists(st.integers(0, 64 * 4096 - 8), min_size=1, max_size=64))

    def epoch():
        return [GiB + np.array(data.draw(st.lists(st.sampled_from(spots), max_size=300)),
                               dtype=np.int64) for _ in range(per)]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cores_module, "_PARALLEL_ACCESSES", 0)
        mp.setattr(cores_module, "_THREADS", 2)
        current = epoch()
        for _ in range(data.draw(st.integers(1, 8))):
            upcoming = epoch()
            want = [a.access(chunk) for a, chunk in zip(alone, current)]
            got = access_cores(together, current, None, (together, upcoming))
            for w, g in zip(want, got):
                assert g.latency_ns == w.latency_ns and g.walks == w.walks
                assert (g.tlb_hits == w.tlb_hits).all()
                assert (g.data == w.data).all() and (g.walk_refs == w.walk_refs).all()
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
    cpu = SPLIT_CPUS["toy"]
    pt = _table(4096, 8)
    a = CoreMemory(cpu, pt)
    b = CoreMemory(cpu, pt, complex_of=a)
    chunks = [[np.full(5000, GiB + k * 4096) for k in (i, i + 1)] for i in range(6)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cores_module, "_THREADS", 2)
        kept = []
        for i in range(5):
            access_cores([a, b], chunks[i], None, ([a, b], chunks[i + 1]))
            ahead = a.complex.ahead
            cores_module.flush_tlbs([a, b])
            kept.append(a.complex.ahead is ahead and ahead is not None)
        assert kept == [False, False, True, True, True]
