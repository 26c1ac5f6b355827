"""Streamed sources (:mod:`cxlsim.protocol.stream`) give the event path's results to the bit.

Random systems -- one to three paths of one or two links each way, alone or sharing a
host link pair (a switch's upstream port) or a device, devices with and without
controller limits, credits that bind or not, Poisson requesters with writes, miss
slots with and without a gap over one or two paths, warm-up -- are run twice, streamed
and on events; every statistic, the clock and the state left in the links, devices,
credit pools and paths must be equal.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cxlsim.devices.core import MissSlots
from cxlsim.devices.memory import MemoryBackend
from cxlsim.devices.requester import PoissonRequester
from cxlsim.engine import Simulation
from cxlsim.link.direction import LinkDirection
from cxlsim.link.flits import wire_bytes_per_message
from cxlsim.link.params import LinkParams
from cxlsim.protocol.mem import M2S_REQ, M2S_RWD, S2M_DRS, S2M_NDR, MemPath

KINDS = (M2S_REQ, M2S_RWD, S2M_DRS, S2M_NDR)

link_params = st.builds(
    LinkParams, generation=st.sampled_from([4, 5, 6]), width=st.sampled_from([2, 8, 16]),
    flit_mode=st.sampled_from(["68B", "256B"]),
    port_latency=st.floats(0.0, 30.0, allow_nan=False))
device_params = st.fixed_dictionaries({
    "controller_latency": st.floats(0.0, 100.0),
    "media_latency": st.floats(0.0, 60.0),
    "media_bandwidth": st.sampled_from([None, 8e9, 64e9]),
    "request_time": st.sampled_from([0.0, 0.4, 3.0]),
    "request_buffer": st.sampled_from([None, 1, 4, 32])})
path_spec = st.fixed_dictionaries({
    "down": st.lists(st.tuples(st.floats(0.0, 80.0), link_params), min_size=1, max_size=2),
    "up": st.lists(st.tuples(st.floats(0.0, 80.0), link_params), min_size=1, max_size=2),
    "tail_down": st.floats(0.0, 20.0), "tail_up": st.floats(0.0, 80.0),
    "device": device_params, "credits": st.integers(1, 48),
    "shared_link": st.booleans(), "shared_device": st.booleans()})
poisson_spec = st.tuples(st.integers(0, 2), st.floats(0.001, 0.2), st.integers(1, 300),
                         st.sampled_from([0.0, 0.3, 1.0]))
slots_spec = st.tuples(st.lists(st.integers(0, 2), min_size=1, max_size=2, unique=True),
                       st.integers(1, 40), st.integers(1, 300),
                       st.sampled_from([0.0, 0.0, 2.5, 40.0]))


def _run(streaming, paths, poissons, slots, warmup, keep, seed):
    sim = Simulation(seed=seed, warmup=warmup, keep_samples=keep, streaming=streaming)
    built, parts = [], []
    host = [LinkDirection(sim, name, paths[0]["down"][0][1]) for name in ("hd", "hu")]
    for k, spec in enumerate(paths):
        mode = spec["down"][0][1].flit or "68B"
        wire = {kind: wire_bytes_per_message(mode, kind) for kind in KINDS}
        down = [(lat, LinkDirection(sim, f"d{k}_{i}", p))
                for i, (lat, p) in enumerate(spec["down"])]
        up = [(lat, LinkDirection(sim, f"u{k}_{i}", p)) for i, (lat, p) in enumerate(spec["up"])]
        if spec["shared_link"]:  # through the host's pair, shared with the others
            down[0] = (down[0][0], host[0])
            up[-1] = (up[-1][0], host[1])
        device = MemoryBackend(sim, f"dev{k}", spec["device"])
        if spec["shared_device"] and parts:
            device = parts[0][1]
        built.append(MemPath(sim.env, down, up, device, wire, spec["tail_down"],
                             spec["tail_up"], spec["credits"]))
        parts.append(([link for _, link in down + up], device))
    used = set()
    for k, (p, rate, count, writes) in enumerate(poissons):
        PoissonRequester(sim, f"poisson{k}", built[p % len(built)], rate, count, writes)
        used.add(p % len(built))
    for k, (which, n, count, gap) in enumerate(slots):
        chosen = sorted({w % len(built) for w in which})
        used.update(chosen)
        MissSlots(sim, f"slots{k}", {f"p{w}": built[w] for w in chosen},
                  {f"p{w}": 1.0 + w for w in chosen}, n, count, gap)
    for k in sorted(set(range(len(built))) - used):  # every path sends: all groups stream
        PoissonRequester(sim, f"idle{k}", built[k], 0.01, 5)
    sim.run()
    assert all((path.streamed_until >= 0) == streaming for path in built)
    state = [sim.now]
    for path, (links, device) in zip(built, parts):
        state += [path.completed, path.req_credits.available, path.req_credits.stalls,
                  sorted(path.req_credits.pending_returns()), path.rwd_credits.stalls,
                  device.free_at, device.controller_free, device.accesses]
        state += [(lk.free_at, lk.busy_ns, lk.sent_bytes[1], lk.utilization(), lk.idle)
                  for lk in links]
    values = {name: sim.stats[name].values() for name in sim.stats
              if keep and sim.stats[name].kind == "tally"}
    return state, sim.metrics(), values


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths=st.lists(path_spec, min_size=1, max_size=3),
       poissons=st.lists(poisson_spec, max_size=3), slots=st.lists(slots_spec, max_size=2),
       warmup=st.sampled_from([0.0, 0.0, 500.0]), keep=st.booleans(),
       seed=st.integers(0, 10))
def test_streamed_equals_events(paths, poissons, slots, warmup, keep, seed):
    if not poissons and not slots:
        poissons = [(0, 0.05, 50, 0.5)]
    streamed = _run(True, paths, poissons, slots, warmup, keep, seed)
    events = _run(False, paths, poissons, slots, warmup, keep, seed)
    assert streamed[0] == events[0]
    assert streamed[1].keys() == events[1].keys()
    for name, value in events[1].items():
        assert streamed[1][name] == value or (np.isnan(value) and np.isnan(streamed[1][name])), name
    for name, value in events[2].items():
        assert np.array_equal(streamed[2][name], value), name


def _one_path(sim, monitor=False, ber=0.0):
    link = LinkParams(generation=5, width=16, flit_mode="68B", ber=ber)
    wire = {kind: wire_bytes_per_message("68B", kind) for kind in KINDS}
    down, up = (LinkDirection(sim, n, link, monitor=monitor) for n in ("down", "up"))
    device = MemoryBackend(sim, "dev", {"controller_latency": 80.0})
    return MemPath(sim.env, [(10.0, down)], [(0.0, up)], device, wire, tail_up=10.0)


@pytest.mark.parametrize("case", ["monitor", "ber", "until", "shared", "off"])
def test_streams_only_when_nothing_else_can_see(case):
    """Monitored links, bit errors, a run that stops early, a path used directly and
    ``streaming=False`` keep the sources on events."""
    sim = Simulation(seed=3, streaming=case != "off")
    path = _one_path(sim, monitor=case == "monitor", ber=1e-6 if case == "ber" else 0.0)
    req = PoissonRequester(sim, "req", path, 0.01, 200)
    if case == "shared":
        path.read(lambda txn: None)
    if case == "until":
        sim.run(until=1e9)
    else:
        sim.run()
    assert path.streamed_until < 0
    assert req.latency.count == 200


def test_streamed_path_refuses_a_direct_request():
    """A request issued directly on a path whose sources were computed at once would
    miss their queues: it is refused, with the way out."""
    sim = Simulation(seed=1)
    path = _one_path(sim)
    PoissonRequester(sim, "req", path, 0.01, 100)
    sim.env.process(_late_read(sim, path))
    with pytest.raises(RuntimeError, match="streaming=False"):
        sim.run()


def _late_read(sim, path):
    yield sim.env.timeout(50.0)
    path.read(lambda txn: None)


def test_a_streamed_link_refuses_a_new_sender():
    """A path (or DMA engine) made later on a link whose traffic was computed at once
    would queue behind traffic that has not happened yet: it is refused."""
    sim = Simulation(seed=1)
    path = _one_path(sim)
    PoissonRequester(sim, "req", path, 0.01, 100)

    def late():
        yield sim.env.timeout(50.0)
        _, down, device, _, up, *_ = path.route()
        MemPath(sim.env, [(0.0, link) for link, _ in down], [(0.0, link) for link, _ in up],
                device, {kind: wire_bytes_per_message("68B", kind) for kind in KINDS})

    sim.env.process(late())
    with pytest.raises(RuntimeError, match=r"down: its traffic was computed at once .*"
                                           r"streaming=False"):
        sim.run()


def test_a_source_needs_a_request():
    sim = Simulation()
    with pytest.raises(ValueError, match="at least one request"):
        PoissonRequester(sim, "req", _one_path(sim), 0.01, 0)
