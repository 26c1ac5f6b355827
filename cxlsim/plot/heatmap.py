"""A metric over one or two swept keys: a heat map (two keys) or a line (one key)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def heatmap(table: pd.DataFrame, x: str, y: str | None, z: str, title: str = "") -> go.Figure:
    """``z`` per (``x``, ``y``) cell, axes in the order the values first appear.

    Rows sharing a cell (other swept keys) are averaged, and the title says so. With
    ``y`` None it draws ``z`` against ``x`` as a line.
    """
    keys = [x] if y is None else [y, x]
    mean = table.groupby(keys, sort=False)[z].mean()
    if len(mean) < len(table):
        title += " (mean over the other swept keys)"
    if y is None:
        fig = go.Figure(go.Scatter(x=list(mean.index), y=mean.to_numpy(), mode="lines+markers"))
        fig.update_layout(xaxis_title=x, yaxis_title=z)
    else:
        cells = mean.unstack(x).reindex(index=pd.unique(table[y]), columns=pd.unique(table[x]))
        fig = go.Figure(go.Heatmap(
            z=cells.to_numpy(), x=[str(v) for v in cells.columns],
            y=[str(v) for v in cells.index], colorbar={"title": {"text": z}},
            texttemplate="%{z:.4g}", hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>{z}=%{{z}}"
                                                   "<extra></extra>"))
        fig.update_layout(xaxis={"title": {"text": x}, "type": "category"},
                          yaxis={"title": {"text": y}, "type": "category"})
    fig.update_layout(title=title, template="plotly_white")
    return fig
