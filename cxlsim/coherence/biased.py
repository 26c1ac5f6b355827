"""A Type 2 device's own memory under bias-based coherence (HDM-D; CXL 2.0 spec §2.2.1, §3.5.1.3).

Device accesses to a line, by the bias of its page:

* device bias: the local media access only; nothing crosses the link.
* host bias: D2H Req up; the host's home agent resolves coherence
  (``coherence_latency``); M2S Req MemRdFwd / MemWrFwd down; then the local access. A
  line the host holds modified is written back first: M2S RwD MemWr down, the device
  writes it, S2M NDR Cmp up, and only then the forward.

Bias flips, line by line with ``mlp`` lines in flight, after ``flip_setup``:

* host -> device (the transition agent): D2H RdOwnNoData up, the host snoops its caches
  (``coherence_latency``), writes back the lines it holds modified as above, and sends
  M2S Req MemRdFwd; the pages turn device-biased when their last line is done.
* device -> host: the host holds no copy of a device-bias page, so nothing crosses the
  link; the device writes the lines its cache holds modified (``device_dirty_fraction``
  of each page, spread evenly) back to its media, then the pages turn host-biased.

A host CXL.mem access (:meth:`BiasedMemory.host_access` over a
:class:`~cxlsim.protocol.mem.MemPath`) to a device-bias page first flips that page to
host bias, as a hardware-autonomous device does; a host-bias page is served at once.

Which lines the host holds modified is state (:meth:`BiasedMemory.host_wrote`); a
write-back clears it. Device accesses are not cached on the device: every touch reaches
the media (a streaming accelerator, or a footprint larger than its cache).

Within a page, the lines the host holds modified go first (theirs is the longest
journey) and the clean ones fill the window behind them.

Batching: the lines of one page that cross the link on the same journey (bias, host
state) move in bursts of at most ``burst`` lines (and ``mlp``), one message per leg
carrying their wire bytes (flit packer) and one media access of their bytes.
Store-and-forward delays each line of a burst by at most (burst - 1)·Σs, Σs a line's
service time summed over the serializing stages, so a windowed pass is late by at most
(burst - 1)·Σs / L of itself, L a line's unloaded latency; ``burst = 1`` is exact.
Local accesses (one media access each) always move line by line, exactly.

Device-initiated and host-initiated messages reach every stage of this path at times
not in issue order (a write-back's second leg follows later-issued lines' first legs),
so the path registers as two senders on each stage: the journey engine
(:mod:`cxlsim.protocol.journey`) then enters each stage by event, in arrival order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from cxlsim.coherence.table import PAGE_BYTES, Bias, BiasTable
from cxlsim.devices.memory import MemoryBackend
from cxlsim.engine import call_later
from cxlsim.protocol.cache import D2H_REQ, FixedDelay
from cxlsim.protocol.journey import SERVE, Hop, Route, Transaction, advance, link_steps
from cxlsim.protocol.mem import M2S_REQ, M2S_RWD, S2M_NDR, MemPath
from cxlsim.units import LINE_BYTES

LINES_PER_PAGE = PAGE_BYTES // LINE_BYTES

#: Journeys of a burst: the local access (device bias, or a flush of the device's
#: cache), a host-bias access, and a host -> device flip of its lines.
LOCAL, FORWARD, OWN = "local", "MemRdFwd", "RdOwnNoData"

Done = Callable[[float], None]
"""Called with the elapsed time, ns, when a multi-line operation completes."""


def spread(n: int, fraction: float) -> np.ndarray:
    """``floor(n · fraction)`` of ``n`` lines, evenly spaced (True = selected)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"a fraction of lines is in [0, 1]; found {fraction}")
    j = np.arange(n + 1) * fraction
    return np.diff(np.floor(j)) > 0


