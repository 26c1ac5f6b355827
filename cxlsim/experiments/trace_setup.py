"""A trace-memory run's set-up: the similarity law applied to the experiment (S and K,
its tunables and CPU as the run takes them, what ``cxlsim resolve`` shows of them, the
quick form at a coarser scale) and the machine the kernel sees (NUMA nodes, capacities,
the scanner and the monitor). Each function takes the experiment
(:class:`~cxlsim.experiments.kinds.trace_memory.TraceMemoryExperiment`) as ``exp``; the
kind composes them with its schema (:mod:`..kinds.trace_memory`), its input
(:mod:`.trace_input`) and its results (:mod:`.trace_results`)."""

from __future__ import annotations

import warnings
from typing import Any

from cxlsim.errors import InputError, RunWarning
from cxlsim.experiments.memory_base import target_capacity
from cxlsim.experiments.quick import QUICK_RECORDS, Change, QuickForm, factor_for
from cxlsim.memory.sampling import collapsed, scaled_cpu
from cxlsim.mm.damon import DamonParams
from cxlsim.mm.numa import Numa
from cxlsim.mm.numa_balancing import Scanner
from cxlsim.mm.similarity import Law, clocks
from cxlsim.tiered.policies import POLICIES
from cxlsim.traces.generators import KINDS
from cxlsim.units import format_percent, format_size, format_time


#: Clocks the epoch need not resolve: a one-off delay, and ages (the monitor counts them
#: in aggregations).
UNRESOLVED = ("scan_delay", "min_age", "max_age")


def _flat(tree: dict, prefix: str = "") -> dict[str, Any]:
    """A nested mapping's leaves by dotted name."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def quick_form(exp) -> QuickForm:
    """The same study on a generated trace ``F`` times smaller (:mod:`..quick`): S,
    records, the generator's footprint-like parameters, epoch, warm-up and the
    nodes' absolute capacities; notes name the caches and TLBs the coarser scale
    leaves without a whole set."""
    if isinstance(exp.trace, str):
        return QuickForm(1, why_not="its trace is a file; only a generated trace can "
                                    "be made smaller")
    factor = factor_for(exp.trace.n)
    if factor == 1:
        return QuickForm(1, why_not=f"its trace of {exp.trace.n:,} records is already "
                                    f"at most {QUICK_RECORDS:,}")
    changes = [Change.of("trace.n", exp.trace.n, "count", factor)]
    for name, param in KINDS[exp.trace.generate].params.items():
        if param.shrinks:
            changes.append(Change.of(f"trace.params.{name}", exp.trace.params.get(
                name, param.default), param.shrinks, factor))
    if exp.real_footprint is None:  # else S follows the smaller footprint
        changes.insert(0, Change.of("scale", f"{exp.scale:g}", "scale", factor))
    changes += [Change.of(key, getattr(exp, key), "count", factor)
                for key in ("epoch", "warmup") if getattr(exp, key)]
    changes += [Change.of(key, format_size(size), "size", factor)
                for members in exp.nodes.values() for m in members
                if m not in exp.capacity_shares
                for key, size in [target_capacity(exp.topology, m)]]
    scale = exp.scale * factor if exp.real_footprint is None else None
    notes = () if scale is None else tuple(
        f"{name} at scale {scale:g}: {text}"
        for name, text in collapsed(exp.cpu, int(scale)))
    return QuickForm(factor, tuple(changes), notes)


def scale_way_out(exp) -> str:
    """A refused scale's way out: ``--set scale=N``, the largest power of two below
    the scale whose law (and sample) this CPU takes; nothing if the scale is no power
    of two (what the refusal says) or none does."""
    scale = int(exp.scale)
    if scale != exp.scale or scale & (scale - 1):
        return ""
    for n in (scale >> i for i in range(1, scale.bit_length())):
        try:
            scaled_cpu(Law(n).cpu(exp.cpu), exp.sample)
        except ValueError:
            continue
        sample = f" with sample {exp.sample}" if exp.sample > 1 else ""
        return (f"; to run on this CPU{sample}: --set scale={n} (and a trace footprint "
                f"{scale // n} times larger to stand for the same system)")
    return ""


def cores_for(exp, trace_threads: int) -> int:
    """The cores a run of a trace with ``trace_threads`` threads takes: one per
    thread (or ``threads``), at most the CPU's; the run and ``resolve`` both ask."""
    return min(exp.workers if exp.threads else trace_threads, exp.cpu.cores)


