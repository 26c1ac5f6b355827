"""Mixed CXL.mem streams: a direction carrying reads' and writes' messages together costs
what the packer gives for the mix, the same at the epoch level (compiled) and at the
transaction level, and the ends are the kinds' own streams."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.link.flits import (
    MEM_PAIRS, MIX_STEPS, Msg, _Packer, flit_bytes, mixed_costs, mixed_line_bytes,
    mixed_message_bytes, wire_bytes_per_message,
)
from cxlsim.memory import _latency
from cxlsim.memory.expander import ExpanderTarget
from cxlsim.resources import bundled
from cxlsim.topology import load_topology

MODES = ("68B", "256B", "256B-lopt")
fractions = st.floats(0.0, 1.0, allow_nan=False)


@pytest.mark.parametrize("mode", MODES)
def test_the_ends_are_each_kinds_own_stream(mode):
    assert all(len(table) == MIX_STEPS + 1 for table in mixed_costs(mode).values())
    assert mixed_message_bytes(mode, 0.0) == {k: wire_bytes_per_message(mode, k)
                                              for k in (*MEM_PAIRS["down"], *MEM_PAIRS["up"])}
    assert mixed_message_bytes(mode, 1.0) == {k: wire_bytes_per_message(mode, k)
                                              for k in (*MEM_PAIRS["down"], *MEM_PAIRS["up"])}


def test_a_write_completion_rides_beside_read_data():
    """2:1 read:write, 68B: H3/G4 carry an NDR beside a DRS header, so the up direction
    costs less than the two kinds' own streams added (76.5 B a DRS, 34 B an NDR)."""
    r = 2 / 3
    w = mixed_message_bytes("68B", r)
    mixed = r * w[Msg.S2M_DRS] + (1 - r) * w[Msg.S2M_NDR]
    apart = r * 76.5 + (1 - r) * 34.0
    assert mixed < 0.9 * apart


def _sender(mode, arrivals, flits=4000, warm=500, depth=64):
    """Wire bytes a message of a sender holding ``depth`` messages queued, the i-th to
    arrive being ``arrivals(i)``: measured over a long run after a warm-up, independently
    of the table's cycle closing. Also the share of reads among the messages sent."""
    read_kinds = {read for read, _ in MEM_PAIRS.values()}
    packer = _Packer(mode, [arrivals(0)])
    packer.queues[arrivals(0)].clear()
    arrived = 0

    def refill():
        nonlocal arrived
        while sum(map(len, packer.queues.values())) < depth:
            packer.queues[arrivals(arrived)].append(arrived)
            arrived += 1

    sent = reads = 0
    for n, flit in enumerate(packer.flits(refill), start=1):
        kinds = [kind for slot in flit for kind in slot.messages]
        sent += len(kinds)
        reads += sum(kind in read_kinds for kind in kinds)
        if n == warm:
            start, start_reads = sent, reads
        if n == flits:
            return ((flits - warm) * flit_bytes(mode) / (sent - start),
                    (reads - start_reads) / (sent - start))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [4, 8, 11, 13])
def test_table_agrees_with_random_arrivals(mode, k):
    """The table packs an evenly interleaved stream; a sender whose messages arrive in
    random order at the same mix pays within 7 % (the regular order packs a little
    better where one kind is rare)."""
    for direction, (read, write) in MEM_PAIRS.items():
        rng = random.Random(k)
        seq = [read if rng.random() < k / MIX_STEPS else write for _ in range(60000)]
        measured, share = _sender(mode, seq.__getitem__)
        w = mixed_message_bytes(mode, share)
        expected = share * w[read] + (1 - share) * w[write]
        assert measured == pytest.approx(expected, rel=0.07), direction


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(MODES), r=fractions)
def test_a_line_never_costs_less_than_its_data(mode, r):
    """Whatever the mix, each line's 64 B of data fill at most a flit's payload share."""
    payload = {"68B": 64, "256B": 240, "256B-lopt": 236}[mode]
    w = mixed_message_bytes(mode, r)
    floor = 64 * flit_bytes(mode) / payload
    assert r * w[Msg.S2M_DRS] + (1 - r) * w[Msg.S2M_NDR] >= r * floor - 1e-9
    assert r * w[Msg.M2S_REQ] + (1 - r) * w[Msg.M2S_RWD] >= (1 - r) * floor - 1e-9


