"""CXL.cache/CXL.mem flit packing: how many flits a stream of messages costs on the wire.

The link model charges every message its share of flits, and that share comes from
packing messages into flits by the slot formats and rules of the specification, never
from a constant efficiency. :func:`pack` is a greedy transmitter that puts a queue of
messages (one direction of one link, as a saturated sender holds them) into flits;
:func:`saturated_efficiency` and :func:`wire_bytes_per_message` read its steady state.

Rules followed, per mode:

* 68B flit ([spec2.0] 4.2.2, 6.2.1): 2 B protocol ID + slot 0 (header slot, 96 bits
  after the 32-bit flit header) + slots 1-3 (16 B generic slots) + 2 B CRC, or an
  all-data flit (ADF) of 4 x 16 B chunks. Slot formats H0-H5 / G0-G6 per direction
  ([spec2.0] Tables 51, 52). Packing rules [spec2.0] 4.2.5: data chunks go only in
  slots 1-3 or in an ADF, right after their header and in order (rollover: > 3 chunks
  left at the end of a flit => the next flit is an ADF, else they fill slots 1..n);
  an MDH (multi-data-header) format needs >= 2 headers; per-flit maxima (S2M DRS 3,
  M2S RwD 1, M2S Req 2, S2M NDR 2, ...). "At most one data header per non-MDH flit,
  none beside an MDH slot" holds by itself: a full line's 4 chunks fill every G-slot
  after its header.
* 256B flit ([spec3.x] 4.3.2, 6.2.3.1): 2 B header + 240 B (H-slot of 14 B, G-slots
  1-14 of 16 B, 2 B credit return) + 8 B CRC + 6 B FEC. LOpt: 20 B of PHY fields, slot 8
  is a 12 B HS-slot. G/H/HS formats from [spec3.x] Tables 4-14..4-16; H and HS slots
  never carry data, data slots follow their header in the next G-slots; data headers
  enter an H/HS slot only while <= 16 data slots are still owed; maximum message counts
  hold in every rolling 128B group AB, BC, CD and D + next flit's A (LOpt: slot 7 is in
  both B and C) ([spec3.x] 4.3.4, Table 4-18).

Simplifications (the saturated efficiencies are upper bounds, from the CXL 2.0 §4.2 packing rules):

* Every data message moves one full 64 B line (Sz=1, no byte enables, no 256B trailers);
  32 B transfers and partial writes are not produced by the simulator's traffic.
* Host-based-routing messages only: no PBR formats, no back-invalidate channels
  (S2M BISnp, M2S BIRsp) and no IDE MAC slot (68B H6).
* No control flits (LLCRD, RETRY, IDE), no credit stalls: a saturated sender with
  enough credits, Acks piggybacked in the 68B flit header, credits in the 256B CRD field.
* Arbitration: slot by slot in slot order, the format that carries the oldest pending
  message wins, then the one carrying most messages, then table order; each channel is a
  FIFO and channels may pass each other (CXL.cache snoop/GO ordering is not modelled).
* MDH is enabled on both sides; HS4/HS14 (zero-extended M2S Req/RwD) are usable.
* NULL flits, SKP ordered sets and sync headers belong to the physical layer model
  (see ``params.LinkParams``), not to this packer.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Literal, NamedTuple

from cxlsim.link.params import FlitMode
from cxlsim.units import LINE_BYTES

Direction = Literal["down", "up"]
Traffic = Literal["read", "write"]

SLOT_BYTES = 16     #: a generic slot / data chunk
H_SLOT_BYTES = 14   #: 256B H-slot [spec3.x] 4.3.2
HS_SLOT_BYTES = 12  #: 256B LOpt HS-slot (slot 8)
CRD_BYTES = 2       #: 256B credit-return field

#: PHY framing of one flit, bytes per field ([spec2.0] 6.2.1, [spec3.x] 6.2.3.1).
FRAMING: dict[FlitMode, dict[str, int]] = {
    "68B": {"protocol_id": 2, "slots": 64, "crc": 2},
    "256B": {"header": 2, "data": 240, "crc": 8, "fec": 6},
    "256B-lopt": {"header": 2, "data": 236, "crc": 12, "fec": 6},
}


class Msg(str, Enum):
    """A CXL.cachemem message class. M2S/H2D go host->device ("down"), S2M/D2H "up"."""

    M2S_REQ = "M2S_REQ"
    M2S_RWD = "M2S_RWD"
    S2M_NDR = "S2M_NDR"
    S2M_DRS = "S2M_DRS"
    D2H_REQ = "D2H_REQ"
    D2H_RSP = "D2H_RSP"
    D2H_DATA = "D2H_DATA"
    H2D_REQ = "H2D_REQ"
    H2D_RSP = "H2D_RSP"
    H2D_DATA = "H2D_DATA"

    @property
    def direction(self) -> Direction:
        return "down" if self.name.startswith(("M2S", "H2D")) else "up"

    @property
    def has_data(self) -> bool:
        """A data header: a 64 B line follows it in data slots."""
        return self.name.endswith(("RWD", "DRS", "DATA"))


class Slot(NamedTuple):
    """One slot of a packed flit: a format name ("H5", "G15", "HS15", "DATA", "EMPTY")."""

    fmt: str
    messages: tuple[Msg, ...] = ()


DATA, EMPTY = Slot("DATA"), Slot("EMPTY")

_M = Msg
#: 68B slot formats: name -> message positions ([spec2.0] Tables 51, 52; G0 = data chunk).
_FORMATS_68B: dict[Direction, dict[str, tuple[Msg, ...]]] = {
    "down": {
        "H0": (_M.H2D_REQ, _M.H2D_RSP), "H1": (_M.H2D_DATA, _M.H2D_RSP, _M.H2D_RSP),
        "H2": (_M.H2D_REQ, _M.H2D_DATA), "H3": (_M.H2D_DATA,) * 4, "H4": (_M.M2S_RWD,),
        "H5": (_M.M2S_REQ,), "G1": (_M.H2D_RSP,) * 4,
        "G2": (_M.H2D_REQ, _M.H2D_DATA, _M.H2D_RSP), "G3": (_M.H2D_DATA,) * 4 + (_M.H2D_RSP,),
        "G4": (_M.M2S_REQ, _M.H2D_DATA), "G5": (_M.M2S_RWD, _M.H2D_RSP),
    },
    "up": {
        "H0": (_M.D2H_DATA, _M.D2H_RSP, _M.D2H_RSP, _M.S2M_NDR), "H1": (_M.D2H_REQ, _M.D2H_DATA),
        "H2": (_M.D2H_DATA,) * 4 + (_M.D2H_RSP,), "H3": (_M.S2M_DRS, _M.S2M_NDR),
        "H4": (_M.S2M_NDR,) * 2, "H5": (_M.S2M_DRS,) * 2,
        "G1": (_M.D2H_REQ, _M.D2H_RSP, _M.D2H_RSP), "G2": (_M.D2H_REQ, _M.D2H_DATA, _M.D2H_RSP),
        "G3": (_M.D2H_DATA,) * 4, "G4": (_M.S2M_DRS, _M.S2M_NDR, _M.S2M_NDR),
        "G5": (_M.S2M_NDR,) * 2, "G6": (_M.S2M_DRS,) * 3,
    },
}
#: 256B HBR G/H/HS formats without BISnp/BIRsp ([spec3.x] Tables 4-14, 4-15, 4-16).
_FORMATS_256B: dict[Direction, dict[str, tuple[Msg, ...]]] = {
    "down": {
        "G0": (_M.H2D_REQ, _M.H2D_RSP), "G1": (_M.H2D_RSP,) * 3, "G4": (_M.M2S_REQ,),
        "G12": (_M.H2D_DATA,) * 4, "G14": (_M.M2S_RWD,),
        "H0": (_M.H2D_REQ,), "H1": (_M.H2D_RSP,) * 2, "H4": (_M.M2S_REQ,),
        "H12": (_M.H2D_DATA,) * 3, "H14": (_M.M2S_RWD,),
        "HS0": (_M.H2D_REQ,), "HS1": (_M.H2D_RSP,) * 2, "HS4": (_M.M2S_REQ,),
        "HS12": (_M.H2D_DATA,) * 3, "HS14": (_M.M2S_RWD,),
    },
    "up": {
        "G2": (_M.D2H_REQ, _M.D2H_RSP, _M.D2H_RSP), "G3": (_M.D2H_RSP,) * 4,
        "G7": (_M.S2M_NDR,) * 3, "G13": (_M.D2H_DATA,) * 4, "G15": (_M.S2M_DRS,) * 3,
        "H2": (_M.D2H_REQ, _M.D2H_RSP), "H3": (_M.D2H_RSP,) * 4, "H7": (_M.S2M_NDR,) * 2,
        "H13": (_M.D2H_DATA,) * 4, "H15": (_M.S2M_DRS,) * 2,
        "HS2": (_M.D2H_REQ,), "HS3": (_M.D2H_RSP,) * 3, "HS7": (_M.S2M_NDR,) * 2,
        "HS13": (_M.D2H_DATA,) * 3, "HS15": (_M.S2M_DRS,) * 2,
    },
}
#: Maximum messages per 68B flit [spec2.0] 4.2.5 and per rolling 128B group [spec3.x] Table 4-18.
MAX_PER_68B_FLIT: dict[Msg, int] = {
    _M.D2H_REQ: 4, _M.D2H_RSP: 2, _M.D2H_DATA: 4, _M.S2M_NDR: 2, _M.S2M_DRS: 3,
    _M.H2D_REQ: 2, _M.H2D_RSP: 4, _M.H2D_DATA: 4, _M.M2S_REQ: 2, _M.M2S_RWD: 1,
}
MAX_PER_128B_GROUP: dict[Msg, int] = {
    _M.D2H_REQ: 4, _M.D2H_RSP: 4, _M.D2H_DATA: 4, _M.S2M_NDR: 6, _M.S2M_DRS: 3,
    _M.H2D_REQ: 2, _M.H2D_RSP: 6, _M.H2D_DATA: 4, _M.M2S_REQ: 4, _M.M2S_RWD: 2,
}


class _Format(NamedTuple):
    name: str
    slot: str                   # slot type it fits: "H", "G" or "HS"
    positions: tuple[Msg, ...]  # message positions in bit order
    headers: int                # data-header positions (> 1: a 68B MDH slot)


@dataclass(frozen=True)
class _Layout:
    """Slot types of one flit, the slot sets that share a max-message budget (negative
    index = slot of the previous flit counted from its end), limits and formats."""

    slots: tuple[str, ...]
    windows: tuple[tuple[int, ...], ...]
    limits: Mapping[Msg, int]
    table: Mapping[Direction, Mapping[str, tuple[Msg, ...]]]

    def menu(self, direction: Direction, slot: str) -> list[_Format]:
        return [_Format(name, slot, pos, sum(k.has_data for k in pos))
                for name, pos in self.table[direction].items()
                if name.rstrip("0123456789") == slot]


_DA, _AB, _BC = (-3, -2, -1, 0, 1, 2, 3), tuple(range(8)), tuple(range(4, 12))
_LAYOUTS: dict[FlitMode, _Layout] = {
    "68B": _Layout(("H", "G", "G", "G"), ((0, 1, 2, 3),), MAX_PER_68B_FLIT, _FORMATS_68B),
    "256B": _Layout(("H",) + ("G",) * 14, (_DA, _AB, _BC, tuple(range(8, 15))),
                    MAX_PER_128B_GROUP, _FORMATS_256B),
    "256B-lopt": _Layout(("H",) + ("G",) * 7 + ("HS",) + ("G",) * 6,
                         (_DA, _AB, _BC, tuple(range(7, 15))), MAX_PER_128B_GROUP, _FORMATS_256B),
}
_HEADERS = frozenset(k for k in Msg if k.has_data)
_SATURATED: dict[str, Msg] = {"read": Msg.S2M_DRS, "write": Msg.M2S_RWD}
_STREAM = 4096  # flits packed at most when looking for the steady state
_DEPTH = 64  # messages a saturated sender holds queued
#: CXL.mem message pairs of each direction: (the read's message, the write's).
MEM_PAIRS: dict[Direction, tuple[Msg, Msg]] = {"down": (Msg.M2S_REQ, Msg.M2S_RWD),
                                               "up": (Msg.S2M_DRS, Msg.S2M_NDR)}
MIX_STEPS = 16  #: mixed streams are packed at read fractions k / MIX_STEPS


@dataclass(frozen=True)
class PackResult:
    """Flits a message stream needed; ``detail`` holds the slots of each flit if asked."""

    mode: FlitMode
    flits: int
    data_bytes: int
    messages: Mapping[Msg, int]
    detail: tuple[tuple[Slot, ...], ...] | None = None

    @property
    def wire_bytes(self) -> int:
        return self.flits * flit_bytes(self.mode)

    @property
    def efficiency(self) -> float:
        """Payload data bytes per wire byte."""
        return self.data_bytes / self.wire_bytes if self.flits else 0.0


def flit_bytes(mode: FlitMode) -> int:
    """Bytes one flit occupies on the wire: 68 or 256."""
    if mode not in FRAMING:
        raise ValueError(f"unknown flit mode {mode!r}; expected one of {', '.join(FRAMING)}")
    return sum(FRAMING[mode].values())


def pack(messages: Sequence[Msg | str], mode: FlitMode, *, detail: bool = False) -> PackResult:
    """Pack ``messages`` (one link direction, in queue order) into flits of ``mode``.

    With ``detail`` the result keeps every flit as its tuple of slots (68B: 4 slots, an
    all-data flit being 4 DATA slots; 256B: 15 slots, slot 0 the H-slot, LOpt slot 8 the
    HS-slot)."""
    flit_bytes(mode)  # rejects an unknown mode
    kinds = [Msg(m) for m in messages]
    if len({k.direction for k in kinds}) > 1:
        raise ValueError("a flit stream carries one direction; got host->device and "
                         "device->host messages together")
    flits = list(_Packer(mode, kinds).flits())
    placed = Counter(kind for flit in flits for slot in flit for kind in slot.messages)
    data_slots = sum(slot == DATA for flit in flits for slot in flit)
    return PackResult(mode, len(flits), data_slots * SLOT_BYTES, dict(placed),
                      tuple(flits) if detail else None)


class _Packer:
    """A saturated transmitter: per-channel FIFOs emptied into flits, greedily."""

    def __init__(self, mode: FlitMode, kinds: Sequence[Msg]) -> None:
        self.mode, self.layout = mode, _LAYOUTS[mode]
        direction = kinds[0].direction if kinds else "up"
        self.menus = {t: self.layout.menu(direction, t) for t in set(self.layout.slots)}
        self.queues: dict[Msg, deque[int]] = {k: deque() for k in Msg}
        for seq, kind in enumerate(kinds):
            self.queues[kind].append(seq)
        self.owed = 0  # data slots promised by headers already sent
        self.prev: dict[int, Counter[Msg]] = {}  # previous flit's messages per slot

    def flits(self, refill: Callable[[], None] | None = None) -> Iterator[tuple[Slot, ...]]:
        """The flits, one at a time; ``refill`` (if given) may queue more messages
        before each."""
        while True:
            if refill is not None:
                refill()
            if not (self.owed or any(self.queues.values())):
                return
            if self.mode == "68B" and self.owed > 3:  # rollover > 3 chunks: all-data flit
                self.owed -= 4                         # [spec2.0] 4.2.5
                self.prev = {}
                yield (DATA,) * 4
            else:
                yield self._protocol_flit()

    def _protocol_flit(self) -> tuple[Slot, ...]:
        """Fill the slots in order: owed data first in G-slots, else the best format."""
        windows = [(w, sum((self.prev.get(i, Counter()) for i in w if i < 0), Counter()))
                   for w in self.layout.windows]
        counts: dict[int, Counter[Msg]] = {}
        slots: list[Slot] = []
        for s, stype in enumerate(self.layout.slots):
            if stype == "G" and self.owed:
                slots.append(DATA)
                self.owed -= 1
                continue
            mine = [c for w, c in windows if s in w]
            options = [(taken, fmt) for fmt in self.menus[stype]
                       if (taken := self._take(fmt, mine))]
            if not options:
                slots.append(EMPTY)
                continue
            taken, fmt = min(options, key=lambda o: (o[0][0][0], -len(o[0])))  # oldest, fullest
            counts[s] = Counter(kind for _, kind in taken)
            for c in mine:
                c.update(counts[s])
            for _, kind in taken:
                self.queues[kind].popleft()
            self.owed += sum(kind in _HEADERS for _, kind in taken) * LINE_BYTES // SLOT_BYTES
            slots.append(Slot(fmt.name, tuple(kind for _, kind in taken)))
        self.prev = {s - len(slots): c for s, c in counts.items()}
        return tuple(slots)

    def _take(self, fmt: _Format, windows: list[Counter[Msg]]) -> list[tuple[int, Msg]]:
        """The (seq, kind) pairs ``fmt`` would carry now, oldest first; [] if unusable."""
        if not any(self.queues[k] for k in fmt.positions):
            return []
        # H/HS data headers only while <= 16 data slots are owed [spec3.x] 4.3.4
        headers_ok = self.mode == "68B" or fmt.slot == "G" or self.owed <= 16
        used: dict[Msg, int] = {}
        for kind in fmt.positions:
            n = used.get(kind, 0)
            if (n < len(self.queues[kind]) and (headers_ok or kind not in _HEADERS)
                    and all(n + c[kind] < self.layout.limits[kind] for c in windows)):
                used[kind] = n + 1
        if self.mode == "68B" and fmt.headers > 1 and sum(used.get(k, 0) for k in _HEADERS) < 2:
            return []  # an MDH format needs more than one valid data header [spec2.0] 4.2.5
        return sorted((self.queues[k][i], k) for k, n in used.items() for i in range(n))


@lru_cache(maxsize=None)
def _steady(mode: FlitMode, pattern: tuple[Msg, ...]) -> tuple[int, int, int]:
    """Flits, data bytes and messages of one period of a saturated sender whose messages
    arrive repeating ``pattern``, ``_DEPTH`` of them always queued.

    The queue's depth keeps the mix: a kind the slot rules carry more slowly holds the
    others back instead of falling ever further behind. The packer's state at a flit
    boundary (data owed, the previous flit's message counts, the queued kinds in order,
    where the pattern stands) fixes everything after it, so the first repeated state
    closes the exact steady-state cycle."""
    packer = _Packer(mode, pattern[:1])
    packer.queues[pattern[0]].clear()
    arrived = 0

    def refill() -> None:
        nonlocal arrived
        for _ in range(_DEPTH - sum(map(len, packer.queues.values()))):
            packer.queues[pattern[arrived % len(pattern)]].append(arrived)
            arrived += 1

    seen: dict[tuple, tuple[int, int, int]] = {}
    sent = data = 0
    for n, flit in enumerate(packer.flits(refill), start=1):
        sent += sum(len(slot.messages) for slot in flit)
        data += sum(slot == DATA for slot in flit) * SLOT_BYTES
        queued = tuple(kind for _, kind in sorted((seq, kind) for kind, q in
                                                  packer.queues.items() for seq in q))
        state = (packer.owed, queued, arrived % len(pattern),
                 tuple(sorted((s, tuple(sorted(c.items()))) for s, c in packer.prev.items())))
        if state in seen:
            n0, data0, sent0 = seen[state]
            return n - n0, data - data0, sent - sent0
        seen[state] = (n, data, sent)
        if n > _STREAM:
            break
    raise AssertionError(f"no steady state within {_STREAM} flits of {pattern}")


@lru_cache(maxsize=None)
def saturated_efficiency(mode: FlitMode, traffic: Traffic) -> float:
    """Payload data per wire byte of a direction saturated with reads (S2M DRS, upstream)
    or writes (M2S RwD, downstream)."""
    if traffic not in _SATURATED:
        raise ValueError(f"unknown traffic {traffic!r}; expected 'read' or 'write'")
    flits, data, _ = _steady(mode, (_SATURATED[traffic],))
    return data / (flits * flit_bytes(mode))


@lru_cache(maxsize=None)
def wire_bytes_per_message(mode: FlitMode, kind: Msg | str) -> float:
    """Average wire bytes one message of ``kind`` costs in a saturated stream of that kind."""
    flits, _, sent = _steady(mode, (Msg(kind),))
    return flits * flit_bytes(mode) / sent


def _mixed_cost(mode: FlitMode, read: Msg, write: Msg, k: int) -> float:
    """Mean wire bytes a message of a saturated stream with ``k`` of every MIX_STEPS
    messages ``read``, the rest ``write``, evenly interleaved (the steady state's exact
    cycle)."""
    period = MIX_STEPS // math.gcd(k, MIX_STEPS)
    pattern = tuple(read if (i + 1) * k // MIX_STEPS > i * k // MIX_STEPS else write
                    for i in range(period))
    flits, _, sent = _steady(mode, pattern)
    return flits * flit_bytes(mode) / sent


@lru_cache(maxsize=None)
def mixed_costs(mode: FlitMode) -> dict[Direction, tuple[float, ...]]:
    """Per direction, the mean wire bytes of a CXL.mem message in a saturated stream
    mixing reads' and writes' messages (down: M2S Req and RwD, up: S2M DRS and NDR), at
    read fractions 0, 1/MIX_STEPS, ..., 1.

    A mixed stream costs less than its kinds alone: the slot formats put a write
    completion beside read data (68B H3, G4) and a request in the slots a write's data
    leaves free, so the packer, not a sum of two streams, prices it. The ends are the
    kinds' own steady streams (:func:`wire_bytes_per_message`)."""
    flit_bytes(mode)
    out = {}
    for direction, (read, write) in MEM_PAIRS.items():
        ends = wire_bytes_per_message(mode, write), wire_bytes_per_message(mode, read)
        out[direction] = (ends[0], *(_mixed_cost(mode, read, write, k)
                                     for k in range(1, MIX_STEPS)), ends[1])
    return out


