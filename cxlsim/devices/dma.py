"""A device DMA engine moving data to and from host memory as PCIe / CXL.io TLPs.

A transfer waits the engine's fixed ``setup_latency`` (descriptor fetch, doorbell and
the round trips a measured DMA includes), then streams TLPs through the link: writes
(MWr) and read requests (MRd) on the device's transmit direction, completions (CplD)
from the host's completer on the receive direction. It ends when the last write and
the last completion have arrived.

On a CXL link the engine can instead move the data the way the ORNL model sees a CXL
transfer (``protocol: cache``): the same bytes as those TLPs, carried by CXL.cache
flits on the link's cache/mem stack, so the link's ``cxl_penalty`` and latency set its
time (:func:`~cxlsim.link.tlp.coherent_wire_factor`).

The TLPs of a transfer are grouped into at most ``bursts`` bursts of whole read
requests, each sent as one message with the exact wire bytes of its TLPs (from
:mod:`cxlsim.link.tlp`), so 1 GiB costs a few hundred events; the only approximation is
that completions start after the first burst's requests rather than the first
request, i.e. at most ``1 / bursts`` of the transfer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from cxlsim.config.base import StrictModel
from cxlsim.engine import Component, call_later
from cxlsim.link.direction import CACHEMEM, IO, LinkDirection
from cxlsim.link.tlp import (DmaOp, PcieConfig, coherent_wire_factor, completion_wire_bytes,
                             read_request_wire_bytes, split, write_wire_bytes)
from cxlsim.units import Time


class DmaEngineParams(StrictModel):
    """Fixed cost and batching of a DMA engine."""

    setup_latency: Time = Field(0.0, description="fixed cost of one transfer (measured DMA "
                                                 "round trip, descriptor handling)")
    host_latency: Time = Field(0.0, description="host memory latency before completions")
    port_latency: Time = Field(0.0, description="root port between the link and host memory, "
                                                "one way")
    bursts: int = Field(256, ge=1, description="most messages a transfer is grouped into")
    protocol: Literal["io", "cache"] = Field("io", description=(
        "io: PCIe / CXL.io TLPs; cache: the same bytes over a CXL link's CXL.cache stack "
        "(the ORNL model's CXL transfer)"))


class _Transfer:
    __slots__ = ("pending", "done", "started")

    def __init__(self, pending: int, done: Callable[[float], None], started: float) -> None:
        self.pending = pending
        self.done = done
        self.started = started


class DmaEngine(Component):
    """DMA over a link: ``tx`` is device -> host, ``rx`` host -> device."""

    Params = DmaEngineParams

    def __init__(self, sim: Any, name: str, params: Any, tx: LinkDirection, rx: LinkDirection,
                 config: PcieConfig, parent: Component | None = None) -> None:
        super().__init__(sim, name, params, parent)
        self.tx, self.rx, self.config = tx, rx, config
        if self.params.protocol == "cache":
            if tx.params.protocol != "cxl":
                raise ValueError(f"{name}: a CXL.cache transfer needs a CXL link")
            self._stack, self._scale = CACHEMEM, coherent_wire_factor(tx.params)
        else:
            self._stack, self._scale = IO, 1.0
        tx.claim()
        rx.claim()

    def transfer(self, n: int, op: DmaOp, done: Callable[[float], None]) -> None:
        """Move ``n`` bytes (``op``: write, read or read_write); ``done(elapsed_ns)`` at the end."""
        if n <= 0:
            raise ValueError("a DMA transfer moves at least one byte")
        call_later(self.env, self.params.setup_latency, self._start, (n, op, done, self.env.now))

    def _start(self, event: Any) -> None:
        n, op, done, started = event.payload
        cfg = self.config
        chunk = cfg.mrrs * max(1, -(-n // (cfg.mrrs * self.params.bursts)))
        pieces = split(n, chunk)
        reads, writes = op in ("read", "read_write"), op in ("write", "read_write")
        state = _Transfer(len(pieces) * (reads + writes), done, started)
        stack, scale, port = self._stack, self._scale, self.params.port_latency
        for piece in pieces:
            if reads:  # requests first: completions can start while writes stream
                self.tx.send(stack, read_request_wire_bytes(piece, cfg) * scale,
                             self._at_host, (piece, state), port)
            if writes:  # a write has landed when it reaches host memory
                self.tx.send(stack, write_wire_bytes(piece, cfg) * scale, self._landed, state,
                             port)

    def _at_host(self, payload: tuple[int, _Transfer]) -> None:
        piece, state = payload
        p = self.params
        self.rx.forward(self._stack, completion_wire_bytes(piece, self.config) * self._scale,
                        self.env.now + p.host_latency + p.port_latency, self._landed, state)

    def _landed(self, state: _Transfer) -> None:
        state.pending -= 1
        if state.pending == 0:
            state.done(self.env.now - state.started)
