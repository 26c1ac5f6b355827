"""Topology spec -> networkx graph -> consistency checks -> host-to-device routes.

A topology's bindings give pooled logical devices to hosts (:mod:`cxlsim.fabric`): each
names an LD there is, is bound once, to a host that reaches the device.

Graph nodes carry their spec (``spec``) and the latency a request spends crossing them
(``latency``: root port / home agent, switch hop). Edges carry the link spec, its
one-way latency and its raw bandwidth per direction. Routes are the least-latency paths
from every host to every device, with summed latency and bottleneck serializer bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import networkx as nx
from pydantic import TypeAdapter, ValidationError

from cxlsim.config.overrides import as_typed
from cxlsim.config.source import Document, KeyPath
from cxlsim.errors import InputError
from cxlsim.fabric import BindError, Bindings, LogicalDevice
from cxlsim.link.tlp import cachemem_bandwidth
from cxlsim.topology.schema import (DEVICE_TYPES, LinkSpec, NodeSpec, TopologySpec,
                                    check_endpoint)
from cxlsim.units import USER_INPUT


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
    known) and raises them together, so one run shows every mistake of a file.

    ``left_out`` names nodes not in the graph because their own fields are wrong: a
    reference to one is not another problem. ``explained`` collects the nodes a failed
    check involved: that their part of the graph is cut off is no further problem.
    After a link to an unknown node (``dangling``), any part may be the one it was meant
    for.
    """

    def __init__(self, doc: Document | None, left_out: frozenset[str] = frozenset()) -> None:
        self.doc = doc
        self.left_out = left_out
        self.explained: set[str] = set()
        self.dangling = False
        self.problems: list[InputError] = []

    def fail(self, message: str, path: KeyPath, *involved: str) -> None:
        where = self.doc.locate(path) if self.doc is not None else None
        self.problems.append(InputError(message, location=where, key=as_typed(path, where)))
        self.explained.update(involved)

    def raise_all(self) -> None:
        if self.problems:
            raise self.problems[0].with_also(self.problems[1:])


#: One link as the graph checks see it: its index, its two endpoints and its spec
#: (None when only its endpoints are known to be valid).
_Link = tuple[int, str, str, LinkSpec | None]


def build_graph(spec: TopologySpec, doc: Document | None = None) -> nx.Graph:
    """Build and check the graph of ``spec``; ``doc`` gives file positions for errors."""
    check = _Checker(doc)
    graph = _checked_graph(list(enumerate(spec.nodes)),
                           [(i, link.src, link.dst, link) for i, link in enumerate(spec.links)],
                           check, complete=True)
    check.raise_all()
    _check_bindings(spec, graph, check)
    check.raise_all()
    graph.name = spec.name
    _weigh(graph)
    return graph


def bindings(spec: TopologySpec) -> Bindings:
    """The fabric manager's table of ``spec``: every pooled device's LDs, bound as the
    spec's bindings say (a spec that passed :func:`build_graph`)."""
    table = Bindings(LogicalDevice(node.name, i, int(ld.capacity))
                     for node in spec.nodes if node.type == "cxl_device"
                     for i, ld in enumerate(node.logical_devices))
    for binding in spec.bindings:
        table.bind(binding.ld, binding.host)
    return table


def _check_bindings(spec: TopologySpec, graph: nx.Graph, check: _Checker) -> None:
    """Each binding names an LD of a pooled device and a host that reaches the device;
    an LD is bound once."""
    table = bindings(spec.model_copy(update={"bindings": []}))
    hosts = sorted(n for n, d in graph.nodes(data=True) if d["type"] == "host")
    first: dict[str, int] = {}
    for i, binding in enumerate(spec.bindings):
        if binding.host not in hosts:
            check.fail(f"{binding.host!r} is not a host of this topology; its hosts: "
                       f"{', '.join(hosts)}", ("bindings", i, "host"))
            continue
        try:
            ld = table.ld(binding.ld)
        except BindError as exc:
            check.fail(str(exc), ("bindings", i, "ld"))
            continue
        if binding.ld in first:
            check.fail(f"{binding.ld} is bound to {table.host[binding.ld]} already "
                       f"(bindings[{first[binding.ld]}]); an LD belongs to one host at a time",
                       ("bindings", i, "ld"))
            continue
        if not nx.has_path(graph, binding.host, ld.device):
            check.fail(f"{binding.host} cannot reach {ld.device} (no path of links between "
                       f"them), so it cannot use {binding.ld}", ("bindings", i, "host"))
            continue
        table.bind(binding.ld, binding.host)
        first[binding.ld] = i


