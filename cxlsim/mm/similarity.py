"""The similarity law: what a run scaled down from the system it stands for must change
to stay dynamically similar to it.

A real system has ``N`` pages and ``n_t`` threads, each core issuing accesses at a rate
``r`` physics fixes. The simulated run has ``N / S`` pages (``S``, the *scale*: real
footprint / simulated footprint) and ``c`` cores. The mean accesses a page takes per
unit of time are ``n_t r / N`` on the real system and ``c r S / N`` in the run: the run's
time is compressed ``K = S c / n_t`` times, page for page. Kept dimensionless groups and
what follows for each tunable (its class, written once at the field's definition with
:func:`~cxlsim.config.base.scales`):

* accesses per page per period -> every **clock** (scan delay and periods, NUMA
  balancing's hot threshold, the rate limits' window, kswapd's interval, DAMON's
  intervals and ages, DAMOS quota reset and apply intervals, MEMTIS's migration period)
  is divided by ``K``;
* the share of CPU time spent on faults and moves -> every per-event **cost** (hint fault,
  page move, IPI, ``invlpg``) keeps its kernel value;
* the memory system's utilisation -> each of the run's ``c`` cores stands for ``n_t / c``
  of the real system's threads, so its demand on the memory nodes (and the kernel's page
  copies) loads their queues and the uncore's trackers ``n_t / c`` times
  (:attr:`Law.stands_for`, the epoch engine's ``stands_for``);
* the share of the footprint one interval can move or look at -> every **quota** per
  interval (DAMOS bytes and time quotas, Colloid's pages per round, the scanner's
  address space per scan) and every **size** measured against a node (NUMA balancing's
  ``enough_free``, DAMOS region sizes, ``min_free_kbytes``) is divided by ``S``;
  periods counted in **samples** (MEMTIS's adaptation and cooling) likewise: a page
  keeps its samples per period (the sample period itself stays);
* the share of the footprint a **rate** moves per clock period -> rates (MB/s limits, the
  scan rate) are multiplied by ``c / n_t``: ``rate x c / n_t x period / K`` over ``N /
  S`` pages is ``rate x period / N``;
* cache and TLB reach relative to the footprint -> every cache and TLB keeps its ways
  and has ``1 / S`` of its sets; one with fewer sets than ``S`` becomes one fully
  associative set of ``1 / S`` of its entries (at least one; a cache at least one
  access's lines, the page walk's and the data's): its reach is kept, its conflicts are
  not (:func:`cxlsim.memory.sampling.scaled_cpu`);
* what the kernel decides by counting pages it counts on the real node (the run's
  ``KernelMemory(scale=S)``): reclaim's scan sizes and tests, the inactive ratio, the
  watermarks (fractions of a page at a coarse scale, held in whole pages with their
  mean kept), a refused hint fault (a real page, 1/S of the run's), a call's TLB
  shootdown (the real call's batches, 1/S of their cost);
* mechanism constants stay (**fixed**): batch sizes, the flush ceiling, DAMON's region
  bounds, history bits, fractions of a node (watermark and demote scale factors), access
  rates in %, weights.

``min_free_kbytes`` left to the kernel follows the *real* node: ``int_sqrt(16 x lowmem
kB)`` of ``S`` times the simulated low memory, then divided by ``S``; the watermarks that
are fractions of a node scale with the node by themselves.

Limits: ``S = 1`` with ``n_t = c`` changes nothing. Trace generators count phases in
fractions of the trace, so a trace of ``n / S`` records keeps them. A clock shorter
than the run's epoch is not resolved (the run refuses it); the run's epoch (Colloid's
round) is given in records and is not scaled. DAMOS scores count a region's age in
whole seconds (``damon_hot_score``); that second is a clock too (``score_second``), so a
scaled run's ages score as the real system's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from cxlsim.memory.hierarchy import CpuParams
from cxlsim.memory.sampling import scaled_cpu
from cxlsim.mm.watermarks import default_min_free_kbytes


def kind_of(model: type[BaseModel], name: str) -> str | None:
    """The class of field ``name`` of ``model`` (None: not classified)."""
    extra = model.model_fields[name].json_schema_extra
    return extra.get("scales") if isinstance(extra, dict) else None


@dataclass(frozen=True)
class Law:
    """The law for a run standing for a system ``scale`` times its footprint with
    ``threads`` threads, simulated on ``cores`` cores."""

    scale: float = 1.0
    cores: int = 1
    threads: int = 1

    @property
    def compression(self) -> float:
        """``K``: how much faster simulated time runs, page for page."""
        return self.scale * self.cores / self.threads

    @property
    def stands_for(self) -> float:
        """Threads of the real system each simulated core stands for: ``n_t / c``."""
        return self.threads / self.cores

    @property
    def identity(self) -> bool:
        return self.scale == 1 and self.cores == self.threads

    def factor(self, kind: str) -> float:
        """What a value of class ``kind`` is multiplied by."""
        return {"clock": 1 / self.compression, "quota": 1 / self.scale,
                "samples": 1 / self.scale, "size": 1 / self.scale,
                "rate": self.cores / self.threads}.get(kind, 1.0)

    def apply(self, model: BaseModel) -> BaseModel:
        """``model`` with every classified field scaled (nested models too); unchanged
        under the identity law. Integers are rounded, at least 1 unless 0 (none)."""
        if self.identity:
            return model
        update = {}
        for name in type(model).model_fields:
            value = getattr(model, name)
            if isinstance(value, BaseModel):
                update[name] = self.apply(value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                f = self.factor(kind_of(type(model), name) or "fixed")
                if f != 1 and value:
                    update[name] = max(round(value * f), 1) if isinstance(value, int) \
                        else value * f
        return model.model_copy(update=update)

    def cpu(self, cpu: CpuParams) -> CpuParams:
        """``cpu`` with ``1 / scale`` of every cache's and TLB's sets, ways kept; a
        structure with fewer sets than the scale becomes one fully associative set of
        ``1 / scale`` of its entries (:func:`~cxlsim.memory.sampling.scaled_cpu`).
        ValueError names a scale that is not a power of two (which sets are divided by)."""
        if self.scale == 1:
            return cpu
        if not float(self.scale).is_integer() or int(self.scale) & (int(self.scale) - 1):
            raise ValueError(f"scale {self.scale:g} is not a power of two, which the caches' "
                             f"and TLBs' sets must be divided by")
        return scaled_cpu(cpu, int(self.scale), keep_ways=True)

    def min_free_kbytes(self, given: int | None, lowmem_bytes: int) -> int | None:
        """``vm.min_free_kbytes`` of the run: the real system's (``given``, or the boot
        default of ``scale`` times ``lowmem_bytes``) divided by the scale."""
        if self.scale == 1:
            return given
        real = given or default_min_free_kbytes(int(lowmem_bytes * self.scale) // 1024)
        return max(round(real / self.scale), 1)


def clocks(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every clock field of ``model`` (nested too) set to a time: dotted name, value."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from clocks(value, f"{prefix}{name}.")
        elif kind_of(type(model), name) == "clock" and value and math.isfinite(value):
            yield prefix + name, value
