"""cxlsim: a discrete-event simulator of the CXL interconnect and of tiered memory.

The public entry points::

    from cxlsim import load_experiment, load_topology, run
    result = run("experiments/switch-pool-routes.yaml", overrides=["seed=3"])
    result.metrics, result.tables["routes"]
"""

from __future__ import annotations

from pathlib import Path

from cxlsim.errors import InputError
from cxlsim.experiments import RunResult, load_experiment
from cxlsim.topology import load_topology

__version__ = "0.1.0"
__all__ = ["InputError", "RunResult", "load_experiment", "load_topology", "run"]


def run(experiment: str | Path, overrides: list[str] | tuple[str, ...] = (),
        progress: bool = False) -> RunResult:
    """Load an experiment file, apply ``--set``-style overrides, run it, return the result."""
    return load_experiment(experiment, overrides).run(progress=progress)
