"""One link, per direction: physical parameters, flit packing, TLP accounting, and the
transaction-level direction (serializer, ARB/MUX, retry buffer)."""

from cxlsim.link.direction import LinkDirection
from cxlsim.link.flits import (
    mixed_costs, mixed_line_bytes, mixed_message_bytes, pack, saturated_efficiency,
    wire_bytes_per_message,
)
from cxlsim.link.params import LinkParams
from cxlsim.link.tlp import PcieConfig, dma_wire_bytes, tlp_bandwidth

__all__ = ["LinkDirection", "LinkParams", "PcieConfig", "dma_wire_bytes", "mixed_costs",
           "mixed_line_bytes", "mixed_message_bytes", "pack", "saturated_efficiency",
           "tlp_bandwidth", "wire_bytes_per_message"]
