"""DRAM timing: channels, data rate, sustained efficiency, read/write mix, loaded latency.

:class:`DramParams` describes a group of identical DDR channels behind one memory
controller (a host's local DRAM, or the DRAM inside a CXL expander); a topology's
``dram`` node carries these fields, usually from ``preset: memory/ddr5-4800``.
:class:`DramTarget` turns them into the epoch level's loaded-latency model.

Every parameter is a JEDEC or datasheet value of the device (its timings, in ns)
except the controller's write queue, whose policy no vendor publishes. That is one stated
assumption, the same for every platform: 64 write entries per subchannel, drained from
85 % full down to 50 % (gem5's memory controller defaults, ``write_buffer_size``,
``write_high_thresh_perc``, ``write_low_thresh_perc``), so 22.4 writes per drain.

Bandwidth. The peak is ``channels x data_rate x bus_bytes``. A stream in one direction
sustains ``efficiency`` of it: the data bus is idle during refresh, ``1 - tRFC/tREFI``,
and no rank may open rows faster than four per ``tFAW`` (one activation per burst of
``burst_lines`` lines; with DDR5's 1 KB pages that never binds). A mix of reads and
writes loses more: the data bus is half duplex, so the controller queues writes and
drains ``write_drain`` of them per subchannel at a time, and every switch leaves the bus
idle for ``turnaround = tWTR + CL + tRTW`` (after the last write, tWTR before the read
command, then the read's CAS latency before its data; the read-to-write gap the other
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
sustained bandwidth. Banks add the middle of the curve: a burst holds its bank for
``bank_time``, the row cycle tRC (``tras + trp`` unless given: each burst opens a row,
its lines hit it), and bursts spread over the ``channels x subchannels x ranks x banks``
banks, each an M/D/1 queue; their wait grows early and about linearly with the load,
while the data buses' wait stays near zero until they are close to full. Writes add a
wait of their own: a read that finds its subchannel draining writes waits out the rest
of the drain, on average half a drain (``write_drain`` lines and a turnaround) times the
share of time the bus drains. Flat, then linear, then steep: the shape measured curves
have (checked against the Mess benchmark's Graviton3, A64FX and Power9 curves in
``cxlsim validate``, where the measured curves rise earlier in their middle than the
model's). Not modelled: the on-chip network and the controller's scheduling between
the core and the channel, row misses within a burst, refresh stalls seen by single
reads.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.memory.loaded import Server
from cxlsim.units import LINE_BYTES, Percent, Rate, Size, Time, format_time


class DramParams(StrictModel):
    """A group of identical DDR channels behind one memory controller: the channels'
    geometry, their JEDEC timings and the controller's write queue."""

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
    burst_lines: float = Field(1.0, ge=1, description=(
        "64 B lines arriving at one subchannel back to back (the queueing granule; one "
        "row activation serves them)"))
    ranks: int = Field(1, ge=1, description="ranks per channel")
    banks: int = Field(32, ge=1, description="banks per subchannel and rank "
                                             "(DDR5 16 Gb: 8 bank groups x 4)")
    # JEDEC timings (ns); 0 leaves the effect out (an ideal device)
    cl: Time = Field(0.0, description="CAS latency: read command to first data (CL x tCK)")
    trcd: Time = Field(0.0, description="tRCD: activate to read or write command")
    trp: Time = Field(0.0, description="tRP: precharge to the next activate of the bank")
    tras: Time = Field(0.0, description="tRAS: activate to precharge, at least")
    trc: Time = Field(0.0, description="tRC: activate to activate of one bank (0: tRAS + tRP)")
    trfc: Time = Field(0.0, description="tRFC: an all-bank refresh's duration")
    trefi: Time = Field(0.0, description="tREFI: interval between refreshes (0: no refresh)")
    twtr: Time = Field(0.0, description="tWTR: end of write data to a read command")
    trtw: Time = Field(0.0, description="read to write: the data bus's idle gap between the "
                                        "last read data and the first write data")
    tfaw: Time = Field(0.0, description="tFAW: window in which a rank may activate at most "
                                        "four rows (0: no limit)")
    # the controller's write queue (a controller's policy: see the module docstring)
    write_queue: int = Field(64, ge=1, description="write queue entries per subchannel")
    drain_high: Percent = Field(0.85, gt=0, le=1, description=(
        "write queue fill at which the controller turns the bus to writes"))
    drain_low: Percent = Field(0.5, ge=0, lt=1, description=(
        "write queue fill down to which it drains before turning back to reads"))

    @model_validator(mode="after")
    def _jedec(self) -> DramParams:
        """Timings that cannot belong to one device (JEDEC's relations between them)."""
        if self.tras and self.tras < self.trcd:
            raise ValueError(f"tRAS ({format_time(self.tras)}) is shorter than tRCD "
                             f"({format_time(self.trcd)}); a row stays open at least until "
                             "its read or write is issued: expected tras >= trcd")
        if self.trc and self.trc < self.tras + self.trp:
            raise ValueError(f"tRC ({format_time(self.trc)}) is shorter than tRAS + tRP "
                             f"({format_time(self.tras + self.trp)}); expected trc >= tras + "
                             "trp")
        if self.trefi and self.trfc >= self.trefi:
            raise ValueError(f"tRFC ({format_time(self.trfc)}) is not shorter than tREFI "
                             f"({format_time(self.trefi)}): the device would never leave "
                             "refresh; expected trfc < trefi")
        if self.drain_low >= self.drain_high:
            raise ValueError(f"drain_low ({self.drain_low:.0%}) is not below drain_high "
                             f"({self.drain_high:.0%}); a drain empties the queue from the "
                             "high watermark down to the low one")
        return self

    @property
    def efficiency(self) -> float:
        """Sustained fraction of the peak for traffic in one direction: the bus is idle
        during refresh, 1 - tRFC/tREFI; with hundreds of banks a one-direction stream
        loses nothing else (activates: :meth:`activate_limit`)."""
        refresh = 1.0 - self.trfc / self.trefi if self.trefi else 1.0
        return min(refresh, self.activate_limit)

    @property
    def activate_limit(self) -> float:
        """The fraction of the peak the four-activate window allows when every burst of
        ``burst_lines`` lines opens a row: 4 bursts per tFAW per rank (1: no limit)."""
        if not self.tfaw:
            return 1.0
        return min(1.0, 4 * self.ranks * self.burst_lines * self.line_time / self.tfaw)

    @property
    def turnaround(self) -> float:
        """Data-bus time (ns) lost per write drain: write to read (tWTR, then the read's
        CAS latency before its data) plus read to write."""
        return self.twtr + self.cl + self.trtw

    @property
    def write_drain(self) -> float:
        """Writes drained per subchannel between two turnarounds: the queue from its high
        to its low watermark."""
        return max(self.write_queue * (self.drain_high - self.drain_low), 1.0)

    @property
    def bank_time(self) -> float:
        """ns a burst of ``burst_lines`` lines holds its bank: the row cycle tRC (each
        burst opens a row, its lines hit it); 0 = banks never queue."""
        return self.trc or self.tras + self.trp

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
        return min(buses, p.bank_servers * p.burst_lines * LINE_BYTES / p.bank_time * 1e9)

    def servers(self, read_bps: float, write_bps: float) -> list[Server]:
        """The subchannel and bank queues a read crosses and the write drains it waits
        behind, at these offered bandwidths (B/s)."""
        from cxlsim.memory import _latency
        rho, wait = np.empty(3), np.empty(3)
        n = _latency.dram_waits(self.spec, 0, read_bps, write_bps, rho, wait, 0)
        return [Server(name, float(rho[k]), float(wait[k]))
                for k, name in enumerate(self.server_names()[:n])]

    def server_names(self) -> list[str]:
        """The names of :meth:`servers`, in order: the subchannels, the banks (when a row
        cycle is given), the write drains (when the bus turns around)."""
        p = self.params
        return [self.name] + [f"{self.name}.{queue}" for queue, on in (
            ("banks", p.bank_time), ("drain", p.turnaround)) if on]

    def read_latency(self, read_bps: float, write_bps: float = 0.0) -> float:
        """Mean read latency, ns, at these offered bandwidths (inf at or past capacity)."""
        return self.idle_latency + sum(s.wait for s in self.servers(read_bps, write_bps))
