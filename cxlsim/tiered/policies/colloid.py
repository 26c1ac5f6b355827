"""``colloid``: Colloid (Vuppalapati and Agarwal, "Tiered Memory Management: Access Latency
is the Key!", SOSP'24), as its HeMem integration places pages
(``../shared/reference/policies.md`` section 9; webglider/hemem, branch ``sosp24ae``).

The principle: balance the tiers' *loaded* access latencies instead of packing the
hottest pages into the default tier, whose latency a bandwidth-heavy load can inflate
past the alternate tier's. Each policy round (here: each epoch):

* each tier's request rate ``R`` (memory references per ns) and occupancy ``O = L x R``
  (Little's law on its loaded latency ``L``, which the hardware's CHA counters give and
  the run's equilibrium gives here), smoothed with ``ewma``;
* with ``beta = R_d / R_a`` the latencies are equal where ``O_d = beta O_a``; the default
  tier is overloaded when ``O_d > beta O_a``, and the access probability to shift is
  ``dp = |O_d - beta O_a| / ((R_d + R_a) (beta O_a / R_a + O_d / R_d))``;
* the hottest pages of the overloaded tier (by their share of the round's accesses) move
  to the other one -- *hot* pages go either way, which is the point -- each swapped with
  the coldest page there when it has no room, while the shifted probability (the moved
  page's share minus its partner's) stays within ``dp``, at most ``max_pages`` a round.

With the default tier idle next to the alternate one this is the usual promotion of hot
pages; under bandwidth pressure it demotes hot pages until the latencies meet. While a
tier has no traffic (no ratio to balance), the slower tier's hottest pages move, up to
the round's limit. Not modelled: PEBS sampling and its cooling (the round's access
counts are exact), the hardware counters' own smoothing.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from cxlsim.config.base import scales
from cxlsim.mm.watermarks import WMARK_HIGH
from cxlsim.tiered.policies.base import EpochView, PolicyParams
from cxlsim.tiered.policies.static import Static

class ColloidParams(PolicyParams):
    """Colloid's tunables (webglider/hemem ``sosp24ae`` defaults)."""

    ewma: float = Field(0.0625, gt=0, le=1, description=(
        "weight of a round's occupancy and rate in their running averages (COLLOID_EWMA "
        "= 0.0625 in HeMem; the kernel module's 1/32)"), json_schema_extra=scales("fixed"))
    max_pages: float = Field(50.0, gt=0, description=(
        "pages moved per round at most (HeMem-Colloid: min(50 pages, dp x rate x 18 CHA "
        "boxes x 64 B)); a fraction of a page carries over to the next round (a scaled "
        "run's share: 50 / S)"), json_schema_extra=scales("quota"))


class Colloid(Static):
    """First touch local (default Linux); after each epoch, hot pages move toward the
    tier whose loaded latency is lower, until the tiers' latencies meet."""

    name = "colloid"
    Params = ColloidParams

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.occupancy = np.zeros(self.numa.n_nodes)
        self.rate = np.zeros(self.numa.n_nodes)
        self.latency = np.zeros(self.numa.n_nodes)
        self.credit = 0.0  # the fraction of a page of max_pages not yet used

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        kernel, p = epoch.kernel, self.params
        local, far = self.local, int(kernel.demotion_target[self.local])
        span = float(epoch.stats.get("duration_ns", 0.0))
        if far < 0 or span <= 0:
            return super().moves(epoch)
        rate, latency = epoch.per_node("refs") / span, epoch.per_node("latency_ns")
        for mean, now in ((self.rate, rate), (self.occupancy, rate * latency),
                          (self.latency, latency)):
            mean += p.ewma * (now - mean)
        (o_d, o_a), (r_d, r_a) = self.occupancy[[local, far]], self.rate[[local, far]]
        if r_d > 0 and r_a > 0:
            beta = r_d / r_a
            gap = o_d - beta * o_a
            dp = abs(gap) / ((r_d + r_a) * (beta * o_a / r_a + o_d / r_d))
        else:  # a tier without traffic: the slower tier's hottest pages, the limit's worth
            gap = self.latency[local] - self.latency[far]
            dp = 1.0 if gap else 0.0
        src, dst = (local, far) if gap > 0 else (far, local)
        self.credit += p.max_pages
        limit = int(self.credit)
        self.credit -= limit
        hot, cold = self._pick(kernel, epoch.pages, src, dst, dp, limit)
        epoch.stats["colloid_dp"] = float(dp)
        return (np.concatenate([cold, hot]),
                np.concatenate([np.full(cold.size, src), np.full(hot.size, dst)]))

    def _pick(self, kernel, accessed: np.ndarray, src: int, dst: int,
              dp: float, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """At most ``limit`` pages of ``src`` to move to ``dst``, hottest first among
        those that fit the probability still to shift (HeMem-Colloid: the largest
        difference within the rest of ``dp``), and the coldest pages of ``dst`` they swap
        with once ``dst`` is out of room."""
        pages, counts = np.unique(accessed, return_counts=True)
        frac = counts / max(counts.sum(), 1)

        def share(of: np.ndarray) -> np.ndarray:  # the round's share of each page's accesses
            at = np.searchsorted(pages, of).clip(max=max(pages.size - 1, 0))
            return np.where(pages[at] == of, frac[at], 0.0) if pages.size else 0.0 * of

        order = pages[kernel.node[pages] == src]
        order = order[np.argsort(-share(order), kind="stable")]
        desc = -share(order)  # ascending, for searchsorted
        room = max(int(kernel.nr_free[dst] - kernel.wmark[dst, WMARK_HIGH]) - 1, 0)
        coldest, cold_share = np.empty(0, np.int64), np.empty(0)
        if order.size > room:
            there = np.flatnonzero(kernel.node == dst)
            rank = np.argsort(share(there), kind="stable")
            coldest, cold_share = there[rank], share(there)[rank]
        hot, left, at = [], dp, 0
        while len(hot) < limit:
            k = len(hot) - room  # this move's partner, if it needs one
            if k >= coldest.size:
                break
            partner = cold_share[k] if k >= 0 else 0.0
            i = at + int(np.searchsorted(desc[at:], -(left + partner), side="left"))
            if i >= order.size:
                break
            hot.append(int(order[i]))
            left -= -desc[i] - partner
            at = i + 1
        return (np.array(hot, np.int64),
                coldest[:max(len(hot) - room, 0)].astype(np.int64))


#: Colloid, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (Colloid,)