def graph_problems(doc: Document) -> list[InputError]:
    """The graph problems of a topology document that failed its schema check, so that
    one run shows both: checked on the nodes valid on their own and on the links whose
    endpoints are; reachability only if no node or link had to be left out."""
    data = doc.data if isinstance(doc.data, dict) else {}
    nodes, links = data.get("nodes"), data.get("links", [])
    if not nodes or not isinstance(nodes, list) or not isinstance(links, list):
        return []
    valid = [(i, node) for i, node in enumerate(map(_valid_node, nodes)) if node is not None]
    ends = [(i, *pair, None) for i, pair in enumerate(map(_valid_ends, links)) if pair]
    left_out = frozenset(item["name"] for item in nodes if isinstance(item, dict)
                         and isinstance(item.get("name"), str))
    check = _Checker(doc, left_out - {node.name for _, node in valid})
    _checked_graph(valid, ends, check, complete=len(valid) == len(nodes) and
                   len(ends) == len(links))
    return check.problems


_NODE = TypeAdapter(NodeSpec)


def _valid_node(item: Any) -> NodeSpec | None:
    try:
        return _NODE.validate_python(item, context={USER_INPUT: True})
    except ValidationError:
        return None


def _valid_ends(item: Any) -> tuple[str, str] | None:
    if not isinstance(item, dict):
        return None
    ends = item.get("from"), item.get("to")
    try:
        return tuple(check_endpoint(end) for end in ends) \
            if all(isinstance(end, str) for end in ends) else None
    except ValueError:
        return None


def _checked_graph(nodes: list[tuple[int, NodeSpec]], links: list[_Link], check: _Checker,
                   complete: bool) -> nx.Graph:
    """The graph of ``nodes`` (with their index in the file) and ``links``, its problems
    told to ``check``; reachability is checked if the graph is ``complete`` (no node or
    link left out of it)."""
    graph = nx.Graph()
    for i, node in nodes:
        if node.name in graph:
            check.fail(f"duplicate node name {node.name!r}", ("nodes", i, "name"), node.name)
            continue
        latency = getattr(node, "latency", 0.0) if node.type == "root_port" else 0.0
        if node.type == "switch":
            latency = node.hop_latency
        graph.add_node(node.name, spec=node, type=node.type, latency=latency)
    for i, node in nodes:
        _attach(graph, check, i, node)
    _check_channel_queues(nodes, graph, check)
    _add_links(nodes, links, graph, check)
    if complete:
        _check_reachable(nodes, graph, check)
    return graph


def _attach(graph: nx.Graph, check: _Checker, i: int, node: NodeSpec) -> None:
    """Join a root port to its host, a dram node to what it is attached to."""
    owner_key = {"root_port": "host", "dram": "attached_to"}.get(node.type)
    if owner_key is None:
        return
    owner = getattr(node, owner_key)
    allowed = ("host",) if node.type == "root_port" else ("host", *DEVICE_TYPES)
    if owner not in graph or graph.nodes[owner]["type"] not in allowed:
        if owner not in check.left_out:
            check.fail(f"{owner!r} is not a {' or '.join(allowed)} node of this topology",
                       ("nodes", i, owner_key), node.name)
        return
    graph.add_edge(owner, node.name, link=None, latency=0.0, bandwidth=math.inf,
                   internal=True)


