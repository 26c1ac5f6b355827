"""CXL.mem paths under load: one response per request, latency bounds, credits, shared
links in event mode, and the queueing checks T7.2-T7.4 (cxlsim.protocol.mem,
cxlsim.validation.queueing)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cxlsim.devices.requester import PoissonRequester
from cxlsim.engine import Simulation, call_later
from cxlsim.experiments import load_experiment
from cxlsim.experiments.kinds.ornl_transfer import devices
from cxlsim.link.flits import saturated_efficiency, wire_bytes_per_message
from cxlsim.validation.queueing import littles_law_run, md1_run
from cxlsim.topology import Topology, load_topology
from cxlsim.topology.elaborate import System

REPO = Path(__file__).resolve().parents[1]
SWITCH_POOL = REPO / "topologies" / "switch-pool.yaml"
SINGLE = REPO / "topologies" / "single-expander.yaml"
ORNL = REPO / "experiments" / "ornl-transfer.yaml"
EPS = 1e-9


@cache
def topology(path=SWITCH_POOL):
    return load_topology(path)


def build(path=SWITCH_POOL, devices=("cxl0",), monitor=False, credits=32, seed=0):
    sim = Simulation(seed)
    system = System(sim, topology(path), monitor=monitor)
    paths = {dev: system.mem_path("host0", dev, credits=credits) for dev in devices}
    return sim, system, paths


def issue(sim, path, ops, log):
    """Issue ``(time, write)`` operations on ``path`` at their times; completions go to
    ``log`` as ``(tag, txn)``; returns the transactions as issued (filled at issue)."""
    issued: list = []
    for tag, (t, write) in enumerate(ops):
        def go(_, tag=tag, write=write):
            txn = (path.write if write else path.read)(lambda x, tag=tag: log.append((tag, x)))
            issued.append((tag, txn))
        call_later(sim.env, t, go)
    return issued


@cache
def unloaded(path=SWITCH_POOL, device="cxl0"):
    """Latency of a lone read and a lone write on an idle system: (read, write)."""
    out = []
    for write in (False, True):
        sim, _, paths = build(path, (device,))
        log: list = []
        issue(sim, paths[device], [(0.0, write)], log)
        sim.run()
        out.append(log[0][1].latency)
    return tuple(out)


# --- every request, one response ---------------------------------------------------------

ops = st.lists(st.tuples(st.floats(0, 3000), st.booleans()), min_size=1, max_size=120)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, credits=st.integers(1, 64), monitor=st.booleans(),
       topo=st.sampled_from([SINGLE, SWITCH_POOL]))
def test_every_request_gets_exactly_one_response(ops, credits, monitor, topo):
    """Random reads/writes at random times, any credit count, reserve or event mode:
    each request completes once, and no request is faster than on an idle system."""
    sim, _, paths = build(topo, ("cxl0",), monitor=monitor, credits=credits)
    log: list = []
    issued = issue(sim, paths["cxl0"], ops, log)
    sim.run()
    tags = [tag for tag, _ in log]
    assert sorted(tags) == list(range(len(ops)))
    assert {id(t) for _, t in issued} == {id(t) for _, t in log}
    read, write = unloaded(topo)
    for tag, txn in log:
        assert txn.latency >= (write if ops[tag][1] else read) - EPS
    assert paths["cxl0"].completed == len(ops)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.floats(0, 2000), st.booleans(), st.integers(0, 3)),
                    min_size=1, max_size=150),
       credits=st.integers(1, 64))
def test_switch_pool_shared_link_every_response_and_bounds(ops, credits):
    """Four devices behind one switch: the shared x16 link is entered by events; every
    request completes once, never faster than alone on the pool."""
    devices = ("cxl0", "cxl1", "cxl2", "cxl3")
    sim, system, paths = build(SWITCH_POOL, devices, credits=credits)
    assert not system.links["rp0", "sw0"].exclusive
    assert system.links["sw0", "cxl0"].exclusive
    logs = {dev: [] for dev in devices}
    mine = {dev: [(t, w) for t, w, k in ops if devices[k] == dev] for dev in devices}
    for dev in devices:
        issue(sim, paths[dev], mine[dev], logs[dev])
    sim.run()
    for dev in devices:
        assert sorted(tag for tag, _ in logs[dev]) == list(range(len(mine[dev])))
        read, write = unloaded(SWITCH_POOL, dev)
        for tag, txn in logs[dev]:
            assert txn.latency >= (write if mine[dev][tag][1] else read) - EPS


def test_loaded_mean_latency_not_below_unloaded():
    sim, system, paths = build(SINGLE, monitor=False, credits=64, seed=3)
    req = PoissonRequester(sim, "req", paths["cxl0"], 0.5, 20_000, write_fraction=0.3,
                           parent=system)
    sim.run()
    assert req.latency.count == 20_000
    assert req.latency.mean > min(unloaded(SINGLE))
    assert req.latency.min >= min(unloaded(SINGLE)) - EPS


# --- credits -------------------------------------------------------------------------------

@pytest.mark.parametrize("topo", [SINGLE, SWITCH_POOL])
def test_one_credit_serializes_requests(topo):
    """One M2S Req credit: reads complete in issue order, one per credit loop — the trip
    to the device plus the credit's return one upstream latency later, i.e. the round
    trip without the device's access and the DRS serialization."""
    sim, system, paths = build(topo, credits=1)
    n = 200
    log: list = []
    issue(sim, paths["cxl0"], [(0.0, False)] * n, log)
    sim.run()
    assert [tag for tag, _ in log] == list(range(n))
    memory = system.memories["cxl0"].params
    nodes = system.route("host0", "cxl0")
    ups = [system.links[b, a] for a, b in zip(nodes, nodes[1:]) if (b, a) in system.links]
    drs = wire_bytes_per_message(ups[0].params.flit, "S2M_DRS")
    serialize_drs = sum(drs * 1e9 / d.params.raw_bandwidth for d in ups)
    loop = unloaded(topo)[0] - memory.controller_latency - memory.media_latency - serialize_drs
    done = np.array([txn.completed for _, txn in log])
    assert np.allclose(np.diff(done), loop, rtol=1e-9)
    assert n / done[-1] <= 1 / loop
    assert paths["cxl0"].req_credits.stalls == n - 1


