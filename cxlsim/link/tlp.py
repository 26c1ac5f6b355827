"""PCIe / CXL.io transaction-layer packets (TLPs): the one home of TLP wire accounting.

Sizes of MWr, MRd and CplD TLPs on the wire, the bandwidth a link leaves for TLPs after
Ack / flow-control DLLPs and SKP ordered sets, and packetizers that give the wire bytes
of a DMA transfer in closed form (one ceiling per TLP kind, so 1 GiB costs the same as
64 B). Both the analytic Neugebauer model (``cxlsim.analytic.pcie``) and the
discrete-event DMA engine use these, so the two cannot drift apart.

Source: Neugebauer et al., "Understanding PCIe performance for end host networking",
SIGCOMM'18, and its PCIe Base 5.0 constants, as written down in
its reference implementation ``pcie-bench/pcie-model``. Like that model, transfers are assumed to
start aligned (no extra TLP for a misaligned head) and "TX"/"RX" are seen from the
device that initiates the DMA: TX carries its writes and read requests, RX the
completions.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Literal

from cxlsim.link.flits import saturated_efficiency
from cxlsim.link.params import ENCODING_EFFICIENCY, GENERATIONS, LinkParams

DmaOp = Literal["write", "read", "read_write"]

DLLP_BYTES = 8                      # 2 B physical framing + 4 B DLLP + 2 B CRC
SKP_BYTES, SKP_INTERVAL = 4, 1538   # one 4 B SKP ordered set per 1538 B
LINK_FRAMING = 8                    # per TLP: framing + sequence number + LCRC
TLP_HEADER = 4                      # first header DW, common to all TLPs
MEM_HEADER = {True: 12, False: 8}   # rest of an MWr / MRd header by addr64
CPLD_HEADER = 8                     # rest of a CplD header (completer/requester IDs)
ECRC_BYTES = 4                      # optional TLP digest

# Bytes between Ack DLLPs (PCIe Base 5.0 Tables 3-7..3-9) and between FC-update DLLPs
# (Tables 2-46..2-48), indexed by lane width then MPS; 8 GT/s-and-up values, which are
# identical in the two sets of tables at these widths. the SIGCOMM'18 model tabulates only x8 and x16,
# so x1/x2/x4 use the x8 row (the nearest given width; the spec's narrower-link limits
# are larger, so this overstates DLLP overhead there), and 2.5/5 GT/s links use the same
# rows as 8 GT/s and up.
ACK_LIMIT: dict[int, dict[int, int]] = {
    16: {128: 144, 256: 168, 512: 182, 1024: 246, 2048: 374, 4096: 630},
    8: {128: 163, 256: 203, 512: 182, 1024: 246, 2048: 374, 4096: 630},
}
FC_LIMIT = ACK_LIMIT
_TABLE_WIDTH = {1: 8, 2: 8, 4: 8, 8: 8, 16: 16}

_SIZES = (128, 256, 512, 1024, 2048, 4096)


@dataclass(frozen=True)
class PcieConfig:
    """A PCIe link and its device settings, as the Neugebauer model takes them.

    ``mps`` is the max payload size, ``mrrs`` the max read request size, ``rcb`` the read
    completion boundary (bytes). PCIe 6.0 (64 GT/s) is rejected: it only runs in flit
    mode, where this per-TLP framing does not apply.
    """

    generation: int = 3
    width: int = 16
    mps: int = 256
    mrrs: int = 512
    rcb: int = 64
    addr64: bool = True
    ecrc: bool = False

    def __post_init__(self) -> None:
        def need(ok: bool, what: str, value: object) -> None:
            if not ok:
                raise ValueError(f"PcieConfig: {what}, not {value!r}")

        need(self.generation in (1, 2, 3, 4, 5) and type(self.generation) is int,
             "generation must be 1-5 (PCIe 6.0 is flit mode, not modelled here)",
             self.generation)
        need(self.width in _TABLE_WIDTH and type(self.width) is int,
             "width must be 1, 2, 4, 8 or 16 lanes", self.width)
        for name in ("mps", "mrrs"):
            value = getattr(self, name)
            need(value in _SIZES and type(value) is int,
                 f"{name} must be a power of two from 128 to 4096 bytes", value)
        need(self.rcb in (64, 128) and type(self.rcb) is int,
             "rcb must be 64 or 128 bytes", self.rcb)
        need(isinstance(self.addr64, bool), "addr64 must be True or False", self.addr64)
        need(isinstance(self.ecrc, bool), "ecrc must be True or False", self.ecrc)

    @property
    def _digest(self) -> int:
        return ECRC_BYTES if self.ecrc else 0

    @property
    def mwr_overhead(self) -> int:
        """Wire bytes of one memory-write TLP besides its payload (24 B with 64-bit addresses)."""
        return LINK_FRAMING + TLP_HEADER + MEM_HEADER[self.addr64] + self._digest

    @property
    def mrd_overhead(self) -> int:
        """Wire bytes of one memory-read request TLP (24 B with 64-bit addresses)."""
        return LINK_FRAMING + TLP_HEADER + MEM_HEADER[self.addr64] + self._digest

    @property
    def cpld_overhead(self) -> int:
        """Wire bytes of one completion-with-data TLP besides its payload (20 B)."""
        return LINK_FRAMING + TLP_HEADER + CPLD_HEADER + self._digest


def raw_bandwidth(cfg: PcieConfig) -> float:
    """Bytes per second per direction after line encoding."""
    rate, encoding = GENERATIONS[cfg.generation]
    return rate * cfg.width * ENCODING_EFFICIENCY[encoding] / 8


def tlp_bandwidth(cfg: PcieConfig) -> float:
    """Bytes per second per direction left for TLPs after Ack and FC-update DLLPs and SKPs."""
    row = _TABLE_WIDTH[cfg.width]
    overhead = (DLLP_BYTES / ACK_LIMIT[row][cfg.mps] + DLLP_BYTES / FC_LIMIT[row][cfg.mps]
                + SKP_BYTES / SKP_INTERVAL)
    return raw_bandwidth(cfg) * (1 - overhead)


def _size(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"a transfer size is a whole number of bytes >= 0, not {n!r}")
    return int(n)


def _tlps(n: int, chunk: int) -> int:
    """Number of TLPs carrying n bytes in pieces of at most ``chunk``."""
    return -(-n // chunk)


def split(n: int, chunk: int) -> list[int]:
    """Payload sizes of the TLPs carrying n bytes: full ``chunk``s, then the remainder."""
    n = _size(n)
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1:
        raise ValueError(f"a TLP chunk is a whole number of bytes >= 1, not {chunk!r}")
    full, rest = divmod(n, int(chunk))
    return [int(chunk)] * full + ([rest] if rest else [])


def completion_size(cfg: PcieConfig, rcb_chunked: bool = False) -> int:
    """Largest completion payload: MPS (or RCB on chipsets that chop at RCB), and never
    more than one read request (MRRS). All are powers of two, so a completion never
    straddles a request and n bytes of completions take ceil(n / completion_size) TLPs.
    This equals the published model's ceil(n / MPS) whenever MRRS >= MPS."""
    return min(cfg.rcb if rcb_chunked else cfg.mps, cfg.mrrs)


