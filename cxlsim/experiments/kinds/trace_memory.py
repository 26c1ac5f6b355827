"""``kind: trace-memory`` — a memory trace through the CPU's hierarchy and tiered memory.

A trace (a native file, any file ``cxlsim trace convert`` made native, or a generator
inline: ``trace: {generate: zipfian, n: 1000000, params: {theta: 0.99}}``) runs on the
topology's memory nodes under a placement policy by name (:mod:`cxlsim.tiered.policies`),
epoch by epoch in simulated time (:mod:`cxlsim.tiered.run`). The result: the
application's time and throughput, each node's traffic, resident pages and loaded
latency, the mean and 99th-percentile memory latency over epochs, per-epoch time series
(vmstat counters among them), the pages by type (the trace's ``page_type``, anon
without one), node and allocation epoch (table ``pages``), and figures of each node's
traffic and resident pages over time; with ``warmup`` (records of a load phase), the
``measured_*`` metrics cover only the epochs after it; scalar metrics include each
node's traffic share (``traffic_share_NODE``) and pages migrated per simulated second
(``migrations_per_s``). Cores: one per thread of the trace, at most the CPU's (or
``threads``); each keeps
``mlp`` misses in flight (default: the CPU's). The kernel's tunables are ``kernel``
(e.g. ``kernel.demotion_enabled``).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import (Field, PrivateAttr, SerializationInfo, SerializerFunctionWrapHandler,
                      ValidationError, ValidationInfo, field_validator, model_serializer,
                      model_validator)

from cxlsim.config.base import ProblemAt, StrictModel, scales
from cxlsim.config.validate import problem_in
from cxlsim.engine import Simulation, make_rng
from cxlsim.errors import InputError, shown, unknown
from cxlsim.experiments import trace_cache
from cxlsim.experiments import trace_input, trace_results as results, trace_setup as setup
from cxlsim.experiments.memory_base import MemoryExperiment
from cxlsim.experiments.progress import progress_bar
from cxlsim.experiments.quick import QuickForm
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import register
from cxlsim.fabric import Traffic
from cxlsim.memory.sampling import check_factor, scaled_cpu
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.mempolicy import MemPolicy
from cxlsim.mm.migrate import MigrationParams
from cxlsim.mm.params import KernelParams
from cxlsim.mm.placement import PAGE_TYPES, Placement
from cxlsim.mm.similarity import Law
from cxlsim.mm.watermarks import WMARK_MIN
from cxlsim.tiered.policies import POLICIES
from cxlsim.tiered.policies.damon import check_attrs
from cxlsim.tiered.host import Host
from cxlsim.tiered.run import run_hosts
from cxlsim.tiered.trace_survey import Survey
from cxlsim.traces.generators import KINDS
from cxlsim.traces.params import parse_param
from cxlsim.units import (Bandwidth, KernelMs, Percent, Size, Time, format_time, parse_percent,
                          shown_in)


def _one_of(name: str, known: dict, what: str) -> str:
    """``name`` if it is a key of ``known``, else a ValueError listing the keys."""
    if name not in known:
        raise ValueError(unknown(what, name, known))
    return name


class GeneratedTrace(StrictModel):
    """A synthetic trace made for the run (``cxlsim trace gen`` with these arguments)."""

    generate: str = Field(description="generator: " + ", ".join(KINDS))
    n: int = Field(ge=1, description="records")
    seed: int = Field(1, ge=0, description="seed of the generator")
    params: dict[str, Any] = Field(default_factory=dict, description="generator parameters")

    @field_validator("generate")
    @classmethod
    def _known(cls, kind: str) -> str:
        return _one_of(kind, KINDS, "generator")

    @model_validator(mode="after")
    def _params(self) -> "GeneratedTrace":
        """The generator's parameters are read when the file is, not when it runs."""
        for name, value in self.params.items():
            try:
                parse_param(KINDS[self.generate].params, name, str(value),
                            f"generator {self.generate}")
            except ValueError as exc:
                raise ProblemAt(str(exc), ("params", name)) from None
        return self


