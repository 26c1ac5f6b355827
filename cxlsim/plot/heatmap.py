"""A metric over one or two swept keys: a heat map (two keys) or a line (one key)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from cxlsim.plot.style import styled


@styled()
def heatmap(table: pd.DataFrame, x: str, y: str | None, z: str, title: str = "",
            ticks: Mapping[str, Mapping[Any, str]] | None = None) -> go.Figure:
    """``z`` per (``x``, ``y``) cell, axes in the order the values first appear.

    Rows sharing a cell (other swept keys) are averaged, and the title says so. With
    ``y`` None it draws ``z`` against ``x`` as a line. ``ticks`` gives, per column, the
    text to show for a value (e.g. ``{"latency [ns]": {50.0: "50 ns"}}``); other values
    show as they are.
    """
    ticks = ticks or {}

    def labels(column: str, values: Any) -> list[str]:
        return [ticks.get(column, {}).get(v, str(v)) for v in values]

    keys = [x] if y is None else [y, x]
    mean = table.groupby(keys, sort=False)[z].mean()
    if len(mean) < len(table):
        title += " (mean over the other swept keys)"
    if y is None:
        xs = list(mean.index)
        fig = go.Figure(go.Scatter(x=xs, y=mean.to_numpy(), mode="lines+markers"))
        fig.update_layout(xaxis_title=x, yaxis_title=z)
        if x in ticks:
            fig.update_xaxes(tickvals=xs, ticktext=labels(x, xs))
    else:
        cells = mean.unstack(x).reindex(index=pd.unique(table[y]), columns=pd.unique(table[x]))
        fig = go.Figure(go.Heatmap(
            z=cells.to_numpy(), x=labels(x, cells.columns), y=labels(y, cells.index),
            colorbar={"title": {"text": z}}, texttemplate="%{z:.4g}",
            hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>{z}=%{{z}}<extra></extra>"))
        fig.update_layout(xaxis={"title": {"text": x}, "type": "category"},
                          yaxis={"title": {"text": y}, "type": "category"})
    fig.update_layout(title=title)
    return fig