def mixed_line_bytes(mode: FlitMode, read_fraction: float) -> dict[Direction, float]:
    """Wire bytes per line of CXL.mem traffic down and up when a fraction
    ``read_fraction`` of the lines are reads (one message each way a line): the
    direction's mixed cost (:func:`mixed_costs`), linear between its read fractions."""
    if not 0.0 <= read_fraction <= 1.0:
        raise ValueError(f"read_fraction {read_fraction!r} is not in [0, 1]")
    x = read_fraction * MIX_STEPS
    k = min(int(x), MIX_STEPS - 1)
    return {direction: table[k] + (x - k) * (table[k + 1] - table[k])
            for direction, table in mixed_costs(mode).items()}


def mixed_message_bytes(mode: FlitMode, read_fraction: float) -> dict[Msg, float]:
    """Wire bytes of each CXL.mem message when a fraction ``read_fraction`` of the lines
    are reads: each direction's mixed cost per line (:func:`mixed_line_bytes`) shared by
    its two kinds in proportion to their costs alone -- which kind's slots the other
    fills depends on the mix, so neither is charged the saving alone. At
    ``read_fraction`` 1 every kind costs what :func:`wire_bytes_per_message` gives."""
    out = {}
    for direction, mean in mixed_line_bytes(mode, read_fraction).items():
        read, write = MEM_PAIRS[direction]
        own = wire_bytes_per_message(mode, read), wire_bytes_per_message(mode, write)
        scale = mean / (read_fraction * own[0] + (1 - read_fraction) * own[1])
        out[read], out[write] = own[0] * scale, own[1] * scale
    return out
