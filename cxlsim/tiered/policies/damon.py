"""DAMON-based tiering: DAMOS ``migrate_hot`` and ``migrate_cold`` schemes (policy ``damon``).

What the kernel does (Documentation/mm/damon/design.rst; mm/damon/core.c,
ops-common.c, paddr.c; policies.md §11; sysfs names below are under
``/sys/kernel/mm/damon/admin/kdamonds/<N>/contexts/<N>/``), applied to the run's
DAMON-style monitor (:mod:`cxlsim.mm.damon`, whose regions the policy reads after
each epoch):

* **Schemes.** ``migrate_cold`` moves the pages of DRAM-resident regions whose access
  pattern matches to the CXL node (the local node's nearest CPU-less node);
  ``migrate_hot`` moves matching regions' CXL-resident pages to the local node. Pages
  not on the scheme's source node are left alone, as a per-node (paddr) scheme does.
  Cold runs first, so promotions find the room demotions made. Each scheme applies
  every ``apply_interval`` (default: the aggregation interval) to the latest regions.
* **Access pattern** (sysfs ``schemes/<N>/access_pattern/{sz,nr_accesses,age}/{min,max}``):
  size in bytes, access rate in % of the most accesses an aggregation can count
  (``aggregate / sample``; damo's ``--damos_access_rate``), age as time (damo's
  ``--damos_age``; sysfs counts aggregation intervals).
* **Young filter** (``filters/<N>/type young``): ``reject`` skips pages whose PTE
  Accessed bit is set, ``only`` skips the others; either way the bit is read and
  cleared (``damon_folio_young``, ``damon_folio_mkold``), as the kernel's filter does.
* **Quota** (``quotas/{ms,bytes,reset_interval_ms}``, ``quotas/weights/...``): per
  reset interval the scheme may charge ``esz`` bytes, the least of ``bytes``, ``ms``
  times the measured throughput (charged bytes over the time spent migrating, a page
  costing ``apply_cost``; PAGE_SIZE * 1024 bytes per ms before any) and the goal-tuned
  size. Regions are charged their bytes on the source node; under a quota only regions
  whose score (``damon_hot_score`` weighted by ``weight_accesses`` and ``weight_age``;
  cold is 99 minus hot) reaches the least score whose histogram, from the top, holds
  ``esz`` are tried, in address order, and the last is cut to the quota
  (``damos_adjust_quota``, ``damos_apply_scheme``).
* **Quota goal** (``quotas/goals/<N>/{target_metric,target_value,nid}``): metric
  ``node_mem_used_bp`` or ``node_mem_free_bp`` of the local (DRAM) node; each reset
  interval ``esz_bp = max(last * ((goal - score) / goal + 1), 10000)`` with score =
  current * 10000 / target (``damon_feed_loop_next_input``).
* **Watermarks** (``watermarks/{metric,high,mid,low}``): metric ``free_mem_rate``,
  system free memory in per-mille; a scheme goes inactive above ``high`` or below
  ``low``, and becomes active again only between ``low`` and ``mid``
  (``damos_wmark_wait_us``). Checked at each apply (the kernel checks every
  ``watermarks/interval_us``).

Setups (``setup``; not ``preset``, which a file reserves for a preset file):
``hmsdk`` (the default) is SK hynix HMSDK's
``tools/gen_migpol.py`` (skhynix/hmsdk): intervals 100 ms / 2 s, 100-10000 regions,
regions of 4 KiB or more; cold: access rate 0 %, age 30 s or more, quota 1 s / 50 GiB
per 20 s, weights 0/0/1 (size, access rate, age; size weighs nothing in the migrate
actions' scores, so it is no tunable here), young pages rejected; hot: access rate
5-100 %, any age, quota 2 s / 50 GiB per 20 s, weights 0/0/1, young pages only.
``mem_tier`` is damo's ``scripts/mem_tier.sh``: cold at access rate 0 % with a goal of
0.5 % free DRAM, hot at 5 % or more with a goal of 99.7 % of DRAM used, each applied
every second with 200 MiB a second, young filters as HMSDK's; the intervals it
auto-tunes are DAMON's defaults here (5 ms / 100 ms). ``time_scale`` multiplies every
interval, age and time quota, for runs far shorter than the kernel's (an assumption
wherever it is not 1).
Not modelled: the regions' age reset after an action (the monitor is not told), the
memcg filter, kdamond's own CPU time, intervals auto-tuning, ops-update intervals.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from cxlsim.config.base import ProblemAt, StrictModel, scales
from cxlsim.errors import InputError
from cxlsim.mm.mempolicy import MemPolicy
from cxlsim.mm.migrate import MigrationParams
from cxlsim.mm.numa import Numa
from cxlsim.tiered.policies.base import EpochView, PolicyParams, Switches
from cxlsim.tiered.policies.static import Static
from cxlsim.units import Size, Time, format_size, format_time

#: mm/damon/ops-common.c: subscores in [0, 100], age log2 up to 32, scores in [0, 99].
MAX_SUBSCORE, MAX_AGE_IN_LOG, MAX_SCORE = 100, 32, 99
#: mm/damon/core.c damon_feed_loop_next_input: the goal score and the least input.
GOAL_SCORE = MIN_INPUT = 10_000
PAGE = 4096
#: damos_set_effective_quota's throughput before anything was charged: bytes per ms.
FIRST_THROUGHPUT = PAGE * 1024


class Watermarks(StrictModel):
    """A scheme's watermarks (sysfs ``schemes/<N>/watermarks/``)."""

    metric: Literal["none", "free_mem_rate"] = Field(
        "none", description="metric: none (always active) or free_mem_rate (per-mille of "
                            "all memory free)")
    high: int = Field(1000, ge=0, le=1000, description="above: inactive (per-mille)",
        json_schema_extra=scales("fixed"))
    mid: int = Field(1000, ge=0, le=1000, description="below: active again (per-mille)",
        json_schema_extra=scales("fixed"))
    low: int = Field(0, ge=0, le=1000, description="below: inactive (per-mille)",
        json_schema_extra=scales("fixed"))

    @model_validator(mode="after")
    def _ordered(self) -> "Watermarks":
        if not self.low <= self.mid <= self.high:
            raise ProblemAt(f"watermarks must be low <= mid <= high; found low {self.low}, "
                            f"mid {self.mid}, high {self.high}",
                            ("mid",) if self.low > self.mid else ("high",))
        return self


