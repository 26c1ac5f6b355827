"""Page migration as work: what a move costs the cores, and what stops a move -- the
kernel's mechanism, which the policies' moves and reclaim's demotions go through.

Every page whose node changes (a policy's move, kswapd's or direct reclaim's demotion)
is unmapped, copied and remapped. Here:

* **TLB shootdowns.** Moves are flushed in batches of ``batch`` pages (``migrate_pages``
  unmaps up to 512 folios and flushes once per batch since Linux 6.3); a scaled run's
  call stands for one moving ``scale`` times its pages, whose batches it pays for in
  that share (:meth:`Migrator.shootdown`). A batch of at
  most ``flush_ceiling`` pages (x86 ``tlb_single_page_flush_ceiling``, 33) invalidates
  those pages in every core's TLBs, one ``tlb_flush_page`` each (x86 ``invlpg``, about
  100 ns); a larger batch flushes every TLB whole, costing what ``flush_ceiling``
  single flushes would (the ceiling is where the kernel finds a full flush cheaper). The
  initiator also waits for an IPI round trip to the other cores (``ipi``). The entries
  are really gone from the simulated TLBs: the next access to a moved page walks.
* **Who pays.** A move made in the task's context (a NUMA hint fault promoting in the
  fault handler; direct reclaim) costs the task ``cost`` per page (unmap, copy, remap)
  plus the initiator's flush and IPI; a kernel thread's (kswapd, kdamond) costs the
  thread, not the task. Every core pays its own flushes.
* **Rate limits.** Promotions into a node are refused once the candidates of the current
  window (``rate_window``, one second) reach ``promote_rate_limit`` (the kernel's
  ``numa_promotion_rate_limit``: ``numa_balancing_promote_rate_limit_MBps``, default
  65536 MB/s); demotions a policy asks for likewise under ``demote_rate_limit`` (no
  kernel knob: a DAMOS-style quota; none by default). Kernel reclaim is never limited.
* **Failures.** Besides the kernel's own refusal (destination at its high watermark), a
  fraction ``busy_fraction`` of attempts find the page busy (extra references, under
  writeback: ``-EAGAIN`` after the kernel's retries) and fail; both count in
  ``pgmigrate_fail``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import Field

from cxlsim.config.base import StrictModel, scales
from cxlsim.memory.cores import flush_tlbs, invalidate_pages
from cxlsim.memory.hierarchy import CoreMemory
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.watermarks import PAGE_SIZE
from cxlsim.units import Bandwidth, Time, shown_in


class MigrationParams(StrictModel):
    """Costs and limits of page migration (defaults: x86 Linux; sources in the module)."""

    cost: Time = Field(1100.0, ge=0, description=(
        "kernel time to migrate one 4 KiB page (unmap, copy, remap), charged to the task "
        "when the move is made in its context: move_pages of 1 GB in 4 KiB pages ran at "
        "3.73 GB/s, 1.1 us a page, on Zen 3 with 6.16-rc6 (LKML, S. Garg, 'Accelerate page "
        "migration with batch copying and hardware offload', RFC v3, Sep 2025)"),
        json_schema_extra=scales("cost"))
    batch: int = Field(512, ge=1, description=(
        "pages unmapped and flushed together (migrate_pages' batch, NR_MAX_BATCHED_MIGRATION)"),
        json_schema_extra=scales("fixed"))
    flush_ceiling: int = Field(33, ge=0, description=(
        "above this many pages a shootdown flushes whole TLBs (x86 "
        "tlb_single_page_flush_ceiling, arch/x86/mm/tlb.c)"),
        json_schema_extra=scales("fixed"))
    tlb_flush_page: Time = Field(100.0, ge=0, description=(
        "one page's TLB invalidation on one core (x86 invlpg, about 100 ns: arch/x86/mm/tlb.c)"),
        json_schema_extra=scales("cost"))
    ipi: Time = Field(2000.0, ge=0, description=(
        "the initiator's wait for a shootdown IPI round trip to the other cores "
        "(assumption: 1-3 us is reported, growing with the cores)"),
        json_schema_extra=scales("cost"))
    promote_rate_limit: Annotated[Bandwidth, shown_in("MiB/s")] | None = Field(
        65536 * 2**20, gt=0, description=(
        "promotion candidates per destination node per second "
        "(numa_balancing_promote_rate_limit_MBps, default 65536 MB/s); none: unlimited"),
        json_schema_extra=scales("rate"))
    demote_rate_limit: Bandwidth | None = Field(None, gt=0, description=(
        "demotions a policy asks for, per source node per second (a DAMOS-style quota; "
        "kernel reclaim is not limited); none: unlimited"), json_schema_extra=scales("rate"))
    rate_window: Time = Field(1e9, gt=0, description=(
        "the window the rate limits count in (the kernel's one second, MSEC_PER_SEC in "
        "numa_promotion_rate_limit)"), json_schema_extra=scales("clock"))
    busy_fraction: float = Field(0.0, ge=0, le=1, description=(
        "fraction of attempts that find the page busy and fail (assumption; default none)"),
        json_schema_extra=scales("fixed"))


@dataclass
class Shootdown:
    """Nanoseconds a batch of moves cost: each core's flushes and the initiator's wait."""

    per_core: np.ndarray
    initiator: float = 0.0


@dataclass
class Migrator:
    """Applies :class:`MigrationParams` to a run's moves on its cores; ``vpns`` gives
    each page's number in the cores' TLBs, -1 for none (a sampled run's,
    :mod:`cxlsim.memory.sampling`; default: the page's own); ``scale``: the real
    system's pages per page of the run (the similarity law's S)."""

    params: MigrationParams
    cores: Sequence[CoreMemory]
    rng: np.random.Generator
    vpns: np.ndarray | None = None
    scale: float = 1.0
    _window: float = 0.0
    _promoted: dict[int, int] = field(default_factory=dict)
    _demoted: dict[int, int] = field(default_factory=dict)
    _refused: float = 0.0
    rate_limited: int = 0

    def refusal(self) -> bool:
        """Whether the move that finds its destination out of room is refused a whole
        page of the run: on the real system it is one page, ``1 / scale`` of the run's,
        and the fractions add up (a stream of moves meets that refusal once each time
        kswapd's room runs out, which at S = 256 made numab-tiering fail 45 times the
        moves per page it failed at S = 16)."""
        self._refused += 1 / self.scale
        whole = self._refused >= 1
        self._refused -= whole
        return whole

    def shootdown(self, pages: np.ndarray) -> Shootdown:
        """Invalidate moved ``pages`` (virtual page numbers) in every core's TLBs and
        return what the flushes cost, batch by batch as the real system's call: under
        the similarity law a call moving ``n`` pages stands for one moving ``n x scale``
        (``batch`` at a time, a batch above ``flush_ceiling`` flushing every TLB whole),
        of whose flushes and IPIs the run pays ``1 / scale``. (Paid per run call, the
        IPI of a call an epoch -- a policy's moves -- took S times its real share:
        TPP at DRAM 21 %, 1.2 % of the time at S = 256 against 0.2 % at S = 16.)"""
        p = self.params
        out = Shootdown(np.zeros(len(self.cores)))
        whole, part = divmod(round(pages.size * self.scale), p.batch)
        if (whole and p.batch > p.flush_ceiling) or part > p.flush_ceiling:
            flush_tlbs(self.cores)
        elif pages.size:
            held = pages if self.vpns is None else self.vpns[pages]
            invalidate_pages(self.cores, held[held >= 0])
        flushed = whole * min(p.batch, p.flush_ceiling) + min(part, p.flush_ceiling)
        out.per_core += flushed * p.tlb_flush_page / self.scale
        if len(self.cores) > 1:
            out.initiator = (whole + (part > 0)) * p.ipi / self.scale
        return out

    def admit(self, kernel: KernelMemory, pages: np.ndarray, dest: np.ndarray,
              now: float) -> np.ndarray:
        """The moves (a mask over ``pages``) the rate limits let through at ``now`` (ns):
        promotions counted per destination, policy demotions per source, in the current
        one-second window; refused moves count in :attr:`rate_limited`."""
        if now - self._window > self.params.rate_window:
            self._window, self._promoted, self._demoted = now, {}, {}
        src = kernel.node[pages]
        up = kernel.toptier[dest] & ~kernel.toptier[src]
        down = kernel.toptier[src] & ~kernel.toptier[dest]
        ok = np.ones(pages.size, bool)
        for mask, key, limit, used in ((up, dest, self.params.promote_rate_limit, self._promoted),
                                       (down, src, self.params.demote_rate_limit, self._demoted)):
            if limit is None:
                continue
            cap = int(limit * (self.params.rate_window / 1e9) // PAGE_SIZE)
            for node in np.unique(key[mask]):
                mine = np.flatnonzero(mask & (key == node))
                # fair.c counts the candidate first and refuses once the count reaches
                # the limit: cap - 1 get through a window
                room = max(cap - 1 - used.get(int(node), 0), 0)
                used[int(node)] = used.get(int(node), 0) + mine.size
                ok[mine[room:]] = False
        self.rate_limited += int((~ok).sum())
        return ok

    def busy(self, n: int) -> np.ndarray:
        """Which of ``n`` attempts find their page busy."""
        if not self.params.busy_fraction:
            return np.zeros(n, bool)
        return self.rng.random(n) < self.params.busy_fraction