def write_wire_bytes(n: int, cfg: PcieConfig) -> int:
    """Wire bytes of the MWr TLPs writing n bytes (MPS-sized payloads)."""
    n = _size(n)
    return n + _tlps(n, cfg.mps) * cfg.mwr_overhead


def read_request_wire_bytes(n: int, cfg: PcieConfig) -> int:
    """Wire bytes of the MRd TLPs requesting n bytes (MRRS-sized requests)."""
    return _tlps(_size(n), cfg.mrrs) * cfg.mrd_overhead


def completion_wire_bytes(n: int, cfg: PcieConfig, rcb_chunked: bool = False) -> int:
    """Wire bytes of the CplD TLPs returning n bytes (see ``completion_size``)."""
    n = _size(n)
    return n + _tlps(n, completion_size(cfg, rcb_chunked)) * cfg.cpld_overhead


def dma_wire_bytes(n: int, op: DmaOp, cfg: PcieConfig,
                   rcb_chunked: bool = False) -> tuple[int, int]:
    """(TX, RX) wire bytes of a DMA of n bytes seen from the initiating device.

    ``"read_write"`` is the model's simultaneous read and write of n bytes each
    (Neugebauer et al., SIGCOMM'18, model pcie-bench/pcie-model, read+write case): TX carries the writes and the read requests, RX the
    completions.
    """
    if op == "write":
        return write_wire_bytes(n, cfg), 0
    if op == "read":
        return read_request_wire_bytes(n, cfg), completion_wire_bytes(n, cfg, rcb_chunked)
    if op == "read_write":
        return (write_wire_bytes(n, cfg) + read_request_wire_bytes(n, cfg),
                completion_wire_bytes(n, cfg, rcb_chunked))
    raise ValueError(f"DMA op must be 'write', 'read' or 'read_write', not {op!r}")