class Scheme(StrictModel):
    """One DAMOS scheme: access pattern, young filter, quota, goal, watermarks."""

    min_size: Size = Field(PAGE, ge=0, description="access_pattern/sz/min (HMSDK: 4096)",
        json_schema_extra=scales("size"))
    max_size: Size | None = Field(None, ge=0, description="access_pattern/sz/max (none: max)",
        json_schema_extra=scales("size"))
    min_accesses: float = Field(0.0, ge=0, le=100, description=(
        "access_pattern/nr_accesses/min as an access rate, % of aggregate / sample"),
        json_schema_extra=scales("fixed"))
    max_accesses: float = Field(100.0, ge=0, le=100, description=(
        "access_pattern/nr_accesses/max as an access rate (%)"),
        json_schema_extra=scales("fixed"))
    min_age: Time = Field(0.0, ge=0, description="access_pattern/age/min as time",
        json_schema_extra=scales("clock"))
    max_age: Time | None = Field(None, ge=0, description="access_pattern/age/max (none: max)",
        json_schema_extra=scales("clock"))
    young: Literal["any", "reject", "only"] = Field("any", description=(
        "young filter: reject pages accessed since last checked, or take only those"))
    quota_ms: Time = Field(0.0, ge=0, description="quotas/ms: time per reset interval "
                                                   "(0: none)",
        json_schema_extra=scales("quota"))
    quota_bytes: Size = Field(0, ge=0, description="quotas/bytes per reset interval (0: none)",
        json_schema_extra=scales("quota"))
    quota_reset: Time = Field(20e9, gt=0, description="quotas/reset_interval_ms",
        json_schema_extra=scales("clock"))
    weight_accesses: int = Field(0, ge=0, description="quotas/weights/nr_accesses_permil",
        json_schema_extra=scales("fixed"))
    weight_age: int = Field(1, ge=0, description="quotas/weights/age_permil",
        json_schema_extra=scales("fixed"))
    goal: Literal["none", "node_mem_used_bp", "node_mem_free_bp"] = Field(
        "none", description="quotas/goals/0/target_metric, on the local (DRAM) node")
    goal_value: int = Field(10_000, ge=1, le=10_000, description=(
        "quotas/goals/0/target_value in basis points (damo mem_tier.sh: free 50 for "
        "demotion, used 9970 for promotion)"), json_schema_extra=scales("fixed"))
    apply_interval: Time | None = Field(None, gt=0, description=(
        "apply_interval_us (none: the aggregation interval)"),
        json_schema_extra=scales("clock"))
    watermarks: Watermarks = Field(default_factory=Watermarks, description=(
        "watermarks/: when the scheme is active (default: always)"))

    @model_validator(mode="after")
    def _possible(self) -> "Scheme":
        for what, lo, hi, shown in (
                ("accesses", self.min_accesses, self.max_accesses, "{:g} %".format),
                ("age", self.min_age, self.max_age, format_time),
                ("size", self.min_size, self.max_size, format_size)):
            if hi is not None and lo > hi:
                raise ProblemAt(f"min_{what} ({shown(lo)}) > max_{what} ({shown(hi)}): no "
                                f"region can match the access pattern", (f"max_{what}",))
        return self


