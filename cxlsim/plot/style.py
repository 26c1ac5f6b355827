"""The look of cxlsim's figures: plotly's ``plotly_white`` template, applied cheaply.

A figure given ``template="plotly_white"`` validates the whole template again (6 ms a
figure, 30-90 ms the first time), and so does every assignment of plotly's default
template through ``pio.templates.default``; a figure made while the template is the
default takes it as it is (0.4 ms). :func:`styled` makes it the default for the
figures made inside, setting the name where plotly keeps it (its registry's
``_default``, there since plotly 4; the public setter where it is not), and gives the
caller's default back after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import plotly.io as pio

#: The template of every figure cxlsim draws.
TEMPLATE = "plotly_white"


def _set_default(name: object) -> None:
    """Make ``name`` (a registered template's name, or what the default was) plotly's
    default template, without validating it again where plotly allows."""
    if hasattr(pio.templates, "_default"):
        pio.templates._default = name
    else:  # pragma: no cover - a plotly that stores its default elsewhere
        pio.templates.default = name


@contextmanager
def styled() -> Iterator[None]:
    """Figures made inside take :data:`TEMPLATE` (plotly's default template meanwhile)."""
    previous = pio.templates.default
    _set_default(TEMPLATE)
    try:
        yield
    finally:
        _set_default(previous)
