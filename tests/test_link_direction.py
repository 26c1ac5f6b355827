"""One link direction: ARB/MUX weighted round robin, capacity, FIFO, reserve vs send,
CRC replays and the retry-buffer cap (cxlsim.link.direction)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cxlsim.analytic.queues import lindley
from cxlsim.engine import Simulation, call_later
from cxlsim.link.direction import CACHEMEM, IO, RETRY_SEQUENCE_FLITS, LinkDirection
from cxlsim.link.params import LinkParams

FLIT = 68
#: CXL on a PCIe 5.0 x16 PHY: 32 GT/s x 16 lanes, 128b/130b, per direction (B/s).
RAW = 32e9 * 16 * 128 / 130 / 8
NS_PER_BYTE = 1e9 / RAW
EPS = 1e-9


def link(monitor: bool = False, seed: int = 0, **params) -> tuple[Simulation, LinkDirection]:
    """A fresh run with one x16 32 GT/s CXL direction (no retry-buffer cap unless asked),
    named by its rate, so both stacks move bytes at the raw rate (named by generation,
    CXL.io would get the PHY's TLP rate)."""
    sim = Simulation(seed)
    p = LinkParams(rate="32 GT/s", width=16, **{"retry_buffer": 0, **params})
    return sim, LinkDirection(sim, "link", p, monitor=monitor)


def backlog(sim: Simulation, d: LinkDirection, stack: int, sizes, log: list | None = None) -> None:
    """Queue ``sizes`` on ``stack`` now; record ``(delivery time, stack, bytes)`` in ``log``."""
    for size in sizes:
        d.send(stack, size, (lambda s: log.append((sim.now, stack, s))) if log is not None
               else (lambda _: None), size)


def schedule(sim: Simulation, d: LinkDirection, messages, log: list) -> None:
    """Send ``(time, stack, bytes)`` messages at their times (ties in list order); log
    ``(index, delivery time)``."""
    for k, (t, stack, size) in enumerate(messages):
        call_later(sim.env, t, lambda _, k=k, stack=stack, size=size: d.send(
            stack, size, lambda i: log.append((i, sim.now)), k))


# --- ARB/MUX ---------------------------------------------------------------------------

@pytest.mark.parametrize("w_io, w_cm", [(3, 1), (1, 3), (1, 1), (2, 5), (15, 1)])
def test_saturated_stacks_split_bytes_by_weight(w_io, w_cm):
    """Both stacks backlogged: delivered bytes follow weight_io : weight_cachemem (±2 %)."""
    sim, d = link(weight_io=w_io, weight_cachemem=w_cm)
    rng = np.random.default_rng(1)
    n = 6000
    io_sizes = rng.choice([FLIT, 2 * FLIT, 3 * FLIT], n).astype(float)
    cm_sizes = np.full(n, 76.5)  # S2M DRS wire bytes: not a flit multiple
    backlog(sim, d, IO, io_sizes)
    backlog(sim, d, CACHEMEM, cm_sizes)
    share = w_io / (w_io + w_cm)
    # stop well before either stack, served at its share, runs out of messages
    horizon = 0.9 * min(io_sizes.sum() / share, cm_sizes.sum() / (1 - share)) * NS_PER_BYTE
    sim.run(until=horizon)
    io, cm = d.sent_bytes
    assert io / cm == pytest.approx(w_io / w_cm, rel=0.02)
    assert d.busy_ns >= horizon - 3 * FLIT * NS_PER_BYTE  # never idle while backlogged


def test_idle_stack_leaves_the_whole_link():
    """Only IO traffic, CACHEMEM weighted 15: IO still gets the full link."""
    sim, d = link(weight_io=1, weight_cachemem=15)
    n = 2000
    log: list = []
    backlog(sim, d, IO, [FLIT] * n, log)
    sim.run()
    assert log[-1][0] == pytest.approx(n * FLIT * NS_PER_BYTE + d.latency, rel=1e-12)
    assert d.utilization(d.free_at) == pytest.approx(1.0)


def test_stack_going_idle_hands_over_its_share():
    """CACHEMEM (weight 3) stops after a burst; IO then runs at the full rate, and the
    whole backlog ends exactly when a single FIFO server would end it."""
    sim, d = link(weight_io=1, weight_cachemem=3)
    log: list = []
    backlog(sim, d, IO, [FLIT] * 3000, log)
    backlog(sim, d, CACHEMEM, [FLIT] * 600, log)
    sim.run()
    cm_done = max(t for t, s, _ in log if s == CACHEMEM)
    io_after = [t for t, s, _ in log if s == IO and t > cm_done]
    gaps = np.diff(io_after)
    assert np.allclose(gaps, FLIT * NS_PER_BYTE, rtol=1e-9)
    assert log[-1][0] == pytest.approx(3600 * FLIT * NS_PER_BYTE + d.latency, rel=1e-12)


@pytest.mark.parametrize("zero, one", [((0, 0), (1, 1)), ((0, 3), (1, 3)), ((4, 0), (4, 1))])
def test_weight_zero_acts_as_one(zero, one):
    times = []
    for w_io, w_cm in (zero, one):
        sim, d = link(weight_io=w_io, weight_cachemem=w_cm)
        log: list = []
        rng = np.random.default_rng(5)
        backlog(sim, d, IO, rng.integers(1, 300, 500).astype(float), log)
        backlog(sim, d, CACHEMEM, rng.integers(1, 300, 500).astype(float), log)
        sim.run()
        times.append(log)
    assert times[0] == times[1]


messages = st.lists(st.tuples(st.floats(0, 2000), st.sampled_from([IO, CACHEMEM]),
                              st.floats(1, 600)), min_size=1, max_size=80)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=messages, w_io=st.integers(0, 15), w_cm=st.integers(0, 15))
