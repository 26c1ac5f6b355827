"""The look of cxlsim's figures: plotly's ``plotly_white`` template, applied cheaply.

A figure given ``template="plotly_white"`` validates the whole template again (13 ms a
figure, most of a small run's drawing); a figure made while it is plotly's default
template takes it as it is (0.3 ms). :func:`styled` makes it the default for the
figures made inside, and gives the caller's default back after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import plotly.io as pio

#: The template of every figure cxlsim draws.
TEMPLATE = "plotly_white"


@contextmanager
def styled() -> Iterator[None]:
    """Figures made inside take :data:`TEMPLATE` (plotly's default template meanwhile)."""
    previous = pio.templates.default
    pio.templates.default = TEMPLATE
    try:
        yield
    finally:
        pio.templates.default = previous
