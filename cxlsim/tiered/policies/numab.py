"""``numab-tiering``: Linux NUMA balancing's memory-tiering mode (``kernel.numa_balancing=2``,
NUMAB-2, Huang Ying's series merged for 5.18-6.1).

The scanner marks slow-tier pages PROT_NONE (top-tier pages are skipped); a marked page's
next access is a hint fault, and the fault handler (``should_numa_migrate_memory`` in
kernel/sched/fair.c) promotes it to the faulting CPU's node:

* unconditionally while that node has plenty free (``pgdat_free_space_enough``: free
  pages above WMARK_PROMO + max(1 GiB, node pages / 16)), which also resets the threshold;
* else only if its hint-fault latency (now - scan time) is below the hot threshold
  (commit 33024536bafd) -- such a page is a promotion candidate (``pgpromote_candidate``)
  -- and the candidates of the current second stay under the promotion rate limit
  (c6833e10008f; applied by :class:`~cxlsim.mm.migrate.Migrator` to every
  policy's promotions, ``migration.promote_rate_limit``);
* every ``scan_period_max`` (the scanner's, ``numa_balancing.scan_period_max``) the
  threshold moves by a sixteenth of twice the default
  (``numa_promotion_adjust_threshold``, c959924b0dc5): down (to at least that unit) when
  the period's candidates exceed 110 % of rate limit x period, up (to at most twice the
  default) when below 90 %.

Demotion is reclaim's: kswapd balances DRAM to WMARK_PROMO and demotes (the switches
turn on ``demotion_enabled`` and the tiering mode). Promotions are made in the faulting
task's context, which pays them. Sources: ``../shared/reference/policies.md`` section 2.

Differences (per epoch, not per fault): the threshold is adjusted at most once per
epoch, the faults of an epoch see the free space left after the unconditional ones before
them, and the unconditional promotions count against the rate limit too (the Migrator
limits every promotion; the kernel skips the limit on that path).

Also here: ``numa-balancing`` (:class:`NumaBalancing`), the normal mode the tiering mode
grew out of, as a 6.x machine with CXL memory runs it.
"""

from __future__ import annotations


import numpy as np
from pydantic import Field

from cxlsim.config.base import scales
from cxlsim.mm.watermarks import WMARK_PROMO
from cxlsim.tiered.policies.base import EpochView, PolicyParams, Switches
from cxlsim.tiered.policies.static import Static
from cxlsim.traces.pages import PAGE_BYTES
from cxlsim.units import KernelMs, Size

#: Steps between no threshold and twice the default (NUMA_MIGRATION_ADJUST_STEPS).
ADJUST_STEPS = 16


class NumabParams(PolicyParams):
    """NUMA balancing's tiering tunables (kernel/sched/fair.c defaults)."""

    hot_threshold: KernelMs = Field(1e9, gt=0, description=(
        "a hint fault sooner than this after the scan marks a hot page "
        "(numa_balancing_hot_threshold_ms, debugfs sched/numa_balancing/hot_threshold_ms, "
        "default 1000 ms; commit 33024536bafd)"), json_schema_extra=scales("clock"))
    adjust_threshold: bool = Field(True, description=(
        "adjust the threshold to the rate limit every numa_balancing.scan_period_max "
        "(numa_promotion_adjust_threshold, commit c959924b0dc5; always on in the kernel: "
        "off is an ablation)"))
    enough_free: Size = Field(2**30, ge=0, description=(
        "promotion skips the hotness check while the target's free pages exceed "
        "WMARK_PROMO plus the larger of this and a sixteenth of the node "
        "(pgdat_free_space_enough: a 1 GiB constant in the kernel, not a sysctl; "
        "smaller values scale it to small simulated nodes)"), json_schema_extra=scales("size"))


