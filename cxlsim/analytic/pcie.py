"""Effective PCIe DMA bandwidth b_n (Neugebauer et al., SIGCOMM'18).

The model of "Understanding PCIe performance for end host networking" as written down
by Neugebauer et al., SIGCOMM'18, model pcie-bench/pcie-model: a transfer of n bytes puts ``tx`` wire bytes on one direction and
``rx`` on the other (``cxlsim.link.tlp.dma_wire_bytes``); both directions have the
same TLP bandwidth B, so transfers per second are T = min(B/tx, B/rx) (the published
"RX-limited unless TX runs out" rule) and b_n = n * T.
"""

from __future__ import annotations

from cxlsim.link.tlp import DmaOp, PcieConfig, dma_wire_bytes, tlp_bandwidth


def effective_bandwidth(n: int, op: DmaOp = "read_write", cfg: PcieConfig = PcieConfig(),
                        rcb_chunked: bool = False) -> float:
    """Payload bytes per second for back-to-back DMAs of n bytes (n >= 1)."""
    if n == 0:
        raise ValueError("effective bandwidth needs a transfer of at least 1 byte")
    tx, rx = dma_wire_bytes(n, op, cfg, rcb_chunked)
    return n * tlp_bandwidth(cfg) / max(tx, rx)
