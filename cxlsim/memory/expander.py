"""A CXL memory expander at the epoch level: link + controller + DRAM, from a topology.

:class:`ExpanderTarget` reads the same parameters the transaction level elaborates
(:meth:`cxlsim.topology.elaborate.System.mem_path`): the route's root port and switch
latencies, each link's one-way latency, flit time, serializer bandwidth and retry-buffer
cap, the flit packer's wire cost of every CXL.mem message, and the device's controller
and media latencies. Its unloaded read latency is exactly the transaction level's (for
a path built for all reads, ``mem_path``'s default)::

    idle = 2 x (root port + switch hops) + sum over links of [2 x (one-way + flit time)
           + (wire(M2S Req) + wire(S2M DRS)) / serializer] + controller + media
           (+ 64 B / media_bandwidth when the device sets one)

and its unloaded write latency likewise, with M2S RwD down and S2M NDR up in place of
M2S Req and S2M DRS.

Under load, each link direction is a FIFO serializer: downstream it carries M2S Req
(reads) and M2S RwD (writes, with their data), upstream S2M DRS (read data) and S2M
NDR (write completions) -- the link is full duplex, so reads load the upstream
direction and writes the downstream one. Each direction is an M/G/1 queue with the two
message sizes (:func:`~cxlsim.memory._latency.mg1_wait`), priced as the flit packer
prices a stream mixing them at the current read fraction
(:func:`~cxlsim.link.flits.mixed_message_bytes`): an NDR rides beside read data, a
request in the slots a write's data leaves free. Behind the controller, a
``dram`` node attached to the device (channels, data rate, efficiency, read/write mix)
gives the DRAM queue (:class:`~cxlsim.memory.dram.DramTarget`; the transaction level
does not model it); the device's ``media_bandwidth``, if set, is a FIFO server of its
own (a controller throughput limit), exactly as the transaction level's
:class:`~cxlsim.devices.memory.MemoryBackend`. A read waits in the downstream
directions, the device and the upstream directions.

A controller with a ``request_time`` is an M/D/1 server of that service per request
(reads and writes); one with a ``request_buffer`` holds each request in one of that
many entries for its round trip -- M/D/c (Allen-Cunneen) whose holding time is the read
latency the other queues give, so a full buffer adds the credit wait the transaction
level's back-pressure produces.

Not modelled here: the link-layer credit stalls of a device without a request buffer
(ample credits), link-layer retries (``ber``), the ARB/MUX share of CXL.io.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cxlsim.link.flits import MIX_STEPS, mixed_costs, mixed_line_bytes, wire_bytes_per_message
from cxlsim.link.params import LinkParams
from cxlsim.link.tlp import cachemem_bandwidth
from cxlsim.memory import _latency
from cxlsim.memory.dram import DramParams, DramTarget
from cxlsim.memory.loaded import Server
from cxlsim.units import LINE_BYTES

M2S_REQ, M2S_RWD, S2M_NDR, S2M_DRS = "M2S_REQ", "M2S_RWD", "S2M_NDR", "S2M_DRS"


def direction_timing(link: LinkParams, bandwidth: float) -> tuple[float, float]:
    """``(ns per wire byte, latency ns)`` of one direction of ``link``.

    As :class:`~cxlsim.link.direction.LinkDirection`: the serializer moves ``bandwidth``
    (B/s), slowed by the retry-buffer cap when the buffer holds fewer flits than one
    Ack round trip; delivery comes the one-way latency plus one flit time after the
    last byte.
    """
    flit_ns = link.flit_bytes * 1e9 / link.raw_bandwidth
    latency = link.one_way_latency + flit_ns
    ns_per_byte = 1e9 / bandwidth
    if link.retry_buffer and link.flit is not None:
        ack_rtt = 2 * latency + link.ack_every * flit_ns
        ns_per_byte /= min(1.0, link.retry_buffer * flit_ns / ack_rtt)
    return ns_per_byte, latency


@dataclass(frozen=True)
class _Hop:
    name: str
    ns_per_byte: float
    latency: float


class ExpanderTarget:
    """CXL.mem reads and writes from ``host`` to the memory of ``device`` in ``topology``."""

    def __init__(self, topology, host: str, device: str) -> None:
        graph = topology.graph
        route = next((r for r in topology.routes if r.host == host and r.device == device), None)
        if route is None:
            raise ValueError(f"no route from {host!r} to {device!r}")
        spec = graph.nodes[device]["spec"]
        if graph.nodes[device]["type"] != "cxl_device" or spec.cxl_type not in (2, 3):
            raise ValueError(f"{device!r} is not a CXL Type 2/3 device with memory")
        self.name = device
        self.host = host
        #: The device is a pool (its logical devices bound to hosts): other hosts load it.
        self.pooled = bool(getattr(spec, "logical_devices", None))
        path = route.path
        self.fixed = sum(graph.nodes[n]["latency"] for n in path[1:-1])  # each way
        self.hops: list[_Hop] = []
        mode = None
        for a, b in zip(path, path[1:]):
            edge = graph.edges[a, b]
            if edge["internal"]:
                continue
            link = edge["link"]
            mode = mode or link.flit or "68B"
            ns_per_byte, latency = direction_timing(link, cachemem_bandwidth(
                link, edge["bandwidth"]))
            self.hops.append(_Hop(link.name or f"{a}-{b}", ns_per_byte, latency))
        if not self.hops:
            raise ValueError(f"{device!r} is not behind a link from {host!r}")
        self.flit_mode = mode
        self.wire = {k: wire_bytes_per_message(mode, k) for k in (M2S_REQ, M2S_RWD, S2M_NDR,
                                                                  S2M_DRS)}
        self.controller_latency = spec.controller_latency
        self.media_latency = spec.media_latency
        drams = [graph.nodes[n]["spec"] for n in graph.nodes
                 if graph.nodes[n]["type"] == "dram"
                 and graph.nodes[n]["spec"].attached_to == device]
        if len(drams) > 1:
            raise ValueError(f"{device!r} has {len(drams)} dram nodes; describe its DRAM as "
                             "one node with several channels")
        self.dram: DramTarget | None = None
        if drams:
            params = DramParams.model_validate(
                {k: getattr(drams[0], k) for k in DramParams.model_fields})
            self.dram = DramTarget(params, f"{device}.dram", idle=0.0)
        self.media_bandwidth = spec.media_bandwidth
        media_service = LINE_BYTES / self.media_bandwidth * 1e9 if self.media_bandwidth else 0.0
        self._media_service = media_service
        self.request_time = spec.request_time
        self.request_buffer = topology.request_limit(device)
        self.idle_latency = self._idle(M2S_REQ, S2M_DRS)
        self.idle_write_latency = self._idle(M2S_RWD, S2M_NDR)
        #: The model as the compiled formulas read it (:mod:`cxlsim.memory._latency`).
        self.spec = np.concatenate([
            [_latency.EXPANDER, self.idle_latency, len(self.hops), self.wire[M2S_REQ],
             self.wire[M2S_RWD], self.wire[S2M_NDR], self.wire[S2M_DRS], media_service,
             self.request_time, self.request_buffer or 0, self.dram is not None, MIX_STEPS],
            self.dram.spec if self.dram is not None else [],
            mixed_costs(mode)["down"], mixed_costs(mode)["up"],
            [h.ns_per_byte for h in self.hops],
            [self._shared_from(topology, path), 0.0, 0.0]]).astype(float)

    def _shared_from(self, topology, path: tuple[str, ...]) -> int:
        """The first of this route's links another host's route to the device crosses
        too (the ones after it are then shared as well); the number of links if none
        is (the device's own queues are still shared with any host that reaches it)."""
        others = {frozenset(e) for r in topology.routes
                  if r.device == self.name and r.host != self.host
                  for e in zip(r.path, r.path[1:])}
        links = [frozenset(e) for e in zip(path, path[1:])
                 if not topology.graph.edges[e]["internal"]]
        return next((k for k, e in enumerate(links) if e in others), len(links))

    def _idle(self, request: str, response: str) -> float:
        """Unloaded latency, ns, of a transaction sending ``request`` and getting ``response``."""
        return (2 * self.fixed
                + sum(2 * h.latency + (self.wire[request] + self.wire[response]) * h.ns_per_byte
                      for h in self.hops)
                + self.controller_latency + self.media_latency + self._media_service
                + self.request_time)

    def limits(self, read_fraction: float = 1.0) -> dict[str, float]:
        """Each limit's largest total bandwidth (B/s) at this mix: the busier direction
        of each link, the DRAM, the media, the controller's rate, its request buffer
        (requests in flight x 64 B / the idle round trip)."""
        r = read_fraction
        busier = max(mixed_line_bytes(self.flit_mode, r).values())
        out = {h.name: LINE_BYTES * 1e9 / (busier * h.ns_per_byte) for h in self.hops}
        if self.dram is not None:
            out["dram"] = self.dram.capacity(r)
        if self.media_bandwidth:
            out["media"] = self.media_bandwidth
        if self.request_time:
            out["controller"] = LINE_BYTES / self.request_time * 1e9
        if self.request_buffer:
            out["request buffer"] = self.request_buffer * LINE_BYTES / self.idle_latency * 1e9
        return out

    def capacity(self, read_fraction: float = 1.0) -> float:
        """Largest total bandwidth (B/s) before a link direction, the DRAM, the media or
        the controller saturates."""
        return min(self.limits(read_fraction).values())

    def servers(self, read_bps: float, write_bps: float) -> list[Server]:
        """Link directions (down, up) of every hop, the DRAM, the media, the controller and
        its request buffer, at these bandwidths."""
        rho, wait = np.empty(_latency.MAX_SERVERS), np.empty(_latency.MAX_SERVERS)
        n = _latency.expander_waits(self.spec, 0, read_bps, write_bps, rho, wait)
        names = [f"{h.name}.{way}" for h in self.hops for way in ("down", "up")]
        if self.dram is not None:
            names += self.dram.server_names()
        names += [f"{self.name}.{queue}" for queue, on in (
            ("media", self._media_service), ("controller", self.request_time),
            ("request_buffer", self.request_buffer)) if on]
        return [Server(name, float(rho[k]), float(wait[k])) for k, name in enumerate(names[:n])]

    def read_latency(self, read_bps: float, write_bps: float = 0.0) -> float:
        """Mean CXL.mem read latency, ns, at these offered bandwidths."""
        return self.idle_latency + sum(s.wait for s in self.servers(read_bps, write_bps))

    def write_latency(self, read_bps: float, write_bps: float) -> float:
        """Mean CXL.mem write latency, ns: a write waits in the same FIFO queues as a read."""
        return self.idle_write_latency + sum(s.wait for s in self.servers(read_bps, write_bps))
