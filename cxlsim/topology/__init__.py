"""Topologies: the file schema, the checked networkx graph, routes, and which host each
pooled logical device is bound to.

>>> topo = load_topology("switch-pool")   # a shipped one by name, or a file  # doctest: +SKIP
>>> [(r.device, r.latency) for r in topo.routes]           # doctest: +SKIP
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from cxlsim.config import load_document, validate_document
from cxlsim.errors import InputError
from cxlsim.resources import file_or_shipped
from cxlsim.fabric import Bindings
from cxlsim.topology.graph import Route, bindings, build_graph, graph_problems, routes
from cxlsim.topology.schema import DEVICE_TYPES, LinkSpec, TopologySpec

__all__ = ["DEVICE_TYPES", "LinkSpec", "Route", "Topology", "TopologySpec", "build_graph",
           "graph_problems", "load_topology", "routes"]


@dataclass
class Topology:
    """A validated topology: its spec, its graph and its host-to-device routes."""

    spec: TopologySpec
    graph: nx.Graph
    source: str = ""
    routes: list[Route] = field(default_factory=list)

    @classmethod
    def from_spec(cls, spec: TopologySpec, source: str = "") -> Topology:
        """Check a spec built in Python (errors carry key paths but no file lines)."""
        graph = build_graph(spec)
        return cls(spec, graph, source, routes(graph))

    @functools.cached_property
    def pool(self) -> Bindings:
        """Pooled devices' logical devices and the host each is bound to."""
        return bindings(self.spec)

    def memory_of(self, host: str) -> list[tuple[str, int, bool]]:
        """What ``host`` sees as memory, in the order Linux numbers its NUMA nodes: its
        DRAM (where its CPUs are), then each logical device bound to it (a node without
        CPUs): (name, bytes, has CPUs)."""
        dram = [(n.name, int(n.capacity), True) for n in self.spec.nodes
                if n.type == "dram" and n.attached_to == host]
        return dram + [(ld.name, ld.capacity, False) for ld in self.pool.of(host)]

    def request_limit(self, device: str) -> int | None:
        """Requests the memory controller of CXL device ``device`` takes at once (the
        credits it grants its host): its ``request_buffer``, or ``channel_queue`` times
        the channels of the DRAM attached to it, whichever is less; None for no limit."""
        spec = self.graph.nodes[device]["spec"]
        limits = [spec.request_buffer] if spec.request_buffer else []
        if spec.channel_queue:
            limits.append(spec.channel_queue * sum(
                n.channels for n in self.spec.nodes
                if n.type == "dram" and n.attached_to == device))
        return min(limits, default=None)


def load_topology(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Topology:
    """Load, validate and check a topology file, or the topology shipped with cxlsim of
    that name (``switch-pool``); errors name file, line and key."""
    path = file_or_shipped("topologies", path)
    doc = load_document(path, overrides)
    try:
        spec = validate_document(TopologySpec, doc)
    except InputError as exc:  # with the graph problems found without the bad parts
        raise exc.with_also(graph_problems(doc)) from None
    graph = build_graph(spec, doc)
    return Topology(spec, graph, str(path), routes(graph))