def cxl_fraction(link: LinkParams) -> float:
    """The fraction of its PHY's PCIe effective bandwidth a CXL link delivers to a
    saturated read stream: what the flit packing gives, or less (its ``cxl_penalty``)."""
    return _packed_fraction(link) / cachemem_scale(link)


def _packed_fraction(link: LinkParams) -> float:
    """Saturated CXL.mem read data over PCIe effective bandwidth on the same PHY."""
    pcie = tlp_bandwidth(phy_config(link))
    return link.raw_bandwidth * saturated_efficiency(link.flit, "read") / pcie


def phy_config(link: LinkParams) -> PcieConfig:
    """The PCIe settings of ``link``: its PHY (a generation above 5 is taken as 5, the
    newest the TLP model knows) and its MPS, MRRS and RCB."""
    return PcieConfig(min(link.generation or 5, 5), link.width, link.mps, link.mrrs, link.rcb)


def io_bandwidth(link: LinkParams, bandwidth: float) -> float:
    """What PCIe / CXL.io TLPs get of a direction whose serializer moves ``bandwidth``:
    the TLP rate after DLLP and SKP overheads (CXL.io is PCIe's transaction and data
    link layers, on a CXL link too), for a link named by generation 1-5."""
    if link.generation is not None and link.generation <= 5 and link.rate is None:
        return min(bandwidth, tlp_bandwidth(phy_config(link)))
    return bandwidth


def serializer_bandwidth(link: LinkParams, bandwidth: float) -> float:
    """What a direction's serializer moves: TLP bytes after DLLP/SKP overheads on PCIe,
    raw bytes on CXL (flit overheads are charged per message by the packer)."""
    return io_bandwidth(link, bandwidth) if link.protocol == "pcie" else bandwidth


def coherent_wire_factor(link: LinkParams) -> float:
    """Wire bytes on ``link``'s CXL.cache/.mem stack per TLP byte of a bulk transfer, as
    the ORNL model sees a CXL transfer: the bytes the same transfer's TLPs would take,
    carried in flits packed like a saturated read stream. With :func:`cachemem_scale`
    such a transfer gets exactly :func:`cxl_fraction` of the PHY's PCIe rate."""
    return 1 / saturated_efficiency(link.flit, "read")


def cachemem_scale(link: LinkParams) -> float:
    """How much longer CXL.cache/.mem messages take on ``link`` than the flit packing
    says: 1, or for a ``cxl_penalty`` p below what the packing gives, the factor that
    makes a saturated read stream deliver p x the PHY's PCIe effective bandwidth (the
    ORNL model's definition, on the flit model). CXL.io (PCIe TLPs) is not scaled."""
    if link.cxl_penalty is None:
        return 1.0
    return max(1.0, _packed_fraction(link) / link.cxl_penalty)


def cachemem_bandwidth(link: LinkParams, bandwidth: float) -> float:
    """The serializer bandwidth as CXL.cache/.mem messages see it (see
    :func:`cachemem_scale`); ``bandwidth`` itself for a PCIe link."""
    return serializer_bandwidth(link, bandwidth) / cachemem_scale(link)
