"""``figures: false`` draws nothing, in every experiment kind (a sweep's points run so)."""

from __future__ import annotations

import pytest

from conftest import REPO
from cxlsim.experiments import load_experiment
from cxlsim.experiments.kinds import kind_modules

#: A shipped experiment of every kind, with what makes it small.
SMALL_RUNS = {
    "app-tiering": ("app-cxl-vs-ram", []),
    "bias": ("bias", ["sizes=[4 KiB, 64 KiB]", "reuse=[1, 2]"]),
    "cache-vs-dma": ("cache-vs-dma", ["sizes=[64 B, 1 KiB]", "in_flight=[1]", "ops=[read]"]),
    "curve-check": ("mess-graviton3", []),
    "deceval-flows": ("deceval-flows", []),
    "deceval-chunks": ("deceval-chunks", ["chunk_counts=[8, 64]"]),
    "epyc-latency": ("epyc7452-latency", ["blocks=[2 MiB, 8 MiB, 16 MiB]",
                                         "compare_block=16 MiB"]),
    "hmalloc": ("hmalloc", []),
    "weighted-interleave": ("weighted-interleave", []),
    "link-loaded": ("link-loaded", ["requests=400", "loads=[0.5]", "widths=[8]"]),
    "mlc-loaded-latency": ("mlc-loaded-latency", []),
    "ornl-transfer": ("ornl-transfer", []),
    "routes": ("switch-pool-routes", []),
    "trace-memory": ("trace-memory", []),
}


def test_every_kind_has_a_small_run():
    assert set(SMALL_RUNS) == set(kind_modules())


@pytest.mark.parametrize("kind", sorted(SMALL_RUNS))
def test_figures_false_draws_nothing(kind):
    name, small = SMALL_RUNS[kind]
    spec = load_experiment(REPO / "experiments" / f"{name}.yaml", [*small, "figures=false"])
    assert spec.kind == kind
    assert spec.run().figures == {}


def test_figures_are_drawn_white_and_the_callers_default_stays():
    """Every figure takes cxlsim's template (made while it is plotly's default, not
    validated per figure), and the caller's own default is left as it was."""
    import pandas as pd
    import plotly.graph_objects as go
    import plotly.io as pio

    from cxlsim.plot.heatmap import heatmap
    from cxlsim.plot.style import TEMPLATE

    before = pio.templates.default
    try:
        for theirs in (before, "ggplot2"):
            pio.templates.default = theirs
            fig = heatmap(pd.DataFrame({"a": [1, 2], "b": [3, 4], "z": [5.0, 6.0]}), "a", "b",
                          "z")
            assert fig.layout.template == pio.templates[TEMPLATE]
            assert pio.templates.default == theirs
            assert go.Figure().layout.template == pio.templates[theirs]
    finally:
        pio.templates.default = before
