"""``autotiering``: AutoTiering (Kim, Choe, Ahn, "Exploring the Design Space of Page
Management for Multi-Tiered Memory Systems", USENIX ATC'21; code csl-ajou/AutoTiering, a
Linux 5.3 patch), as ``../shared/reference/policies.md`` section 3 describes it.

Built on NUMA balancing's normal mode (``kernel.numa_balancing=1``: every node's pages are
scanned, no tiering mode, no reclaim demotion -- 5.3 had none):

* **Access history.** Each page keeps an ``history_bits``-bit shift register: whenever the
  scanner marks the page again, it shifts left and its low bit records whether the page
  took a hint fault since the last mark. Its *level* is the register's popcount.
* **LAP lists.** The local node's pages ordered by level, and within a level by how long
  they have held it (a list's tail): the least-accessed pages, demoted first.
* **CPM** (conservative promotion, ``numa_balancing_extended`` bit 1): a hint fault on a
  lower-tier page promotes it to the faulting CPU's node if that node has room.
* **OPM** (opportunistic promotion, bit 2, includes CPM): without room, take the lowest
  non-empty level ``bt_lv``; a page whose level is not above it stays
  (``pgpromote_low_freq_fail``), otherwise one page of the lowest level is demoted and the
  faulting page promoted. Exchange (bit 4, a page swap) makes the same moves here.
* **Background demotion** (``kdemoted``, optional): LAP pages are demoted ahead of time to
  keep ``reserve_pages`` free pages per CPU of the local node above its high watermark.

Differences and assumptions: decisions are per epoch on its faults in page order, with
the levels as the faults found them; OPM first demotes enough to bring the local node to
its high watermark, which a promotion needs (``migrate_balanced_pgdat``; assumption,
the patch was not read); every move, background demotions included, is charged to the
task (the policy's moves are in the task's context); promotions pass the run's
promotion rate limit (``migration.promote_rate_limit``: 5.3 had none, and the default
never binds).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from cxlsim.config.base import scales
from cxlsim.mm.watermarks import WMARK_HIGH
from cxlsim.tiered.policies.base import EpochView, PolicyParams, Switches
from cxlsim.tiered.policies.static import Static


class AutoTieringParams(PolicyParams):
    """AutoTiering's tunables (csl-ajou/AutoTiering defaults)."""

    mode: Literal["cpm", "opm"] = Field("opm", description=(
        "kernel.numa_balancing_extended: cpm (bit 1, promote only into free room) or opm "
        "(bit 2, also demote a less-accessed page to make room; assumption: opm, the "
        "paper's full design)"))
    history_bits: int = Field(8, ge=1, le=8, description=(
        "bits of a page's access history (ACCESS_HISTORY_SIZE = 8, a u8 per page)"),
        json_schema_extra=scales("fixed"))
    background_demotion: bool = Field(False, description=(
        "kdemoted keeps free pages for promotions (the patch's optional "
        "background_demotion, off by default)"))
    reserve_pages: int = Field(16, ge=0, description=(
        "free pages background demotion keeps per CPU of the local node "
        "(MAX_NR_FREE_PAGES = 16)"), json_schema_extra=scales("fixed"))


class AutoTiering(Static):
    """Promotion on hint faults, judged by each page's access history; first touch is
    local (default Linux)."""

    name = "autotiering"
    Params = AutoTieringParams
    in_task = True
    kernel_5x = True  # the 5.3 patch: every hint fault counts for the scan period

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.history = np.zeros(self.footprint, np.uint8)
        self.faulted = np.zeros(self.footprint, bool)   # since the page's last mark
        self.since = np.zeros(self.footprint, np.int64)  # when its level last changed
        self.cpus = self.numa.params.nodes[self.local].cpus

    @classmethod
    def switches(cls, params: PolicyParams) -> Switches:
        return Switches(kernel={"numa_balancing_tiering": False, "demotion_enabled": False},
                        numa_balancing={"enabled": True})

    def level(self, pages: np.ndarray) -> np.ndarray:
        """The pages' access levels (popcount of their histories)."""
        return np.unpackbits(self.history[pages, None], axis=1).sum(axis=1)

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        kernel, p = epoch.kernel, self.params
        faults = epoch.hint_faults
        self.faulted[faults] = True
        node = kernel.node[faults]
        slow = faults[(node >= 0) & ~kernel.toptier[np.maximum(node, 0)]]
        dst, far = self.local, int(kernel.demotion_target[self.local])
        room = max(int(kernel.nr_free[dst] - kernel.wmark[dst, WMARK_HIGH]) - 1, 0)
        up, rest = slow[:room], slow[room:]
        down = np.empty(0, np.int64)
        fails = 0
        opm = p.mode == "opm" and rest.size > 0
        if far >= 0 and (opm or p.background_demotion):
            lap = self._lap(kernel)
            if opm:
                # the deficit below the high watermark first, then one page per promotion
                deficit = max(int(kernel.wmark[dst, WMARK_HIGH]) + 1
                              - int(kernel.nr_free[dst]), 0)
                pairs = self._opm(self.level(rest), self.level(lap[deficit:]))
                fails = rest.size - int(pairs.sum())
                down = lap[:deficit + int(pairs.sum())]
                up = np.concatenate([up, rest[pairs]])
            if p.background_demotion:
                want = int(kernel.wmark[dst, WMARK_HIGH]) + 1 + p.reserve_pages * self.cpus \
                    - int(kernel.nr_free[dst]) + up.size - down.size
                down = lap[:down.size + max(want, 0)]
        self._shift(epoch.scanned, kernel.placement.epoch)
        epoch.stats["pgpromote_low_freq_fail"] = int(fails)
        pages = np.concatenate([down, up])
        dest = np.concatenate([np.full(down.size, far), np.full(up.size, dst)])
        return pages, dest.astype(np.int64)

    def _lap(self, kernel) -> np.ndarray:
        """The local node's pages, least accessed first: by level, then longest held."""
        pages = np.flatnonzero(kernel.node == self.local)
        return pages[np.lexsort((pages, self.since[pages], self.level(pages)))]

    @staticmethod
    def _opm(levels: np.ndarray, lap_levels: np.ndarray) -> np.ndarray:
        """Which faulting pages (of ``levels``, in order) OPM promotes, each taking the
        next victim of ``lap_levels`` (ascending) if its level is above the victim's."""
        ok = np.zeros(levels.size, bool)
        k = 0
        for i, lv in enumerate(levels.tolist()):
            if k < lap_levels.size and lv > lap_levels[k]:
                ok[i] = True
                k += 1
        return ok

    def _shift(self, scanned: np.ndarray, now: int) -> None:
        """The scanner marked ``scanned``: each history takes in whether the page
        faulted since its last mark."""
        marked = np.zeros(self.footprint, bool)  # the distinct pages, in order: a mask
        marked[scanned] = True                     # of the footprint beats sorting them
        pages = np.flatnonzero(marked)
        before = self.level(pages)
        mask = (1 << self.params.history_bits) - 1
        self.history[pages] = ((self.history[pages].astype(np.int64) << 1)
                               | self.faulted[pages]) & mask
        self.faulted[pages] = False
        self.since[pages[self.level(pages) != before]] = now


#: The policies of this module, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (AutoTiering,)
