"""CXL.cache flows: latencies are the sum of their stages; every request completes once."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.engine import Simulation, call_later
from cxlsim.link.flits import wire_bytes_per_message
from cxlsim.topology import load_topology
from cxlsim.topology.elaborate import System

from conftest import REPO


TOPOLOGY = load_topology(REPO / "topologies" / "single-expander.yaml")


def _system():
    sim = Simulation()
    return sim, System(sim, TOPOLOGY)


def _one(call, **kw):
    sim, system = _system()
    path = system.cache_path("host0", "cxl0", home_latency=20.0)
    out = []
    getattr(path, call)(lambda t: out.append(t.latency), **kw)
    sim.run()
    return system, out[0]


def _leg(system, kind):
    """Root port + one link traversal carrying one message of ``kind``."""
    link = system.links["rp0", "cxl0"]
    return 64.0 + link.latency + wire_bytes_per_message("68B", kind) * 1e9 / link.params.raw_bandwidth


def test_read_is_request_home_memory_and_data_back():
    system, latency = _one("read")
    memory_slot = 64 / (8 * 4.8e9 * 8) * 1e9  # one line through 8 DDR5-4800 channels
    expected = (_leg(system, "D2H_REQ") + 20.0 + 110.0 + memory_slot +
                _leg(system, "H2D_DATA") + wire_bytes_per_message("68B", "H2D_RSP") * 1e9
                / system.links["rp0", "cxl0"].params.raw_bandwidth)
    assert latency == pytest.approx(expected)


def test_dirty_snoop_costs_the_data_transfer_more_than_a_clean_one():
    system, clean = _one("snoop")
    _, dirty = _one("snoop", dirty=True)
    extra = wire_bytes_per_message("68B", "D2H_DATA") * 1e9 / system.links["rp0", "cxl0"].params.raw_bandwidth
    assert dirty - clean == pytest.approx(extra)
    assert clean == pytest.approx(2 * (system.links["rp0", "cxl0"].latency + 64.0) + 50.0, abs=2.0)


def test_write_takes_three_link_crossings():
    system, write = _one("write")
    _, read = _one("read")
    assert write > read


def test_unknown_opcode_is_rejected():
    sim, system = _system()
    path = system.cache_path("host0", "cxl0")
    with pytest.raises(ValueError, match="'RdFoo' is not one of RdShared"):
        path.read(lambda t: None, op="RdFoo")


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.sampled_from(["read", "write", "snoop", "dirty"]), min_size=1, max_size=60),
       gaps=st.lists(st.floats(0, 50), min_size=60, max_size=60),
       credits=st.integers(1, 8))
def test_every_request_completes_exactly_once(ops, gaps, credits):
    sim, system = _system()
    path = system.cache_path("host0", "cxl0", home_latency=20.0, credits=credits)
    done = []
    unloaded = {op: (_one("snoop", dirty=True) if op == "dirty" else _one(op))[1]
                for op in set(ops)}

    def issue(i):
        op = ops[i]
        record = lambda t, op=op: done.append((t, op, t.latency))  # noqa: E731
        if op == "dirty":
            path.snoop(record, dirty=True)
        else:
            getattr(path, op)(record)

    t = 0.0
    for i, gap in zip(range(len(ops)), gaps):
        t += gap
        call_later(sim.env, t, lambda _, i=i: issue(i))
    sim.run()
    assert len(done) == len(ops) and len({id(d[0]) for d in done}) == len(ops)
    for _, op, latency in done:
        assert latency >= unloaded[op] - 1e-6


def test_a_read_right_after_a_write_back_does_not_wait_for_its_later_data_leg():
    sim, system = _system()
    path = system.cache_path("host0", "cxl0", home_latency=20.0)
    _, unloaded = _one("read")
    out = {}
    path.write(lambda t: out.setdefault("write", t.latency))
    call_later(sim.env, 1.0, lambda _: path.read(lambda t: out.setdefault("read", t.latency)))
    sim.run()
    assert out["read"] < unloaded + 5.0  # at most the write's request ahead of it
