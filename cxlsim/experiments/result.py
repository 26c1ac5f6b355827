"""The result of one run: scalar metrics, tidy tables, figures and the resolved config."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from pydantic import BaseModel


@dataclass
class RunResult:
    """What a run produced.

    ``metrics`` are scalars keyed by name; ``tables`` are tidy pandas DataFrames (one
    row per observation); ``figures`` are plotly figures for the report; ``config`` is
    the validated experiment that produced them.
    """

    experiment: str
    config: BaseModel
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, go.Figure] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """``{"experiment", "metrics", "tables": {name: [rows]}}`` with JSON-safe values."""
        return {
            "experiment": self.experiment,
            "metrics": {k: _json_safe(v) for k, v in self.metrics.items()},
            "tables": {name: [{k: _json_safe(v) for k, v in row.items()}
                              for row in df.to_dict(orient="records")]
                       for name, df in self.tables.items()},
        }

    def to_json(self, indent: int | None = None) -> str:
        """The JSON text of :meth:`to_json_dict`."""
        return json.dumps(self.to_json_dict(), indent=indent)


def _json_safe(value: Any) -> Any:
    """Numpy scalars to Python; NaN and infinities to None (JSON has neither)."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
