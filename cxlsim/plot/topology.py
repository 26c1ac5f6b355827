"""Pictures of a topology and of its routes."""

from __future__ import annotations

import networkx as nx
import pandas as pd
import plotly.graph_objects as go

from cxlsim.plot.style import styled
from cxlsim.topology import Topology
from cxlsim.units import format_bandwidth, format_time

_COLORS = {"host": "#1f77b4", "root_port": "#7f7f7f", "switch": "#ff7f0e",
           "cxl_device": "#2ca02c", "accelerator": "#d62728", "pcie_device": "#9467bd",
           "dram": "#8c564b"}


def _layers(graph: nx.Graph) -> dict[str, int]:
    """Depth of each node below the nearest host: hosts on top, devices at the bottom."""
    hosts = [n for n, d in graph.nodes(data=True) if d["type"] == "host"]
    depth = nx.multi_source_dijkstra_path_length(graph, hosts, weight=lambda u, v, e: 1)
    return {n: depth.get(n, 0) for n in graph}


@styled()
def topology_figure(topo: Topology) -> go.Figure:
    """The graph drawn in layers from the hosts down, links labelled with bandwidth."""
    graph = topo.graph
    nx.set_node_attributes(graph, _layers(graph), "layer")
    pos = nx.multipartite_layout(graph, subset_key="layer", align="horizontal", scale=1)
    pos = {n: (x, -y) for n, (x, y) in pos.items()}
    fig = go.Figure()
    for a, b, edge in graph.edges(data=True):
        (x0, y0), (x1, y1) = pos[a], pos[b]
        label = "attached" if edge["internal"] else (
            f"{format_bandwidth(edge['bandwidth'], digits=3)}, {format_time(edge['latency'], digits=3)}")
        fig.add_trace(go.Scatter(x=[x0, x1], y=[y0, y1], mode="lines", hoverinfo="text",
                                 text=label, line={"color": "#999", "width": 2},
                                 showlegend=False))
        fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=label, showarrow=False,
                           font={"size": 9, "color": "#555"})
    for ntype, color in _COLORS.items():
        names = [n for n, d in graph.nodes(data=True) if d["type"] == ntype]
        if names:
            fig.add_trace(go.Scatter(
                x=[pos[n][0] for n in names], y=[pos[n][1] for n in names], mode="markers+text",
                text=names, textposition="top center", name=ntype,
                marker={"size": 18, "color": color}))
    fig.update_layout(title=f"Topology {topo.spec.name}",
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig


@styled()
def routes_figure(table: pd.DataFrame) -> go.Figure:
    """One-way latency of each host-to-device route, with its bottleneck bandwidth."""
    labels = table["host"] + " → " + table["device"]
    fig = go.Figure(go.Bar(x=labels, y=table["latency_ns"],
                           text=[f"{b:.1f} GB/s" for b in table["bandwidth_GBps"]],
                           textposition="outside"))
    fig.update_layout(title="Route latency (one way) and bottleneck bandwidth",
                      yaxis_title="latency (ns)")
    return fig