def _check_channel_queues(nodes: list[tuple[int, NodeSpec]], graph: nx.Graph,
                          check: _Checker) -> None:
    """A device's ``channel_queue`` counts per channel of the dram node attached to it:
    without one it would limit nothing, silently."""
    for i, node in nodes:
        if getattr(node, "channel_queue", None) and node.name in graph and not any(
                graph.nodes[n]["type"] == "dram" for n in graph.neighbors(node.name)):
            check.fail(f"channel_queue ({node.channel_queue}) counts requests per channel of "
                       f"the device's DRAM, but no dram node is attached to {node.name!r}; "
                       f"expected a dram node with attached_to: {node.name}, or "
                       "request_buffer for a limit of the whole device",
                       ("nodes", i, "channel_queue"), node.name)


def _add_links(nodes: list[tuple[int, NodeSpec]], links: list[_Link], graph: nx.Graph,
               check: _Checker) -> None:
    used: dict[tuple[str, str], int] = {}
    per_node: dict[str, int] = {}
    named: dict[str, int] = {}  # a link's name -> the first link of that name
    for i, src, dst, link in links:
        if link is not None and link.name is not None:
            if link.name in named:
                check.fail(f"duplicate link name {link.name!r} (links[{named[link.name]}] "
                           "has it); a link's name must be unique", ("links", i, "name"))
            named.setdefault(link.name, i)
        ends = [_endpoint(graph, check, used, i, key, endpoint)
                for key, endpoint in (("from", src), ("to", dst))]
        if None in ends:
            check.explained.update(end.partition(".")[0] for end in (src, dst))
            continue
        a, b = ends
        for node in ends:
            per_node[node] = per_node.get(node, 0) + 1
        if a == b:
            check.fail("a link must join two different nodes", ("links", i), a)
        elif graph.has_edge(a, b):
            check.fail(f"{a!r} and {b!r} are already joined by another link", ("links", i),
                       a, b)
        elif nx.has_path(graph, a, b):
            loop = " -- ".join(nx.shortest_path(graph, a, b) + [a])
            check.fail(f"this link closes a loop ({loop}); a PCIe/CXL hierarchy is a tree",
                       ("links", i))
        else:
            graph.add_edge(a, b, link=link, index=i, internal=False)
    for i, node in nodes:
        if node.type == "switch" and per_node.get(node.name, 0) > node.ports:
            check.fail(f"switch {node.name!r} has {node.ports} ports but "
                       f"{per_node[node.name]} links", ("nodes", i, "ports"))


def _weigh(graph: nx.Graph) -> None:
    """Each link edge's one-way latency and raw bandwidth per direction, capped by the
    ``port_bandwidth`` of a switch at either end."""
    for a, b, edge in graph.edges(data=True):
        if edge["internal"]:
            continue
        link = edge["link"]
        caps = [getattr(graph.nodes[n]["spec"], "port_bandwidth", None) for n in (a, b)]
        edge["latency"] = link.one_way_latency
        edge["bandwidth"] = min([link.raw_bandwidth] + [c for c in caps if c is not None])


def _endpoint(graph: nx.Graph, check: _Checker, used: dict[tuple[str, str], int], i: int,
              key: str, endpoint: str) -> str | None:
    """The node of one end of ``links[i]``, claiming its port; None if it is wrong."""
    node, _, port = endpoint.partition(".")
    if node not in graph:
        if node not in check.left_out:
            check.fail(f"link to unknown node {node!r}; known nodes: "
                       f"{', '.join(sorted(graph))}", ("links", i, key))
            check.dangling = True
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


def _check_reachable(nodes: list[tuple[int, NodeSpec]], graph: nx.Graph,
                     check: _Checker) -> None:
    """Every node must hang off a host. A part cut off by a problem already found (a
    wrong link or attachment in it) is that problem's echo, not another one; after a
    link to an unknown node, any cut-off part may be the one it was meant for."""
    hosts = [n for n, d in graph.nodes(data=True) if d["type"] == "host"]
    if not hosts:
        check.fail("a topology needs at least one node of type 'host'", ("nodes",))
        return
    if check.dangling:
        return
    reachable = set().union(*(nx.node_connected_component(graph, h) for h in hosts))
    echoes = set().union(*(nx.node_connected_component(graph, n) for n in check.explained
                           if n in graph and n not in reachable))
    for i, node in nodes:
        if node.name in graph and node.name not in reachable | echoes:
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
