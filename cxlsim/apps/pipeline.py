"""A chunked pipeline of stages as SimPy processes: each stage takes chunks in order,
works on one at a time, and hands it on through a bounded buffer.

A stage's work on a chunk is a function returning an event (a timeout, a transfer's
completion), so stages may be compute kernels or link transfers. The pipeline time,
its fill and drain, and the bottleneck emerge from the run; for a balanced pipeline
it equals the closed form ``d * t + (n - 1) * t + s`` (:func:`cxlsim.analytic.t_app`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import simpy

#: A stage: its name and a function (env, chunk index) -> event that ends its work.
Stage = tuple[str, Callable[[simpy.Environment, int], simpy.Event]]


@dataclass
class PipelineRun:
    """When each stage finished each chunk (ns), and the whole pipeline's end."""

    finished: dict[str, list[float]]
    end: float


def run_pipeline(env: simpy.Environment, stages: Sequence[Stage], chunks: int,
                 buffer: int = 1, start: float = 0.0) -> simpy.Process:
    """Start the pipeline after ``start`` ns; the returned process's value is a PipelineRun.

    ``buffer`` chunks may wait between two stages (double buffering is ``buffer=1``: one
    chunk in the next stage's input while it works on another).
    """
    if chunks < 1 or not stages:
        raise ValueError("a pipeline needs at least one stage and one chunk")
    queues = [simpy.Store(env, capacity=buffer) for _ in range(len(stages) - 1)]
    finished: dict[str, list[float]] = {name: [] for name, _ in stages}

    def stage(k: int):
        name, work = stages[k]
        if k == 0:
            yield env.timeout(start)
        for _ in range(chunks):
            chunk = (yield queues[k - 1].get()) if k > 0 else len(finished[name])
            yield work(env, chunk)
            finished[name].append(env.now)
            if k < len(stages) - 1:
                yield queues[k].put(chunk)

    def whole():
        yield env.all_of([env.process(stage(k)) for k in range(len(stages))])
        return PipelineRun(finished, env.now)

    return env.process(whole())
