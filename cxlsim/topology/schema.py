"""The topology file: nodes (hosts, root ports, switches, devices, memories), links, and
the bindings of pooled memory's logical devices to hosts.

Nodes are a list discriminated by ``type``; links join two node endpoints written
``node`` or ``node.port``; a binding gives a logical device (``DEVICE.N``) to a host
(:mod:`cxlsim.fabric`). Cross-references (a link to a missing node, a port used
twice, an unreachable device) are checked on the graph, in :mod:`cxlsim.topology.graph`,
where the file positions of the offending keys are known.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.devices.memory import MemoryBackendParams
from cxlsim.fabric import MAX_LDS
from cxlsim.link.params import LinkParams
from cxlsim.memory.dram import DramParams
from cxlsim.units import Bandwidth, Frequency, Size, Time


def _size_not_share(value: object) -> object:
    """A memory node's capacity is a size: a share ('35 %') has no footprint to be of."""
    if isinstance(value, str) and value.strip().endswith("%"):
        raise ValueError(f"{value!r} is a share of a trace's footprint, which only a "
                         f"trace-memory experiment resolves (against its trace); expected "
                         f"a size such as '2 GiB'")
    return value


#: A memory node's capacity (trace-memory takes a share of its trace's footprint first).
Capacity = Annotated[Size, BeforeValidator(_size_not_share)]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _plain_name(name: str) -> str:
    """Names are written in endpoints (``sw0.dp1``) and keys: no dots, spaces or leading
    digit."""
    if not _NAME.fullmatch(name):
        raise ValueError("expected a name of letters, digits, '_' and '-', starting with a "
                         f"letter or '_'; found {name!r}")
    return name


Name = Annotated[str, AfterValidator(_plain_name)]


def check_endpoint(value: str) -> str:
    """``value`` if it is a link endpoint, ``node`` or ``node.port``; else a ValueError."""
    node, dot, port = value.partition(".")
    if not node or (dot and not port) or "." in port:
        raise ValueError(f"expected an endpoint 'node' or 'node.port'; found {value!r}")
    return value


Endpoint = Annotated[str, AfterValidator(check_endpoint)]


class _Node(StrictModel):
    name: Name = Field(description="unique node name (letters, digits, _ and -)")


class HostSpec(_Node):
    """A host: CPU sockets with cores and local DRAM channels."""

    type: Literal["host"] = "host"
    sockets: int = Field(1, ge=1, description="CPU sockets")
    cores: int = Field(1, ge=1, description="cores per socket")
    frequency: Frequency = Field(2.0e9, description="core clock")
    dram_channels: int = Field(8, ge=0, description="local DRAM channels per socket")


class RootPortSpec(_Node):
    """A root port / host bridge of a host, with the home agent's added latency."""

    type: Literal["root_port"] = "root_port"
    host: str = Field(description="the host this root port belongs to")
    latency: Time = Field(0.0, description="home agent + root port latency, one way")


class SwitchSpec(_Node):
    """A PCIe/CXL switch: ports, a hop latency, optional per-port bandwidth cap."""

    type: Literal["switch"] = "switch"
    ports: int = Field(ge=2, description="number of ports (upstream and downstream)")
    hop_latency: Time = Field(90.0, description="latency through the switch, one way")
    port_bandwidth: Bandwidth | None = Field(None, description="per-port bandwidth cap")


class LogicalDeviceSpec(StrictModel):
    """One logical device (LD) of a pooled (multi-logical) Type 3 device."""

    capacity: Size = Field(gt=0, description="the device memory this LD offers a host")


