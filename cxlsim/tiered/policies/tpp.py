"""TPP, Transparent Page Placement (Maruf et al., ASPLOS'23; LKML "[PATCH 0/5]
Transparent Page Placement for Tiered-Memory", H. Al Maruf, Nov 2021).

Modelled, each mechanism switchable (:class:`TppParams`):

* **hint faults only on CXL pages**: NUMA balancing's tiered mode
  (``kernel.numa_balancing=2``): the scanner makes only pages on non-top-tier nodes
  PROT_NONE, and a fault on one is a promotion candidate at once (no cpupid filter);
* **active-LRU gate** (patch 5): a fault on a page of the inactive list only
  ``mark_page_accessed``\\ s it (inactive -> referenced -> active, mm/swap.c); a fault on
  an active page promotes it to the local node, in the faulting task's context. The
  author reports "up to 11x" less promotion traffic at the same throughput;
* **decoupled allocation and demotion watermarks** (patches 3-4): kswapd of a top-tier
  node is woken once free pages fall below WMARK_DEMOTE (``demote_scale_factor``) and
  demotes the inactive tails to CXL until free pages reach it, while allocations still
  need only the low watermark -- so new allocations keep landing locally
  (:class:`~cxlsim.mm.kernel.KernelMemory`, ``demote_scale_factor``);
* **page-type-aware allocation** (the paper only, off by default): file pages are
  allocated on CXL first and promoted if they turn hot.

Promotions fail when the local node would fall below its high watermark
(``migrate_balanced_pgdat``, counted in the patch's ``pgmigrate_fail_dst_node_full``;
nothing wakes kswapd for them, the later upstream ``WMARK_PROMO`` rules are off,
``kernel.promo_watermark: false``) and pass the promotion rate limit
(:mod:`cxlsim.mm.migrate`). So without the decoupled watermarks (the paper's ablation)
nothing makes room for a promotion once first touches have filled DRAM to its low
watermark (the allocator falls back to CXL without waking kswapd): promotion stalls
until memory is freed. A demoted page is mapped PROT_NONE at once (the patch's
``PG_demoted`` and ``remove_migration_pte``): its next access is a hint fault without
waiting for the scanner. The 5.13 kernel counts every hint fault for the scan period
(:mod:`cxlsim.mm.numa_balancing`): failed promotions slow the scanner, successful ones
mostly private. Not modelled: the 10 s kswapd re-wake after ``kswapd_failures`` (no THP
here), the patch's own candidate counters (``pgpromote_candidate_*``,
``pgdemote_anon/file``), huge pages. Sources: the LKML cover letter and patches (Nov
2021) and their 5.13 port, lingfenghsiang/Nomad ``src/implementation_patches/tpp.patch``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from cxlsim.config.base import scales
from cxlsim.mm.lru import ACTIVE
from cxlsim.tiered.policies.base import EpochView, Policy, PolicyParams, Switches


class TppParams(PolicyParams):
    """TPP's tunables and the switches of its mechanisms (for ablations)."""

    demote_scale_factor: int = Field(200, ge=1, le=10000, description=(
        "vm.demote_scale_factor in 1/10000 of a node: WMARK_DEMOTE = size * factor / "
        "10000, clamped to [2 * high, size] (TPP patch 3, default 200 = 2 %, range "
        "1..10000)"), json_schema_extra=scales("fixed"))
    decoupled_watermarks: bool = Field(True, description=(
        "kswapd of a top-tier node woken below WMARK_DEMOTE and balancing to it (TPP "
        "patches 3-4); false: the kernel's own watermarks (the paper's ablation)"))
    active_lru_gate: bool = Field(True, description=(
        "promote only pages already on the active LRU; a fault on an inactive page marks "
        "it accessed (TPP patch 5); false: every hint fault on a CXL page promotes"))
    page_type_aware: bool = Field(False, description=(
        "allocate file pages on CXL first (TPP paper, arXiv 2206.02878 v2 p.8 per a "
        "reading note; not in the LKML patches)"))


class Tpp(Policy):
    """Local-first allocation; promotion of hint-faulting CXL pages (active ones, with
    the gate); demotion by kswapd, at WMARK_DEMOTE with decoupled watermarks."""

    name = "tpp"
    Params = TppParams
    in_task = True  # promotion happens in the hint-fault handler
    kernel_5x = True  # the 5.13 patch set: every hint fault counts for the scan period
    demoted_protnone = True  # PG_demoted: remove_migration_pte maps it PROT_NONE

    @classmethod
    def switches(cls, params: TppParams) -> Switches:
        return Switches(
            kernel={"numa_balancing_tiering": True, "promo_watermark": False,
                    "demotion_enabled": True,
                    "demote_scale_factor": params.demote_scale_factor
                    if params.decoupled_watermarks else None,
                    "file_on_lower_tier": params.page_type_aware},
            numa_balancing={"enabled": True})

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        return np.full(len(pages), self.local, np.int64), None

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        """The epoch's hint faults on pages still on non-top-tier nodes: promote the
        active ones (all, without the gate), mark the others accessed."""
        kernel = epoch.kernel
        faults = np.unique(epoch.hint_faults)
        node = kernel.node[faults]
        faults = faults[(node >= 0) & ~kernel.toptier[np.maximum(node, 0)]]
        if self.params.active_lru_gate:
            inactive = kernel.lru[faults] != ACTIVE
            kernel.mark_accessed(faults[inactive])
            faults = faults[~inactive]
        return faults, np.full(faults.size, self.local, np.int64)


#: TPP, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (Tpp,)
