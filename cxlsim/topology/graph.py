"""Topology spec -> networkx graph -> consistency checks -> host-to-device routes.

Graph nodes carry their spec (``spec``) and the latency a request spends crossing them
(``latency``: root port / home agent, switch hop). Edges carry the link spec, its
one-way latency and its raw bandwidth per direction. Routes are the least-latency paths
from every host to every device, with summed latency and bottleneck serializer bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from cxlsim.config.source import Document, KeyPath, format_path
from cxlsim.errors import InputError
from cxlsim.link.tlp import cachemem_bandwidth
from cxlsim.topology.schema import DEVICE_TYPES, TopologySpec


@dataclass(frozen=True)
class Route:
    """The least-latency path from a host to a device."""

    host: str
    device: str
    path: tuple[str, ...]
    latency: float
    """One-way latency in ns: links plus root port and switch traversals."""
    bandwidth: float
    """Bottleneck bandwidth in B/s, per direction, as each link's serializer moves the
    route's traffic: raw after line encoding for CXL.cache/.mem (less with a
    ``cxl_penalty``), TLP bytes on PCIe."""
    links: int
    """Number of links crossed (host-internal attachments not counted)."""


class _Checker:
    """Collects problems at the file positions of their key paths (if a document is
    known) and raises them together, so one run shows every mistake of a file."""

    def __init__(self, doc: Document | None) -> None:
        self.doc = doc
        self.problems: list[InputError] = []

    def fail(self, message: str, path: KeyPath) -> None:
        where = self.doc.locate(path) if self.doc is not None else None
        self.problems.append(InputError(message, location=where, key=format_path(path)))

    def raise_all(self) -> None:
        if self.problems:
            raise self.problems[0].with_also(self.problems[1:])


def build_graph(spec: TopologySpec, doc: Document | None = None) -> nx.Graph:
    """Build and check the graph of ``spec``; ``doc`` gives file positions for errors."""
    check = _Checker(doc)
    graph = nx.Graph(name=spec.name)
    for i, node in enumerate(spec.nodes):
        if node.name in graph:
            check.fail(f"duplicate node name {node.name!r}", ("nodes", i, "name"))
            continue
        latency = getattr(node, "latency", 0.0) if node.type == "root_port" else 0.0
        if node.type == "switch":
            latency = node.hop_latency
        graph.add_node(node.name, spec=node, type=node.type, latency=latency)
    for i, node in enumerate(spec.nodes):
        owner_key = {"root_port": "host", "dram": "attached_to"}.get(node.type)
        if owner_key is None:
            continue
        owner = getattr(node, owner_key)
        allowed = ("host",) if node.type == "root_port" else ("host", *DEVICE_TYPES)
        if owner not in graph or graph.nodes[owner]["type"] not in allowed:
            check.fail(f"{owner!r} is not a {' or '.join(allowed)} node of this topology",
                       ("nodes", i, owner_key))
            continue
        graph.add_edge(owner, node.name, link=None, latency=0.0, bandwidth=math.inf,
                       internal=True)
    _add_links(spec, graph, check)
    if not check.problems:  # after a bad node or link, "unreachable" is only its echo
        _check_reachable(spec, graph, check)
    check.raise_all()
    return graph


def _add_links(spec: TopologySpec, graph: nx.Graph, check: _Checker) -> None:
    used: dict[tuple[str, str], int] = {}
    per_node: dict[str, int] = {}
    for i, link in enumerate(spec.links):
        ends = [_endpoint(graph, check, used, i, key, endpoint)
                for key, endpoint in (("from", link.src), ("to", link.dst))]
        if None in ends:
            continue
        a, b = ends
        for node in ends:
            per_node[node] = per_node.get(node, 0) + 1
        if a == b:
            check.fail("a link must join two different nodes", ("links", i))
        elif graph.has_edge(a, b):
            check.fail(f"{a!r} and {b!r} are already joined by another link", ("links", i))
        elif nx.has_path(graph, a, b):
            loop = " -- ".join(nx.shortest_path(graph, a, b) + [a])
            check.fail(f"this link closes a loop ({loop}); a PCIe/CXL hierarchy is a tree",
                       ("links", i))
        else:
            bandwidth = link.raw_bandwidth
            for node in ends:
                cap = getattr(graph.nodes[node]["spec"], "port_bandwidth", None)
                if cap is not None:
                    bandwidth = min(bandwidth, cap)
            graph.add_edge(a, b, link=link, index=i, latency=link.one_way_latency,
                           bandwidth=bandwidth, internal=False)
    for i, node in enumerate(spec.nodes):
        if node.type == "switch" and per_node.get(node.name, 0) > node.ports:
            check.fail(f"switch {node.name!r} has {node.ports} ports but "
                       f"{per_node[node.name]} links", ("nodes", i, "ports"))


def _endpoint(graph: nx.Graph, check: _Checker, used: dict[tuple[str, str], int], i: int,
              key: str, endpoint: str) -> str | None:
    """The node of one end of ``links[i]``, claiming its port; None if it is wrong."""
    node, _, port = endpoint.partition(".")
    if node not in graph:
        check.fail(f"link to unknown node {node!r}; known nodes: "
                   f"{', '.join(sorted(graph))}", ("links", i, key))
        return None
    if graph.nodes[node]["type"] == "dram":
        check.fail(f"{node!r} is a dram node; memory is joined by 'attached_to', "
                   "not by links", ("links", i, key))
        return None
    if not port and graph.nodes[node]["type"] not in ("host", "switch"):
        port = "0"  # single-ported node: every unnamed link uses the same port
    if port:
        if (node, port) in used:
            check.fail(f"port {node}.{port} is already used by links[{used[node, port]}]",
                       ("links", i, key))
            return None
        used[node, port] = i
    return node


def _check_reachable(spec: TopologySpec, graph: nx.Graph, check: _Checker) -> None:
    hosts = [n for n, d in graph.nodes(data=True) if d["type"] == "host"]
    if not hosts:
        check.fail("a topology needs at least one node of type 'host'", ("nodes",))
        return
    reachable = set().union(*(nx.node_connected_component(graph, h) for h in hosts))
    for i, node in enumerate(spec.nodes):
        if node.name in graph and node.name not in reachable:
            check.fail(f"{node.type} {node.name!r} cannot be reached from any host",
                       ("nodes", i, "name"))


def routes(graph: nx.Graph) -> list[Route]:
    """Least-latency route from every host to every device it can reach."""
    out = []
    hosts = [n for n, d in graph.nodes(data=True) if d["type"] == "host"]
    devices = [n for n, d in graph.nodes(data=True) if d["type"] in DEVICE_TYPES]

    def cost(u: str, v: str, edge: dict) -> float:
        return edge["latency"] + graph.nodes[v]["latency"]

    for host in hosts:
        _, paths = nx.single_source_dijkstra(graph, host, weight=cost)
        for device in devices:
            if device not in paths:
                continue
            path = tuple(paths[device])
            edges = [graph.edges[a, b] for a, b in zip(path, path[1:])]
            latency = sum(e["latency"] for e in edges) + sum(
                graph.nodes[n]["latency"] for n in path[1:-1])
            bandwidth = min(e["bandwidth"] if e["internal"] else
                            cachemem_bandwidth(e["link"], e["bandwidth"]) for e in edges)
            out.append(Route(host, device, path, latency, bandwidth,
                             sum(not e["internal"] for e in edges)))
    return out
