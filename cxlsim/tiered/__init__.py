"""Tiered memory driven by traces: a trace through the cores' hierarchies onto the memory
nodes in simulated time (:mod:`cxlsim.tiered.run`), under a placement policy by name
(:mod:`cxlsim.tiered.policies`), pages moved at migration's costs and limits
(:mod:`cxlsim.tiered.migration`), watched by a DAMON-style monitor
(:mod:`cxlsim.tiered.damon`)."""

from cxlsim.tiered.migration import MigrationParams, Migrator
from cxlsim.tiered.policies import POLICIES, EpochView, Policy
from cxlsim.tiered.run import Survey, TraceRun, simulate, survey

__all__ = ["POLICIES", "EpochView", "MigrationParams", "Migrator", "Policy", "Survey",
           "TraceRun", "simulate", "survey"]
