"""Figures of the ORNL transfer study (slides' Figures 2, 3 and 5)."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from cxlsim.plot.style import styled


@styled()
def transfer_figure(transfer: pd.DataFrame) -> go.Figure:
    """Transfer time versus size, simulated (lines) and closed form (dots)."""
    fig = px.line(transfer, x="size_B", y="t_sim_ns", color="config", log_x=True, log_y=True,
                  markers=False, labels={"size_B": "transfer size (B)",
                                         "t_sim_ns": "transfer time (ns)"},
                  title="Transfer time: PCIe vs CXL (lines: simulated; dots: closed form)")
    for config, part in transfer.groupby("config", sort=False):
        fig.add_trace(go.Scatter(x=part["size_B"], y=part["t_analytic_ns"], mode="markers",
                                 marker={"size": 4, "color": "black"}, showlegend=False,
                                 name=f"{config} (closed form)"))
    return fig


@styled()
def relative_figure(transfer: pd.DataFrame) -> go.Figure:
    """CXL transfer time relative to PCIe versus size; below 1 CXL is faster."""
    cxl = transfer[transfer["cxl_penalty"].notna()].copy()
    cxl["relative"] = 1 / cxl["speedup"]
    fig = px.line(cxl, x="size_B", y="relative", color="config", log_x=True,
                  labels={"size_B": "transfer size (B)", "relative": "t_CXL / t_PCIe"},
                  title="Relative transfer time CXL / PCIe")
    fig.add_hline(y=1, line_dash="dot")
    return fig


@styled()
def chunk_figure(chunks: pd.DataFrame) -> go.Figure:
    """Total time to move the application's data as a function of chunk size."""
    fig = px.line(chunks, x="chunk_B", y="total_s", color="config", log_x=True, log_y=True,
                  markers=True, labels={"chunk_B": "chunk size (B)",
                                        "total_s": "total transfer time (s)"},
                  title="Total application transfer time vs chunk size")
    return fig
