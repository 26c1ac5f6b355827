"""Traffic sources whose whole run is computed in one compiled pass when nothing else
can touch their paths.

A :class:`Source` (:class:`~cxlsim.devices.requester.PoissonRequester`,
:class:`~cxlsim.devices.core.MissSlots`) attaches to the
:class:`~cxlsim.protocol.mem.MemPath` objects it sends on and starts at an event at
time 0. There it looks at its *group*, the sources linked to it through shared paths,
links or devices. If the simulation streams, the run goes to its end, and the group's
paths are unused and alone on their links and devices (every sender there is one of
them; links unmonitored and without bit errors), the group's every arrival, credit
wait, link and device reservation, shared link's queue and completion is computed at
once by :func:`~cxlsim.protocol._stream_kernel.run_stream`, which replays the event
path's arithmetic and event order exactly. The link, device, credit and path state is
then where the events would have left it, and the statistics are handed to the sources
by one event at the time of the last completion. Otherwise each source runs on events.
Either way a source's random draws come from its own stream, drawn up front, so both
ways see the same numbers and give the same results to the bit (``tests/test_stream.py``).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from cxlsim.engine import Component, call_later
from cxlsim.link.direction import CACHEMEM
from cxlsim.protocol._stream_tables import (
    C_AVAIL, C_CNT, C_STALLS, D_ACC, D_CTRL, D_FREE, L_BUSY, L_FREE, L_SENT, P_DONE,
    POISSON, SLOTS)

_order = itertools.count()

#: Bytes of every request of a source.
REQUEST_BYTES = 64


class Source(Component):
    """A component issuing CXL.mem requests on ``paths``, on events or streamed.

    Subclasses set :attr:`kind` (:data:`POISSON` or :data:`SLOTS`) and :attr:`count`,
    draw their random numbers in :meth:`_draw` (from :attr:`rng`, their own stream), run
    on events from :meth:`_begin`, and take streamed results in :meth:`_deliver`.
    """

    kind: int
    slots: int = 0
    gap: float = 0.0
    cdf: np.ndarray | None = None

    def __init__(self, sim: Any, name: str, paths: Sequence[Any], count: int,
                 parent: Component | None = None) -> None:
        if count < 1:
            raise ValueError(f"a source needs at least one request, not {count}")
        super().__init__(sim, name, parent=parent)
        self.paths = list(paths)
        self.count = count
        self.rng = sim.rng.spawn(1)[0]
        self._order = next(_order)
        self._mode: str | None = None
        call_later(self.env, 0.0, self._launch)

    def _draw(self) -> tuple[np.ndarray, np.ndarray]:
        """(draws, write flags) of the whole run, from :attr:`rng`."""
        raise NotImplementedError

    def _begin(self) -> None:
        """Start on events (at the launch event)."""
        raise NotImplementedError

    def _deliver(self, done: dict[str, np.ndarray]) -> None:
        """Record this source's completions (``time``, ``latency``, ``write``, ``path``)."""
        raise NotImplementedError

    def _launch(self, _event: Any) -> None:
        if self._mode is None:
            group = _group(self)
            mode = "stream" if _streamable(self.sim, group) else "events"
            for source in group:
                source._mode = mode
            if mode == "stream":
                _stream(self.sim, group)
        if self._mode == "events":
            self._begin()


def _group(source: Source) -> list[Source]:
    """The sources reachable from ``source`` through shared paths, links or devices, in
    creation order."""
    users: dict[int, list[Source]] = {}  # a stage's sources
    for other in source.sim.walk():
        if isinstance(other, Source):
            for path in other.paths:
                for stage in path.stages():
                    users.setdefault(id(stage), []).append(other)
    seen, todo = {id(source): source}, [source]
    while todo:
        for path in todo.pop().paths:
            for stage in path.stages():
                for other in users[id(stage)]:
                    if id(other) not in seen:
                        seen[id(other)] = other
                        todo.append(other)
    return sorted(seen.values(), key=lambda s: s._order)


def _streamable(sim: Any, group: list[Source]) -> bool:
    """Streaming is on, the run goes to its end, and the group's paths are unused and
    alone on their links and devices: every sender there is one of them."""
    if not (getattr(sim, "streaming", False) and getattr(sim, "to_the_end", False)):
        return False
    claims: Counter[int] = Counter()
    stages: dict[int, Any] = {}
    for path in {id(p): p for s in group for p in s.paths}.values():
        if not path.untouched:
            return False
        for stage in path.stages():
            claims[id(stage)] += 1
            stages[id(stage)] = stage
    links = [st for st in stages.values() if hasattr(st, "cachemem_ns_per_byte")]
    devices = [st for st in stages.values() if not hasattr(st, "cachemem_ns_per_byte")]
    return (all(lk.error_free and not lk.monitored and lk.idle for lk in links)
            and all(hasattr(d, "timing") for d in devices)
            and all(st.users == claims[key] for key, st in stages.items()))


def _stream(sim: Any, group: list[Source]) -> None:
    """Compute the group's run at once; hand over the results at its last event."""
    from cxlsim.protocol._stream_kernel import run_stream  # numba: once a group streams

    paths = list({id(p): p for s in group for p in s.paths}.values())
    rows, net = _pack_network(paths)
    last, out_i, out_f = run_stream(float(sim.env.now), REQUEST_BYTES, net,
                                    *_pack_sources(group, paths))
    _unpack_network(rows, net, paths, last)
    call_later(sim.env, last - sim.env.now, lambda _event: _hand_over(group, out_i, out_f))


