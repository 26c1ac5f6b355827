"""Tiered memory driven by traces: a trace through the cores' hierarchies onto the memory
nodes in simulated time (:mod:`cxlsim.tiered.run`), under a placement policy by name
(:mod:`cxlsim.tiered.policies`)."""

from cxlsim.tiered.policies import POLICIES, EpochView, Policy
from cxlsim.tiered.run import Survey, TraceRun, simulate, survey

__all__ = ["POLICIES", "EpochView", "Policy", "Survey", "TraceRun", "simulate", "survey"]
