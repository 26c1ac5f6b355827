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
import warnings
from collections.abc import Hashable
from contextlib import ExitStack
from typing import Annotated, Any, ClassVar

from pydantic import (Field, PrivateAttr, SerializationInfo, SerializerFunctionWrapHandler,
                      ValidationError, ValidationInfo, field_validator, model_serializer,
                      model_validator)

from cxlsim.config.base import ProblemAt, StrictModel, scales
from cxlsim.config.validate import problem_in
from cxlsim.errors import InputError, RunWarning, shown, unknown
from cxlsim.experiments import trace_cache
from cxlsim.experiments import trace_input, trace_results as results
from cxlsim.experiments.memory_base import MemoryExperiment
from cxlsim.experiments.progress import progress_bar
from cxlsim.experiments.quick import QUICK_RECORDS, Change, QuickForm, factor_for
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import register
from cxlsim.memory.sampling import check_factor, collapsed, scaled_cpu
from cxlsim.mm.damon import DamonParams
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.mempolicy import MemPolicy
from cxlsim.mm.migrate import MigrationParams
from cxlsim.mm.numa import Numa
from cxlsim.mm.numa_balancing import Scanner
from cxlsim.mm.params import KernelParams
from cxlsim.mm.placement import PAGE_TYPES, Placement
from cxlsim.mm.similarity import Law, clocks
from cxlsim.mm.watermarks import WMARK_MIN
from cxlsim.tiered.policies import POLICIES
from cxlsim.tiered.policies.damon import check_attrs
from cxlsim.tiered.run import simulate
from cxlsim.traces.generators import KINDS
from cxlsim.traces.params import parse_param
from cxlsim.units import (Bandwidth, KernelMs, Percent, Size, Time, format_percent, format_size,
                          format_time, parse_percent, shown_in)


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


#: Clocks the epoch need not resolve: a one-off delay, and ages (the monitor counts them
#: in aggregations).
UNRESOLVED = ("scan_delay", "min_age", "max_age")


