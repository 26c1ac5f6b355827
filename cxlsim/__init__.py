"""cxlsim: a discrete-event simulator of the CXL interconnect and of tiered memory.

The public entry points::

    from cxlsim import load_experiment, load_topology, run
    result = run("experiments/switch-pool-routes.yaml", overrides=["seed=3"])
    result.metrics, result.tables["routes"]
    run("ornl-transfer", progress=True)  # a shipped experiment by name, a progress bar
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cxlsim import runwarnings
from cxlsim.errors import InputError
from cxlsim.lazy import lazy_attributes
from cxlsim.resources import VERSION as __version__
__all__ = ["InputError", "RunResult", "load_experiment", "load_topology", "run"]
__getattr__ = lazy_attributes(__name__, {"RunResult": ".experiments",
                                         "load_experiment": ".experiments",
                                         "load_topology": ".topology"})

runwarnings.install()  # a RunWarning shows as one line, in a notebook as on the CLI

if TYPE_CHECKING:
    from cxlsim.experiments import RunResult, load_experiment
    from cxlsim.topology import load_topology


def run(experiment: str | Path, overrides: list[str] | tuple[str, ...] = (),
        progress: bool = False, jobs: int | None = None, executor: str | None = None,
        out: str | Path | None = None, quick: bool = False, report: bool = False
        ) -> RunResult:
    """Load an experiment file (or a shipped one by name, as ``cxlsim run`` does), apply
    ``--set``-style overrides, run it (every point of its sweep, on ``jobs`` processes or
    ``executor``; ``progress``: a bar on stderr; ``quick``: its quick form, as ``cxlsim
    run --quick``), write ``out`` if given (``report``: with its ``report.html``), return
    it."""
    from cxlsim.experiments.sweep import run_file

    return run_file(experiment, overrides, progress=progress, jobs=jobs, executor=executor,
                    out=out, quick=quick, report=report)
