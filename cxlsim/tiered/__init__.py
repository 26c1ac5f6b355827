"""Tiered memory driven by traces: a trace through the cores' hierarchies onto the memory
nodes in simulated time (:mod:`cxlsim.tiered.run`), one host or several on one time
(:mod:`cxlsim.tiered.host`), under a placement policy by name
(:mod:`cxlsim.tiered.policies`). The kernel's mechanisms the policies use -- migration's
costs and limits, the DAMON monitor, NUMA balancing's scanner -- are :mod:`cxlsim.mm`'s."""

from cxlsim.lazy import lazy_attributes
from cxlsim.tiered.policies import POLICIES, EpochView, Policy
from cxlsim.tiered.host import Host, TraceRun
from cxlsim.tiered.run import run_hosts
from cxlsim.tiered.trace_survey import Survey, survey

__all__ = ["POLICIES", "EpochView", "Host", "Policy", "Survey", "TraceRun", "run_hosts",
           "survey"]
#: Names that moved to the OS layer (:mod:`cxlsim.mm`): they work here, with a warning,
#: for one release.
__getattr__ = lazy_attributes(__name__, {}, dict.fromkeys(("MigrationParams", "Migrator"),
                                                          "cxlsim.mm"))