def trace_threads(exp) -> int | None:
    """The threads of a generated trace (None for a file: known when it is read)."""
    if isinstance(exp.trace, str):
        return None
    param = KINDS[exp.trace.generate].params["threads"]
    return param.parse(str(exp.trace.params.get("threads", param.default)))


def law_of(exp, cores: int, footprint: int = 0) -> Law:
    """The similarity law of a run on ``cores`` cores of a trace of ``footprint``
    pages (needed with ``real_footprint``)."""
    scale = exp.real_footprint / (footprint * 4096) if exp.real_footprint else exp.scale
    return Law(scale, cores, exp.real_threads or cores)


def similar(exp, law: Law, numa: Numa) -> Any:
    """This experiment as its run is set up under ``law``: the kernel's, migration's,
    the scanner's, the monitor's and the policy's tunables, kswapd's interval and the
    CPU scaled (itself under the identity)."""
    if law.identity:
        return exp
    lowmem = sum(int(c) for i, c in enumerate(numa.capacity)
                 if i not in exp.kernel.movable_nodes) * 4096
    kernel = law.apply(exp.kernel).model_copy(update={
        "min_free_kbytes": law.min_free_kbytes(exp.kernel.min_free_kbytes, lowmem)})
    out = exp.model_copy(update={
        "kernel": kernel, "migration": law.apply(exp.migration),
        "numa_balancing": law.apply(exp.numa_balancing), "damon": law.apply(exp.damon),
        "kswapd_interval": exp.kswapd_interval * law.factor("clock"),
        "cpu": law.cpu(exp.cpu)})
    out._params = law.apply(exp._params)
    return out


def clocks_in_use(exp) -> dict[str, float]:
    """The clocks in use, by dotted name (ns): the policy's, migration's, and the
    scanner's and the monitor's when on."""
    blocks = {"policy": exp._params, "migration": exp.migration,
              "numa_balancing": exp.numa_balancing, "damon": exp.damon}
    return {f"{block}.{name}": value for block, model in blocks.items()
            if getattr(model, "enabled", True) for name, value in clocks(model)}


def scaled_text(exp) -> str:
    """``cxlsim resolve``'s comment lines: the capacities given as shares of the
    footprint, and each clock, quota and rate the law changes, kernel value -> the
    run's (none under the identity law)."""
    return "".join(line + "\n" for line in _shares_text(exp) + _law_text(exp))


