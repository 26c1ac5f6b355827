"""Start-up stays light: ``import cxlsim`` and ``cxlsim --help`` import none of the heavy
libraries (a test of the import graph, not a timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("pandas", "plotly", "numba", "scipy", "pyarrow", "simpy", "networkx")


def _imported(*args: str) -> set[str]:
    """Top-level packages a fresh interpreter imports running ``python -X importtime ARGS``."""
    out = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True,
                         text=True, check=False)
    names = set()
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


@pytest.mark.parametrize("args", [("-c", "import cxlsim"), ("-m", "cxlsim", "--help"),
                                  ("-m", "cxlsim", "run", "--help")])
def test_start_up_imports_no_heavy_library(args):
    imported = _imported(*args)
    assert "cxlsim" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_the_lazy_names_resolve():
    import cxlsim
    import cxlsim.traces as traces

    assert callable(cxlsim.load_experiment) and callable(cxlsim.load_topology)
    assert traces.WRITE == 1 and "zipfian" in traces.KINDS
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cxlsim.nope  # noqa: B018


def test_each_kind_is_found_in_the_module_that_registers_it():
    """kind_modules() reads the sources; importing every module registers the same."""
    from cxlsim.experiments import experiment_kinds
    from cxlsim.experiments.kinds import kind_modules

    assert {k: cls.__module__ for k, cls in experiment_kinds().items()} == kind_modules()


def test_loading_an_experiment_imports_only_its_kind():
    code = ("import sys; from cxlsim import load_experiment; "
            "load_experiment('experiments/ornl-transfer.yaml'); "
            "print(sorted(m for m in sys.modules if m.startswith('cxlsim.experiments.kinds.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[1]).stdout
    assert out.strip() == "['cxlsim.experiments.kinds.ornl_transfer']"


def test_an_experiment_without_memory_models_needs_no_compiler():
    """Loading a topology (its DRAM parameters) imports no numba: only building a
    memory model does (ornl-sweep's workers and report never need it)."""
    code = ("import sys; from cxlsim import load_experiment; "
            "load_experiment('experiments/ornl-sweep.yaml'); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[1]).stdout
    assert out.strip() == "False"
