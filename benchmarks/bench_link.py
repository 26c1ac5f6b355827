"""CXL.mem read transactions per second: host -> link -> device -> link -> host.

Runs the transaction-level model (``free_at`` link directions, credits, the flit
packer's message costs) with a closed loop of ``outstanding`` reads
(:class:`~cxlsim.devices.core.MissSlots`), enough to saturate the upstream link:
streamed (the path is exclusive, so the run is computed in one compiled pass,
:mod:`cxlsim.protocol.stream`) and on events (``streaming=False``, one event per
transaction); and, in the same process, a naive reference of the same model written
the textbook way: one SimPy process and a ``simpy.Resource`` per link direction per
transaction. All must give the same mean latency and bandwidth. Then 16 Poisson
requesters at 90 % of the link (``link-loaded``'s traffic), and the shipped switch pool
(four expanders behind one switch, the host's x16 link shared by their paths; two
requesters a device, 30 % writes, the busiest link at 90 %), each streamed and on
events (same results to the bit). The speed is printed for each, and the last line is
one JSON object.

    python benchmarks/bench_link.py [--transactions N] [--outstanding K]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import simpy

from cxlsim.devices.core import MissSlots
from cxlsim.devices.memory import MemoryBackend
from cxlsim.devices.requester import PoissonRequester
from cxlsim.engine import Simulation
from cxlsim.link.direction import LinkDirection
from cxlsim.link.flits import wire_bytes_per_message
from cxlsim.link.params import LinkParams
from cxlsim.protocol.mem import M2S_REQ, M2S_RWD, S2M_DRS, S2M_NDR, MemPath

LINK = LinkParams(generation=5, width=16, flit_mode="68B", port_latency=10.0)
ROOT_PORT_NS, DEVICE_NS = 64.0, 80.0
WIRE = {k: wire_bytes_per_message("68B", k) for k in (M2S_REQ, M2S_RWD, S2M_NDR, S2M_DRS)}


def _path(sim: Simulation, outstanding: int, monitor: bool = False) -> tuple:
    down = LinkDirection(sim, "down", LINK, monitor=monitor)
    up = LinkDirection(sim, "up", LINK, monitor=monitor)
    device = MemoryBackend(sim, "device", {"controller_latency": DEVICE_NS})
    return MemPath(sim.env, [(ROOT_PORT_NS, down)], [(0.0, up)], device, WIRE,
                   tail_up=ROOT_PORT_NS, credits=outstanding), up


def run_cxlsim(transactions: int, outstanding: int, streaming: bool = True,
               monitor: bool = False, keep_samples: bool = True) -> tuple[float, float, float]:
    """(transactions/s of wall time, mean latency ns, delivered GB/s) of cxlsim's model;
    ``monitor``: the link directions keep wait and sojourn tallies (on events)."""
    sim = Simulation(seed=1, keep_samples=keep_samples, streaming=streaming)
    path, _ = _path(sim, outstanding, monitor)
    core = MissSlots(sim, "core", {"cxl": path}, {"cxl": 1.0}, outstanding, transactions)
    start = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - start
    return transactions / wall, core.latency.mean, transactions * 64 / sim.now


def run_poisson(transactions: int, streaming: bool) -> tuple[float, float, float]:
    """The same for 16 Poisson requesters offering 90 % of the upstream link."""
    sim = Simulation(seed=1, streaming=streaming)
    path, up = _path(sim, 256)
    rate = 0.9 / (WIRE[S2M_DRS] * up.cachemem_ns_per_byte)  # requests per ns
    sources = [PoissonRequester(sim, f"r{k}", path, rate / 16, transactions // 16)
               for k in range(16)]
    return _timed(sim, sources)


def _timed(sim: Simulation, sources: list) -> tuple[float, float, float]:
    """Run ``sim``; (requests/s of wall time, mean latency ns, delivered GB/s)."""
    start = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - start
    done = sum(s.latency.count for s in sources)
    return (done / wall, sum(s.latency.values().sum() for s in sources) / done,
            done * 64 / sim.now)


def run_reference(transactions: int, outstanding: int) -> tuple[float, float, float]:
    """The same model, textbook style: a process and Resource requests per transaction."""
    env = simpy.Environment()
    down, up = simpy.Resource(env, 1), simpy.Resource(env, 1)
    ns_per_byte = 1e9 / LINK.raw_bandwidth
    flit_ns = LINK.flit_bytes * ns_per_byte
    link_ns = LINK.one_way_latency + flit_ns
    req_ns, drs_ns = WIRE[M2S_REQ] * ns_per_byte, WIRE[S2M_DRS] * ns_per_byte
    left, total = [transactions - outstanding], [0.0]

    def read(env: simpy.Environment):
        issued = env.now
        yield env.timeout(ROOT_PORT_NS)
        with down.request() as slot:
            yield slot
            yield env.timeout(req_ns)
        yield env.timeout(link_ns + DEVICE_NS)
        with up.request() as slot:
            yield slot
            yield env.timeout(drs_ns)
        yield env.timeout(link_ns + ROOT_PORT_NS)
        total[0] += env.now - issued
        if left[0] > 0:
            left[0] -= 1
            env.process(read(env))

    for _ in range(outstanding):
        env.process(read(env))
    start = time.perf_counter()
    env.run()
    wall = time.perf_counter() - start
    return transactions / wall, total[0] / transactions, transactions * 64 / env.now


def run_pool(transactions: int, streaming: bool) -> tuple[float, float, float]:
    """The same for the switch pool: every path shares the host's link pair."""
    from cxlsim.topology import load_topology
    from cxlsim.topology.elaborate import System
    from cxlsim.validation.queueing import SWITCH_POOL, busiest_utilization

    topo = load_topology(SWITCH_POOL)
    probe = System(Simulation(), topo)
    devices = list(probe.memories)
    rate = 0.9 / busiest_utilization(topo, probe, "host0", devices, 0.3)
    sim = Simulation(seed=7, streaming=streaming)
    system = System(sim, topo)
    sources = [PoissonRequester(sim, f"r_{d}_{k}", path, rate / (2 * len(devices)),
                                transactions // (2 * len(devices)), 0.3, parent=system)
               for d in devices for path in [system.mem_path("host0", d, credits=64)]
               for k in range(2)]
    return _timed(sim, sources)


def bytes_per_transaction(keep_samples: bool, outstanding: int) -> float:
    """Memory a monitored run holds per transaction (tracemalloc, 100k vs 400k)."""
    held = []
    for n in (100_000, 400_000):
        tracemalloc.start()
        run_cxlsim(n, outstanding, streaming=False, monitor=True, keep_samples=keep_samples)
        held.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()
    return (held[1] - held[0]) / 300_000


def best(runs) -> tuple[float, float, float]:
    """The fastest of ``runs``."""
    return max(runs, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=400_000)
    parser.add_argument("--outstanding", type=int, default=256)
    args = parser.parse_args()
    run_cxlsim(1000, 16)  # compile (or load) the stream kernel outside the timings
    ours = best(run_cxlsim(args.transactions, args.outstanding) for _ in range(3))
    events = best(run_cxlsim(args.transactions // 4, args.outstanding, streaming=False)
                  for _ in range(3))
    ref = run_reference(args.transactions // 4, args.outstanding)
    poisson = best(run_poisson(args.transactions, True) for _ in range(3))
    poisson_events = run_poisson(args.transactions // 4, False)
    pool = best(run_pool(args.transactions, True) for _ in range(3))
    pool_events = run_pool(args.transactions // 4, False)
    for label, r in (("streamed", ours), ("events", events), ("reference", ref),
                     ("poisson streamed", poisson), ("poisson events", poisson_events),
                     ("pool streamed", pool), ("pool events", pool_events)):
        print(f"{label:<17}: {r[0]:>12,.0f} transactions/s  mean latency {r[1]:8.2f} ns  "
              f"delivered {r[2]:6.2f} GB/s")
    print(f"ratio     : {ours[0] / ref[0]:.1f}x the reference streamed, "
          f"{events[0] / ref[0]:.1f}x on events")
    kept, streamed = (bytes_per_transaction(k, args.outstanding) for k in (True, False))
    print(f"memory    : {kept:.1f} B per monitored transaction with samples kept, "
          f"{streamed:.1f} B streaming (keep_samples=False)")
    print(json.dumps({"cxlsim_tps": round(ours[0]), "events_tps": round(events[0]),
                      "reference_tps": round(ref[0]), "ratio": round(ours[0] / ref[0], 2),
                      "poisson_tps": round(poisson[0]),
                      "poisson_events_tps": round(poisson_events[0]),
                      "pool_tps": round(pool[0]), "pool_events_tps": round(pool_events[0]),
                      "bytes_per_tx_kept": round(kept, 1),
                      "bytes_per_tx_streaming": round(streamed, 1)}))


if __name__ == "__main__":
    main()