def _flat(tree: dict, prefix: str = "") -> dict[str, Any]:
    """A nested mapping's leaves by dotted name."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out




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
                scaled_cpu(self._law(1).cpu(self.cpu), self.sample)
            except ValueError as exc:
                raise ProblemAt(f"{exc}{self._scale_way_out()}", ("scale",)) from None
        return self

    def coarser(self) -> QuickForm:
        """The same study on a generated trace ``F`` times smaller (:mod:`..quick`): S,
        records, the generator's footprint-like parameters, epoch, warm-up and the
        nodes' absolute capacities; notes name the caches and TLBs the coarser scale
        leaves without a whole set."""
        if isinstance(self.trace, str):
            return QuickForm(1, why_not="its trace is a file; only a generated trace can "
                                        "be made smaller")
        factor = factor_for(self.trace.n)
        if factor == 1:
            return QuickForm(1, why_not=f"its trace of {self.trace.n:,} records is already "
                                        f"at most {QUICK_RECORDS:,}")
        changes = [Change.of("trace.n", self.trace.n, "count", factor)]
        for name, param in KINDS[self.trace.generate].params.items():
            if param.shrinks:
                changes.append(Change.of(f"trace.params.{name}", self.trace.params.get(
                    name, param.default), param.shrinks, factor))
        if self.real_footprint is None:  # else S follows the smaller footprint
            changes.insert(0, Change.of("scale", f"{self.scale:g}", "scale", factor))
        changes += [Change.of(key, getattr(self, key), "count", factor)
                    for key in ("epoch", "warmup") if getattr(self, key)]
        spec = {n.name: n for n in self.topology.nodes}
        changes += [Change.of(f"topology.nodes[{m}].capacity", format_size(
            int(spec[m].capacity)), "size", factor)
            for members in self.nodes.values() for m in members
            if m not in self.capacity_shares]
        scale = self.scale * factor if self.real_footprint is None else None
        notes = () if scale is None else tuple(
            f"{name} at scale {scale:g}: {text}"
            for name, text in collapsed(self.cpu, int(scale)))
        return QuickForm(factor, tuple(changes), notes)

    def _scale_way_out(self) -> str:
        """A refused scale's way out: ``--set scale=N``, the largest power of two below
        the scale whose law (and sample) this CPU takes; nothing if the scale is no power
        of two (what the refusal says) or none does."""
        scale = int(self.scale)
        if scale != self.scale or scale & (scale - 1):
            return ""
        for n in (scale >> i for i in range(1, scale.bit_length())):
            try:
                scaled_cpu(Law(n).cpu(self.cpu), self.sample)
            except ValueError:
                continue
            sample = f" with sample {self.sample}" if self.sample > 1 else ""
            return (f"; to run on this CPU{sample}: --set scale={n} (and a trace footprint "
                    f"{scale // n} times larger to stand for the same system)")
        return ""

    def _cores(self, trace_threads: int) -> int:
        """The cores a run of a trace with ``trace_threads`` threads takes: one per
        thread (or ``threads``), at most the CPU's; the run and ``resolve`` both ask."""
        return min(self.workers if self.threads else trace_threads, self.cpu.cores)

    def _trace_threads(self) -> int | None:
        """The threads of a generated trace (None for a file: known when it is read)."""
        if isinstance(self.trace, str):
            return None
        param = KINDS[self.trace.generate].params["threads"]
        return param.parse(str(self.trace.params.get("threads", param.default)))

    def _law(self, cores: int, footprint: int = 0) -> Law:
        """The similarity law of a run on ``cores`` cores of a trace of ``footprint``
        pages (needed with ``real_footprint``)."""
        scale = self.real_footprint / (footprint * 4096) if self.real_footprint else self.scale
        return Law(scale, cores, self.real_threads or cores)

    def _similar(self, law: Law, numa: Numa) -> "TraceMemoryExperiment":
        """This experiment as its run is set up under ``law``: the kernel's, migration's,
        the scanner's, the monitor's and the policy's tunables, kswapd's interval and the
        CPU scaled (itself under the identity)."""
        if law.identity:
            return self
        lowmem = sum(int(c) for i, c in enumerate(numa.capacity)
                     if i not in self.kernel.movable_nodes) * 4096
        kernel = law.apply(self.kernel).model_copy(update={
            "min_free_kbytes": law.min_free_kbytes(self.kernel.min_free_kbytes, lowmem)})
        out = self.model_copy(update={
            "kernel": kernel, "migration": law.apply(self.migration),
            "numa_balancing": law.apply(self.numa_balancing), "damon": law.apply(self.damon),
            "kswapd_interval": self.kswapd_interval * law.factor("clock"),
            "cpu": law.cpu(self.cpu)})
        out._params = law.apply(self._params)
        return out

    def _clocks(self) -> dict[str, float]:
        """The clocks in use, by dotted name (ns): the policy's, migration's, and the
        scanner's and the monitor's when on."""
        blocks = {"policy": self._params, "migration": self.migration,
                  "numa_balancing": self.numa_balancing, "damon": self.damon}
        return {f"{block}.{name}": value for block, model in blocks.items()
                if getattr(model, "enabled", True) for name, value in clocks(model)}

    def scaled_text(self) -> str:
        """``cxlsim resolve``'s comment lines: the capacities given as shares of the
        footprint, and each clock, quota and rate the law changes, kernel value -> the
        run's (none under the identity law)."""
        return "".join(line + "\n" for line in self._shares_text() + self._law_text())

    def _shares_text(self) -> list[str]:
        """Each capacity given as a share of the footprint, and the bytes it comes to
        when the footprint is known (a generator's ``footprint``)."""
        if not self.capacity_shares:
            return []
        trace = self.trace
        params = KINDS[trace.generate].params if isinstance(trace, GeneratedTrace) else {}
        if "footprint" not in params:
            return ["# capacity as a share of the trace's footprint, resolved when the "
                    "trace is read:"] + [f"#   {node}: {format_percent(share)}"
                                         for node, share in self.capacity_shares.items()]
        footprint = params["footprint"].parse(
            str(trace.params.get("footprint", params["footprint"].default)))
        lines = [f"# capacity as a share of the trace's footprint ({trace.generate}'s "
                 f"footprint: {format_size(footprint)}; the run takes",
                 "# the share of the pages the trace touches, at most that many):"]
        for node, share in self.capacity_shares.items():
            size = self._capacity(node, footprint // 4096)
            lines.append(f"#   {node}: {format_percent(share)} -> {size:,} B "
                         f"({size / 2**20:,.1f} MiB)")
        return lines

    def _law_text(self) -> list[str]:
        """Each clock, quota and rate the similarity law changes, kernel value -> the
        run's."""
        threads = self._trace_threads()
        if self.real_footprint is not None or threads is None:
            known = "S = real_footprint / the trace's footprint" if self.real_footprint \
                else "K = S x cores / real_threads, the cores one per thread of the trace"
            return [f"# scaled: {known}, known when the trace is read"]
        law = self._law(self._cores(threads), 1)
        if law.identity:
            return []
        lines = [f"# scaled by the similarity law: S {law.scale:g}, K {law.compression:g} "
                 f"(kernel value -> the run's)"]
        scaled = self._similar(law, self.numa())
        mine, theirs = self.model_dump(mode="json"), scaled.model_dump(mode="json")
        mine["policy_params"] = self._params.model_dump(mode="json")
        theirs["policy_params"] = scaled._params.model_dump(mode="json")
        for block in ("kernel", "migration", "numa_balancing", "damon", "policy_params"):
            new = _flat(theirs[block])
            lines += [f"#   {block}.{k}: {v} -> {new[k]}"
                      for k, v in _flat(mine[block]).items() if new[k] != v]
        if theirs["kswapd_interval"] != mine["kswapd_interval"]:
            lines.append(f"#   kswapd_interval: {mine['kswapd_interval']} -> "
                         f"{theirs['kswapd_interval']}")
        return lines

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

    def numa(self, room: int = 0, footprint: int | None = None) -> Numa:
        """The NUMA nodes as the kernel sees them: capacity from the targets (at least
        ``room`` bytes each: the bounds' unbounded nodes; ``capacity_shares`` of a
        ``footprint`` of that many pages), the CPUs on the node holding the host's DRAM."""
        return Numa({"nodes": [{"cpus": self.cpu.cores if dram else 0,
                                "memory": max(memory, room) // 4096 * 4096}
                               for dram, memory in self._node_memory(footprint).values()]})

    def _node_memory(self, footprint: int | None = None) -> dict[str, tuple[bool, int]]:
        """Each NUMA node's memory: whether it holds the host's DRAM, and its bytes (a
        share of ``footprint`` pages for a node in ``capacity_shares``, when given)."""
        spec = {n.name: n for n in self.topology.nodes}
        return {node: (any(spec[m].type == "dram" for m in members),
                       sum(self._capacity(m, footprint) for m in members))
                for node, members in self.nodes.items()}

    def _capacity(self, member: str, footprint: int | None = None) -> int:
        """Memory node ``member``'s bytes: its share of ``footprint`` pages if it has one
        in ``capacity_shares`` and the footprint is given, else its capacity."""
        share = self.capacity_shares.get(member)
        if share is None or footprint is None:
            return int(next(n for n in self.topology.nodes if n.name == member).capacity)
        return int(share * footprint) * 4096

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
        memory = self._node_memory()
        if not any(dram for dram, _ in memory.values()):
            raise ProblemAt("no NUMA node holds the host's DRAM (a dram target), where its "
                            "CPUs would be; expected one", ("nodes",))
        for node, (_, size) in memory.items():
            if size < 4096:
                raise ProblemAt(f"NUMA node {node!r} holds {size} B, less than a 4 KiB page",
                                ("nodes", node))
        return self

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        with ExitStack() as stack:
            path, chunks, found = trace_input.surveyed(self, stack, progress)
            kind = POLICIES[self.policy]
            # a bound's nodes hold every page twice over, watermarks and all
            numa = self.numa(2 * found.footprint * 4096 if kind.unbounded else 0,
                             found.footprint)
            trace_input.check(self, found)
            if found.page_type.size and found.page_type.max() >= len(PAGE_TYPES):
                raise InputError(f"{path}: page_type {int(found.page_type.max())} is not a "
                                 f"page type (0 anon, 1 file, 2 shmem)", key="trace")
            placement = Placement(found.footprint, page_type=found.page_type,
                                  pingpong=self.pingpong)
            cores = self._cores(len(found.threads))
            law = self._law(cores, found.footprint)
            if law.scale < 1:
                raise InputError(f"real_footprint is smaller than the trace's footprint "
                                 f"({found.footprint * 4096:,} B); expected at least that",
                                 key="real_footprint")
            try:
                exp = self._similar(law, numa)
            except ValueError as exc:
                raise InputError(str(exc), key="real_footprint") from None
            kernel = KernelMemory(numa, placement, exp.kernel, law.scale)
            room = kernel.capacity - kernel.wmark[:, WMARK_MIN]
            trace_input.check_room(self, found, kernel.capacity, room)
            policy = kind(numa, found.footprint, self.mempolicy,
                          found.counts if kind.needs_counts else None, room, exp._params)
            with progress_bar(progress, -(-found.records // self.epoch), self.name,
                              self.step_unit) as bar:
                run = simulate(chunks, found, self.memory(), exp.cpu, policy, kernel, cores,
                               self.epoch, self.seed, exp.kswapd_interval, self.thread_mlp,
                               exp.migration, exp._scanner(), exp._damon(), self.compute,
                               self.sample, bar.update, law.stands_for)
        result = results.result(self, run, found, cores, exp)
        result.metrics.update(exp._scaled_metrics(law, run))
        return result

    def _scaled_metrics(self, law: Law, run) -> dict[str, float]:
        """S, K and (under a law) the clocks the run used, in ns; InputError names a clock
        the law made shorter than the run's mean epoch, which the run cannot resolve."""
        real_s = run.time_ns * law.compression / 1e9
        out = {"scale": law.scale, "time_compression": law.compression, "real_time_s": real_s}
        self._check_span(real_s)
        if law.identity:
            return out
        epoch_ns = run.time_ns / max(len(run.epochs), 1)
        for name, value in self._clocks().items():
            if name.rsplit(".", 1)[-1] not in UNRESOLVED and value < epoch_ns:
                raise InputError(
                    f"{name} scales to {format_time(value)}, shorter than the run's mean "
                    f"epoch ({format_time(epoch_ns)}, {self.epoch:,} records), which cannot "
                    f"resolve it: a shorter epoch or a smaller scale", key="scale")
            out[f"clock_{name.replace('.', '_')}_ns"] = value
        out["clock_kswapd_interval_ns"] = self.kswapd_interval
        return out

    def _scanner(self) -> Scanner | None:
        nb = self.numa_balancing
        if not nb.enabled:
            return None
        return Scanner(nb.scan_delay, nb.scan_period, max(nb.scan_size // 4096, 1),
                       self.kernel.numa_balancing_tiering, nb.fault_cost,
                       nb.scan_period_max,
                       nb.scan_size / nb.max_scan_rate * 1e9,
                       upstream=not POLICIES[self.policy].kernel_5x)

    def _damon(self) -> DamonParams | None:
        d = self.damon
        return DamonParams(d.sample, d.aggregate, d.min_regions, d.max_regions) \
            if d.enabled else None

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

    def _check_span(self, real_s: float) -> None:
        """A generator whose records stand for ``span`` of real time (the TPP services)
        is in step with the run only when the run stands for about as long: else a
        :class:`~cxlsim.errors.RunWarning` gives the span that fits."""
        generate = getattr(self.trace, "generate", None)  # else a trace file's path
        param = generate and KINDS[generate].params.get("span")
        if param is None or not real_s:
            return
        given = param.parse(str(self.trace.params.get("span", param.default))) / 1e9
        if not 0.5 <= given / real_s <= 2:
            real = format_time(real_s * 1e9, digits=3)
            warnings.warn(RunWarning(
                f"the trace's span ({format_time(given * 1e9)}) is not the real time the run "
                f"stands for ({real}: simulated time x time_compression); its windows are out "
                f"of step with the kernel's clocks (set trace.params.span)", self.name),
                stacklevel=3)
