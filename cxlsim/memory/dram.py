"""DRAM timing: channels, data rate, sustained efficiency, read/write mix, loaded latency.

:class:`DramParams` describes a group of identical DDR channels behind one memory
controller (a host's local DRAM, or the DRAM inside a CXL expander); a topology's
``dram`` node carries these fields, usually from ``preset: memory/ddr5-4800``.
:class:`DramTarget` turns them into the epoch level's loaded-latency model.

Bandwidth. The peak is ``channels x data_rate x bus_bytes``. A stream in one direction
sustains ``efficiency`` of it (refresh, activates, bank and bus scheduling). A mix of
reads and writes loses more: the data bus is half duplex, so the controller queues
writes and drains ``write_drain`` of them per subchannel at a time, and every
write-to-read / read-to-write switch leaves the bus idle for ``turnaround`` ns (DDR5:
write recovery tWTR plus the read's CAS latency, plus a couple of clocks the other
way). Per drain cycle the subchannel moves ``n = write_drain / min(r, 1 - r)`` lines
(``r`` the read fraction of the bytes: at 2:1 a drain of B writes rides with 2B reads),
so::

    mix_efficiency(r) = efficiency * n t_line / (n t_line + turnaround)

with ``t_line`` one 64 B line on one subchannel. A one-direction stream (r = 0 or 1)
never turns the bus around.

Loaded latency. Lines are spread over the ``channels x subchannels`` subchannels by
address interleaving; each subchannel is an M/D/1 queue whose customers are bursts of
``burst_lines`` lines (what a sequential stream sends to one subchannel back to back),
served in ``burst_lines x t_line / mix_efficiency`` (the efficiency losses stretch the
service so that utilisation 1 is the sustained bandwidth). A read sees the mean
workload in its queue (Poisson arrivals see time averages)::

    latency = idle + rho * S / (2 (1 - rho)),   S = burst_lines t_line / mix_efficiency

flat at low load and rising without bound as the offered bandwidth approaches the
sustained bandwidth. Banks add the middle of the curve: a line access holds its bank for
``bank_time`` (a row cycle, tRC, when every access opens a row), and lines spread over
the ``channels x subchannels x ranks x banks`` banks, each an M/D/1 queue. With
hundreds of banks and a service of tens of ns, their wait grows early and about
linearly with the load, while the data buses' wait stays near zero until they are
close to full: flat, then linear, then steep, the shape measured curves have (checked
against the Mess benchmark's Graviton3 DDR5 curves in ``cxlsim validate``). Not
modelled: row-buffer hits (every access a row cycle), refresh stalls seen by single
reads, priority of reads over queued writes, the write-drain blocking of reads (it is
in the service stretch).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from cxlsim.config.base import StrictModel
from cxlsim.memory.loaded import Server
from cxlsim.units import LINE_BYTES, Rate, Size, Time


class DramParams(StrictModel):
    """A group of identical DDR channels behind one memory controller."""

    channels: int = Field(1, ge=1, description="memory channels")
    data_rate: Rate = Field(4.8e9, description="transfer rate per data pin, e.g. '4800 MT/s'")
    bus_bytes: int = Field(8, ge=1, description="data bytes per transfer per channel "
                                                "(64-bit channel, ECC bits not counted)")
    subchannels: int = Field(2, ge=1, description="independent subchannels per channel "
                                                  "(DDR5: two 32-bit subchannels)")
    capacity: Size = Field(0, description="capacity")
    latency: Time = Field(0.0, description="unloaded read latency as seen by the requester; for "
                                           "a device's DRAM leave 0: the device's media_latency "
                                           "holds it")
    efficiency: float = Field(1.0, gt=0, le=1, description=(
        "sustained fraction of the peak bandwidth for traffic in one direction "
        "(all reads or all writes)"))
    turnaround: Time = Field(0.0, description="data-bus time lost per write drain: "
                                              "write-to-read plus read-to-write turnaround")
    write_drain: int = Field(16, ge=1, description="writes drained per subchannel between "
                                                   "two bus turnarounds")
    burst_lines: float = Field(1.0, ge=1, description=(
        "64 B lines arriving at one subchannel back to back (the queueing granule)"))
    ranks: int = Field(1, ge=1, description="ranks per channel")
    banks: int = Field(32, ge=1, description="banks per subchannel and rank "
                                             "(DDR5 16 Gb: 8 bank groups x 4)")
    bank_time: Time = Field(0.0, description="time a line access holds its bank (the row "
                                             "cycle tRC); 0 = banks never queue")

    @property
    def peak_bandwidth(self) -> float:
        """Bytes per second of all channels, both directions together (half duplex)."""
        return self.channels * self.data_rate * self.bus_bytes

    @property
    def servers(self) -> int:
        """Independent data buses: channels x subchannels."""
        return self.channels * self.subchannels

    @property
    def bank_servers(self) -> int:
        """Banks the lines are spread over: channels x subchannels x ranks x banks."""
        return self.channels * self.subchannels * self.ranks * self.banks

    @property
    def line_time(self) -> float:
        """ns one 64 B line occupies one subchannel's data bus."""
        return LINE_BYTES * self.subchannels / (self.data_rate * self.bus_bytes) * 1e9

    def mix_efficiency(self, read_fraction: float) -> float:
        """Sustained fraction of the peak for a mix with ``read_fraction`` of the bytes read."""
        if not 0.0 <= read_fraction <= 1.0:
            raise ValueError(f"read_fraction must be in [0, 1], not {read_fraction!r}")
        minority = min(read_fraction, 1.0 - read_fraction)
        if minority <= 0.0 or self.turnaround == 0.0:
            return self.efficiency
        busy = self.write_drain / minority * self.line_time
        return self.efficiency / (1.0 + self.turnaround / busy)

    def sustained_bandwidth(self, read_fraction: float = 1.0) -> float:
        """Bytes per second the channels sustain at this mix."""
        return self.peak_bandwidth * self.mix_efficiency(read_fraction)