#: HMSDK gen_migpol.py's schemes.
HMSDK_COLD = Scheme(max_accesses=0.0, min_age=30e9, young="reject", quota_ms=1e9,
                    quota_bytes=50 * 2**30, quota_reset=20e9)
HMSDK_HOT = Scheme(min_accesses=5.0, young="only", quota_ms=2e9, quota_bytes=50 * 2**30,
                   quota_reset=20e9)
#: damo's scripts/mem_tier.sh (SeongJae Park's "auto-tune DAMOS for NUMA setups including
#: tiered memory", LKML April 2025, mainline since 6.16-rc1): applied every second, 200
#: MiB a second, goal-tuned; the intervals it auto-tunes are DAMON's defaults here.
MEM_TIER_COLD = Scheme(max_accesses=0.0, young="reject", quota_bytes=200 * 2**20,
                       quota_reset=1e9, apply_interval=1e9, goal="node_mem_free_bp",
                       goal_value=50)
MEM_TIER_HOT = Scheme(min_accesses=5.0, young="only", quota_bytes=200 * 2**20,
                      quota_reset=1e9, apply_interval=1e9, goal="node_mem_used_bp",
                      goal_value=9970)
#: Setup name -> monitoring attributes and schemes.
SETUPS = {
    "hmsdk": {"sample": 100e6, "aggregate": 2e9, "min_regions": 100, "max_regions": 10_000,
              "migrate_cold": HMSDK_COLD, "migrate_hot": HMSDK_HOT},
    "mem_tier": {"sample": 5e6, "aggregate": 100e6, "min_regions": 10, "max_regions": 1000,
                 "migrate_cold": MEM_TIER_COLD, "migrate_hot": MEM_TIER_HOT},
}