@pytest.mark.parametrize("r", [-0.1, 1.5, float("nan")])
def test_a_fraction_outside_zero_one_is_refused(r):
    with pytest.raises(ValueError, match="not in \\[0, 1\\]"):
        mixed_message_bytes("68B", r)


@pytest.fixture(scope="module")
def cz120():
    return ExpanderTarget(load_topology(bundled("topologies") / "cz120.yaml"), "host0", "cz0")


@settings(max_examples=40, deadline=None)
@given(r=fractions)
def test_compiled_level_prices_the_mix_as_the_packer(cz120, r):
    """The epoch level's compiled scale gives each kind mixed_message_bytes' cost."""
    spec = cz120.spec
    down = _latency.EXPANDER_FLOATS + (_latency.DRAM_FLOATS if cz120.dram else 0)
    w = mixed_message_bytes(cz120.flit_mode, r)
    for table, (read, write) in ((down, MEM_PAIRS["down"]),
                                 (down + MIX_STEPS + 1, MEM_PAIRS["up"])):
        scale = _latency.mixed_scale(spec, table, MIX_STEPS, r, cz120.wire[read],
                                     cz120.wire[write])
        assert cz120.wire[read] * scale == pytest.approx(w[read], rel=1e-12)
        assert cz120.wire[write] * scale == pytest.approx(w[write], rel=1e-12)


def test_link_capacity_follows_the_mixed_stream(cz120):
    """The link's bound at 2:1 is its bandwidth over the busier direction's mixed cost,
    and a read-write mix reaches more than the additive pricing allowed."""
    r = 2 / 3
    hop = cz120.hops[0]
    per_line = mixed_line_bytes(cz120.flit_mode, r)
    assert cz120.limits(r)[hop.name] == pytest.approx(
        64e9 / (max(per_line.values()) * hop.ns_per_byte))
    apart = r * cz120.wire["S2M_DRS"] + (1 - r) * cz120.wire["S2M_NDR"]
    assert max(per_line.values()) < apart
    # the queue saturates where the bound says: just below it finite, past it infinite
    cap = cz120.limits(r)[hop.name]
    below = cz120.servers(0.99 * cap * r, 0.99 * cap * (1 - r))
    above = cz120.servers(1.01 * cap * r, 1.01 * cap * (1 - r))
    up = f"{hop.name}.up"
    assert np.isfinite(next(s.wait for s in below if s.name == up))
    assert not np.isfinite(next(s.wait for s in above if s.name == up))


def test_transaction_level_path_charges_the_mix():
    from cxlsim.engine import Simulation
    from cxlsim.topology.elaborate import System

    system = System(Simulation(), load_topology(bundled("topologies") / "cz120.yaml"))
    path = system.mem_path("host0", "cz0", read_fraction=2 / 3)
    w = mixed_message_bytes("68B", 2 / 3)
    _, _, _, _, _, wire, *_ = path.route()
    assert wire == pytest.approx((w[Msg.M2S_REQ], w[Msg.M2S_RWD], w[Msg.S2M_NDR],
                                  w[Msg.S2M_DRS]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [3, 8, 11, 13])
def test_the_cycle_gives_a_long_runs_cost(mode, k):
    """The table's exact cycle against the same sender run for 3500 flits."""
    period = MIX_STEPS // math.gcd(k, MIX_STEPS)
    for direction, (read, write) in MEM_PAIRS.items():
        pattern = tuple(read if (i + 1) * k // MIX_STEPS > i * k // MIX_STEPS else write
                        for i in range(period))
        assert _sender(mode, lambda i: pattern[i % len(pattern)])[0] == pytest.approx(
            mixed_costs(mode)[direction][k], rel=5e-3), direction


def test_module_rows_say_what_binds(quick_validation):
    """T8.5's and T8.6's notes give each limit (the link's up direction at its mixed
    flit cost, the DRAM, the controller's request queue) and name the one that binds."""
    rows = {r["id"]: r for r in quick_validation}
    assert re.search(r"limits, GB/s: rp0-cz0 37\.5, dram \d+\.\d, request buffer 35\.0; the "
                     r"controller's request queue binds: 140 requests in flight",
                     rows["T8.5"]["note"])
    assert re.search(r"request queue binds: 70 requests in flight", rows["T8.6"]["note"])
