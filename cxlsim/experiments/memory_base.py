"""The base of the epoch-level memory experiments (mlc-loaded-latency, app-tiering,
weighted-interleave): a topology's memory targets grouped into NUMA nodes, the host's
CPU and threads, and measured curves that may replace a target's model."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from cxlsim.config.base import ProblemAt
from cxlsim.experiments.spec import ExperimentSpec, HostName
from cxlsim.memory.curvefile import CurveFileSpec
from cxlsim.memory.epoch import MemorySystem
from cxlsim.memory.hierarchy import CpuParams
from cxlsim.topology import Topology
from cxlsim.topology.schema import TopologySpec


class MemoryExperiment(ExperimentSpec):
    """Fields shared by the epoch-level memory experiments."""

    topology: TopologySpec = Field(description="the system (a topology file path or inline)")
    host: HostName = Field("host0", validate_default=True,
                           description="the host whose cores run the workload")
    cpu: CpuParams = Field(description="the host's CPU (e.g. preset cpus/xeon6)")
    threads: int | None = Field(None, ge=1, description="worker threads, at most the CPU's "
                                                        "cores; default: the cores less one "
                                                        "(MLC's latency core)")
    mlp: float | None = Field(None, gt=0, description="accesses in flight per thread; "
                                                      "default: the CPU's mlp")
    nodes: dict[str, Annotated[list[str], Field(min_length=1)]] = Field(
        min_length=1, description="NUMA node -> memory targets interleaved in it (the "
                                  "topology's dram node names and CXL device names)")
    curves: dict[str, CurveFileSpec] = Field(
        default_factory=dict, description="memory target -> measured loaded-latency curves "
                                          "that replace its model: a curve file (path "
                                          "relative to this file) or the same inline")

    @field_validator("threads")
    @classmethod
    def _fits_the_cpu(cls, threads: int | None, info: ValidationInfo) -> int | None:
        """One worker per core: more threads than cores could not all run at once."""
        cpu = info.data.get("cpu")
        if threads is not None and cpu is not None and threads > cpu.cores:
            raise ValueError(f"expected at most the CPU's {cpu.cores} cores; found {threads}")
        return threads

    @field_validator("nodes")
    @classmethod
    def _node_targets(cls, nodes: dict[str, list[str]], info: ValidationInfo
                      ) -> dict[str, list[str]]:
        """Each target is a memory of the host, in one node once (two nodes cannot both
        hold a memory's pages, nor can a node interleave over it twice)."""
        first: dict[str, str] = {}
        for node, targets in nodes.items():
            for i, name in enumerate(targets):
                if name in first:
                    where = f"twice in NUMA node {node!r}" if first[name] == node else \
                        f"in NUMA nodes {first[name]!r} and {node!r}"
                    raise ProblemAt(f"memory target {name!r} is listed {where}; expected "
                                    f"each target in one node, once", (node, i))
                first[name] = node
        topology, host = info.data.get("topology"), info.data.get("host")
        if topology is not None and host is not None:  # else their own errors are shown
            known = memory_targets(topology, host)
            spec = {n.name: n for n in topology.nodes}
            for node, targets in nodes.items():
                for i, name in enumerate(targets):
                    if name in spec and spec[name].type == "dram" and not spec[name].latency:
                        raise ProblemAt(f"{name!r} is {host}'s DRAM but has no latency; "
                                        f"expected its idle load-to-use latency, e.g. "
                                        f"topology.nodes[{name}].latency: 110 ns (only a "
                                        f"device's DRAM leaves it 0)", (node, i))
                    if name not in known:
                        bound = next((b.host for b in topology.bindings if b.ld == name), None)
                        why = f"is bound to {bound}, not {host}" if bound else \
                            "is not a memory target of the topology"
                        raise ValueError(f"{name!r} {why}; targets: {', '.join(known)}")
        return nodes

    @field_validator("curves")
    @classmethod
    def _curve_targets(cls, curves: dict[str, CurveFileSpec], info: ValidationInfo
                       ) -> dict[str, CurveFileSpec]:
        return curve_targets(curves, info)

    def memory(self) -> MemorySystem:
        """The epoch level's memory system of the topology (measured curves in place of
        the models of the targets ``curves`` names), with the CPU's trackers."""
        return MemorySystem.from_topology(
            Topology.from_spec(self.topology), self.host, self.nodes,
            curves={name: spec.target(name) for name, spec in self.curves.items()},
            trackers=self.cpu.trackers)

    @property
    def workers(self) -> int:
        return self.threads or max(self.cpu.cores - 1, 1)

    @property
    def thread_mlp(self) -> float:
        return self.mlp or float(self.cpu.mlp)


def weights_known(modes: dict[str, dict[str, float]], nodes: dict[str, list[str]]) -> None:
    """For ``modes`` validators: every node a placement weights must be a NUMA node."""
    for mode, weights in modes.items():
        unknown = set(weights) - set(nodes)
        if unknown:
            raise ValueError(f"mode {mode!r} places pages on unknown node(s) {sorted(unknown)};"
                             f" nodes: {', '.join(nodes)}")


def curve_targets(curves: dict[str, CurveFileSpec], info: ValidationInfo
                  ) -> dict[str, CurveFileSpec]:
    """A ``curves`` field validator: every key must be a memory target of the topology."""
    topology, host = info.data.get("topology"), info.data.get("host")
    if topology is not None and host is not None:  # else their own errors are shown
        known = memory_targets(topology, host)
        for name in curves:
            if name not in known:
                raise ValueError(f"curves for {name!r}, which is not a memory target of "
                                 f"the topology; targets: {', '.join(known)}")
    return curves


def memory_targets(topology: TopologySpec, host: str) -> list[str]:
    """The memories ``host`` can place pages on: its dram nodes, the CXL devices with
    memory, and of a pooled device the logical devices bound to ``host``
    (``DEVICE.N``), as :meth:`cxlsim.memory.epoch.MemorySystem.from_topology` builds
    them."""
    return [n.name for n in topology.nodes
            if (n.type == "dram" and n.attached_to == host)
            or (n.type == "cxl_device" and n.cxl_type in (2, 3) and not n.logical_devices)] \
        + [b.ld for b in topology.bindings if b.host == host]


def target_capacity(topology: TopologySpec, name: str) -> tuple[str, int]:
    """Memory target ``name``'s capacity: the key ``--set`` gives it under, and its
    bytes (a node's, or for ``DEVICE.N`` that logical device's)."""
    device, _, index = name.rpartition(".")  # node names have no dots
    if device:
        node = next(n for n in topology.nodes if n.name == device)
        return (f"topology.nodes[{device}].logical_devices[{index}].capacity",
                int(node.logical_devices[int(index)].capacity))
    node = next(n for n in topology.nodes if n.name == name)
    return f"topology.nodes[{name}].capacity", int(node.capacity)
