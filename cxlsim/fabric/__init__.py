"""The CXL fabric that hosts share: pooled devices cut into logical devices (LDs), and
which host each LD is bound to -- the fabric manager's table (:mod:`.pool`). The
topology file declares them (``logical_devices`` on a Type 3 device, ``bindings``);
each host sees the LDs bound to it as memory without CPUs, as Linux shows a CXL
region as a CPU-less NUMA node. Hosts on one simulated time load a pooled device
together (:mod:`.traffic`)."""

from cxlsim.fabric.pool import MAX_LDS, Bindings, BindError, LogicalDevice
from cxlsim.fabric.traffic import Traffic

__all__ = ["MAX_LDS", "BindError", "Bindings", "LogicalDevice", "Traffic"]