def test_many_credits_overlap_requests():
    sim, _, paths = build(SINGLE, credits=64)
    log: list = []
    issue(sim, paths["cxl0"], [(0.0, False)] * 64, log)
    sim.run()
    assert max(txn.latency for _, txn in log) < 3 * unloaded(SINGLE)[0]


# --- event mode vs reserve mode ------------------------------------------------------------

@pytest.mark.parametrize("topo", [SINGLE, SWITCH_POOL])
def test_event_mode_gives_the_reserved_latencies(topo):
    """One path alone: monitored links (entered by events at arrival) give the latencies
    of exclusive links (reserved ahead), request by request."""
    latencies = []
    for monitor in (False, True):
        sim, system, paths = build(topo, monitor=monitor, credits=16, seed=9)
        req = PoissonRequester(sim, "req", paths["cxl0"], 0.15, 5000, write_fraction=0.4,
                               parent=system)
        sim.run()
        assert all(d.exclusive != monitor for d in system.links.values()
                   if d.users)
        latencies.append(req.latency.values())
    assert latencies[0] == pytest.approx(latencies[1], rel=1e-9)


def test_switch_pool_overload_delivers_at_most_the_x16_capacity():
    """Four devices offered 1.3x the x16 upstream link's read capacity: every read is at
    least as slow as alone, and the data delivered stays within the capacity."""
    devices = ("cxl0", "cxl1", "cxl2", "cxl3")
    sim, system, paths = build(SWITCH_POOL, devices, credits=256, seed=4)
    up = system.links["sw0", "rp0"]
    capacity = up.params.raw_bandwidth * saturated_efficiency("68B", "read") / 1e9  # B/ns
    rate = 1.3 * capacity / 64 / len(devices)
    reqs = [PoissonRequester(sim, f"r{k}", paths[dev], rate, 8000, parent=system)
            for k, dev in enumerate(devices)]
    sim.run()
    first = min(r.latency.min for r in reqs)
    delivered = sum(r.bytes.value for r in reqs) / sim.now
    assert first >= unloaded(SWITCH_POOL)[0] - EPS
    assert delivered <= capacity * (1 + 1e-9)
    assert delivered > 0.9 * capacity  # and it is the bottleneck that limits
    assert up.utilization() > 0.9


# --- T7.2 / T7.3 via cxlsim.validation.queueing --------------------------------------------------

def test_md1_within_two_percent():
    """T7.2 at one load: DES mean wait vs M/D/1; the plain sample mean within three of its
    standard errors, the control-variate estimate exact (the DES is the queue)."""
    result = md1_run(0.5, 100_000, seed=1)
    assert abs(result.error) <= 0.02
    assert result.rel_stderr < 1e-9
    sim_wait, closed = result
    assert closed == pytest.approx(0.5 * 68e9 / (32e9 * 16 * 128 / 130 / 8) / (2 * 0.5))
    assert abs(result.raw - closed) <= 3 * result.raw_stderr


def test_the_control_variate_shows_a_des_that_departs_from_the_queue(monkeypatch):
    """Were the DES's service 10 % longer than the queue's, the estimate would say so."""
    from cxlsim.analytic import queues
    from cxlsim.validation import queueing

    monkeypatch.setattr(queueing, "lindley",
                        lambda a, s: queues.lindley(a, 0.9 * s) + 0.1 * s)
    result = md1_run(0.5, 50_000, seed=1)
    assert result.error > 0.1


@pytest.mark.parametrize("topo, load", [(SWITCH_POOL, 0.8), (SINGLE, 0.9)])
def test_littles_law_on_every_queue(topo, load):
    rows = littles_law_run(topology(topo), load=load, requests=20_000, seed=2)
    assert len(rows) == len(System(Simulation(), topology(topo)).links)
    for row in rows:
        assert abs(row.rel_error) <= 0.01, row
        assert row.L > 0 and row.lam > 0 and row.W > 0


# --- T7.4 monotonicity ---------------------------------------------------------------------

@cache
def ornl():
    return load_experiment(ORNL)


def _cxl60(penalty: float, latency: float):
    """The ORNL topology's first CXL device with its link set to ``penalty``, ``latency``."""
    spec = ornl().topology
    links = [lk.model_copy(update={"cxl_penalty": penalty, "latency": latency})
             if lk.dst == "cxl60" else lk for lk in spec.links]
    _, cxls = devices(Topology.from_spec(spec.model_copy(update={"links": links})))
    return next(d for d in cxls if d.name == "cxl60")


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 2**30), p=st.floats(0.05, 1.0), dp=st.floats(1e-6, 0.9),
       latency=st.floats(0, 1000), dl=st.floats(1e-3, 1000))
def test_transfer_time_monotone_in_penalty_and_latency(size, p, dp, latency, dl):
    """T7.4: a higher cxl_penalty (more bandwidth) never slows a transfer; a higher CXL
    link latency never speeds it."""
    t = _cxl60(p, latency).transfer(size)
    assert _cxl60(min(1.0, p + dp), latency).transfer(size) <= t
    assert _cxl60(p, latency + dl).transfer(size) >= t
