"""The ORNL pipelined application model and the rule for when moving a task pays.

    t_app = d * t_stage + (n - 1) * t_stage + s     (d stages, n chunks, setup s)
    moving a task pays when  t - t' > 2 d           (t, t': run time here and there;
                                                     d: time to move its data one way)

Source: Cabrera, Young, Vetter, ExHET'22 slides.
"""

from __future__ import annotations


def t_app(stages: int, chunks: int, t_stage: float, setup: float = 0.0) -> float:
    """Time of a balanced pipeline: fill (``stages``) plus one stage per further chunk."""
    if stages < 1 or chunks < 1:
        raise ValueError("a pipeline has at least one stage and one chunk")
    return stages * t_stage + (chunks - 1) * t_stage + setup


def move_pays(t_here: float, t_there: float, move: float) -> bool:
    """True when running elsewhere saves more than moving the data there and back."""
    return t_here - t_there > 2 * move