class CxlDeviceSpec(_Node, MemoryBackendParams):
    """A CXL Type 1 (cache only), Type 2 (cache + memory) or Type 3 (memory) device.

    The memory timing fields are those of :class:`~cxlsim.devices.MemoryBackendParams`.
    """

    type: Literal["cxl_device"] = "cxl_device"
    cxl_type: Literal[1, 2, 3] = Field(description="CXL device type")
    capacity: Capacity = Field(0, description="device-attached memory")
    channel_queue: int | None = Field(None, ge=1, description=(
        "requests the controller takes at once per channel of the dram node attached "
        "to it (its request queue, scaled by the channels it drives); with "
        "request_buffer too, the lesser limit holds; none = no such limit"))
    logical_devices: list[LogicalDeviceSpec] = Field(
        default_factory=list, max_length=MAX_LDS, description=(
            f"a pooled Type 3 device (MLD): its logical devices, at most {MAX_LDS}, each "
            "bound to one host at a time (bindings: [{ld: NAME.N, host: HOST}]); none: a "
            "single-logical device"))

    @model_validator(mode="after")
    def _memory_described(self) -> CxlDeviceSpec:
        """A Type 2/3 device has memory: zero capacity or zero access time is a
        forgotten preset, not a device (it would answer a read in a few ns)."""
        missing = [key for key, absent in (
            ("capacity", self.capacity == 0),
            ("controller_latency/media_latency", self.controller_latency + self.media_latency == 0))
            if absent]
        if self.cxl_type in (2, 3) and missing:
            preset = ("; a preset such as 'devices/cxl-type3-expander' gives them"
                      if self.cxl_type == 3 else "")
            raise ValueError(f"a CXL Type {self.cxl_type} device has memory: missing "
                             f"{' and '.join(missing)}{preset}")
        if self.logical_devices and self.cxl_type != 3:
            raise ValueError(f"only a Type 3 device is pooled into logical devices; this "
                             f"one is Type {self.cxl_type}")
        cut = sum(ld.capacity for ld in self.logical_devices)
        if cut > self.capacity:
            raise ValueError(f"its logical devices hold {cut:,} B together, more than the "
                             f"device's capacity of {int(self.capacity):,} B")
        return self


class _DmaDevice(_Node):
    dma_setup: Time = Field(0.0, description="fixed cost of one DMA transfer (descriptor "
                                             "fetch, doorbell, the measured round trips)")


class AcceleratorSpec(_DmaDevice):
    """A GPU or FPGA, on plain PCIe or as a CXL Type 1/2 device."""

    type: Literal["accelerator"] = "accelerator"
    kind: Literal["gpu", "fpga"] = Field(description="accelerator kind")
    cxl_type: Literal[1, 2] | None = Field(None, description="CXL type, or none for plain PCIe")
    capacity: Size = Field(0, description="device memory")


class PcieDeviceSpec(_DmaDevice):
    """A plain PCIe endpoint with DMA engines (NIC, SSD, ...)."""

    type: Literal["pcie_device"] = "pcie_device"
    dma_engines: int = Field(1, ge=1, description="DMA engines")


class DramSpec(_Node, DramParams):
    """DRAM attached to a host (local memory) or to a device (device memory).

    The channel and timing fields are those of :class:`~cxlsim.memory.dram.DramParams`
    (e.g. ``preset: memory/ddr5-4800``).
    """

    type: Literal["dram"] = "dram"
    capacity: Capacity = Field(0, description="capacity")
    attached_to: str = Field(description="host or device node this memory belongs to")


NodeSpec = Annotated[
    Union[HostSpec, RootPortSpec, SwitchSpec, CxlDeviceSpec, AcceleratorSpec,
          PcieDeviceSpec, DramSpec],
    Field(discriminator="type"),
]

#: Node types that are route destinations ("devices") for ``topology show``.
DEVICE_TYPES = ("cxl_device", "accelerator", "pcie_device")


class LinkSpec(LinkParams):
    """A link between two endpoints, ``node`` or ``node.port``."""

    name: Name | None = Field(None, description=(
        "optional name, unique among the links: --set addresses the link as "
        "links[NAME] as well as links[N]"))
    src: Endpoint = Field(alias="from", description="upstream endpoint: node or node.port")
    dst: Endpoint = Field(alias="to", description="downstream endpoint: node or node.port")


class BindingSpec(StrictModel):
    """A logical device bound to a host (the fabric manager's Bind)."""

    ld: str = Field(description="the logical device, DEVICE.N (N counts from 0)")
    host: str = Field(description="the host it is bound to")


class TopologySpec(StrictModel):
    """A whole system: what it is called, its nodes, its links and which host each
    pooled logical device is bound to."""

    name: str = Field(description="topology name")
    description: str = Field("", description="what this system is")
    nodes: list[NodeSpec] = Field(min_length=1, description="hosts, ports, switches, devices")
    links: list[LinkSpec] = Field(default_factory=list, description="links between endpoints")
    bindings: list[BindingSpec] = Field(default_factory=list, description=(
        "logical devices bound to hosts, each at most once; an LD left out is the fabric "
        "manager's (no host sees it)"))