class DramTarget:
    """The loaded-latency model of a DRAM channel group (see the module docstring).

    ``idle`` is the unloaded read latency added to the queueing (default: the
    parameters' ``latency``); a device's DRAM uses 0, its route holds the rest.
    """

    def __init__(self, params: DramParams, name: str = "dram", idle: float | None = None) -> None:
        self.params = params
        self.name = name
        self.idle_latency = params.latency if idle is None else idle
        p = params
        from cxlsim.memory import _latency  # numba: only once a model is built
        #: The model as the compiled formulas read it (:mod:`cxlsim.memory._latency`).
        self.spec = np.array([_latency.DRAM, self.idle_latency, p.peak_bandwidth, p.efficiency,
                              p.turnaround, p.write_drain, p.line_time, p.burst_lines,
                              p.bank_time, p.bank_servers], dtype=float)

    def capacity(self, read_fraction: float = 1.0) -> float:
        """Largest total bandwidth (reads + writes, B/s) at this mix."""
        p = self.params
        buses = p.sustained_bandwidth(read_fraction)
        if not p.bank_time:
            return buses
        return min(buses, p.bank_servers * LINE_BYTES / p.bank_time * 1e9)

    def servers(self, read_bps: float, write_bps: float) -> list[Server]:
        """The subchannel and bank queues a read crosses, at these offered bandwidths (B/s)."""
        from cxlsim.memory import _latency
        rho, wait = np.empty(2), np.empty(2)
        n = _latency.dram_waits(self.spec, 0, read_bps, write_bps, rho, wait, 0)
        return [Server(name, float(rho[k]), float(wait[k]))
                for k, name in enumerate([self.name, f"{self.name}.banks"][:n])]

    def read_latency(self, read_bps: float, write_bps: float = 0.0) -> float:
        """Mean read latency, ns, at these offered bandwidths (inf at or past capacity)."""
        return self.idle_latency + sum(s.wait for s in self.servers(read_bps, write_bps))