class DamosParams(PolicyParams):
    """DAMON's monitoring attributes and the two schemes: a setup's, any of them given
    (a scheme given in part keeps the setup's other settings)."""

    setup: Literal["hmsdk", "mem_tier"] = Field("hmsdk", description=(
        "hmsdk: SK hynix HMSDK's gen_migpol.py; mem_tier: damo's mem_tier.sh (goal-tuned)"))
    sample: Time = Field(100e6, gt=0, description="monitoring_attrs/intervals/sample_us "
                                                  "(HMSDK 100 ms)",
        json_schema_extra=scales("clock"))
    aggregate: Time = Field(2e9, gt=0, description="monitoring_attrs/intervals/aggr_us "
                                                   "(HMSDK 2 s)",
        json_schema_extra=scales("clock"))
    min_regions: int = Field(100, ge=3, description="monitoring_attrs/nr_regions/min",
        json_schema_extra=scales("fixed"))
    max_regions: int = Field(10_000, ge=3, description="monitoring_attrs/nr_regions/max",
        json_schema_extra=scales("fixed"))
    time_scale: float = Field(1.0, gt=0, le=1, description=(
        "multiplies every interval, age and time quota (assumption when not 1: a run "
        "shorter than the kernel's)"), json_schema_extra=scales("fixed"))
    apply_cost: Time = Field(MigrationParams.model_fields["cost"].default, gt=0, description=(
        "time one page's migration charges the time quota (migration's per-page cost)"),
        json_schema_extra=scales("cost"))
    migrate_cold: Scheme = Field(HMSDK_COLD, description="demotion scheme on the DRAM node")
    migrate_hot: Scheme = Field(HMSDK_HOT, description="promotion scheme on the CXL node")
    score_second: Time = Field(1e9, gt=0, description=(
        "the second in which damon_hot_score counts a region's age (a kernel constant, "
        "USEC_PER_SEC; a clock, so a scaled run's ages score as the real system's)"),
        json_schema_extra=scales("clock"))

    @model_validator(mode="before")
    @classmethod
    def _setup(cls, data: Any) -> Any:
        """The setup's settings under the ones given."""
        if not isinstance(data, dict) or data.get("setup", "hmsdk") not in SETUPS:
            return data  # the field's own error
        setup = SETUPS[data.get("setup", "hmsdk")]
        out = {**setup, **data}
        for name in ("migrate_cold", "migrate_hot"):
            if isinstance(data.get(name), dict):
                out[name] = {**setup[name].model_dump(), **data[name]}
        return out

    @model_validator(mode="after")
    def _intervals(self) -> "DamosParams":
        check_attrs(self)
        return self


def check_attrs(attrs: Any) -> None:
    """DAMON's monitoring attributes (``sample``, ``aggregate``, ``min_regions``,
    ``max_regions``) as damon_set_attrs (mm/damon/core.c) accepts them: at least 3
    regions (the fields' own bound), min_regions at most max_regions, and a sampling
    interval no longer than the aggregation interval."""
    if attrs.min_regions > attrs.max_regions:
        raise ProblemAt(f"{attrs.max_regions} is below min_regions ({attrs.min_regions}); "
                        f"expected at least that", ("max_regions",))
    if attrs.sample > attrs.aggregate:
        raise ProblemAt(f"sample ({format_time(attrs.sample)}) is longer than aggregate "
                        f"({format_time(attrs.aggregate)})", ("sample",))


class _State:
    """A scheme's quota and watermark state (``struct damos_quota``, ``wmarks``)."""

    def __init__(self) -> None:
        self.charged = 0         # bytes charged in this reset interval
        self.charged_from = -np.inf
        self.esz = 0             # effective quota (bytes; 0: none)
        self.esz_bp = 0
        self.total_sz = 0        # bytes charged and time spent, since the start
        self.total_ns = 0.0
        self.active = True       # damon_new_scheme starts it activated
        self.next_apply = 0.0
        self.applied = 0         # pages moved


