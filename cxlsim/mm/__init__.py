"""The operating system's memory management, as Linux's ``mm/`` does it.

* the machine as the OS sees it: NUMA nodes and their fallback order
  (:mod:`~cxlsim.mm.numa`), memory policies (:mod:`~cxlsim.mm.mempolicy`), every page's
  placement, which the policies, the kernel model and the page table share
  (:mod:`~cxlsim.mm.placement`);
* the kernel's memory state that tiering policies act on, :class:`KernelMemory`
  (:mod:`~cxlsim.mm.kernel`), and its parts: zones with their watermarks and memory tiers
  (:mod:`~cxlsim.mm.watermarks`), LRU lists (:mod:`~cxlsim.mm.lru`), reclaim and kswapd
  with demotion (:mod:`~cxlsim.mm.reclaim`), counters (:mod:`~cxlsim.mm.vmstat`),
  tunables (:mod:`~cxlsim.mm.params`);
* the mechanisms policies use: what moving a page costs the cores and what limits it
  (:mod:`~cxlsim.mm.migrate`), the DAMON access monitor (:mod:`~cxlsim.mm.damon`),
  NUMA balancing's hint-fault scanner (:mod:`~cxlsim.mm.numa_balancing`).

It sits between the hardware (:mod:`cxlsim.memory`: caches, page walks, DRAM, expanders),
whose models it reads, and the tiering policies with their trace run
(:mod:`cxlsim.tiered`), which call it.
"""

from typing import TYPE_CHECKING

from cxlsim.lazy import lazy_attributes

#: Where each public name lives; imported at first use (numba only when asked for).
_WHERE = {
    "Damon": ".damon",
    "DamonParams": ".damon",
    "KernelMemory": ".kernel",
    "KernelParams": ".params",
    "MemPolicy": ".mempolicy",
    "MigrationParams": ".migrate",
    "Migrator": ".migrate",
    "OutOfMemoryError": ".mempolicy",
    "PagePlacement": ".mempolicy",
    "NumaScan": ".numa_balancing",
    "Scanner": ".numa_balancing",
    "Numa": ".numa",
    "NumaParams": ".numa",
    "Placement": ".placement",
    "policy_shares": ".placement",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_attributes(__name__, _WHERE)

if TYPE_CHECKING:  # what the names are, for type checkers and IDEs
    from cxlsim.mm.damon import Damon, DamonParams
    from cxlsim.mm.kernel import KernelMemory
    from cxlsim.mm.mempolicy import MemPolicy, OutOfMemoryError, PagePlacement
    from cxlsim.mm.migrate import MigrationParams, Migrator
    from cxlsim.mm.numa import Numa, NumaParams
    from cxlsim.mm.numa_balancing import NumaScan, Scanner
    from cxlsim.mm.params import KernelParams
    from cxlsim.mm.placement import Placement, policy_shares
