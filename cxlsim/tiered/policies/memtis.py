"""``memtis``: Memtis (Lee, Monga, Min, Eom, "MEMTIS: Efficient Memory Tiering with Dynamic
Page Classification and Page Size Determination", SOSP'23; code cosmoss-jigu/memtis, Linux
5.15 ``CONFIG_HTMM``), as ``../shared/reference/policies.md`` section 4 describes it.

* **Sampling.** Every ``sample_period``-th memory access (PEBS's load sample period,
  ``htmm_sample_period`` = 199) counts for its page, systematically from the trace.
* **Histogram.** A page's bin is ``floor(log2(count + 1))``, at most 15. Every
  ``adaptation_period`` samples the hot threshold becomes the lowest bin whose pages, with
  those of the bins above, fit the fast tier less its promotion watermark (3 % of its
  pages); if that hot set fills less than 75 % of it, pages one bin below are warm.
* **Cooling.** Every ``cooling_period`` samples every count halves and the threshold
  steps down one bin.
* **kmigrated**, every ``migration_period``: hot pages on the capacity tier are promoted,
  and pages below the warm threshold are demoted from the fast tier, coldest first, to
  keep 2 % of it free and make room for the promotions (the 3 % promotion watermark
  bounds the hot set), up to ``migration_rate`` (2048 MB/s) times the period
  each way.

Not modelled: huge pages and their splitting (the run has 4 KiB pages), the sampler's
CPU-quota adaptation of the sample period, cooling on memory-cgroup growth. For runs
far shorter than the kernel's, ``time_scale`` multiplies the migration period and the
rate cap's window (an assumption wherever it is not 1).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from cxlsim.config.base import scales
from cxlsim.mm.watermarks import WMARK_HIGH
from cxlsim.tiered.policies.base import EpochView, PolicyParams
from cxlsim.tiered.policies.static import Static
from cxlsim.traces.pages import PAGE_BYTES
from cxlsim.units import Bandwidth, KernelMs

#: Histogram bins (htmm: 16, counts up to 2^15).
BINS = 16
#: Fraction of the fast tier the hot set leaves free, and demotion keeps free (htmm.h).
PROMOTION_FREE, DEMOTION_FREE = 0.03, 0.02
#: A hot set filling less than this of the room makes the bin below it warm.
WARM_FILL = 0.75


class MemtisParams(PolicyParams):
    """Memtis's tunables (cosmoss-jigu/memtis ``mm/mempolicy.c`` defaults, sysfs
    ``/sys/kernel/mm/htmm/``)."""

    sample_period: int = Field(199, ge=1, description=(
        "accesses per sample (htmm_sample_period, PEBS load sample period, default 199)"),
        json_schema_extra=scales("fixed"))
    adaptation_period: int = Field(100_000, ge=1, description=(
        "samples between hot-threshold updates (htmm_adaptation_period)"),
        json_schema_extra=scales("samples"))
    cooling_period: int = Field(2_000_000, ge=1, description=(
        "samples between coolings, each halving every count (htmm_cooling_period)"),
        json_schema_extra=scales("samples"))
    hot_threshold_min: int = Field(1, ge=0, le=BINS - 1, description=(
        "lowest bin that may be hot (htmm_thres_hot)"), json_schema_extra=scales("fixed"))
    migration_period: KernelMs = Field(500e6, gt=0, description=(
        "time between kmigrated's rounds (htmm_promotion_period_in_ms, "
        "htmm_demotion_period_in_ms: 500 ms)"), json_schema_extra=scales("clock"))
    migration_rate: Bandwidth = Field(2048 * 2**20, gt=0, description=(
        "kmigrated's cap each way (MAX_MIGRATION_RATE_IN_MBPS, htmm.h: 2048 MB/s)"),
        json_schema_extra=scales("rate"))
    time_scale: float = Field(1.0, gt=0, le=1, description=(
        "multiplies the migration period and the rate cap's window, for runs far "
        "shorter than the kernel's (an assumption when not 1)"),
        json_schema_extra=scales("fixed"))


class Memtis(Static):
    """First touch local (default Linux); pages classified hot/warm/cold by their sampled
    access counts against a threshold fitted to the fast tier; kmigrated promotes the hot
    and demotes the cold periodically."""

    name = "memtis"
    Params = MemtisParams

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.count = np.zeros(self.footprint, np.int64)
        self.hot, self.warm = BINS - 1, BINS - 1
        self.skip = 0              # accesses before the next sample
        self.samples = self.since_adapt = self.since_cool = 0
        self.last_round = -np.inf

    def bins(self, pages: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Each page's histogram bin."""
        return np.minimum(np.log2(self.count[pages] + 1).astype(np.int64), BINS - 1)

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        p, kernel = self.params, epoch.kernel
        sampled = epoch.pages[self.skip::p.sample_period]
        self.skip = (self.skip - epoch.pages.size) % p.sample_period
        np.add.at(self.count, sampled, 1)
        self.samples += sampled.size
        self.since_adapt += sampled.size
        self.since_cool += sampled.size
        if self.since_cool >= p.cooling_period:
            self.count >>= 1
            self.hot, self.warm = max(self.hot - 1, p.hot_threshold_min), \
                max(self.warm - 1, p.hot_threshold_min)
            self.since_cool = 0
        if self.since_adapt >= p.adaptation_period or self.samples == sampled.size:
            self._adapt(kernel)
            self.since_adapt = 0
        period = p.migration_period * p.time_scale
        far = int(kernel.demotion_target[self.local])
        if far < 0 or epoch.now - self.last_round < period:
            return super().moves(epoch)
        self.last_round = epoch.now
        return self._migrate(kernel, far, period)

    def _adapt(self, kernel) -> None:
        """The hot threshold: the lowest bin whose pages (and the hotter ones) fit the
        fast tier less its promotion watermark; the warm one below it if they fill less
        than three quarters of that."""
        room = kernel.capacity[self.local] * (1 - PROMOTION_FREE)
        resident = self.bins(np.flatnonzero(kernel.node >= 0))
        per_bin = np.bincount(resident, minlength=BINS)
        above = np.cumsum(per_bin[::-1])[::-1]          # pages in bins >= i
        fits = np.flatnonzero(above <= room)
        hot = max(int(fits[0]) if fits.size else BINS - 1, self.params.hot_threshold_min)
        self.hot = hot
        self.warm = max(hot - 1, self.params.hot_threshold_min) \
            if above[hot] < WARM_FILL * room else hot

    def _migrate(self, kernel, far: int, period: float) -> tuple[np.ndarray, np.ndarray]:
        """kmigrated's round: hot pages of the capacity tier up, cold pages (below the
        warm threshold, coldest first) down to keep 2 % of the fast tier free and make
        room for them, at most the rate cap's pages each way."""
        cap = int(self.params.migration_rate * period / 1e9 // PAGE_BYTES)
        size, free = int(kernel.capacity[self.local]), int(kernel.nr_free[self.local])
        keep = max(int(DEMOTION_FREE * size), int(kernel.wmark[self.local, WMARK_HIGH]) + 1)
        on_slow = np.flatnonzero(kernel.node == far)
        hot = on_slow[self.bins(on_slow) >= self.hot]
        hot = hot[np.argsort(-self.count[hot], kind="stable")][:cap]
        on_fast = np.flatnonzero(kernel.node == self.local)
        cold = on_fast[self.bins(on_fast) < self.warm]
        cold = cold[np.argsort(self.count[cold], kind="stable")]
        down = cold[:min(max(keep + hot.size - free, 0), cap)]
        up = hot[:max(free + down.size - keep, 0)]
        return (np.concatenate([down, up]),
                np.concatenate([np.full(down.size, far), np.full(up.size, self.local)]))


#: Memtis, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (Memtis,)