def test_capacity_fifo_and_work_conservation(msgs, w_io, w_cm):
    """Random sizes, times, stacks and weights: deliveries are spaced by at least the
    later message's serialization (never above the link rate), no message beats its own
    serialization + latency, each stack is FIFO, and the link ends its work when any
    work-conserving single server would (the Lindley recursion on all messages)."""
    msgs = sorted(msgs, key=lambda m: m[0])
    sim, d = link(weight_io=w_io, weight_cachemem=w_cm)
    log: list = []
    schedule(sim, d, msgs, log)
    sim.run()
    assert sorted(k for k, _ in log) == list(range(len(msgs)))
    delivered = dict(log)
    order = sorted(delivered, key=lambda k: (delivered[k], k))
    for a, b in zip(order, order[1:]):
        assert delivered[b] - delivered[a] >= msgs[b][2] * NS_PER_BYTE * (1 - EPS) - EPS
    for k, (t, _, size) in enumerate(msgs):
        assert delivered[k] >= t + size * NS_PER_BYTE + d.latency - EPS
    for stack in (IO, CACHEMEM):
        mine = [k for k in range(len(msgs)) if msgs[k][1] == stack]
        assert [k for k in order if msgs[k][1] == stack] == mine
    end = lindley([m[0] for m in msgs], [m[2] * NS_PER_BYTE for m in msgs])[-1]
    assert d.free_at == pytest.approx(end, rel=1e-9, abs=1e-9)
    # delivered bandwidth over the busy span never exceeds the raw rate
    span = max(delivered.values()) - d.latency - msgs[0][0]
    assert sum(m[2] for m in msgs) <= span * RAW / 1e9 * (1 + EPS) + EPS


# --- reserve == send ----------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 5000), st.floats(1, 2000)), min_size=1, max_size=60))
def test_reserve_matches_send_for_one_in_order_sender(msgs):
    """One in-order sender: reserving ahead gives the same delivery times as handing
    each message over at its arrival time by an event."""
    msgs = sorted(msgs)
    sim, d = link()
    log: list = []
    schedule(sim, d, [(t, CACHEMEM, size) for t, size in msgs], log)
    sim.run()
    _, r = link()
    r.claim()
    assert r.exclusive
    reserved = [r.reserve(size, t) for t, size in msgs]
    assert [t for _, t in sorted(log)] == pytest.approx(reserved, rel=1e-12, abs=1e-9)


