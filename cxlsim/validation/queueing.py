"""Queueing runs of the link model, checked against queueing theory (targets T7.2, T7.3).

A validation harness, not a model: it builds systems from the topology, devices and
protocol layers, so it lives above them.

Two small discrete-event runs, shared by the tests and ``cxlsim validate``:

* :func:`md1_run` — one monitored :class:`~cxlsim.link.direction.LinkDirection` fed a
  Poisson stream of equal-size messages is an M/D/1 queue: service time
  ``wire_bytes / bandwidth``, waiting time from the direction's ``wait`` tally. The
  Pollaczek-Khinchine mean wait (:func:`~cxlsim.analytic.queues.md1_mean_wait`) is the
  reference. The DES mean is a statistic: the waits are correlated over many messages
  near saturation, so at rho = 0.85 its plain sample mean needs about 2.5 million
  messages for a standard error of 0.6 %. A control variate removes that noise: the
  Lindley recursion (:func:`~cxlsim.analytic.queues.lindley`) of an M/D/1 queue run on
  the very arrivals the DES saw has the closed form as its mean, so ``M/D/1 +
  mean(DES wait - Lindley wait)``, message by message, estimates the DES's mean wait with
  only the DES's own departures from the queue as noise (batch-means standard error of
  the differences). The plain sample mean is kept beside it (``raw``).
* :func:`littles_law_run` — a whole system elaborated with ``monitor=True`` (every link
  direction is entered by an event and keeps an ``in_system`` level and a ``sojourn``
  tally) under Poisson CXL.mem traffic; for every monitored queue, the time-average
  number in system L is compared with lambda * W. A direction's sojourn runs from the
  message reaching its port to its delivery, which includes the fixed latency of the
  node after it (``extra_delay``: a switch hop, a root port) — the same span for L and W.

Both runs start empty and exclude a warm-up (a fraction of the messages, converted to
time at the offered rate) from every statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from cxlsim.analytic.queues import lindley, littles_law_L, md1_mean_wait
from cxlsim.devices.requester import PoissonRequester
from cxlsim.engine import Simulation, call_later
from cxlsim.link.direction import CACHEMEM, LinkDirection
from cxlsim.link.flits import mixed_line_bytes
from cxlsim.link.params import LinkParams
from cxlsim.link.tlp import serializer_bandwidth
from cxlsim.resources import bundled
from cxlsim.topology import Topology, load_topology
from cxlsim.topology.elaborate import System

#: The shipped memory pool: one x16 upstream link shared by four x8 expanders.
SWITCH_POOL = bundled("topologies") / "switch-pool.yaml"

#: Link of :func:`md1_run` unless given: CXL on PCIe 5.0 x16, no retry-buffer cap.
MD1_LINK = LinkParams(protocol="cxl", generation=5, width=16, retry_buffer=0)


class MD1Result(tuple):
    """``(simulated, closed_form)``: mean wait before service (ns), DES and M/D/1.

    Unpacks as a pair; ``stderr`` is the DES mean's standard error (batch means) and
    ``messages`` the number of waits it averages; ``raw`` and ``raw_stderr`` the plain
    sample mean of the waits and its standard error (without the control variate).
    """

    def __new__(cls, simulated: float, closed_form: float, stderr: float = math.nan,
                messages: int = 0, raw: float = math.nan,
                raw_stderr: float = math.nan) -> MD1Result:
        result = super().__new__(cls, (simulated, closed_form))
        result.stderr = stderr
        result.messages = messages
        result.raw = raw
        result.raw_stderr = raw_stderr
        return result

    @property
    def simulated(self) -> float:
        return self[0]

    @property
    def closed_form(self) -> float:
        return self[1]

    @property
    def error(self) -> float:
        """Relative error of the DES against the closed form."""
        return self[0] / self[1] - 1

    @property
    def rel_stderr(self) -> float:
        """Standard error of the DES mean relative to the closed form."""
        return self.stderr / self[1]

    def __repr__(self) -> str:
        return (f"MD1Result(simulated={self[0]!r}, closed_form={self[1]!r}, "
                f"stderr={self.stderr!r}, messages={self.messages})")


class LittleRow(NamedTuple):
    """Little's law on one queue over the measurement window."""

    queue: str        #: stat path of the queue (``<system>.<link>_<dir>``)
    L: float          #: time-average number in the queue (Level monitor)
    lam: float        #: completions per ns in the window
    W: float          #: mean sojourn, ns (Tally monitor)
    rel_error: float  #: L / (lam * W) - 1


