"""Topology -> wired transaction-level components: link directions, devices, paths.

Each link becomes two :class:`~cxlsim.link.direction.LinkDirection` components (``down``
from its ``from`` end, ``up`` back), shared by every route that crosses it — a switch's
upstream link is one object for all the devices behind it. Root-port and switch
latencies sit between links on a route; a switch's per-port bandwidth cap is already in
the graph's edge bandwidth. Each CXL device with memory, and each host's DRAM, gets a
memory back-end; :meth:`System.mem_path` and :meth:`System.cache_path` build the
CXL.mem and CXL.cache routes over the shared link directions.
"""

from __future__ import annotations

import networkx as nx

from cxlsim.coherence import BiasedMemory, BiasTable
from cxlsim.devices.dma import DmaEngine
from cxlsim.devices.memory import MemoryBackend
from cxlsim.engine import Component, Simulation
from cxlsim.link.direction import LinkDirection
from cxlsim.link.flits import mixed_message_bytes, wire_bytes_per_message
from cxlsim.link.tlp import phy_config, serializer_bandwidth
from cxlsim.protocol.cache import (D2H_DATA, D2H_REQ, D2H_RSP, H2D_DATA, H2D_REQ, H2D_RSP,
                                   CachePath)
from cxlsim.protocol.mem import M2S_REQ, M2S_RWD, S2M_DRS, S2M_NDR, MemPath
from cxlsim.topology import Topology

_MEM_KINDS = (M2S_REQ, M2S_RWD, S2M_NDR, S2M_DRS)
_CACHE_KINDS = (D2H_REQ, D2H_RSP, D2H_DATA, H2D_REQ, H2D_RSP, H2D_DATA)