def test_forward_reserves_when_exclusive_and_sends_otherwise():
    """``forward`` gives the same delivery either way."""
    out = []
    for users in (1, 2):
        sim, d = link()
        for _ in range(users):
            d.claim()
        got: list = []
        for k, at in enumerate([0.0, 0.5, 30.0, 30.1, 31.0]):
            d.forward(IO, 200, at, lambda i: got.append((i, sim.now)), k)
        sim.run()
        out.append([t for _, t in sorted(got)])
    assert out[0] == pytest.approx(out[1], rel=1e-12)


def test_monitored_waits_follow_lindley():
    """The ``wait`` tally of a monitored direction is the FIFO Lindley wait, message by
    message (T7.2's recursion, exactly)."""
    rng = np.random.default_rng(3)
    size = 76.5
    service = size * NS_PER_BYTE
    arrivals = np.cumsum(rng.exponential(service / 0.8, 3000))
    sim, d = link(monitor=True)
    schedule(sim, d, [(t, CACHEMEM, size) for t in arrivals], [])
    sim.run()
    waits = sim.stats["link.wait"].values()
    expected = lindley(arrivals, np.full(arrivals.size, service)) - service - arrivals
    assert np.allclose(waits, expected, atol=1e-9)
    assert sim.stats["link.sojourn"].values() == pytest.approx(expected + service + d.latency)


# --- link-layer retry ---------------------------------------------------------------------

def test_crc_errors_cause_replays_and_cost_their_time():
    """With a BER, flits fail their CRC: replays happen and the same backlog takes longer,
    by exactly the documented replay time per error (RETRY.Req/Ack round trip + the
    message again)."""
    n = 20_000
    sim0, clean = link()
    backlog(sim0, clean, CACHEMEM, [FLIT] * n)
    sim0.run()
    assert clean.replays == 0
    sim1, noisy = link(ber=1e-6, seed=11)
    backlog(sim1, noisy, CACHEMEM, [FLIT] * n)
    sim1.run()
    p_flit = 1 - (1 - 1e-6) ** (FLIT * 8)
    expected = n * p_flit
    assert abs(noisy.replays - expected) < 5 * math.sqrt(expected)
    assert noisy.replays > 0
    service = FLIT * NS_PER_BYTE
    replay = 2 * noisy.latency + 2 * RETRY_SEQUENCE_FLITS * noisy.flit_ns + service
    assert noisy.free_at == pytest.approx(n * service + noisy.replays * replay, rel=1e-12)
    assert noisy.free_at > clean.free_at
    assert n * FLIT / noisy.free_at < n * FLIT / clean.free_at


def test_zero_ber_never_replays():
    sim, d = link(ber=0.0)
    backlog(sim, d, IO, [4096.0] * 500)
    sim.run()
    assert d.replays == 0


@pytest.mark.parametrize("buffer", [22, 30, 40])
def test_retry_buffer_below_ack_round_trip_caps_throughput(buffer):
    """A retry buffer holding fewer flits than one Ack round trip: the transmitter runs
    at buffer / round trip of the link rate."""
    port, ack_every = 10.0, 8
    flit_ns = FLIT * NS_PER_BYTE
    latency = 2 * port + flit_ns          # one way + receiver flit accumulation
    rtt = 2 * latency + ack_every * flit_ns
    assert buffer * flit_ns < rtt
    sim, d = link(retry_buffer=buffer, port_latency=port, ack_every=ack_every)
    n = 5000
    backlog(sim, d, CACHEMEM, [FLIT] * n)
    sim.run()
    throughput = n * FLIT / d.free_at * 1e9
    assert throughput == pytest.approx(RAW * buffer * flit_ns / rtt, rel=1e-9)


def test_retry_buffer_covering_round_trip_costs_nothing():
    """The default 64 flits cover the round trip of a x16 Gen5 link with 10 ns ports."""
    sim, d = link(retry_buffer=64, port_latency=10.0)
    backlog(sim, d, CACHEMEM, [FLIT] * 1000)
    sim.run()
    assert d.retry_cap == 1.0
    assert d.free_at == pytest.approx(1000 * FLIT * NS_PER_BYTE)
