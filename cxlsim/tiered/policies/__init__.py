"""Page-placement policies of the trace-driven run, by name: where each page goes.

The interface (what a policy sees, its tunables, the kernel switches it implies) is
:mod:`cxlsim.tiered.policies.base`; each policy family is a module of its own. The
registry :data:`POLICIES` maps names to classes:

* :mod:`~cxlsim.tiered.policies.static`: ``static`` (first touch by a memory policy,
  never moving: default Linux without tiering), ``oracle`` (the best static placement,
  known in advance), ``all-local`` and ``all-cxl`` (the bounds);
* :mod:`~cxlsim.tiered.policies.linux`: ``default-linux`` (local first, reclaim without
  demotion: a machine with CXL out of the box) and ``demotion`` (reclaim demotes to
  CXL, nothing promotes);
* :mod:`~cxlsim.tiered.policies.tpp`: ``tpp`` (TPP: hint faults on CXL pages, the
  active-LRU gate, decoupled allocation/demotion watermarks, page-type-aware
  allocation);
* :mod:`~cxlsim.tiered.policies.damon`: ``damon`` (DAMOS migrate_hot / migrate_cold
  schemes with quotas, goals and watermarks; SK hynix HMSDK's settings by default);
* :mod:`~cxlsim.tiered.policies.numab`: ``numab-tiering`` (Linux NUMA balancing's
  memory-tiering mode: hint-fault latency under an adaptive threshold promotes, reclaim
  demotes) and ``numa-balancing`` (its normal mode: a page faulting twice asks to move
  to the CPU's node and moves while DRAM has room; nothing demotes);
* :mod:`~cxlsim.tiered.policies.autotiering`: ``autotiering`` (ATC'21: per-page access
  histories from hint faults, least-accessed-page lists, conservative and opportunistic
  promotion, optional background demotion);
* :mod:`~cxlsim.tiered.policies.memtis`: ``memtis`` (SOSP'23: sampled access counts in
  a log2 histogram, hot and warm thresholds fitted to the fast tier, cooling, periodic
  migration);
* :mod:`~cxlsim.tiered.policies.colloid`: ``colloid`` (SOSP'24: hot pages move toward
  the tier with the lower loaded latency, until the tiers' latencies meet).
"""

from __future__ import annotations

from cxlsim.tiered.policies import (
    autotiering, colloid, damon, linux, memtis, numab, static, tpp)
from cxlsim.tiered.policies.base import EpochView, Policy, PolicyParams, Switches

#: Policy name -> class.
POLICIES: dict[str, type[Policy]] = {
    p.name: p for p in (*static.KINDS, *linux.KINDS, *tpp.KINDS, *numab.KINDS,
                        *autotiering.KINDS, *memtis.KINDS, *damon.KINDS,
                        *colloid.KINDS)}

__all__ = ["POLICIES", "EpochView", "Policy", "PolicyParams", "Switches"]