def _shares_text(exp) -> list[str]:
    """Each capacity given as a share of the footprint, and the bytes it comes to
    when the footprint is known (a generator's ``footprint``)."""
    if not exp.capacity_shares:
        return []
    trace = exp.trace
    params = KINDS[trace.generate].params if not isinstance(trace, str) else {}
    if "footprint" not in params:
        return ["# capacity as a share of the trace's footprint, resolved when the "
                "trace is read:"] + [f"#   {node}: {format_percent(share)}"
                                     for node, share in exp.capacity_shares.items()]
    footprint = params["footprint"].parse(
        str(trace.params.get("footprint", params["footprint"].default)))
    lines = [f"# capacity as a share of the trace's footprint ({trace.generate}'s "
             f"footprint: {format_size(footprint)}; the run takes",
             "# the share of the pages the trace touches, at most that many):"]
    for node, share in exp.capacity_shares.items():
        size = capacity_of(exp, node, footprint // 4096)
        lines.append(f"#   {node}: {format_percent(share)} -> {size:,} B "
                     f"({size / 2**20:,.1f} MiB)")
    return lines


def _law_text(exp) -> list[str]:
    """Each clock, quota and rate the similarity law changes, kernel value -> the
    run's."""
    threads = trace_threads(exp)
    if exp.real_footprint is not None or threads is None:
        known = "S = real_footprint / the trace's footprint" if exp.real_footprint \
            else "K = S x cores / real_threads, the cores one per thread of the trace"
        return [f"# scaled: {known}, known when the trace is read"]
    law = law_of(exp, cores_for(exp, threads), 1)
    if law.identity:
        return []
    lines = [f"# scaled by the similarity law: S {law.scale:g}, K {law.compression:g} "
             f"(kernel value -> the run's)"]
    scaled = similar(exp, law, numa_of(exp))
    mine, theirs = exp.model_dump(mode="json"), scaled.model_dump(mode="json")
    mine["policy_params"] = exp._params.model_dump(mode="json")
    theirs["policy_params"] = scaled._params.model_dump(mode="json")
    for block in ("kernel", "migration", "numa_balancing", "damon", "policy_params"):
        new = _flat(theirs[block])
        lines += [f"#   {block}.{k}: {v} -> {new[k]}"
                  for k, v in _flat(mine[block]).items() if new[k] != v]
    if theirs["kswapd_interval"] != mine["kswapd_interval"]:
        lines.append(f"#   kswapd_interval: {mine['kswapd_interval']} -> "
                     f"{theirs['kswapd_interval']}")
    return lines


def numa_of(exp, room: int = 0, footprint: int | None = None) -> Numa:
    """The NUMA nodes as the kernel sees them: capacity from the targets (at least
    ``room`` bytes each: the bounds' unbounded nodes; ``capacity_shares`` of a
    ``footprint`` of that many pages), the CPUs on the node holding the host's DRAM."""
    return Numa({"nodes": [{"cpus": exp.cpu.cores if dram else 0,
                            "memory": max(memory, room) // 4096 * 4096}
                           for dram, memory in node_memory(exp, footprint).values()]})


def node_memory(exp, footprint: int | None = None) -> dict[str, tuple[bool, int]]:
    """Each NUMA node's memory: whether it holds the host's DRAM, and its bytes (a
    share of ``footprint`` pages for a node in ``capacity_shares``, when given)."""
    spec = {n.name: n for n in exp.topology.nodes}
    return {node: (any(m in spec and spec[m].type == "dram" for m in members),
                   sum(capacity_of(exp, m, footprint) for m in members))
            for node, members in exp.nodes.items()}


def capacity_of(exp, member: str, footprint: int | None = None) -> int:
    """Memory target ``member``'s bytes: its share of ``footprint`` pages if it has one
    in ``capacity_shares`` and the footprint is given, else its capacity (a pooled
    device's logical device's, for ``DEVICE.N``)."""
    share = exp.capacity_shares.get(member)
    if share is None or footprint is None:
        return target_capacity(exp.topology, member)[1]
    return int(share * footprint) * 4096


def scaled_metrics(exp, law: Law, run) -> dict[str, float]:
    """S, K and (under a law) the clocks the run used, in ns; InputError names a clock
    the law made shorter than the run's mean epoch, which the run cannot resolve."""
    real_s = run.time_ns * law.compression / 1e9
    out = {"scale": law.scale, "time_compression": law.compression, "real_time_s": real_s}
    check_span(exp, real_s)
    if law.identity:
        return out
    epoch_ns = run.time_ns / max(len(run.epochs), 1)
    for name, value in clocks_in_use(exp).items():
        if name.rsplit(".", 1)[-1] not in UNRESOLVED and value < epoch_ns:
            raise InputError(
                f"{name} scales to {format_time(value)}, shorter than the run's mean "
                f"epoch ({format_time(epoch_ns)}, {exp.epoch:,} records), which cannot "
                f"resolve it: a shorter epoch or a smaller scale", key="scale")
        out[f"clock_{name.replace('.', '_')}_ns"] = value
    out["clock_kswapd_interval_ns"] = exp.kswapd_interval
    return out


def scanner_of(exp) -> Scanner | None:
    nb = exp.numa_balancing
    if not nb.enabled:
        return None
    return Scanner(nb.scan_delay, nb.scan_period, max(nb.scan_size // 4096, 1),
                   exp.kernel.numa_balancing_tiering, nb.fault_cost,
                   nb.scan_period_max,
                   nb.scan_size / nb.max_scan_rate * 1e9,
                   upstream=not POLICIES[exp.policy].kernel_5x)


def damon_of(exp) -> DamonParams | None:
    d = exp.damon
    return DamonParams(d.sample, d.aggregate, d.min_regions, d.max_regions) \
        if d.enabled else None


def check_span(exp, real_s: float) -> None:
    """A generator whose records stand for ``span`` of real time (the TPP services)
    is in step with the run only when the run stands for about as long: else a
    :class:`~cxlsim.errors.RunWarning` gives the span that fits."""
    generate = getattr(exp.trace, "generate", None)  # else a trace file's path
    param = generate and KINDS[generate].params.get("span")
    if param is None or not real_s:
        return
    given = param.parse(str(exp.trace.params.get("span", param.default))) / 1e9
    if not 0.5 <= given / real_s <= 2:
        real = format_time(real_s * 1e9, digits=3)
        warnings.warn(RunWarning(
            f"the trace's span ({format_time(given * 1e9)}) is not the real time the run "
            f"stands for ({real}: simulated time x time_compression); its windows are out "
            f"of step with the kernel's clocks (set trace.params.span)", exp.name),
            stacklevel=3)