class _Rows(NamedTuple):
    """What the rows of the kernel's ``net`` tables are of, in row order."""

    links: list[Any]
    devices: list[Any]
    pools: list[Any]
    offsets: np.ndarray  # where each pool's pending returns begin in ``ret``


def _pack_network(paths: list[Any]) -> tuple[_Rows, tuple[np.ndarray, ...]]:
    """The kernel's ``net`` tables of ``paths``: their routes, and the state of their
    links, devices and credit pools (:mod:`cxlsim.protocol._stream_tables`)."""
    links: dict[int, Any] = {}
    devices: dict[int, Any] = {}
    pools: dict[int, Any] = {}

    def index(table: dict[int, Any], obj: Any) -> int:
        return table.setdefault(id(obj), (len(table), obj))[0]

    stage_link, stage_after, paths_f, paths_i = [], [], [], []
    for path in paths:
        head, down, device, after_device, up, wire, credit_return, held = path.route()
        spans = []
        for hops in (down, up):
            spans.append(len(stage_link))
            for link, after in hops:
                stage_link.append(index(links, link))
                stage_after.append(after)
            spans.append(len(stage_link))
        paths_f.append((head, after_device, credit_return, *wire))
        paths_i.append((index(devices, device), held, index(pools, path.req_credits),
                        index(pools, path.rwd_credits), *spans, 0))
    link_objs, dev_objs, pool_objs = ([v[1] for v in t.values()]
                                      for t in (links, devices, pools))
    link_t = np.array([(lk.cachemem_ns_per_byte, lk.latency, lk.free_at, lk.busy_ns,
                        lk.sent_bytes[CACHEMEM], lk.exclusive) for lk in link_objs], float)
    dev_t = np.array([(rt, d.controller_free, nspb, d.free_at, lat, d.accesses, d.exclusive)
                      for d in dev_objs for rt, nspb, lat in [d.timing()]], float)
    offsets = np.cumsum([0] + [c.credits for c in pool_objs])
    ret = np.zeros(int(offsets[-1]), float)
    pool_t = np.zeros((len(pool_objs), 7), np.int64)
    for k, c in enumerate(pool_objs):
        pending = c.pending_returns()
        ret[offsets[k]:offsets[k] + len(pending)] = pending
        pool_t[k] = (c.available, offsets[k], len(pending), 0, c.stalls, -1, -1)
    link_q = np.tile(np.array([0, -1, -1], np.int64), (len(link_objs), 1))
    return _Rows(link_objs, dev_objs, pool_objs, offsets), (
        link_t, dev_t, np.array(paths_f, float), np.array(paths_i, np.int64),
        np.array(stage_link, np.int64), np.array(stage_after, float), pool_t, ret, link_q)


def _pack_sources(group: list[Source], paths: list[Any]) -> tuple[np.ndarray, ...]:
    """The kernel's source arguments: ``srcs``, their gaps, every source's draws and
    write flags end to end, their paths (indices into ``paths``) and path choice CDFs."""
    path_index = {id(p): k for k, p in enumerate(paths)}
    draws, writes, src_paths, cdf, srcs = [], [], [], [], []
    at = 0
    for s in group:
        d, w = s._draw()
        draws.append(d)
        writes.append(w)
        srcs.append((s.kind, s.count, s.slots, at, len(src_paths),
                     len(src_paths) + len(s.paths)))
        at += len(d)
        src_paths.extend(path_index[id(p)] for p in s.paths)
        cdf.extend(s.cdf if s.cdf is not None else [1.0])
    return (np.array(srcs, np.int64), np.array([s.gap for s in group], float),
            np.concatenate(draws).astype(float), np.concatenate(writes).astype(np.bool_),
            np.array(src_paths, np.int64), np.array(cdf, float))


def _unpack_network(rows: _Rows, net: tuple[np.ndarray, ...], paths: list[Any],
                    last: float) -> None:
    """Leave the links, devices, credit pools and paths where the run's events would
    have: the state the kernel left in ``net``, streamed until ``last``."""
    link_t, dev_t, _, paths_i, _, _, pool_t, ret, _ = net
    for lk, row in zip(rows.links, link_t.tolist()):
        lk.free_at, lk.busy_ns = row[L_FREE], row[L_BUSY]
        lk.sent_bytes[CACHEMEM] = row[L_SENT]
    for d, row in zip(rows.devices, dev_t.tolist()):
        d.controller_free, d.free_at = row[D_CTRL], row[D_FREE]
        d.accesses = int(row[D_ACC])
    for k, c in enumerate(rows.pools):
        start = rows.offsets[k]
        c.restore(int(pool_t[k, C_AVAIL]), int(pool_t[k, C_STALLS]),
                  ret[start:start + pool_t[k, C_CNT]].tolist())
    for path, done in zip(paths, paths_i[:, P_DONE].tolist()):
        path.completed += done
        path.streamed_until = last
    for stage in (*rows.links, *rows.devices):
        stage.streamed_until = last


def _hand_over(group: list[Source], out_i: np.ndarray, out_f: np.ndarray) -> None:
    """Give each source its completions (the kernel's ``out_i``, ``out_f`` rows)."""
    for k, s in enumerate(group):
        mine = out_i[:, 0] == k if len(group) > 1 else slice(None)
        code = out_i[mine, 1]
        s._deliver({"path": code >> 1, "write": (code & 1).astype(bool),
                    "time": out_f[mine, 0], "latency": out_f[mine, 1]})