class NumabTiering(Static):
    """Hint-fault latency below an adaptive threshold promotes, under the rate limit;
    first touch is local (default Linux)."""

    name = "numab-tiering"
    Params = NumabParams
    in_task = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.threshold = 0.0      # current hot threshold (ns); 0: the default
        self.window_start = 0.0   # start of the current adjustment period (ns)
        self.candidates = 0       # promotion candidates so far (pgpromote_candidate)
        self.window_candidates = 0  # ... at the start of the period

    @classmethod
    def switches(cls, params: PolicyParams) -> Switches:
        return _mode(tiering=True)

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        kernel, p = epoch.kernel, self.params
        faults, latency = epoch.hint_faults, epoch.fault_latency
        node = kernel.node[faults]
        slow = (node >= 0) & ~kernel.toptier[np.maximum(node, 0)]
        faults, latency = faults[slow], latency[slow]
        dst = self.local
        enough = int(kernel.nr_free[dst]) - int(kernel.wmark[dst, WMARK_PROMO]) \
            - max(p.enough_free // PAGE_BYTES, int(kernel.capacity[dst]) // 16)
        plenty = max(min(enough, faults.size), 0)  # promoted while room is plentiful
        if plenty:
            self.threshold = 0.0
        rest, latency = faults[plenty:], latency[plenty:]
        if rest.size and p.adjust_threshold:
            self._adjust(epoch.now, epoch.migration.promote_rate_limit,
                         epoch.scan_period_max)
        hot = rest[latency < self.hot_threshold]
        self.candidates += hot.size
        epoch.stats["pgpromote_candidate"] = int(hot.size)
        epoch.stats["hot_threshold_ns"] = self.hot_threshold
        pages = np.concatenate([faults[:plenty], hot])
        return pages, np.full(pages.size, dst, np.int64)

    @property
    def hot_threshold(self) -> float:
        """The hot threshold in force (ns)."""
        return self.threshold or self.params.hot_threshold

    def _adjust(self, now: float, rate_limit: float | None, period: float) -> None:
        """``numa_promotion_adjust_threshold`` at ``now`` (ns), the rate limit in B/s
        (None: unlimited, so the threshold only rises), every ``period`` ns (the
        scanner's scan_period_max)."""
        if now - self.window_start <= period:
            return
        default = self.params.hot_threshold
        ref = np.inf if rate_limit is None else rate_limit // PAGE_BYTES * period / 1e9
        diff = self.candidates - self.window_candidates
        unit = default * 2 / ADJUST_STEPS
        th = self.hot_threshold
        if diff > ref * 1.1:
            th = max(th - unit, unit)
        elif diff < ref * 0.9:
            th = min(th + unit, 2 * default)
        self.threshold, self.window_start, self.window_candidates = th, now, self.candidates


class NumaBalancing(Static):
    """``numa-balancing``: NUMA balancing's normal mode (``kernel.numa_balancing=1``, the
    default the TPP paper compares with as "NUMA Balancing"), as a 6.x kernel runs it on
    a machine with CXL memory: the scanner marks every node's pages; a hint fault on a
    page away from the faulting CPU's node asks to move it there (``mpol_misplaced``:
    the default policy's MPOL_F_MORON), unless ``should_numa_migrate_memory`` says no --
    a page on a slow tier whose ``last_cpupid`` is not yet set only records it (its
    first fault after allocation), and the two-stage filter (the last fault from the
    destination's node) always passes with every CPU on one node. The move is the
    kernel's (``migrate_misplaced_folio``): refused while the destination would fall to
    its high watermark (``migrate_balanced_pgdat``), and in this mode nothing wakes
    kswapd for it and nothing demotes, so once first touches have filled DRAM to its low
    watermark only freed memory makes room. Each refusal slows the scanner down
    (``TNF_MIGRATE_FAIL``). No tunables."""

    name = "numa-balancing"
    Params = PolicyParams
    in_task = True

    @classmethod
    def switches(cls, params: PolicyParams) -> Switches:
        return _mode(tiering=False)

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        kernel, faults = epoch.kernel, epoch.hint_faults
        node = kernel.node[faults]
        last = epoch.fault_cpupid if epoch.fault_cpupid.size == faults.size \
            else np.full(faults.size, -1, np.int64)
        slow = ~kernel.toptier[np.maximum(node, 0)]
        misplaced = (node >= 0) & (node != self.local) & ~(slow & (last < 0))
        pages = faults[misplaced]
        return pages, np.full(pages.size, self.local, np.int64)


def _mode(tiering: bool) -> Switches:
    """``kernel.numa_balancing=2`` (the tiering mode, reclaim demoting) or ``=1``: the
    scanner on, and the kernel switches of the mode."""
    return Switches(kernel={"numa_balancing_tiering": tiering, "demotion_enabled": tiering},
                    numa_balancing={"enabled": True})


#: The policies of this module, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (NumabTiering, NumaBalancing)