class Damos(Static):
    """DAMOS migrate_cold (DRAM -> CXL) and migrate_hot (CXL -> DRAM); first touch as
    ``static``."""

    name = "damon"
    Params = DamosParams

    def __init__(self, numa: Numa, footprint: int, mempolicy: MemPolicy | str = "",
                 counts: np.ndarray | None = None, room: np.ndarray | None = None,
                 params: DamosParams | None = None) -> None:
        super().__init__(numa, footprint, mempolicy, params=params)
        far = [int(n) for n in numa.fallback(self.local)
               if not numa.has_cpus[n] and numa.capacity[n] > 0]
        if not far:
            raise InputError("policy damon needs a CPU-less (CXL) memory node")
        self.far = far[0]
        self.now = 0.0
        self.state = {"migrate_cold": _State(), "migrate_hot": _State()}

    @classmethod
    def switches(cls, params: DamosParams) -> Switches:
        s = params.time_scale
        return Switches(damon={"enabled": True, "sample": params.sample * s,
                               "aggregate": params.aggregate * s,
                               "min_regions": params.min_regions,
                               "max_regions": params.max_regions})

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        self.now += epoch.stats["duration_ns"]
        out_pages, out_dest = [], []
        if not epoch.regions:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        regions = np.array(epoch.regions, np.int64)
        for name, src, dest in (("migrate_cold", self.local, self.far),
                                ("migrate_hot", self.far, self.local)):
            pages = self._apply(name, regions, epoch, src)
            out_pages.append(pages)
            out_dest.append(np.full(pages.size, dest, np.int64))
        return np.concatenate(out_pages), np.concatenate(out_dest)

    def _apply(self, name: str, regions: np.ndarray, epoch: EpochView, src: int) -> np.ndarray:
        """Pages scheme ``name`` moves off node ``src`` now (none before its next apply)."""
        p, s = self.params, self.params.time_scale
        scheme, st = getattr(p, name), self.state[name]
        if self.now < st.next_apply:
            return np.empty(0, np.int64)
        st.next_apply = self.now + (scheme.apply_interval or p.aggregate) * s
        kernel = epoch.kernel
        if not _watermarks(scheme.watermarks, st, kernel):
            return np.empty(0, np.int64)
        if self.now >= st.charged_from + scheme.quota_reset * s:
            st.total_sz += st.charged
            st.charged_from, st.charged = self.now, 0
            st.esz = self._effective_quota(scheme, st, kernel)
        start, end, nr, age = regions.T
        node = kernel.node
        size = np.add.reduceat((node == src).astype(np.int64), start) * PAGE
        width = (end - start) * PAGE
        max_nr = max(int(p.aggregate // p.sample), 1)
        age_ns = age * p.aggregate  # ages and scores in the kernel's time, unscaled
        ok = (width >= scheme.min_size) & (size > 0) \
            & (nr * 100 >= scheme.min_accesses * max_nr) \
            & (nr * 100 <= scheme.max_accesses * max_nr) & (age_ns >= scheme.min_age)
        if scheme.max_size is not None:
            ok &= width <= scheme.max_size
        if scheme.max_age is not None:
            ok &= age_ns <= scheme.max_age
        if st.esz:
            score = hot_score(nr, age, max_nr, p.aggregate, p.score_second, scheme)
            if name == "migrate_cold":
                score = MAX_SCORE - score
            ok &= score >= _min_score(score[ok], size[ok], st.esz)
        moved = []
        for i in np.flatnonzero(ok):
            if st.esz and st.charged >= st.esz:
                break
            pages = np.arange(start[i], end[i])
            pages = pages[node[pages] == src]
            if st.esz:
                pages = pages[:max((st.esz - st.charged) // PAGE, 1)]
            st.charged += pages.size * PAGE
            if scheme.young != "any":
                young = kernel.young[pages]
                kernel.young[pages[young]] = False
                pages = pages[~young] if scheme.young == "reject" else pages[young]
            moved.append(pages)
        pages = np.concatenate(moved) if moved else np.empty(0, np.int64)
        st.total_ns += pages.size * p.apply_cost
        st.applied += pages.size
        return pages

    def _effective_quota(self, scheme: Scheme, st: _State, kernel) -> int:
        """``damos_set_effective_quota``: bytes the scheme may charge this interval. The
        goal's feedback loop runs in the real system's bytes (the similarity law's
        ``kernel.scale`` times the run's), from the kernel's least input up: run in the
        run's, it would reach a quota S times smaller in fewer intervals."""
        if not scheme.quota_ms and scheme.goal == "none":
            return int(scheme.quota_bytes)
        esz = np.inf
        if scheme.goal != "none":
            st.esz_bp = feed_loop_next_input(max(st.esz_bp, MIN_INPUT),
                                             self._score(scheme, kernel))
            esz = st.esz_bp / GOAL_SCORE / kernel.scale
        if scheme.quota_ms:
            throughput = st.total_sz * 1e6 / st.total_ns if st.total_ns else FIRST_THROUGHPUT
            esz = min(esz, throughput * scheme.quota_ms * self.params.time_scale / 1e6)
        if scheme.quota_bytes:
            esz = min(esz, scheme.quota_bytes)
        return max(int(esz), 1)

    def _score(self, scheme: Scheme, kernel) -> int:
        """The goal's score: its metric on the local node, 10000 at the target."""
        capacity = int(kernel.capacity[self.local])
        free = int(kernel.nr_free[self.local])
        used = capacity - free if scheme.goal == "node_mem_used_bp" else free
        return used * 10_000 // capacity * GOAL_SCORE // scheme.goal_value


def _watermarks(w: Watermarks, st: _State, kernel) -> bool:
    """``damos_wmark_wait_us``: whether the scheme is active now."""
    if w.metric == "none":
        return True
    metric = int(kernel.nr_free.sum()) * 1000 // int(kernel.capacity.sum())
    if metric > w.high or metric < w.low:
        st.active = False
    elif not (metric >= w.mid and not st.active):
        st.active = True
    return st.active


def hot_score(nr: np.ndarray, age: np.ndarray, max_nr: int, aggregate: float,
              second: float, scheme: Scheme) -> np.ndarray:
    """``damon_hot_score``: frequency and log2-age subscores, weighted, in [0, 99]; an
    age of ``age`` aggregation intervals counts whole ``second``s (the kernel's 1 s)."""
    freq = nr * MAX_SUBSCORE // max_nr
    seconds = (age * aggregate / second).astype(np.int64)
    log = np.minimum(np.where(seconds > 0, np.floor(np.log2(np.maximum(seconds, 1))) + 1, 0),
                     MAX_AGE_IN_LOG).astype(np.int64)
    log = np.where(freq == 0, -log, log) + MAX_AGE_IN_LOG
    age_sub = log * MAX_SUBSCORE // MAX_AGE_IN_LOG // 2
    weights = scheme.weight_accesses + scheme.weight_age
    hot = scheme.weight_accesses * freq + scheme.weight_age * age_sub
    if weights:
        hot = hot // weights
    return hot * MAX_SCORE // MAX_SUBSCORE


def _min_score(score: np.ndarray, size: np.ndarray, quota: int) -> int:
    """The least score whose regions, from the top score down, hold ``quota`` bytes."""
    if not score.size:
        return 0
    held = np.bincount(score, weights=size, minlength=MAX_SCORE + 1)[::-1].cumsum()
    top = int(score.max())
    for s in range(top, -1, -1):
        if held[MAX_SCORE - s] >= quota:
            return s
    return 0


def feed_loop_next_input(last: int, score: int) -> int:
    """``damon_feed_loop_next_input``: the next input for a score (10000 at the goal)."""
    if score == GOAL_SCORE:
        return last
    if score >= 2 * GOAL_SCORE:
        return MIN_INPUT
    compensation = last * abs(GOAL_SCORE - score) // GOAL_SCORE
    if score > GOAL_SCORE:
        return max(last - compensation, MIN_INPUT)
    return last + compensation


#: The DAMON policies, registered by :mod:`cxlsim.tiered.policies`.
KINDS = (Damos,)