class NumaBalancing(StrictModel):
    """NUMA balancing's hint-fault scanner (kernel/sched/fair.c defaults)."""

    enabled: bool = Field(False, description="kernel.numa_balancing on: the scanner runs")
    scan_delay: KernelMs = Field(1e9, description="numa_balancing_scan_delay_ms: the first "
                                                  "scan", json_schema_extra=scales("clock"))
    scan_period: KernelMs = Field(1e9, gt=0, description=(
        "numa_balancing_scan_period_min_ms: the shortest time for a pass over the "
        "resident pages (each scan's period is this over the passes' windows of "
        "scan_size, task_scan_min)"), json_schema_extra=scales("clock"))
    scan_period_max: KernelMs = Field(60e9, gt=0, description=(
        "numa_balancing_scan_period_max_ms: the longest (task_scan_max); after each pass "
        "the period moves between the two by the faults' locality "
        "(update_task_scan_period)"), json_schema_extra=scales("clock"))
    scan_size: Size = Field(256 * 2**20, ge=4096, description="numa_balancing_scan_size_mb: "
                                                              "address space marked per scan",
        json_schema_extra=scales("quota"))
    max_scan_rate: Annotated[Bandwidth, shown_in("MiB/s")] = Field(
        2560 * 2**20, gt=0, description=(
        "the fastest the scanner marks memory (MAX_SCAN_WINDOW, 2560 MB/s: a kernel "
        "constant; a time-compressed run scales it with its periods)"),
        json_schema_extra=scales("rate"))
    fault_cost: Time = Field(1000.0, ge=0, description=(
        "kernel time of one hint fault (assumption: a minor fault's entry, PTE fix-up and "
        "bookkeeping, about 1 us)"), json_schema_extra=scales("cost"))

    @model_validator(mode="after")
    def _periods(self) -> "NumaBalancing":
        """The period grows from its minimum to its maximum: a maximum below is a mistake
        (the kernel's task_scan_max would quietly use the minimum)."""
        if self.scan_period_max < self.scan_period:
            raise ProblemAt(f"{format_time(self.scan_period_max)} is below scan_period "
                            f"({format_time(self.scan_period)}); expected at least that",
                            ("scan_period_max",))
        return self


class DamonMonitor(StrictModel):
    """The DAMON-style access monitor (Documentation/mm/damon/design.rst defaults)."""

    enabled: bool = Field(False, description="run the monitor")
    sample: Time = Field(5e6, gt=0, description="sampling interval",
        json_schema_extra=scales("clock"))
    aggregate: Time = Field(100e6, gt=0, description="aggregation interval",
        json_schema_extra=scales("clock"))
    min_regions: int = Field(10, ge=3, description="fewest regions",
        json_schema_extra=scales("fixed"))
    max_regions: int = Field(1000, ge=3, description="most regions",
        json_schema_extra=scales("fixed"))

    @model_validator(mode="after")
    def _attrs(self) -> "DamonMonitor":
        check_attrs(self)
        return self