class BiasedMemory(Route):
    """Device and host accesses to a Type 2 device's memory, and flips of its bias table.

    ``up`` holds the hops from the device to the host and ``down`` the hops back (each
    the latency before a link direction), ``tail_up``/``tail_down`` the latency after
    the last link; ``wire`` the wire bytes of each message kind (flit packer).
    """

    def __init__(self, env: Any, up: Sequence[Hop], down: Sequence[Hop], memory: MemoryBackend,
                 wire: Mapping[str, float], table: BiasTable, tail_up: float = 0.0,
                 tail_down: float = 0.0, coherence_latency: float = 90.0,
                 device_dirty_fraction: float = 0.0, flip_setup: float = 0.0,
                 burst: int = 1) -> None:
        if not 1 <= burst <= LINES_PER_PAGE:
            raise ValueError(f"a burst is 1 to {LINES_PER_PAGE} lines; found {burst}")
        spread(0, device_dirty_fraction)  # validates the fraction
        self.env = env
        self.memory = memory
        self.table = table
        self.host_dirty = np.zeros(table.size // LINE_BYTES, bool)
        self.device_dirty_fraction = device_dirty_fraction
        self.flip_setup = flip_setup
        self.burst = burst
        for stage in {*(link for _, link in (*up, *down)), memory}:
            stage.claim()
            stage.claim()
        self._up, self._down = up, down
        self._tail_up, self._tail_down = tail_up, tail_down
        self._wire = wire
        self._home = FixedDelay(coherence_latency)
        self._journeys: dict[tuple[str, bool, int], tuple[tuple, float]] = {}

    # -- device accesses -------------------------------------------------------------

    def access(self, addr: int, size: int, done: Done, mlp: int = 1, write: bool = False) -> None:
        """The device reads (``write``: writes) every line of ``[addr, addr + size)`` once,
        ``mlp`` lines in flight; a write differs only in its forward, MemWrFwd."""
        first, lines, dirty, device = self._pages(addr, size)
        forward = "MemWrFwd" if write else FORWARD
        groups = []
        for n, d, dev in zip(lines.tolist(), dirty.tolist(), device.tolist()):
            if dev:
                groups.append((LOCAL, False, n, "write" if write else "read"))
            else:
                groups += [(FORWARD, True, d, forward), (FORWARD, False, n - d, forward)]
        self.host_dirty[first:first + int(lines.sum())] = False
        self._run(groups, mlp, 0.0, done)

    # -- bias flips ------------------------------------------------------------------

    def flip_to_device(self, addr: int, size: int, done: Done, mlp: int = 1) -> None:
        """Flip the pages of ``[addr, addr + size)`` (whole pages) to device bias."""
        self._whole_pages(addr, size)
        first, lines, dirty, device = self._pages(addr, size)
        groups = []
        for n, d, dev in zip(lines.tolist(), dirty.tolist(), device.tolist()):
            if not dev:
                groups += [(OWN, True, d, OWN), (OWN, False, n - d, OWN)]
        self.host_dirty[first:first + int(lines.sum())] = False
        self._run(groups, mlp, self.flip_setup, self._then_set(addr, size, Bias.DEVICE, done))

    def flip_to_host(self, addr: int, size: int, done: Done, mlp: int = 1) -> None:
        """Flip the pages of ``[addr, addr + size)`` (whole pages) to host bias."""
        self._whole_pages(addr, size)
        _, lines, _, device = self._pages(addr, size)
        cached = spread(int(lines.sum()), self.device_dirty_fraction).reshape(-1, LINES_PER_PAGE)
        groups = [(LOCAL, False, int(d), "flush")
                  for d, dev in zip(cached.sum(axis=1), device.tolist()) if dev]
        self._run(groups, mlp, self.flip_setup, self._then_set(addr, size, Bias.HOST, done))

    # -- the host side ---------------------------------------------------------------

    def host_wrote(self, addr: int, size: int, fraction: float) -> None:
        """The host's caches now hold ``fraction`` of the lines of ``[addr, addr + size)``
        modified (evenly spread); its pages must be in host bias."""
        first, lines, _, device = self._pages(addr, size)
        if device.any():
            raise ValueError("the host holds no copy of a device-bias page; flip it first")
        n = int(lines.sum())
        self.host_dirty[first:first + n] = spread(n, fraction)

    def host_access(self, path: MemPath, addr: int, done: Callable[[Transaction], None],
                    write: bool = False) -> None:
        """A host CXL.mem read (or write) of the line at ``addr`` over ``path``; a
        device-bias page is flipped to host bias first."""
        def issue(_: float = 0.0) -> None:
            (path.write if write else path.read)(done)

        if self.table.bias_of(addr) is Bias.DEVICE:
            page = addr - (addr - self.table.base) % PAGE_BYTES
            self.flip_to_host(page, PAGE_BYTES, issue, mlp=LINES_PER_PAGE)
        else:
            issue()

    # -- internals -------------------------------------------------------------------

    def _pages(self, addr: int, size: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """The first line of ``[addr, addr + size)`` and, per page it touches: its lines
        there, those the host holds modified, whether the page is in device bias."""
        table = self.table
        pages = table.pages_of(addr, size)
        first = (addr - table.base) // LINE_BYTES
        end = -(-(addr + size - table.base) // LINE_BYTES)
        starts = np.maximum(np.arange(pages.start, pages.stop) * LINES_PER_PAGE, first)
        lines = np.diff(np.r_[starts, end])
        dirty = np.add.reduceat(self.host_dirty[first:end].astype(np.int64), starts - first)
        return first, lines, dirty, table.device[pages]

    def _whole_pages(self, addr: int, size: int) -> None:
        if (addr - self.table.base) % PAGE_BYTES or size % PAGE_BYTES:
            raise ValueError(f"a bias flip covers whole {PAGE_BYTES} B pages; found "
                             f"[{addr}, {addr + size})")

    def _then_set(self, addr: int, size: int, bias: Bias, done: Done) -> Done:
        def finished(elapsed: float) -> None:
            self.table.set_range(addr, size, bias)
            done(elapsed)
        return finished

    def _run(self, groups: list, mlp: int, setup: float, done: Done) -> None:
        """After ``setup``, move each group ``(flow, dirty, lines, op)`` of like lines,
        ``mlp`` lines in flight."""
        if mlp < 1:
            raise ValueError(f"at least one line in flight; found mlp={mlp}")
        window = _Window(self, self._bursts(groups, mlp), mlp, done)
        call_later(self.env, setup, window.start)

    def _bursts(self, groups: list, mlp: int) -> Iterator[tuple]:
        """``(steps, head, lines, op)`` per burst: across the link in bursts of at most
        ``burst`` (and ``mlp``) lines, locally line by line."""
        for flow, dirty, lines, op in groups:
            k = 1 if flow is LOCAL else min(self.burst, mlp)
            full, rest = divmod(lines, k)
            burst = (*self._journey(flow, dirty, k), k, op)
            for _ in range(full):
                yield burst
            if rest:
                yield (*self._journey(flow, dirty, rest), rest, op)

    def _journey(self, flow: str, dirty: bool, lines: int) -> tuple[tuple, float]:
        """The steps of a burst and the latency before its first step."""
        key = (flow, dirty, lines)
        journey = self._journeys.get(key)
        if journey is None:
            head = 0.0 if flow is LOCAL else self._up[0][0]
            journey = self._journeys[key] = (self._build(flow, dirty, lines), head)
        return journey

    def _build(self, flow: str, dirty: bool, lines: int) -> tuple:
        up, down, tail_up, tail_down = self._up, self._down, self._tail_up, self._tail_down
        wire = {kind: cost * lines for kind, cost in self._wire.items()}
        media = (SERVE, self.memory, self._media, 0.0)
        if flow is LOCAL:
            return (media,)
        steps = [*link_steps(up, wire[D2H_REQ], tail_up),
                 (SERVE, self._home, self._home, down[0][0])]
        if dirty:
            steps += [*link_steps(down, wire[M2S_RWD], tail_down),
                      (SERVE, self.memory, self._media, up[0][0]),
                      *link_steps(up, wire[S2M_NDR], tail_up + down[0][0])]
        steps += link_steps(down, wire[M2S_REQ], tail_down)
        if flow is FORWARD:
            steps.append(media)
        return tuple(steps)

    def _media(self, txn: Transaction, t: float) -> float:
        return self.memory.access(txn.size, t)


class _Window:
    """Issue bursts in order, at most ``mlp`` lines in flight; ``done(elapsed)`` when the
    last completes."""

    __slots__ = ("path", "bursts", "mlp", "waiting", "in_flight", "outstanding", "done",
                 "started")

    def __init__(self, path: BiasedMemory, bursts: Iterator[tuple], mlp: int,
                 done: Done) -> None:
        self.path, self.bursts, self.mlp, self.done = path, bursts, mlp, done
        self.waiting = next(bursts, None)
        self.in_flight = self.outstanding = 0
        self.started = path.env.now

    def start(self, _event: Any = None) -> None:
        self._pump()

    def _pump(self) -> None:
        path = self.path
        env = path.env
        while self.waiting is not None:
            steps, head, lines, op = self.waiting
            if self.in_flight and self.in_flight + lines > self.mlp:
                break
            self.in_flight += lines
            self.outstanding += 1
            self.waiting = next(self.bursts, None)
            txn = Transaction(env.now, lines * LINE_BYTES, op, self._back)
            advance(env, txn, steps, 0, env.now + head, path._finish)
        if not self.outstanding:
            self.done(env.now - self.started)

    def _back(self, txn: Transaction) -> None:
        self.in_flight -= txn.size // LINE_BYTES
        self.outstanding -= 1
        self._pump()
