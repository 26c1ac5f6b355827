"""Experiments: files naming a kind of study, loaded, run, and written as run folders."""

from cxlsim.experiments.loader import load_experiment
from cxlsim.experiments.output import write_run_folder
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec, experiment_kinds, register

__all__ = ["ExperimentSpec", "RunResult", "experiment_kinds", "load_experiment", "register",
           "write_run_folder"]
