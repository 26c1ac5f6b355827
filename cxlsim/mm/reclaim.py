"""Reclaim: kswapd and direct reclaim freeing a node's pages from its inactive lists'
tails, demoting them to a lower tier first when the kernel allows it.

What follows the kernel, and from where (torvalds/linux, 6.x):

* Reclaim (mm/vmscan.c ``shrink_node``, ``get_scan_count``, ``shrink_folio_list``,
  ``demote_folio_list``): priorities 12 down to 0 scan ``size >> priority`` of each
  inactive list; file only while the inactive file list is not low (cache trim mode) or
  anon cannot be reclaimed -- judged on the lists as reclaim finds them, before it ages
  any (``prepare_scan_control``: active pages just added, TPP's promotions, end cache
  trim until aging has caught up); otherwise anon:file in swappiness:(200 - swappiness) (no
  refault costs modelled), equally at priority 0. Anon is reclaimable only with swap or a
  demotion target. A reclaimed page is demoted first when ``demotion_enabled``
  (mm/memory-tiers.c ``numa_demotion_enabled``, default false), to the preferred target,
  then the other lower-tier nodes (``alloc_demote_folio``, no reclaim on the target, down
  to its min watermark); otherwise a file page is dropped and an anon page swapped out if
  swap is on, else activated. Scanning stops as soon as the target is met (the kernel
  overshoots by up to a batch). A scaled run's nodes stand for the real system's
  (``scale`` times their pages: the similarity law's S, :mod:`cxlsim.mm.similarity`), and
  what reclaim decides by counting pages it decides on the real node's counts: the
  scan's ``size >> priority`` (at least ``SWAP_CLUSTER_MAX`` there), the tests of cache
  trim and of a tiny file list, and the inactive ratio (:mod:`cxlsim.mm.lru`); a scan of
  ``n`` real pages is ``n / scale`` of the run's (rounded up). Otherwise a small node
  shifts its lists to nothing at high priorities (no cache trim below 4,096 inactive
  file pages) and scans anon and file by ``SWAP_CLUSTER_MAX`` alike: policy-compare's
  TPP at DRAM 21 % demoted anon pages (98 % of its demotions) at S = 256 where S = 16
  trimmed the file cache (87 % file), 66 % of the traffic local against 55 %.
* kswapd (``balance_pgdat``, ``pgdat_balanced``): a woken node reclaims until free pages
  exceed the high watermark (the promo watermark whenever NUMA balancing's tiering mode
  is on, as ``pgdat_balanced`` checks ``NUMA_BALANCING_MEMORY_TIERING``, unless
  ``promo_watermark`` says otherwise: TPP's patch set predates it). A run that reclaims
  nothing counts a failure (``kswapd_failures``), any reclaim on the node resets them
  (``shrink_node``); after ``MAX_RECLAIM_RETRIES`` failures in a row the node is hopeless
  and ``wakeup_kswapd`` leaves it asleep -- a node with nothing reclaimable (no swap, no
  demotion target, every page just used) is not woken again and again. The simulation
  decides when kswapd runs (:meth:`Reclaim.kswapd`).
* TPP's decoupled watermarks (LKML "[PATCH 0/5] Transparent Page Placement for
  Tiered-Memory", Nov 2021; never upstream), off by default: a top-tier node's kswapd is
  woken as soon as an allocation or a promotion leaves fewer free pages than WMARK_DEMOTE
  (``demote_scale_factor``), or the scheduler's periodic
  :meth:`Reclaim.check_toptier_balanced` finds it so, and balances to it, while
  allocations still need only the low watermark.

Not modelled: refault/workingset costs, writeback of dirty pages, memcg.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cxlsim.mm.lru import ACTIVE, INACTIVE, LruLists
from cxlsim.mm.params import KernelParams
from cxlsim.mm.placement import ANON, DEMOTED, FILE
from cxlsim.mm.vmstat import VmStat
from cxlsim.mm.watermarks import (SWAP_CLUSTER_MAX, WMARK_HIGH, WMARK_LOW, WMARK_MIN,
                                  WMARK_PROMO, Zones)

#: Reclaim priorities run from DEF_PRIORITY down to 0 (mm/vmscan.c).
DEF_PRIORITY = 12
#: Reclaim rounds without progress before giving up (include/linux/swap.h
#: MAX_RECLAIM_RETRIES): the allocator's direct reclaim retries (``should_reclaim_retry``)
#: and kswapd's failures before its node is hopeless (``wakeup_kswapd``).
MAX_RECLAIM_RETRIES = 16


class Reclaim:
    """Reclaim on ``zones``' nodes from ``lists`` under ``params``, the nodes standing for
    ``scale`` times their pages; ``woken``: the nodes whose kswapd is awake;
    ``failures``: each node's kswapd runs in a row that reclaimed nothing
    (``pgdat->kswapd_failures``)."""

    def __init__(self, zones: Zones, lists: LruLists, stat: VmStat,
                 params: KernelParams, scale: float = 1.0) -> None:
        self.zones, self.lists, self.stat, self.params = zones, lists, stat, params
        self.scale = scale
        self.woken = np.zeros(zones.numa.n_nodes, dtype=bool)
        self.failures = np.zeros(zones.numa.n_nodes, dtype=np.int64)

    @property
    def promo_watermark(self) -> bool:
        """Whether the upstream tiering mode's WMARK_PROMO rules apply (see
        :attr:`KernelParams.promo_watermark`)."""
        p = self.params
        return p.numa_balancing_tiering if p.promo_watermark is None else p.promo_watermark

    def wake_kswapd(self, node: int) -> None:
        """``wakeup_kswapd``: wake ``node``'s kswapd unless the node is balanced or
        hopeless (``MAX_RECLAIM_RETRIES`` failed runs in a row)."""
        self.zones.numa.check_node(node, memory=True)
        if self.failures[node] >= MAX_RECLAIM_RETRIES:
            return
        if not self.woken[node] and self.zones.nr_free[node] <= self.kswapd_mark(node):
            self.woken[node] = True
            self.stat.count("kswapd_wakeup", node)

    def check_demote(self, node: int) -> None:
        """TPP's check after a page is taken from ``node`` (``rmqueue``; promotions
        allocate there too): below WMARK_DEMOTE, wake its kswapd."""
        if self.zones.nr_free[node] < self.zones.wmark_demote[node]:
            self.wake_kswapd(node)

    def check_toptier_balanced(self) -> None:
        """TPP's ``check_toptier_balanced`` (called from the scheduler's load-balance
        tick): wake the kswapd of every top-tier node below its WMARK_DEMOTE."""
        for node in np.flatnonzero(self.zones.wmark_demote):
            self.check_demote(int(node))

    def idle(self) -> bool:
        """Whether a kswapd tick now would do nothing: no kswapd is woken, and no node
        is below its WMARK_DEMOTE for :meth:`check_toptier_balanced` to wake (that
        watermark lies at or below :meth:`kswapd_mark`)."""
        zones = self.zones
        return not self.woken.any() and not (zones.nr_free < zones.wmark_demote).any()

    def kswapd_mark(self, node: int) -> int:
        """The watermark kswapd balances ``node`` to (``pgdat_balanced``: the promo
        watermark in the upstream memory-tiering mode, else high; TPP's
        WMARK_DEMOTE where it is set, which lies above both)."""
        promo = self.promo_watermark
        return max(int(self.zones.wmark[node, WMARK_PROMO if promo else WMARK_HIGH]),
                   int(self.zones.wmark_demote[node]))

    def kswapd(self) -> int:
        """Run every woken kswapd once, fastest tier first (demotions may wake the
        kswapd of a lower tier, which then runs too); returns the pages reclaimed. A run
        that was needed and reclaimed nothing is a failure (``balance_pgdat``)."""
        total = 0
        for node in np.argsort(self.zones.tier, kind="stable"):
            node = int(node)
            if not self.woken[node]:
                continue
            self.zones.requantize(node)
            need = self.kswapd_mark(node) + 1 - int(self.zones.nr_free[node])
            if need > 0:
                freed = self.shrink_node(node, need, direct=False)
                self.failures[node] += freed == 0
                total += freed
            self.woken[node] = False
        return total

    def _can_demote(self, node: int) -> bool:
        return self.params.demotion_enabled and self.zones.demotion_target[node] >= 0

    def shrink_node(self, node: int, target: int, *, direct: bool) -> int:
        """Reclaim up to ``target`` pages from ``node`` (``shrink_node`` over the
        priorities); returns the pages freed from the node."""
        lists = self.lists
        anon_ok = self.params.swap or self._can_demote(node)
        reclaimed = 0
        for priority in range(DEF_PRIORITY, -1, -1):
            if reclaimed >= target:
                break
            # prepare_scan_control decides on the lists as reclaim finds them, before
            # any aging: cache trim needs an inactive file list that is not low (a
            # promotion's active page makes it low), and a tiny file list forces anon
            # only while the anon inactive list is not low either
            f_inactive, f_active = (int(x) for x in lists.nr[node, FILE])
            trim = self._real(f_inactive) >> priority > 0 \
                and not lists.inactive_is_low(node, FILE)
            # almost out of file pages: force-scan anon (get_scan_count's file_is_tiny;
            # shrink_node's total_high_wmark, TPP's WMARK_DEMOTE where it is set)
            tiny = f_inactive + f_active + int(self.zones.nr_free[node]) \
                <= max(self.zones.wmark[node, WMARK_HIGH], self.zones.wmark_demote[node]) \
                and not lists.inactive_is_low(node, ANON) \
                and self._real(int(lists.nr[node, ANON, INACTIVE])) >> priority > 0
            lists.age_active(node, FILE)
            if anon_ok:
                lists.age_active(node, ANON)
            inactive = lists.nr[node, :, INACTIVE].copy()
            if inactive.sum() == 0:
                break
            swappiness = self.params.swappiness
            if not anon_ok:
                share = {FILE: 1.0}
            elif priority == 0 and swappiness:
                share = {ANON: 1.0, FILE: 1.0}
            elif tiny:
                share = {ANON: 1.0}
            elif trim:
                share = {FILE: 1.0}
            else:
                share = {ANON: swappiness / 200, FILE: (200 - swappiness) / 200}
            for kind, fraction in share.items():
                if not lists.nr[node, kind, INACTIVE]:
                    continue  # nothing to scan (a list with no file pages, say)
                budget = self._budget(int(inactive[kind]), priority, fraction)
                reclaimed += self._shrink_inactive(node, kind, budget, target - reclaimed,
                                                   direct)
                if reclaimed >= target:
                    break
        if reclaimed:
            self.failures[node] = 0  # shrink_node: any progress makes the node hopeful
        return reclaimed

    def _real(self, pages: int) -> int:
        """``pages`` of a node as the real node has them (:attr:`scale` times)."""
        return int(pages * self.scale)

    def _budget(self, pages: int, priority: int, fraction: float) -> int:
        """Pages to scan of an inactive list of ``pages`` at ``priority`` for its
        ``fraction`` of the scan (``get_scan_count``): the real list's ``size >>
        priority`` share, at least ``SWAP_CLUSTER_MAX`` there, in the run's pages
        (rounded up: at least one)."""
        real = max(int((self._real(pages) >> priority) * fraction), SWAP_CLUSTER_MAX)
        return max(math.ceil(real / self.scale), 1)

    def _shrink_inactive(self, node: int, kind: int, budget: int, want: int,
                         direct: bool) -> int:
        """Scan up to ``budget`` pages from the inactive tail, stopping once ``want`` are
        freed (``shrink_inactive_list``, ``shrink_folio_list``); returns pages freed."""
        lists, zones, count = self.lists, self.zones, self.stat.count
        pages = lists.oldest(node, kind, INACTIVE, budget)
        if pages.size == 0 or want <= 0:
            return 0
        room = sum(zones.avail(int(t), WMARK_MIN) for t in zones.demotion_order[node]) \
            if self._can_demote(node) else 0
        evictable = kind == FILE or self.params.swap
        cut, activate, keep, cold = _scan(pages, lists.young, lists.referenced, room,
                                          evictable, want)
        how = "direct" if direct else "kswapd"
        count(f"pgscan_{how}", node, cut)
        tail = (node, kind, INACTIVE)  # where every page scanned comes from
        lists.move(keep, INACTIVE, src=tail)

        demoted = cold[:room]
        rest = cold[room:]
        start = 0
        for target in zones.demotion_order[node] if room else ():
            k = min(zones.avail(int(target), WMARK_MIN), demoted.size - start)
            if k:
                lists.move(demoted[start:start + k], INACTIVE, int(target), DEMOTED, tail)
                count("pgmigrate_success", int(target), k)
                self._wake_if_low(int(target))
                start += k
        count(f"pgdemote_{how}", node, demoted.size)

        if evictable:
            lists.drop(rest, tail)
            if kind == ANON:
                count("pswpout", node, rest.size)
        else:
            activate = np.concatenate([activate, rest])
            rest = rest[:0]
        count("pgactivate", node, activate.size)
        lists.move(activate, ACTIVE, src=tail)
        n_freed = demoted.size + rest.size
        count(f"pgsteal_{how}", node, n_freed)
        count("pgsteal_file" if kind == FILE else "pgsteal_anon", node, n_freed)
        return n_freed

    def _wake_if_low(self, node: int) -> None:
        """Wake ``node``'s kswapd if an allocation left it at or below its low watermark
        (the allocator's fast path failing there, as a demotion target's does)."""
        if self.zones.nr_free[node] <= self.zones.wmark[node, WMARK_LOW]:
            self.wake_kswapd(node)


@njit(cache=True, nogil=True)
def _scan(pages, young, referenced, room, evictable, want):
    """``shrink_folio_list``'s pass over an inactive tail (``pages``, oldest first):
    pages without the young bit are freed -- the first ``room`` by demotion, the rest
    if ``evictable`` -- and the scan stops at the one that frees the ``want``-th. Of the
    pages scanned, the young ones lose the bit and are activated if PG_referenced,
    else get it (a second chance); the others lose PG_referenced. Returns how many
    were scanned and, in scan order, those to activate, those kept, the cold ones."""
    n = pages.shape[0]
    cut, old, freed = n, 0, 0
    for i in range(n):
        if not young[pages[i]]:
            old += 1
            if old <= room or evictable:
                freed += 1
                if freed >= want:
                    cut = i + 1
                    break
    activate = np.empty(cut, np.int64)
    keep = np.empty(cut, np.int64)
    cold = np.empty(cut, np.int64)
    a = k = c = 0
    for i in range(cut):
        p = pages[i]
        if young[p]:
            young[p] = False
            if referenced[p]:
                activate[a] = p
                a += 1
            else:
                referenced[p] = True
                keep[k] = p
                k += 1
        else:
            referenced[p] = False
            cold[c] = p
            c += 1
    return cut, activate[:a], keep[:k], cold[:c]