class System(Component):
    """The elaborated topology: ``links[(a, b)]`` is the direction from node a to node b."""

    def __init__(self, sim: Simulation, topology: Topology, monitor: bool = False) -> None:
        super().__init__(sim, topology.spec.name)
        self.topology = topology
        self.links: dict[tuple[str, str], LinkDirection] = {}
        self.memories: dict[str, MemoryBackend] = {}
        for a, b, edge in topology.graph.edges(data=True):
            if edge["internal"]:
                continue
            link = edge["link"]
            src, dst = link.src.partition(".")[0], link.dst.partition(".")[0]
            name = link.name or f"{src}-{dst}"
            bandwidth = serializer_bandwidth(link, edge["bandwidth"])
            for x, y, direction in ((src, dst, "down"), (dst, src, "up")):
                self.links[x, y] = LinkDirection(sim, f"{name}_{direction}", link, self,
                                                 bandwidth=bandwidth, monitor=monitor)
        self.host_memories: dict[str, MemoryBackend] = {}
        for node in topology.spec.nodes:
            if node.type == "cxl_device" and node.cxl_type in (2, 3):
                params = node.model_copy(update={  # its channels' queues, as one buffer
                    "request_buffer": topology.request_limit(node.name)})
                self.memories[node.name] = MemoryBackend(sim, node.name, params, self)
            elif node.type == "dram" and topology.graph.nodes[node.attached_to]["type"] == "host":
                # the epoch level's DRAM model, as one FIFO: its idle latency and the
                # bandwidth its channels sustain for reads (a FIFO has no mix)
                self.host_memories[node.attached_to] = MemoryBackend(
                    sim, node.name, {"media_latency": node.latency,
                                     "media_bandwidth": node.sustained_bandwidth(1.0)},
                    self)

    def route(self, host: str, device: str) -> list[str]:
        """The least-latency node path from ``host`` to ``device``."""
        for r in self.topology.routes:
            if r.host == host and r.device == device:
                return list(r.path)
        raise nx.NetworkXNoPath(f"no route from {host!r} to {device!r}")

    def _hops(self, host: str, device: str) -> tuple[list, list, float, float, str]:
        """Hops down and up between ``host`` and ``device``, the tails, the flit mode.

        The route alternates fixed-latency segments (root port, switch) and links:
        segments[i] is crossed before links[i] going down; segments[-1] after the last.
        """
        nodes = self.route(host, device)
        latency = self.topology.graph.nodes
        segments, links = [0.0], []
        for a, b in zip(nodes, nodes[1:]):
            if (a, b) in self.links:
                links.append((a, b))
                segments.append(0.0)
            if b != device:
                segments[-1] += latency[b]["latency"]
        down = [(segments[i], self.links[ab]) for i, ab in enumerate(links)]
        up = [(segments[i + 1], self.links[b, a]) for i, (a, b) in reversed(list(
            enumerate(links)))]
        return down, up, segments[-1], segments[0], down[0][1].params.flit or "68B"

    def mem_path(self, host: str, device: str, credits: int = 32,
                 read_fraction: float = 1.0) -> MemPath:
        """The CXL.mem path from ``host`` to the memory of ``device``, for traffic with
        this share of reads: each message costs its share of the mixed stream's flits
        (:func:`~cxlsim.link.flits.mixed_message_bytes`; all reads: each kind's own
        stream)."""
        if device not in self.memories:
            raise ValueError(f"{device!r} is not a CXL device with memory")
        down, up, tail_down, tail_up, mode = self._hops(host, device)
        mixed = mixed_message_bytes(mode, read_fraction)
        wire = {kind: mixed[kind] for kind in _MEM_KINDS}
        return MemPath(self.env, down, up, self.memories[device], wire,
                       tail_down=tail_down, tail_up=tail_up, credits=credits)

    def cache_path(self, host: str, device: str, home_latency: float = 0.0,
                   snoop_latency: float = 50.0, credits: int = 32) -> CachePath:
        """The CXL.cache path between ``device``'s cache and ``host``'s memory."""
        if host not in self.host_memories:
            raise ValueError(f"host {host!r} has no dram node attached")
        down, up, tail_down, tail_up, mode = self._hops(host, device)
        wire = {kind: wire_bytes_per_message(mode, kind) for kind in _CACHE_KINDS}
        return CachePath(self.env, up, down, self.host_memories[host], wire,
                         tail_up=tail_up, tail_down=tail_down, home_latency=home_latency,
                         snoop_latency=snoop_latency, credits=credits)

    def biased_memory(self, host: str, device: str, table: BiasTable,
                      **kwargs: float) -> BiasedMemory:
        """``device``'s own memory under bias coherence with ``host`` (Type 2, HDM-D);
        ``kwargs`` are :class:`~cxlsim.coherence.BiasedMemory`'s timing and batching."""
        if device not in self.memories or self.topology.graph.nodes[device]["spec"].cxl_type != 2:
            raise ValueError(f"{device!r} is not a CXL Type 2 device with memory")
        down, up, tail_down, tail_up, mode = self._hops(host, device)
        wire = {kind: wire_bytes_per_message(mode, kind) for kind in (*_MEM_KINDS, *_CACHE_KINDS)}
        return BiasedMemory(self.env, up, down, self.memories[device], wire, table,
                            tail_up=tail_up, tail_down=tail_down, **kwargs)

    def device_link(self, host: str, device: str) -> tuple[LinkDirection, LinkDirection]:
        """``device``'s own link to a root port of ``host``: (up, down) directions."""
        down, up, _, _, _ = self._hops(host, device)
        if len(down) != 1:
            raise ValueError(f"{device!r} is {len(down)} links from {host!r}; a device on its "
                             "own root-port link is needed here")
        return up[0][1], down[0][1]

    def dma_engine(self, host: str, device: str, setup_latency: float | None = None,
                   protocol: str = "io", bursts: int = 256) -> DmaEngine:
        """A DMA engine on ``device`` moving data to and from ``host``'s memory: PCIe /
        CXL.io TLPs, or ``protocol="cache"`` the ORNL model's CXL transfer. The fixed
        cost is the node's ``dma_setup`` unless given; TLP sizes follow the link's MPS,
        MRRS and RCB; the root port sits between the link and host memory each way, as
        on the CXL.cache and CXL.mem paths."""
        up, down = self.device_link(host, device)
        if setup_latency is None:
            setup_latency = getattr(self.topology.graph.nodes[device]["spec"], "dma_setup", 0.0)
        host_latency = self.host_memories[host].params.media_latency \
            if host in self.host_memories else 0.0
        _, _, _, port_latency, _ = self._hops(host, device)
        return DmaEngine(self.sim, f"{device}_dma", {
            "setup_latency": setup_latency, "host_latency": host_latency,
            "port_latency": port_latency, "protocol": protocol, "bursts": bursts},
            up, down, phy_config(up.params), parent=self)