@register("trace-memory")
class TraceMemoryExperiment(MemoryExperiment):
    """A trace's application time and memory traffic on tiered memory, by policy."""

    step_unit: ClassVar[str] = "epoch"
    kind: str = "trace-memory"
    trace: str | GeneratedTrace = Field(description=(
        "a native trace file (path relative to this file) or {generate: KIND, n: N, ...}"))
    policy: str = Field("static", description=(
        "placement policy: " + ", ".join(POLICIES) + "; or {name: NAME, tunable: value, "
        "...} with the policy's tunables (cxlsim schema POLICY lists them)"))
    policy_params: dict[str, Any] = Field(default_factory=dict, description=(
        "the policy's tunables (what a mapping under policy: holds besides its name)"))
    mempolicy: MemPolicy = Field(default_factory=MemPolicy, description=(
        "memory policy of first touch (static): numactl text, e.g. '--interleave=0,1' "
        "(empty: local), or {mode, nodes, weights} for weighted interleave with weights"))
    epoch: int = Field(65536, ge=1, description="trace records per epoch")
    sample: int = Field(1, ge=1, description=(
        "1: every page through the cores' TLBs and caches (exact); k (a power of two): "
        "a 1-in-k sample of the pages through cores scaled down k times, about k times "
        "faster, an estimate (cxlsim.memory.sampling; its error in experiments/README.md)"))
    warmup: int = Field(0, ge=0, description=(
        "records before the measured phase (a load phase): the measured_* metrics cover "
        "the epochs that start at or after it"))
    compute: Time = Field(0.0, ge=0, description=(
        "work per record that does not touch memory: the application's time between two "
        "traced accesses (MLC's injected delay; a trace of cache misses leaves it out)"))
    kernel: KernelParams = Field(default_factory=KernelParams, description=(
        "the kernel's memory tunables: watermarks, demotion_enabled, swap, ..."))
    kswapd_interval: Time = Field(1e6, gt=0, description="how often kswapd looks for work "
                                                         "(simulated time)",
        json_schema_extra=scales("clock"))
    numa_balancing: NumaBalancing = Field(default_factory=NumaBalancing, description=(
        "the hint-fault scanner (with kernel.numa_balancing_tiering: top-tier pages skipped)"))
    damon: DamonMonitor = Field(default_factory=DamonMonitor, description=(
        "a DAMON-style monitor: region access counts every aggregation interval"))
    pingpong: int = Field(16, ge=1, description="epochs within which a page moved back "
                                                "where it came from counts as a ping-pong")
    capacity_shares: dict[str, Percent] = Field(default_factory=dict, description=(
        "memory nodes whose capacity is a share of the trace's footprint, resolved when "
        "the run is set up; written on the topology's node as capacity: 35 %"))
    migration: MigrationParams = Field(default_factory=MigrationParams, description=(
        "page migration's costs and limits: per-page kernel time, TLB shootdowns, "
        "promotion/demotion rate limits, busy pages"))
    scale: float = Field(1.0, ge=1, description=(
        "the real system's footprint over the trace's (S): the similarity law "
        "(cxlsim.mm.similarity) scales the kernel's and the policy's clocks, quotas and "
        "rates and the CPU's cache and TLB sets from the kernel's values; 1: none"))
    real_footprint: Size | None = Field(None, gt=0, description=(
        "the real system's footprint, instead of scale: S = this / the trace's footprint"))
    real_threads: int | None = Field(None, ge=1, description=(
        "threads of the real system (default: the run's cores); simulated time runs "
        "S x cores / real_threads times faster, page for page"))
    _params: Any = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _policy_mapping(cls, data: Any) -> Any:
        """``policy: {name: NAME, ...}`` is the name and ``policy_params``."""
        if isinstance(data, dict) and isinstance(data.get("policy"), dict):
            spec = dict(data["policy"])
            if "name" not in spec:
                raise ProblemAt("a mapping needs the policy's name (name: ...)", ("policy",))
            data = {**data, "policy": spec.pop("name"),
                    "policy_params": {**data.get("policy_params", {}), **spec}}
        return data

    @field_validator("policy")
    @classmethod
    def _policy(cls, name: str) -> str:
        return _one_of(name, POLICIES, "policy")

    @model_validator(mode="after")
    def _policy_settings(self) -> "TraceMemoryExperiment":
        """The policy's tunables are valid, and the kernel switches it implies are on
        (a file setting one of them otherwise is refused)."""
        kind = POLICIES[self.policy]
        places = ("policy_params",), ("policy",)  # where a tunable may be written
        if self.policy_params and not kind.Params.model_fields:
            name = next(iter(self.policy_params))
            raise ProblemAt(f"policy {self.policy} has no tunables; found {name!r}",
                            *(p + (name,) for p in places))
        try:
            params = kind.Params.model_validate(self.policy_params)
        except ValidationError as err:
            raise problem_in(kind.Params, err, *places, noun="tunable") from None
        self._params = params
        for block, wanted in vars(kind.switches(params)).items():
            model = getattr(self, block)
            for key, value in wanted.items():
                if key in model.model_fields_set and getattr(model, key) != value:
                    def text(v: Any) -> str:  # in the field's own units ('100 ms')
                        dumped = model.model_copy(update={key: v}).model_dump(
                            mode="json", include={key})[key]
                        return str(dumped) if isinstance(v, float) else shown(v)
                    raise ProblemAt(f"policy {self.policy} needs {text(value)} (it sets "
                                    f"{block}.{key} from its own tunables); the file sets "
                                    f"{text(getattr(model, key))}", (block, key))
            object.__setattr__(self, block, model.model_copy(update=wanted))  # frozen model
        return self

    @model_validator(mode="after")
    def _similarity(self) -> "TraceMemoryExperiment":
        """The law's inputs: one way of giving S, no hand-scaled policy clocks beside it,
        and a CPU whose caches and TLBs divide by it (and then by the sample)."""
        if self.real_footprint is not None and self.scale != 1:
            raise ProblemAt("give scale or real_footprint, not both", ("real_footprint",))
        scaled = self.scale != 1 or self.real_footprint is not None
        hand = getattr(self._params, "time_scale", 1)
        if scaled and hand != 1:
            raise ProblemAt(f"time_scale {hand:g} scales the policy's clocks by hand, which "
                            f"the similarity law does from the kernel's values: drop "
                            f"time_scale and let scale do it",
                            ("policy_params", "time_scale"), ("policy", "time_scale"))
        if self.real_footprint is None:  # else known when the trace is read
            try:
                scaled_cpu(setup.law_of(self, 1).cpu(self.cpu), self.sample)
            except ValueError as exc:
                raise ProblemAt(f"{exc}{setup.scale_way_out(self)}", ("scale",)) from None
        return self

    def coarser(self) -> QuickForm:
        """The same study at a coarser scale (:func:`.trace_setup.quick_form`)."""
        return setup.quick_form(self)

    def scaled_text(self) -> str:
        """``cxlsim resolve``'s comments on the law (:func:`.trace_setup.scaled_text`)."""
        return setup.scaled_text(self)

    @field_validator("sample")
    @classmethod
    def _sample(cls, k: int, info: ValidationInfo) -> int:
        """A power of two that divides every TLB and cache of the CPU."""
        check_factor(k)
        if info.data.get("cpu") is not None:
            scaled_cpu(info.data["cpu"], k)
        return k

    @field_validator("kernel")
    @classmethod
    def _kernel_nodes(cls, kernel: KernelParams, info: ValidationInfo) -> KernelParams:
        """The kernel's node numbers are the experiment's NUMA nodes (each with memory)."""
        if info.data.get("nodes"):
            kernel.check_nodes([1] * len(info.data["nodes"]))
        return kernel

    @field_validator("mempolicy")
    @classmethod
    def _policy_nodes(cls, policy: MemPolicy, info: ValidationInfo) -> MemPolicy:
        """The policy's nodes are the experiment's NUMA nodes, numbered in order."""
        nodes = list(info.data.get("nodes") or {})
        missing = [n for n in policy.nodes if n >= len(nodes)] if nodes else []
        if missing:
            names = ", ".join(f"{i} {name}" for i, name in enumerate(nodes))
            raise ValueError(f"node {missing[0]} is not one of the experiment's nodes ({names})")
        return policy

    @model_validator(mode="before")
    @classmethod
    def _footprint_shares(cls, data: Any) -> Any:
        """A topology node's ``capacity: 35 %`` goes to ``capacity_shares``; the node
        holds a page until the run resolves the share against the trace's footprint."""
        topology = data.get("topology") if isinstance(data, dict) else None
        nodes = topology.get("nodes") if isinstance(topology, dict) else None
        if not isinstance(nodes, list):
            return data
        shares, kept = {}, []
        for i, node in enumerate(nodes):
            value = node.get("capacity") if isinstance(node, dict) else None
            if isinstance(value, str) and value.strip().endswith("%"):
                try:
                    shares[node.get("name")] = parse_percent(value)
                except ValueError as exc:
                    raise ProblemAt(str(exc), ("topology", "nodes", i, "capacity")) from None
                node = {**node, "capacity": 4096}
            kept.append(node)
        if not shares:
            return data
        return {**data, "topology": {**topology, "nodes": kept},
                "capacity_shares": {**data.get("capacity_shares", {}), **shares}}

    @model_serializer(mode="wrap")
    def _shares_on_their_nodes(self, handler: SerializerFunctionWrapHandler,
                               info: SerializationInfo) -> dict[str, Any]:
        """Dumped as text (``cxlsim resolve``, a run's ``config.resolved.yaml``), a node
        whose capacity is a share shows the share, not the page it holds until the run
        resolves it (read back, the file is the same experiment)."""
        data = handler(self)
        shares = data.get("capacity_shares") if info.mode_is_json() else None
        for node in (data.get("topology") or {}).get("nodes", []) if shares else []:
            if node.get("name") in shares:
                node["capacity"] = shares[node["name"]]
        return data

    @model_validator(mode="after")
    def _machine(self) -> "TraceMemoryExperiment":
        """The kernel's machine: the host's DRAM in a node (the CPUs are there), and at
        least a 4 KiB page on every node."""
        memory = setup.node_memory(self)
        if not any(dram for dram, _ in memory.values()):
            raise ProblemAt("no NUMA node holds the host's DRAM (a dram target), where its "
                            "CPUs would be; expected one", ("nodes",))
        for node, (_, size) in memory.items():
            if size < 4096:
                raise ProblemAt(f"NUMA node {node!r} holds {size} B, less than a 4 KiB page",
                                ("nodes", node))
        return self

    def build_host(self, sim: Simulation, stack: ExitStack, progress: bool = False,
             traffic: Traffic | None = None) -> HostRun:
        """This experiment's host on ``sim``: its trace read (kept open by ``stack``),
        its machine set up by the law, its kernel and policy; ``traffic``: the load of
        the hosts it shares pooled devices with (its own alone by default)."""
        path, chunks, found = trace_input.surveyed(self, stack, progress)
        kind = POLICIES[self.policy]
        # a bound's nodes hold every page twice over, watermarks and all
        numa = setup.numa_of(self, 2 * found.footprint * 4096 if kind.unbounded else 0,
                             found.footprint)
        trace_input.check(self, found)
        if found.page_type.size and found.page_type.max() >= len(PAGE_TYPES):
            raise InputError(f"{path}: page_type {int(found.page_type.max())} is not a "
                             f"page type (0 anon, 1 file, 2 shmem)", key="trace")
        placement = Placement(found.footprint, page_type=found.page_type,
                              pingpong=self.pingpong)
        cores = setup.cores_for(self, len(found.threads))
        law = setup.law_of(self, cores, found.footprint)
        if law.scale < 1:
            raise InputError(f"real_footprint is smaller than the trace's footprint "
                             f"({found.footprint * 4096:,} B); expected at least that",
                             key="real_footprint")
        try:
            exp = setup.similar(self, law, numa)
        except ValueError as exc:
            raise InputError(str(exc), key="real_footprint") from None
        kernel = KernelMemory(numa, placement, exp.kernel, law.scale)
        room = kernel.capacity - kernel.wmark[:, WMARK_MIN]
        trace_input.check_room(self, found, kernel.capacity, room)
        policy = kind(numa, found.footprint, self.mempolicy,
                      found.counts if kind.needs_counts else None, room, exp._params)
        host = Host(sim, make_rng(self.seed), chunks, found, self.memory(), exp.cpu, policy,
                    kernel, cores, self.epoch, self.seed, self.thread_mlp, exp.migration,
                    setup.scanner_of(exp), setup.damon_of(exp), self.compute, self.sample,
                    law.stands_for, Traffic() if traffic is None else traffic,
                    exp.kswapd_interval)
        return HostRun(self, host, found, cores, exp, law)

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        with ExitStack() as stack:
            sim = Simulation(self.seed)
            built = self.build_host(sim, stack, progress)
            with progress_bar(progress, -(-built.found.records // self.epoch), self.name,
                              self.step_unit) as bar:
                run_hosts(sim, [built.host], bar.update)
        return built.result()

    def shared_input(self) -> Hashable | None:
        """A generated trace small enough to keep (:mod:`..trace_cache`) is shared."""
        if isinstance(self.trace, str) or not trace_cache.keeps(self.trace.n):
            return None
        return trace_input.key(self)

    def run_key(self) -> Hashable | None:
        """A bound (all-local, all-cxl) gives its nodes room for every page twice over,
        more than any share of the footprint: its runs differ only in
        ``capacity_shares`` give the same metrics."""
        if not POLICIES[self.policy].unbounded:
            return None
        return json.dumps(self.model_dump(mode="json", exclude={"capacity_shares"}),
                          sort_keys=True)

    def prepare(self, progress: bool = False) -> None:
        """Generate and survey the shared trace (see :meth:`shared_input`)."""
        if self.shared_input() is None:
            return
        with ExitStack() as stack:
            trace_input.surveyed(self, stack, progress)



@dataclass
class HostRun:
    """One experiment's host as :meth:`TraceMemoryExperiment.build_host` set it up, and what
    its results are made of once it has run."""

    spec: TraceMemoryExperiment
    host: Host
    found: Survey
    cores: int
    exp: TraceMemoryExperiment  # the experiment as the law set it up
    law: Law

    def result(self) -> RunResult:
        """The run's result, as :meth:`TraceMemoryExperiment.run` reports it."""
        result = results.result(self.spec, self.host.result, self.found, self.cores,
                                self.exp)
        result.metrics.update(setup.scaled_metrics(self.exp, self.law, self.host.result))
        return result


def run_together(specs: list[TraceMemoryExperiment], seed: int = 1) -> list[RunResult]:
    """Run ``specs`` -- each one host's trace, memory and policy, on one topology's
    hosts -- on one simulated time, loading the pooled devices they share together
    (:mod:`cxlsim.fabric.traffic`); each its result as it would report alone."""
    traffic = Traffic()
    with ExitStack() as stack:
        sim = Simulation(seed)
        built = [spec.build_host(sim, stack, traffic=traffic) for spec in specs]
        run_hosts(sim, [b.host for b in built])
    return [b.result() for b in built]
