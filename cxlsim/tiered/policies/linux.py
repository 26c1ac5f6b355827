"""Linux without a tiering policy: what a machine with CXL memory does out of the box.

* ``default-linux``: every first touch aims at the local node; when it is short the
  allocator falls back to the CXL node (zonelist order) and kswapd reclaims without
  demoting (file pages dropped, anon pages kept without swap). Nothing ever moves back:
  pages stay where the allocation found room (the TPP paper's "default Linux" baseline,
  Maruf et al., ASPLOS'23).
* ``demotion``: the same with reclaim demoting to the next tier
  (``/sys/kernel/mm/numa/demotion_enabled``, merged June 2021, default off:
  mm/memory-tiers.c ``numa_demotion_enabled``); nothing promotes, so a demoted page
  that turns hot stays on CXL.

Both are kernel behaviour (:class:`~cxlsim.mm.kernel.KernelMemory`): the policies
only aim first touches and turn the switches.
"""

from __future__ import annotations

import numpy as np

from cxlsim.tiered.policies.base import Policy, PolicyParams, Switches


class DefaultLinux(Policy):
    """Local-first allocation, reclaim without demotion, no NUMA balancing."""

    name = "default-linux"
    demote = False

    @classmethod
    def switches(cls, params: PolicyParams) -> Switches:
        return Switches(kernel={"demotion_enabled": cls.demote, "numa_balancing_tiering": False},
                        numa_balancing={"enabled": False})

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        return np.full(len(pages), self.local, np.int64), None


class Demotion(DefaultLinux):
    """Local-first allocation, reclaim demoting to CXL; no promotion."""

    name = "demotion"
    demote = True


#: The policies of plain Linux, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (DefaultLinux, Demotion)
