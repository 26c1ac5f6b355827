"""The self-contained ``report.html`` of a run (``cxlsim run --report``): metrics, in
display units, figures and tables."""

from __future__ import annotations

import html

from cxlsim.experiments.display import metric_text
from cxlsim.experiments.result import RunResult

_STYLE = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
          "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
          "padding:3px 8px;text-align:right}th{background:#f4f4f4}")


def report_html(result: RunResult, max_rows: int = 200) -> str:
    """HTML with the metrics, every figure (plotly.js embedded once) and every table."""
    desc = getattr(result.config, "description", "")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(result.experiment)}"
             f"</title><style>{_STYLE}</style></head><body>",
             f"<h1>{html.escape(result.experiment)}</h1><p>{html.escape(desc)}</p>",
             "<h2>Metrics</h2><table>"]
    parts += [f"<tr><th>{html.escape(k)}</th><td>{html.escape(metric_text(k, v))}</td></tr>"
              for k, v in result.metrics.items()]
    parts.append("</table>")
    for i, (name, fig) in enumerate(result.figures.items()):
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0)))
    for name, table in result.tables.items():
        more = f" (first {max_rows} of {len(table)} rows)" if len(table) > max_rows else ""
        parts.append(f"<h2>Table {html.escape(name)}{more}</h2>")
        parts.append(table.head(max_rows).to_html(index=False, float_format=lambda x: f"{x:.6g}"))
    parts.append("</body></html>")
    return "\n".join(parts)
