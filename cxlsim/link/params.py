"""Physical parameters of one PCIe or Flex Bus (CXL) link, per direction.

A link is named by its PCIe generation (which implies the transfer rate and the line
encoding) or by an explicit rate; width, flit mode and latency adders complete it.
Derived quantities (raw bandwidth per direction, one-way latency) are properties so
that the resolved configuration keeps exactly what the user wrote.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.units import Rate, Time

Encoding = Literal["8b/10b", "128b/130b", "1b/1b"]
FlitMode = Literal["68B", "256B", "256B-lopt"]

#: PCIe generation -> (transfer rate in T/s, line encoding). PCIe Base / CXL spec tables.
GENERATIONS: dict[int, tuple[float, Encoding]] = {
    1: (2.5e9, "8b/10b"),
    2: (5e9, "8b/10b"),
    3: (8e9, "128b/130b"),
    4: (16e9, "128b/130b"),
    5: (32e9, "128b/130b"),
    6: (64e9, "1b/1b"),
}

ENCODING_EFFICIENCY: dict[str, float] = {"8b/10b": 8 / 10, "128b/130b": 128 / 130, "1b/1b": 1.0}


class LinkParams(StrictModel):
    """A point-to-point PCIe or Flex Bus link; bandwidth figures are per direction."""

    protocol: Literal["pcie", "cxl"] = Field("cxl", description="PCIe link or CXL Flex Bus link")
    generation: int | None = Field(None, ge=1, le=6,
                                   description="PCIe generation; implies rate and encoding")
    rate: Rate | None = Field(None, description="transfer rate per lane, e.g. '32 GT/s'; "
                                                "overrides the generation's rate")
    width: Literal[1, 2, 4, 8, 16] = Field(16, description="lanes per direction")
    encoding: Encoding | None = Field(None, description="line encoding; default from the rate")
    flit_mode: FlitMode | None = Field(None, description="CXL flit mode; default 68B up to "
                                                         "32 GT/s, 256B at 64 GT/s")
    propagation: Time = Field(0.0, description="wire/trace propagation delay")
    port_latency: Time = Field(0.0, description="pipeline latency of one port (tx or rx side)")
    retimers: int = Field(0, ge=0, description="retimers on the channel")
    retimer_latency: Time = Field(10.0, description="latency of one retimer")
    latency: Time = Field(0.0, description="further one-way latency adder")
    weight_io: int = Field(1, ge=0, le=15, description="ARB/MUX weight of CXL.io (0 acts as 1)")
    weight_cachemem: int = Field(1, ge=0, le=15,
                                 description="ARB/MUX weight of CXL.cache+mem (0 acts as 1)")
    retry_buffer: int = Field(64, ge=0, le=255, description=(
        "link-layer retry buffer, flits (spec: at least 22, at most 255); 0 = unlimited. "
        "64 covers the Ack round trip of a x16 32 GT/s link with 10 ns ports"))
    ack_every: int = Field(8, ge=1, description="flits acknowledged by one Ack")
    ber: float = Field(0.0, ge=0.0, lt=1e-3, description="bit error rate on the wire")
    mps: Literal[128, 256, 512, 1024, 2048, 4096] = Field(
        256, description="max payload size negotiated on the link, bytes (PCIe / CXL.io TLPs)")
    mrrs: Literal[128, 256, 512, 1024, 2048, 4096] = Field(
        512, description="max read request size of the device's DMA, bytes")
    rcb: Literal[64, 128] = Field(64, description="read completion boundary, bytes")
    cxl_penalty: float | None = Field(None, gt=0, le=1, description=(
        "CXL links: the fraction of the same PHY's PCIe effective (TLP) bandwidth this link "
        "delivers to a saturated CXL.mem read stream, as the ORNL CXL model defines it; "
        "none = what the flit packing gives"))

    @model_validator(mode="after")
    def _rate_is_known(self) -> LinkParams:
        if self.generation is None and self.rate is None:
            raise ValueError("a link needs a 'generation' (1-6) or a 'rate' such as '32 GT/s'")
        if self.protocol == "pcie" and self.flit_mode is not None and self.transfer_rate < 64e9:
            raise ValueError("flit_mode applies to CXL links (and PCIe at 64 GT/s)")
        if self.cxl_penalty is not None and (self.protocol != "cxl" or self.generation is None
                                             or self.generation > 5 or self.rate is not None):
            raise ValueError("cxl_penalty applies to a CXL link named by its PCIe generation "
                             "1-5 (the PCIe bandwidth it is a fraction of)")
        return self

    @property
    def transfer_rate(self) -> float:
        """Transfers per second per lane."""
        return self.rate if self.rate is not None else GENERATIONS[self.generation][0]

    @property
    def line_encoding(self) -> Encoding:
        """The encoding given, or the one the rate implies."""
        if self.encoding is not None:
            return self.encoding
        if self.generation is not None and self.rate is None:
            return GENERATIONS[self.generation][1]
        if self.transfer_rate >= 64e9:
            return "1b/1b"
        return "128b/130b" if self.transfer_rate >= 8e9 else "8b/10b"

    @property
    def flit(self) -> FlitMode | None:
        """The flit mode in force (None for a non-flit PCIe link)."""
        if self.flit_mode is not None:
            return self.flit_mode
        if self.transfer_rate >= 64e9:
            return "256B"
        return "68B" if self.protocol == "cxl" else None

    @property
    def raw_bandwidth(self) -> float:
        """Bytes per second per direction after line encoding, before protocol overheads."""
        return self.transfer_rate * self.width * ENCODING_EFFICIENCY[self.line_encoding] / 8

    @property
    def flit_bytes(self) -> int:
        """Bytes of one flit on the wire (1 for byte-granular, non-flit PCIe)."""
        return {"68B": 68, "256B": 256, "256B-lopt": 256, None: 1}[self.flit]

    @property
    def one_way_latency(self) -> float:
        """ns from the sender's port to the receiver's port, without serialization."""
        return (2 * self.port_latency + self.propagation
                + self.retimers * self.retimer_latency + self.latency)
