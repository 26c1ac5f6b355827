"""DRAM timing: channels, JEDEC timings, the controller's scheduling, loaded latency.

:class:`DramParams` describes a group of identical DDR channels behind one memory
controller (a host's local DRAM, or the DRAM inside a CXL expander); a topology's
``dram`` node carries these fields, usually from ``preset: memory/ddr5-4800``.
:class:`DramTarget` turns them into the epoch level's loaded-latency model, closed
formulas (:func:`cxlsim.memory._latency.dram_waits`) that stand for an FR-FCFS
controller simulated clock by clock in :mod:`cxlsim.memory.dram_cycle`, and are
checked against it on the same request streams (``tests/test_dram_cycle.py``).

Every parameter is a JEDEC or datasheet value of the device (its timings, in ns)
except the controller's write queue, whose policy no vendor publishes. That is one stated
assumption, the same for every platform: 64 write entries per subchannel, drained from
85 % full down to 50 % (gem5's memory controller defaults, ``write_buffer_size``,
``write_high_thresh_perc``, ``write_low_thresh_perc``), so 22.4 requests per drain.

The access pattern. Lines come in bursts of ``burst_lines`` to one row of one bank (what
a sequential stream sends to one subchannel back to back): the first line opens the row,
the others hit it, and the row closes when no queued request wants it. ``burst_lines =
1`` is random traffic, a row per line.

Sustained bandwidth. Each data bus (a channel, or a DDR5 subchannel) moves a 64 B line
in ``line_time``; a line costs more when activations bind: each rank may open a row
once per tRRD_S (the next in another bank group) and four per tFAW, so a line costs
``max(line_time, max(tRRD_S, tFAW/4) / ranks / burst_lines)`` (:attr:`line_cost`).
All-bank refresh takes the bus ``(tRP + tRFC + tRCD + CL)/tREFI`` of the time (the banks
closed before it, a row opened and its CAS latency after); DDR5's same-bank refresh
(``trfc_sb``) holds one bank of each bank group and leaves the bus to the others. Reads
and writes share the half-duplex bus: the controller queues writes and drains
``write_drain`` lines at a time, each drain turning the bus around twice
(:attr:`turnaround`: tWTR_S and CL, or tRTRS between ranks, and the rows the first
write and read must open), so per line of the lighter kind the bus loses
``turnaround / write_drain``::

    lines per ns x (line_cost + min(r, 1 - r) x turnaround / write_drain) = 1 - refresh

Loaded latency. A bus is an M/G/1 queue of three kinds of work: bursts of reads, write
drains and refreshes; a read waits the residual work it finds over ``(1 - f)(1 - u)``,
``u`` the bus's whole utilisation and ``f`` the refresh's share (Pollaczek-Khinchine
with refresh as a priority interruption). A refresh holds its rank (or bank) tRFC
(tRFCsb) and a drain the bus for its writes and turnaround, so both add to the wait
from low loads on, the drains most: the curve rises early, then steeply near the
sustained bandwidth. Banks add their own queue: a burst holds its bank from its
activate to its precharge (:attr:`bank_time`). At the reference's loads the formulas
are within 25 % (or 8 ns) of its mean read latency, within 5 % of its sustained
bandwidth (8 % for random mixes); with writes at 70 % of the sustained bandwidth and
above they rise faster than it (``tests/test_dram_cycle.py``). Not modelled: the
on-chip network between core and controller, postponed refreshes, row hits between
bursts (another stream's burst to an open row).
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
    bank_groups: int = Field(1, ge=1, description="bank groups the banks are split into "
                                                  "(DDR5 16 Gb: 8; DDR4, HBM2: 4)")
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
    cwl: Time = Field(0.0, description="CAS write latency: write command to first data (0: CL)")
    trtp: Time = Field(0.0, description="tRTP: read command to precharge")
    twr: Time = Field(0.0, description="tWR: end of write data to precharge (write recovery)")
    tccd_s: Time = Field(0.0, description="tCCD_S: column command to column command, "
                                          "another bank group (0: the burst)")
    tccd_l: Time = Field(0.0, description="tCCD_L: column command to column command, same "
                                          "bank group (0: tCCD_S)")
    tccd_l_wr: Time = Field(0.0, description="tCCD_L_WR: write to write, same bank group "
                                             "(DDR5; 0: tCCD_L)")
    trrd_s: Time = Field(0.0, description="tRRD_S: activate to activate, another bank group")
    trrd_l: Time = Field(0.0, description="tRRD_L: activate to activate, same bank group "
                                          "(0: tRRD_S)")
    twtr_l: Time = Field(0.0, description="tWTR_L: end of write data to a read command, same "
                                          "bank group (0: tWTR)")
    trtrs: Time = Field(0.0, description="rank to rank: the data bus's idle gap when "
                                         "consecutive bursts come from different ranks")
    trfc_sb: Time = Field(0.0, description=(
        "tRFCsb: a same-bank refresh's duration (DDR5 REFsb: the same bank of every bank "
        "group, each bank once per tREFI, the bus serving the others); 0: all-bank "
        "refresh, the rank held tRFC every tREFI"))
    request_lines: int = Field(1, ge=1, description=(
        "64 B lines in one request of the host (its cache line: 1 for 64 B, A64FX's "
        "256 B 4); a write-queue entry holds one request"))
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
        if self.banks % self.bank_groups:
            raise ValueError(f"{self.banks} banks do not split into {self.bank_groups} bank "
                             "groups; expected banks a multiple of bank_groups")
        if self.drain_low >= self.drain_high:
            raise ValueError(f"drain_low ({self.drain_low:.0%}) is not below drain_high "
                             f"({self.drain_high:.0%}); a drain empties the queue from the "
                             "high watermark down to the low one")
        return self

    @property
    def activate_gap(self) -> float:
        """ns between row activations the bus sustains: each rank one per tRRD_S (the
        next in another bank group) and four per tFAW, the ranks in turn."""
        return max(self.trrd_s, self.tfaw / 4) / self.ranks

    @property
    def line_cost(self) -> float:
        """ns of data bus a line costs at saturation: its own transfer, or its share of
        an activation (one per ``burst_lines`` lines) when activations bind."""
        return max(self.line_time, self.activate_gap / self.burst_lines)

    @property
    def refresh_share(self) -> float:
        """Share of the bus lost to refresh: for all-bank refresh, once per tREFI the
        banks' precharge (tRP) before the rank's tRFC and, after it, a row's activation
        and CAS latency (tRCD + CL) before data flows again; none for same-bank refresh
        (the other banks keep the bus)."""
        if not self.trefi or self.trfc_sb:
            return 0.0
        return (self.trp + self.trfc + self.trcd + self.cl) / self.trefi

    @property
    def refresh_stall(self) -> float:
        """A refresh's residual work as reads see it, ns^2 per ns: one refresh of
        tRFC (tRFCsb) per tREFI holds the read's rank (bank), ``tRFC^2 / (2 tREFI)``."""
        held = self.trfc_sb or self.trfc
        return held * held / (2 * self.trefi) if self.trefi else 0.0

    @property
    def turnaround(self) -> float:
        """Data-bus time (ns) lost per write drain, both ways:

        - write to read: tWTR_S (the next read in another bank group), then the read's
          CAS latency; with two ranks or more only tRTRS, the next read going to another
          rank. If the read's row is closed it needs tRCD first, counted from the last
          write's command (``tRCD + CL - CWL - burst`` of idle bus): one drain in
          ``burst_lines`` comes between two bursts of reads, the others find a burst's
          row open;
        - read to write: the read-to-write gap, or longer, the first write's row
          (tRCD, then CWL before its data, against the last read's CL and burst)."""
        cwl = self.cwl or self.cl
        turn = self.trtrs if self.ranks > 1 else self.twtr + self.cl
        read_row = self.trcd + self.cl - cwl - self.line_time
        write_row = self.trcd + cwl - self.cl - self.line_time
        return (turn + max(0.0, read_row - turn) / self.burst_lines
                + max(self.trtw + (self.trtrs if self.ranks > 1 else 0.0), write_row))

    @property
    def write_drain(self) -> float:
        """Lines drained per subchannel between two turnarounds at the watermark: the
        queue's requests from its high to its low watermark."""
        return max(self.write_queue * (self.drain_high - self.drain_low), 1.0) \
            * self.request_lines

    @property
    def bank_time(self) -> float:
        """ns a burst of ``burst_lines`` lines holds its bank: activate, the lines' column
        commands (tCCD_L apart: one bank group), read to precharge and the precharge --
        at least the row cycle tRC; 0 = banks never queue."""
        cycle = self.trc or self.tras + self.trp
        burst = self.trcd + (self.burst_lines - 1) * max(self.line_time, self.tccd_l) \
            + self.trtp + self.trp
        return max(cycle, burst) if cycle else 0.0

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

    def spec(self, idle: float) -> np.ndarray:
        """The model as the compiled formulas read it (:mod:`cxlsim.memory._latency`),
        with ``idle`` ns of unloaded read latency."""
        from cxlsim.memory import _latency  # numba: only once a model is built
        return np.array([_latency.DRAM, idle, self.peak_bandwidth, self.line_time,
                         self.line_cost, self.refresh_share, self.refresh_stall,
                         self.turnaround, self.write_drain, self.burst_lines,
                         self.bank_time, self.bank_servers, self.servers], dtype=float)

    def mix_efficiency(self, read_fraction: float) -> float:
        """Sustained fraction of the peak for a mix with ``read_fraction`` of the bytes read."""
        if not 0.0 <= read_fraction <= 1.0:
            raise ValueError(f"read_fraction must be in [0, 1], not {read_fraction!r}")
        from cxlsim.memory import _latency
        return _latency.mix_efficiency(self.spec(0.0), 0, read_fraction)

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
        #: The model as the compiled formulas read it (:mod:`cxlsim.memory._latency`).
        self.spec = params.spec(self.idle_latency)

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
        rho, wait = np.empty(4), np.empty(4)
        n = _latency.dram_waits(self.spec, 0, read_bps, write_bps, rho, wait, 0)
        return [Server(name, float(rho[k]), float(wait[k]))
                for k, name in enumerate(self.server_names()[:n])]

    def server_names(self) -> list[str]:
        """The names of :meth:`servers`, in order: the subchannels, the banks (when a row
        cycle is given), the write drains (when the bus turns around), the refreshes."""
        p = self.params
        return [self.name] + [f"{self.name}.{queue}" for queue, on in (
            ("banks", p.bank_time), ("drain", p.turnaround),
            ("refresh", p.refresh_stall)) if on]

    def read_latency(self, read_bps: float, write_bps: float = 0.0) -> float:
        """Mean read latency, ns, at these offered bandwidths (inf at or past capacity)."""
        return self.idle_latency + sum(s.wait for s in self.servers(read_bps, write_bps))
