"""Bias coherence: the table, device accesses by bias, flips, host accesses; costs are
the sums of their message legs, and every access completes once."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.coherence import PAGE_BYTES, Bias, BiasTable
from cxlsim.coherence.biased import spread
from cxlsim.engine import Simulation, call_later
from cxlsim.link.flits import wire_bytes_per_message
from cxlsim.topology import load_topology
from cxlsim.topology.elaborate import System

from conftest import REPO

TOPOLOGY = load_topology(REPO / "topologies" / "type2-accelerator.yaml")
COHERENCE = 90.0


def _memory(pages=4, bias=Bias.HOST, **kw):
    sim = Simulation()
    system = System(sim, TOPOLOGY)
    kw.setdefault("coherence_latency", COHERENCE)
    memory = system.biased_memory("host0", "acc0", BiasTable(pages * PAGE_BYTES, bias=bias), **kw)
    return sim, system, memory


def _elapsed(sim, op, *args, **kw):
    out = []
    op(*args, out.append, **kw)
    sim.run()
    assert len(out) == 1
    return out[0]


def _leg(kind):
    """One crossing of the x16 link by one message of ``kind``."""
    link = System(Simulation(), TOPOLOGY).links["rp0", "acc0"]
    return link.latency + wire_bytes_per_message("68B", kind) * 1e9 / link.params.raw_bandwidth


ROOT_PORT = TOPOLOGY.graph.nodes["rp0"]["latency"]
ACC = TOPOLOGY.graph.nodes["acc0"]["spec"]


def _media(size=64):
    return ACC.controller_latency + ACC.media_latency + size * 1e9 / ACC.media_bandwidth


#: D2H Req up, the host's coherence resolution, back down to the device's port.
RESOLVE = _leg("D2H_REQ") + ROOT_PORT + COHERENCE + ROOT_PORT
#: M2S RwD MemWr down, the device's write, S2M NDR Cmp up, to the host's egress.
WRITEBACK = _leg("M2S_RWD") + _media() + _leg("S2M_NDR") + 2 * ROOT_PORT


# ------------------------------------------------------------------------- the table

def test_table_starts_in_the_given_bias_and_counts_pages():
    table = BiasTable(8 * PAGE_BYTES, base=1 << 30)
    assert table.pages == 8 and table.count(Bias.HOST) == 8 and table.count(Bias.DEVICE) == 0
    assert table.bias_of((1 << 30) + 5000) is Bias.HOST
    assert BiasTable(PAGE_BYTES, bias=Bias.DEVICE).count(Bias.DEVICE) == 1


def test_set_range_flips_every_page_it_touches():
    table = BiasTable(8 * PAGE_BYTES)
    table.set_range(PAGE_BYTES - 64, 128, Bias.DEVICE)  # straddles pages 0 and 1
    assert table.device.tolist() == [True, True] + [False] * 6
    assert table.bias_of(0) is Bias.DEVICE and table.bias_of(2 * PAGE_BYTES) is Bias.HOST
    table.set_range(0, PAGE_BYTES, Bias.HOST)
    assert table.count(Bias.DEVICE) == 1
    assert table.device.dtype == np.bool_


@pytest.mark.parametrize("args", [(PAGE_BYTES + 1,), (PAGE_BYTES, 64), (0,)])
def test_table_covers_whole_pages(args):
    with pytest.raises(ValueError, match="whole 4096 B pages"):
        BiasTable(*args)


def test_addresses_outside_the_table_are_rejected():
    table = BiasTable(PAGE_BYTES, base=PAGE_BYTES)
    with pytest.raises(ValueError, match="not inside"):
        table.bias_of(0)
    with pytest.raises(ValueError, match="not inside"):
        table.set_range(PAGE_BYTES, PAGE_BYTES + 1, Bias.DEVICE)


@given(n=st.integers(0, 300), fraction=st.floats(0, 1))
def test_spread_selects_the_fraction_evenly(n, fraction):
    chosen = spread(n, fraction)
    assert chosen.sum() == int(np.floor(n * fraction))
    gaps = np.diff(np.flatnonzero(chosen))
    assert len(gaps) == 0 or gaps.max() - gaps.min() <= 1


# ------------------------------------------------------------------ device accesses

def test_device_bias_access_is_local_only():
    sim, system, memory = _memory(bias=Bias.DEVICE)
    latency = _elapsed(sim, memory.access, 0, 64)
    assert latency == pytest.approx(_media())
    assert all(sum(d.sent_bytes) == 0 for d in system.links.values())


def test_host_bias_read_is_request_resolution_forward_and_local_access():
    sim, system, memory = _memory()
    latency = _elapsed(sim, memory.access, 0, 64)
    assert latency == pytest.approx(RESOLVE + _leg("M2S_REQ") + _media())
    assert latency > _media()
    up, down = system.links["acc0", "rp0"], system.links["rp0", "acc0"]
    assert sum(up.sent_bytes) == pytest.approx(wire_bytes_per_message("68B", "D2H_REQ"))
    assert sum(down.sent_bytes) == pytest.approx(wire_bytes_per_message("68B", "M2S_REQ"))


def test_host_bias_write_costs_what_a_read_does():
    sim, _, memory = _memory()
    assert _elapsed(sim, memory.access, 0, 64, write=True) == pytest.approx(
        RESOLVE + _leg("M2S_REQ") + _media())


def test_a_line_the_host_modified_is_written_back_first_and_only_once():
    sim, _, memory = _memory()
    memory.host_wrote(0, 64, 1.0)
    first = _elapsed(sim, memory.access, 0, 64)
    assert first == pytest.approx(RESOLVE + WRITEBACK + _leg("M2S_REQ") + _media())
    assert not memory.host_dirty.any()
    again = []
    memory.access(0, 64, again.append)
    sim.run()
    assert again[0] == pytest.approx(RESOLVE + _leg("M2S_REQ") + _media())


def test_the_host_cannot_hold_lines_of_a_device_bias_page():
    _, _, memory = _memory(bias=Bias.DEVICE)
    with pytest.raises(ValueError, match="flip it first"):
        memory.host_wrote(0, 64, 0.5)


# ------------------------------------------------------------------------ bias flips

def test_serial_clean_flip_is_64_resolutions():
    sim, system, memory = _memory(pages=1)
    elapsed = _elapsed(sim, memory.flip_to_device, 0, PAGE_BYTES, mlp=1)
    assert elapsed == pytest.approx(64 * (RESOLVE + _leg("M2S_REQ")))
    assert memory.table.count(Bias.DEVICE) == 1


def test_flip_with_a_full_window_costs_about_one_round_trip():
    sim, _, memory = _memory(pages=1)
    parallel = _elapsed(sim, memory.flip_to_device, 0, PAGE_BYTES, mlp=64)
    one_line = RESOLVE + _leg("M2S_REQ")
    assert one_line < parallel < 1.5 * one_line


def test_flip_writes_back_what_the_host_modified_and_clears_it():
    sim, _, memory = _memory(pages=1)
    memory.host_wrote(0, PAGE_BYTES, 1.0)
    elapsed = _elapsed(sim, memory.flip_to_device, 0, PAGE_BYTES, mlp=1)
    assert elapsed == pytest.approx(64 * (RESOLVE + WRITEBACK + _leg("M2S_REQ")))
    assert not memory.host_dirty.any()


def test_flip_setup_is_added_once():
    sim, _, memory = _memory(pages=2, flip_setup=2000.0)
    sim0, _, memory0 = _memory(pages=2)
    assert _elapsed(sim, memory.flip_to_device, 0, 2 * PAGE_BYTES, mlp=8) == pytest.approx(
        2000.0 + _elapsed(sim0, memory0.flip_to_device, 0, 2 * PAGE_BYTES, mlp=8))


def test_flip_back_to_host_only_flushes_the_device_cache_locally():
    sim, system, memory = _memory(pages=2, bias=Bias.DEVICE, device_dirty_fraction=0.25)
    elapsed = _elapsed(sim, memory.flip_to_host, 0, 2 * PAGE_BYTES, mlp=1)
    assert elapsed == pytest.approx(2 * 16 * _media())
    assert memory.table.count(Bias.HOST) == 2
    assert all(sum(d.sent_bytes) == 0 for d in system.links.values())
    sim, _, clean = _memory(pages=2, bias=Bias.DEVICE)
    assert _elapsed(sim, clean.flip_to_host, 0, 2 * PAGE_BYTES) == 0.0


def test_flipping_a_page_already_in_that_bias_costs_nothing():
    sim, system, memory = _memory(pages=1, bias=Bias.DEVICE)
    assert _elapsed(sim, memory.flip_to_device, 0, PAGE_BYTES, mlp=4) == 0.0
    assert all(sum(d.sent_bytes) == 0 for d in system.links.values())


def test_flips_cover_whole_pages():
    _, _, memory = _memory()
    with pytest.raises(ValueError, match="whole 4096 B pages"):
        memory.flip_to_device(64, PAGE_BYTES, lambda _: None)


def _flip_time(pages, dirty, mlp, burst=1):
    sim, _, memory = _memory(pages=pages, burst=burst)
    memory.host_wrote(0, pages * PAGE_BYTES, dirty)
    return _elapsed(sim, memory.flip_to_device, 0, pages * PAGE_BYTES, mlp=mlp)


@settings(max_examples=25, deadline=None)
@given(pages=st.integers(1, 3), dirty=st.tuples(st.floats(0, 1), st.floats(0, 1)),
       mlp=st.tuples(st.integers(1, 64), st.integers(1, 64)))
def test_flip_cost_grows_with_dirty_fraction_and_shrinks_with_mlp(pages, dirty, mlp):
    # Exact, line-by-line mode. Batched bursts (burst > 1) regroup clean and dirty lines
    # and can break this ordering by up to ~11 % when the MLP is small against the
    # burst (a random search); the bias experiment reports that error as burst_error.
    lo, hi = sorted(dirty)
    few, many = sorted(mlp)
    assert _flip_time(pages, lo, few, 1) <= _flip_time(pages, hi, few, 1) + 1e-6
    assert _flip_time(pages, hi, many, 1) <= _flip_time(pages, hi, few, 1) + 1e-6


# ------------------------------------------------------------------ host accesses

def test_host_access_to_a_device_bias_page_flips_it_first():
    sim, system, memory = _memory(pages=2, device_dirty_fraction=0.5)
    memory.table.set_range(0, PAGE_BYTES, Bias.DEVICE)
    path = system.mem_path("host0", "acc0")
    out = []
    memory.host_access(path, 64, lambda t: out.append(t))
    sim.run()
    flipped = out[0].completed  # issued at time 0
    assert memory.table.count(Bias.DEVICE) == 0
    memory.host_access(path, PAGE_BYTES, lambda t: out.append(t))
    sim.run()
    direct = out[1].latency
    assert flipped > direct  # the flush of the device's cached lines came first
    assert direct == pytest.approx(ROOT_PORT + _leg("M2S_REQ") + _media() + _leg("S2M_DRS")
                                   + ROOT_PORT)


# --------------------------------------------------------------------- batching

@pytest.mark.parametrize("burst", [2, 4, 8])
def test_burst_error_is_within_its_bound(burst):
    size = 64 * PAGE_BYTES

    def run(k):
        sim, _, memory = _memory(pages=64, burst=k)
        return _elapsed(sim, memory.access, 0, size, mlp=64)

    line = RESOLVE + _leg("M2S_REQ") + _media()
    link = System(Simulation(), TOPOLOGY).links["rp0", "acc0"]
    services = (wire_bytes_per_message("68B", "D2H_REQ") + wire_bytes_per_message(
        "68B", "M2S_REQ")) * 1e9 / link.params.raw_bandwidth + _media() - _media(0)
    exact, batched = run(1), run(burst)
    assert exact <= batched <= exact * (1 + (burst - 1) * services / line)


def test_burst_is_at_most_a_page():
    with pytest.raises(ValueError, match="a burst is 1 to 64 lines"):
        _memory(burst=65)


# ------------------------------------------------------------- completion, once

@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["access", "to_device", "to_host", "wrote"]),
                              st.integers(0, 3), st.integers(1, 4), st.integers(1, 16),
                              st.floats(0, 400)), min_size=1, max_size=25),
       burst=st.sampled_from([1, 2, 8]), biased=st.lists(st.booleans(), min_size=4, max_size=4))
def test_every_operation_completes_exactly_once(ops, burst, biased):
    sim, _, memory = _memory(pages=4, burst=burst, device_dirty_fraction=0.3)
    memory.table.device[:] = biased
    done, expected_lines = [], 0

    def issue(event):
        kind, page, pages, mlp, _ = ops[event.payload]
        pages = min(pages, 4 - page)
        addr, size = page * PAGE_BYTES, pages * PAGE_BYTES
        record = lambda elapsed, i=event.payload: done.append(i)  # noqa: E731
        if kind == "access":
            memory.access(addr + 64, size - 64, record, mlp=mlp)
        elif kind == "to_device":
            memory.flip_to_device(addr, size, record, mlp=mlp)
        elif kind == "to_host":
            memory.flip_to_host(addr, size, record, mlp=mlp)
        elif not memory.table.device[page:page + pages].any():
            memory.host_wrote(addr, size, 0.5)
            done.append(event.payload)
        else:
            done.append(event.payload)

    for i, op in enumerate(ops):
        call_later(sim.env, op[4], issue, i)
    sim.run()
    assert sorted(done) == list(range(len(ops)))


def test_every_line_is_one_transaction_without_bursts():
    sim, _, memory = _memory(pages=4)
    memory.table.set_range(0, 2 * PAGE_BYTES, Bias.DEVICE)
    memory.host_wrote(2 * PAGE_BYTES, 2 * PAGE_BYTES, 0.5)
    out = []
    memory.access(100, 4 * PAGE_BYTES - 200, out.append, mlp=7)
    sim.run()
    assert len(out) == 1 and memory.completed == (4 * PAGE_BYTES - 101) // 64 - 100 // 64 + 1


def test_only_a_type_2_device_has_biased_memory():
    system = System(Simulation(), load_topology(REPO / "topologies" / "single-expander.yaml"))
    with pytest.raises(ValueError, match="not a CXL Type 2 device"):
        system.biased_memory("host0", "cxl0", BiasTable(PAGE_BYTES))