def md1_run(rho: float, messages: int = 200_000, wire_bytes: float = 68.0, seed: int = 0,
            params: LinkParams | None = None, warmup: float = 0.05,
            stack: int = CACHEMEM) -> MD1Result:
    """Poisson arrivals of ``wire_bytes`` messages at utilisation ``rho`` on one direction.

    Arrivals (gaps drawn from the run's random stream, one pending event) are handed to
    :meth:`LinkDirection.send` at their arrival time. The first ``warmup`` fraction of
    the messages (as time at the arrival rate) is excluded. Returns the DES mean wait
    (with the Lindley control variate, see above) and ``md1_mean_wait(rho, service)``;
    the error is :attr:`MD1Result.error`, the estimate's standard error
    :attr:`MD1Result.stderr`.
    """
    if not 0 < rho < 1:
        raise ValueError(f"rho must be in (0, 1) for a stable queue, not {rho!r}")
    if messages < 1:
        raise ValueError("md1_run needs at least one message")
    params = params or MD1_LINK
    service = wire_bytes * 1e9 / params.raw_bandwidth
    mean_gap = service / rho
    sim = Simulation(seed, warmup=warmup * messages * mean_gap)
    link = LinkDirection(sim, "link", params, monitor=True)
    if link.retry_cap != 1.0 or params.ber:
        raise ValueError("md1_run needs deterministic service: no retry-buffer cap, no BER")
    env = sim.env
    # the gaps drawn at once: the very numbers of one draw per arrival, 10 % less time
    gaps = sim.rng.exponential(mean_gap, messages).tolist()
    sent = [0]
    arrivals: list[float] = []

    def ignore(_payload: Any) -> None:
        pass

    def arrive(_event: Any) -> None:
        arrivals.append(env.now)
        link.send(stack, wire_bytes, ignore)
        sent[0] += 1
        if sent[0] < messages:
            call_later(env, gaps[sent[0]], arrive)

    call_later(env, gaps[0], arrive)
    sim.run()
    waits = sim.stats[f"{link.path}.wait"].values()
    # FIFO: the tally's waits (those after the warm-up) are the last messages' waits
    a = np.asarray(arrivals)
    queue = (lindley(a, np.full(a.size, service)) - service - a)[a.size - waits.size:]
    closed = md1_mean_wait(rho, service)
    diff = waits - queue
    return MD1Result(closed + float(diff.mean()), closed, _batch_stderr(diff), waits.size,
                     float(waits.mean()), _batch_stderr(waits))


def _batch_stderr(values: np.ndarray, batches: int = 20) -> float:
    """Standard error of the mean of a correlated series by ``batches`` batch means."""
    if values.size < 2 * batches:
        return math.nan
    means = np.array([part.mean() for part in np.array_split(values, batches)])
    return float(means.std(ddof=1) / math.sqrt(batches))


def littles_law_run(topology: Topology | str | Path | None = None, host: str = "host0",
                    devices: Sequence[str] | None = None, load: float = 0.8,
                    requests: int = 40_000, write_fraction: float = 0.3, seed: int = 0,
                    warmup: float = 0.1, credits: int = 64, requesters: int = 2
                    ) -> list[LittleRow]:
    """Little's law on every monitored queue of a loaded system.

    The topology (default: the shipped switch pool) is elaborated with ``monitor=True``;
    ``requesters`` Poisson requesters per device (default: every memory device) issue
    ``requests`` CXL.mem requests in all, ``write_fraction`` of them writes, at a rate
    that puts the busiest link direction at ``load`` of its serializer. After the run
    (to completion; the first ``warmup`` fraction of requests excluded) each queue's L
    is its ``in_system`` level's time-weighted mean, lambda its ``sojourn`` count per ns
    of the window, and W the sojourn mean. Queues that carried nothing are left out.
    """
    if not 0 < load < 1:
        raise ValueError(f"load must be in (0, 1), not {load!r}")
    if topology is None:
        topology = SWITCH_POOL
    topo = topology if isinstance(topology, Topology) else load_topology(topology)
    probe = System(Simulation(), topo)
    devices = list(devices) if devices is not None else list(probe.memories)
    if not devices:
        raise ValueError("the topology has no CXL device with memory")
    rate = load / busiest_utilization(topo, probe, host, devices, write_fraction)
    sim = Simulation(seed, warmup=warmup * requests / rate)
    system = System(sim, topo, monitor=True)
    per = max(1, math.ceil(requests / (len(devices) * requesters)))
    share = rate / (len(devices) * requesters)
    for device in devices:
        path = system.mem_path(host, device, credits=credits, read_fraction=1 - write_fraction)
        for k in range(requesters):
            PoissonRequester(sim, f"req_{device}_{k}", path, share, per,
                             write_fraction=write_fraction, parent=system)
    sim.run()
    return _little_rows(sim)


def _little_rows(sim: Simulation) -> list[LittleRow]:
    """One row per ``<queue>.in_system`` level that has a ``<queue>.sojourn`` tally."""
    now, stats = sim.now, sim.stats
    window = now - stats.warmup
    rows = []
    for name in stats:
        queue, _, stat = name.rpartition(".")
        if stat != "in_system" or f"{queue}.sojourn" not in stats:
            continue
        sojourn = stats[f"{queue}.sojourn"]
        if not sojourn.count:
            continue
        L = stats[name].mean(now)
        lam = sojourn.count / window
        W = sojourn.mean
        rows.append(LittleRow(queue, L, lam, W, L / littles_law_L(lam, W) - 1))
    return rows


def busiest_utilization(topo: Topology, system: System, host: str, devices: Sequence[str],
                         write_fraction: float) -> float:
    """Serializer utilisation of the busiest link direction per request per ns (each
    device receiving an equal share), from the packer's wire bytes per message of the
    mixed stream."""
    bandwidth = {}
    for _, _, edge in topo.graph.edges(data=True):
        if not edge["internal"]:
            link = edge["link"]
            src, dst = link.src.partition(".")[0], link.dst.partition(".")[0]
            bandwidth[src, dst] = bandwidth[dst, src] = serializer_bandwidth(
                link, edge["bandwidth"])
    busy: dict[tuple[str, str], float] = {}
    for device in devices:
        nodes = system.route(host, device)
        for a, b in zip(nodes, nodes[1:]):
            if (a, b) not in system.links:
                continue
            mode = system.links[a, b].params.flit or "68B"
            per_line = mixed_line_bytes(mode, 1 - write_fraction)
            for key, per_request in (((a, b), per_line["down"]), ((b, a), per_line["up"])):
                busy[key] = busy.get(key, 0.0) + per_request * 1e9 / bandwidth[key] / len(devices)
    return max(busy.values())
