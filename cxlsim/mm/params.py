"""The kernel memory model's tunables: sysctls and boot-time defaults, one model for
every part of it (watermarks, reclaim, demotion, TPP's additions), as a file's
``kernel:`` mapping gives them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from cxlsim.config.base import ProblemAt, StrictModel, scales


class KernelParams(StrictModel):
    """Kernel tunables of the memory model (sysctls and boot-time defaults)."""

    min_free_kbytes: int | None = Field(
        None, ge=128, description="vm.min_free_kbytes in KiB (none: the boot default, "
                                  "int_sqrt(16 * lowmem KiB) clamped to 128..262144, "
                                  "mm/page_alloc.c calculate_min_free_kbytes)",
        json_schema_extra=scales("size"))
    watermark_scale_factor: int = Field(
        10, ge=1, le=3000, description="vm.watermark_scale_factor in 1/10000 of a node "
                                       "(10 = 0.1 %, mm/page_alloc.c)",
        json_schema_extra=scales("fixed"))
    demotion_enabled: bool = Field(
        False, description="/sys/kernel/mm/numa/demotion_enabled: reclaim migrates pages "
                           "to the next lower tier before dropping or swapping them "
                           "(mm/memory-tiers.c numa_demotion_enabled, default false)")
    numa_balancing_tiering: bool = Field(
        False, description="kernel.numa_balancing bit 2 (NUMA_BALANCING_MEMORY_TIERING): "
                           "hint faults on lower-tier pages only, and (promo_watermark) "
                           "kswapd balances to WMARK_PROMO, a promotion refused for lack "
                           "of room waking the target's kswapd")
    promo_watermark: bool | None = Field(
        None, description=(
            "the upstream tiering mode's promotion watermark (mm/vmscan.c pgdat_balanced, "
            "mm/migrate.c numamigrate_isolate_folio, since 5.18/6.0): kswapd balances to "
            "WMARK_PROMO and a promotion refused for lack of room wakes the target's "
            "kswapd. None: with numa_balancing_tiering (upstream); TPP's patch set "
            "(5.13) has neither: its refused promotions just fail (dst_node_full)"))
    swap: bool = Field(False, description="a swap device exists: anon pages can be reclaimed "
                                          "by swapping them out")
    swappiness: int = Field(60, ge=0, le=200, description="vm.swappiness: relative reclaim "
                                                          "pressure on anon vs file (0..200)",
        json_schema_extra=scales("fixed"))
    movable_nodes: list[int] = Field(
        default_factory=list, description="nodes whose memory is onlined as ZONE_MOVABLE "
                                          "(e.g. CXL memory via dax/kmem, online_movable)",
        json_schema_extra=scales("fixed"))
    adistance: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="abstract distance per node (memory-tiers.c; none: 576 for nodes "
                          "with CPUs, 2880 for CPU-less nodes)",
        json_schema_extra=scales("fixed"))
    demote_scale_factor: int | None = Field(
        None, ge=1, le=10000, description=(
            "vm.demote_scale_factor in 1/10000 of a node (TPP, LKML '[PATCH 0/5] Transparent "
            "Page Placement for Tiered-Memory', Nov 2021, patch 3; default there 200 = 2 %; "
            "never upstream): a top-tier node with a demotion target gets WMARK_DEMOTE = "
            "size * factor / 10000 clamped to [2 * high, size]; an allocation or promotion "
            "leaving it below, or the scheduler tick finding it so, wakes kswapd, which "
            "reclaims until free pages exceed it. None: off"),
        json_schema_extra=scales("fixed"))
    file_on_lower_tier: bool = Field(
        False, description=(
            "TPP's page-type-aware allocation (the paper, not the LKML patches): file "
            "pages aimed at a top-tier node are allocated on its demotion target first"))

    def check_nodes(self, memory: Sequence[int]) -> None:
        """Raise :class:`ProblemAt` (a ValueError) unless the node numbers and per-node
        lists fit the machine whose nodes have ``memory`` pages each."""
        n = len(memory)
        for i, node in enumerate(self.movable_nodes):
            if not 0 <= node < n:
                raise ProblemAt(f"node {node} does not exist (nodes 0-{n - 1})",
                                ("movable_nodes", i))
        if all(node in self.movable_nodes for node in range(n) if memory[node]):
            raise ProblemAt("at least one node with memory must not be movable "
                            "(min_free_kbytes is shared among the other nodes)",
                            ("movable_nodes",))
        if self.adistance is not None and len(self.adistance) != n:
            raise ProblemAt(f"adistance must give one abstract distance per node ({n}), "
                            f"got {len(self.adistance)}", ("adistance",))
