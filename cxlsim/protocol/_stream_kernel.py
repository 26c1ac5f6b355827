"""Compiled event loop of CXL.mem sources on their own paths (see :mod:`cxlsim.protocol.stream`).

It replays, step for step, what the event path does -- the sources' arrival and issue
events, :class:`~cxlsim.protocol.credits.CreditPool`'s lazy returns and wake-ups,
:func:`~cxlsim.protocol.journey.advance` along each route (exclusive stages reserved
at once, shared ones entered by events), a shared
:class:`~cxlsim.link.direction.LinkDirection`'s queue and wake-ups,
:meth:`~cxlsim.devices.memory.MemoryBackend.access` and the completion event -- with the
same floating-point operations in the same order, and events ordered as SimPy orders
them: by time, then by the order they were scheduled in. Only the events of the
group's own sources exist here: nothing else sends on its links and devices (no other
sender, no monitor, no bit errors), so nothing else can change their outcome. A shared
link carries CXL.cachemem messages only, so its ARB/MUX always picks that stack.

State is a few tables, one row per link, device, path, credit pool and source, whose
columns are named in :mod:`cxlsim.protocol._stream_tables`; ``net`` bundles the
network's tables. The loop's own state (events, transactions in flight) is named below.
A pool's pending credit returns are a binary min-heap in its slice of ``ret`` (the
layout of :mod:`heapq`); its waiting requests, and a shared link's waiting messages, are
FIFOs linked through the transactions' ``T_NEXT`` column.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cxlsim.protocol._stream_tables import (
    C_AVAIL, C_CNT, C_HEAD, C_OFF, C_STALLS, C_TAIL, C_WAKING, D_ACC, D_CTRL, D_EXCL, D_FREE,
    D_LAT, D_NSPB, D_RT, L_BUSY, L_EXCL, L_FREE, L_LAT, L_NSPB, L_SENT, P_AFTER_DEV,
    P_CREDIT_RET, P_DEV, P_DONE, P_DOWN0, P_DOWN1, P_DRS, P_HEAD, P_HELD, P_NDR, P_POOL_R,
    P_POOL_W, P_REQ, P_RWD, P_UP0, P_UP1, POISSON, Q_HEAD, Q_TAIL, Q_WAKING, S_COUNT, S_DRAW,
    S_KIND, S_PATH0, S_PATH1, S_SLOTS, SLOTS)

#: Event kinds of the loop: a Poisson arrival, a slot's issue, a completion, a credit
#: pool's wake-up, a transaction resuming its route, a message delivered by a shared
#: link, a shared link's wake-up.
ARRIVE, ISSUE, COMPLETE, WAKE, RESUME, DELIVER, LINK_WAKE = range(7)
KIND_BITS = 3

#: Columns of the transactions in flight (int): source, path, which of its source's
#: paths, write, next waiting (for a credit or a shared link), step of the route (its
#: down links, the device, its up links). A completed transaction's row is reused.
T_SRC, T_PATH, T_CHOICE, T_WRITE, T_NEXT, T_STEP = range(6)
#: Columns of the event heap's integers: order of scheduling, kind | argument << KIND_BITS.
H_SEQ, H_CODE = range(2)
#: Counters of the run: transaction slots used, slots freed (a stack in ``free``),
#: completions written.
N_FRESH, N_FREE, N_OUT = range(3)


@njit(cache=True, inline="always", _nrt=False)
def _push(heap, time, kind, arg):
    """Schedule an event; SimPy's order: time, then the order of scheduling."""
    ht, hi, hn = heap
    i = hn[0]
    hn[0] += 1
    seq = hn[1]
    hn[1] += 1
    while i:  # sift the hole up
        parent = (i - 1) >> 1
        pt = ht[parent]
        if pt < time or (pt == time and hi[parent, H_SEQ] < seq):
            break
        ht[i] = pt
        hi[i, H_SEQ], hi[i, H_CODE] = hi[parent, H_SEQ], hi[parent, H_CODE]
        i = parent
    ht[i] = time
    hi[i, H_SEQ], hi[i, H_CODE] = seq, kind | (arg << KIND_BITS)


@njit(cache=True, inline="always", _nrt=False)
def _pop(heap):
    """Remove the first event; return (time, kind, argument)."""
    ht, hi, hn = heap
    time, code = ht[0], hi[0, H_CODE]
    hn[0] -= 1
    n = hn[0]
    lt, ls, lc = ht[n], hi[n, H_SEQ], hi[n, H_CODE]  # the last event, to re-place
    i = 0
    while True:  # sift the hole down
        child = 2 * i + 1
        if child >= n:
            break
        ct, cs = ht[child], hi[child, H_SEQ]
        if child + 1 < n:
            rt, rs = ht[child + 1], hi[child + 1, H_SEQ]
            if rt < ct or (rt == ct and rs < cs):
                child += 1
                ct, cs = rt, rs
        if lt < ct or (lt == ct and ls < cs):
            break
        ht[i] = ct
        hi[i, H_SEQ], hi[i, H_CODE] = cs, hi[child, H_CODE]
        i = child
    ht[i] = lt
    hi[i, H_SEQ], hi[i, H_CODE] = ls, lc
    return time, code & ((1 << KIND_BITS) - 1), code >> KIND_BITS


@njit(cache=True, inline="always", _nrt=False)
def _ret_push(ret, pools, c, value):
    """heapq.heappush onto pool ``c``'s pending returns."""
    base = pools[c, C_OFF]
    i = pools[c, C_CNT]
    pools[c, C_CNT] += 1
    ret[base + i] = value
    while i:
        parent = (i - 1) >> 1
        if ret[base + parent] <= ret[base + i]:
            break
        ret[base + parent], ret[base + i] = ret[base + i], ret[base + parent]
        i = parent


@njit(cache=True, inline="always", _nrt=False)
def _ret_pop(ret, pools, c):
    """heapq.heappop from pool ``c``'s pending returns (the value is not needed)."""
    base = pools[c, C_OFF]
    pools[c, C_CNT] -= 1
    last = pools[c, C_CNT]
    ret[base] = ret[base + last]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= last:
            break
        if child + 1 < last and ret[base + child + 1] < ret[base + child]:
            child += 1
        if ret[base + i] <= ret[base + child]:
            break
        ret[base + i], ret[base + child] = ret[base + child], ret[base + i]
        i = child


def run_stream(now, size, net, srcs, src_gap, draws, writes, src_paths, src_cdf):
    """Run every source of the group to its end from time ``now``, updating ``net`` =
    (links, devs, paths_f, paths_i, stage_link, stage_after, pools, ret, link_q) in place.

    A Poisson source's ``draws`` are its gaps and ``writes`` its operations; a slots
    source's ``draws`` are the uniforms picking its paths by ``src_cdf`` (none if it
    has one path). Returns (time of the last event, completions in the order their
    events ran: int32 (source, 2 x which of its paths + write), float (time, latency)).
    """
    total = int(srcs[:, S_COUNT].sum())
    # pending at once: an event per transaction in flight, per source and slot, per
    # credit pool and per link
    cap = (8 + net[6].shape[0] + net[0].shape[0] + total + int(srcs[:, S_SLOTS].sum())
           + srcs.shape[0])
    heap = (np.empty(cap), np.empty((cap, 2), np.int64), np.zeros(2, np.int64))
    # (issue time, the integer columns, free rows, counters, a time to resume at or
    # the time the transaction reached a shared link)
    txns = (np.empty(total), np.empty((total, 6), np.int64), np.empty(total, np.int64),
            np.zeros(3, np.int64), np.empty(total))
    out_i, out_f = np.empty((total, 2), np.int32), np.empty((total, 2))
    last = _run(now, size, net, srcs, src_gap, draws, writes, src_paths, src_cdf, heap,
                txns, srcs[:, S_COUNT].copy(), np.zeros(srcs.shape[0], np.int64), out_i,
                out_f)
    return last, out_i, out_f


# No reference counting (_nrt=False): the arrays are made by the caller, and counting
# the references of every array a helper is handed cost as much as the rest of the loop.
# The helpers are inlined, and each is used at one place only (compile time).
@njit(cache=True, _nrt=False)
def _run(now, size, net, srcs, src_gap, draws, writes, src_paths, src_cdf, heap, txns,
         left, drawn, out_i, out_f):
    """The event loop of :func:`run_stream`; ``left`` counts each source's requests not
    yet issued (slots: not yet scheduled), ``drawn`` its uniforms used."""
    _start(now, srcs, draws, left, heap)
    last = now
    rows, tt, pools = txns[1], txns[4], net[6]
    while heap[2][0]:
        now, kind, arg = _pop(heap)
        last = now
        issuer = -1  # the source issuing a request in this event
        j = -1  # a transaction to start now
        step = -1  # a transaction (arg) to advance from this step, at ``at``
        at = now
        if kind == COMPLETE:
            issuer = _complete(now, arg, txns, heap, net, srcs, src_gap, left, out_i, out_f)
        elif kind == WAKE:  # CreditPool._wake
            pools[arg, C_WAKING] = 0
            _collect(now, arg, pools, net[7])
        elif kind == RESUME:  # the route continues at the time it stopped at
            step, at = rows[arg, T_STEP], tt[arg]
        elif kind == DELIVER:  # a shared link delivered: on from the next step, now
            step = rows[arg, T_STEP] + 1
        elif kind == LINK_WAKE:
            _link_wake(now, arg, rows, tt, heap, net)
        else:
            issuer = arg
        if issuer >= 0:
            if kind == ARRIVE:  # PoissonRequester._arrive
                k = srcs[issuer, S_COUNT] - left[issuer]
                j = _issue(now, issuer, 0, writes[srcs[issuer, S_DRAW] + k], txns, heap, net,
                           srcs, src_paths)
            else:  # MissSlots._issue
                j = _issue(now, issuer, _pick(issuer, srcs, src_cdf, draws, drawn), False,
                           txns, heap, net, srcs, src_paths)
        while True:
            if kind == WAKE:  # start the waiting requests while credits last
                if not (pools[arg, C_AVAIL] and pools[arg, C_HEAD] >= 0):
                    break
                pools[arg, C_AVAIL] -= 1
                j = pools[arg, C_HEAD]
                pools[arg, C_HEAD] = rows[j, T_NEXT]
                if pools[arg, C_HEAD] < 0:
                    pools[arg, C_TAIL] = -1
            if j >= 0:  # MemPath._start: the route from its first step
                step, at = 0, now + net[2][rows[j, T_PATH], P_HEAD]
            else:
                j = arg
            if step < 0:
                break
            _advance(now, j, step, at, txns, heap, size, net)
            if kind != WAKE:
                break
            j, step = -1, -1
        if kind == WAKE and pools[arg, C_HEAD] >= 0:
            _arm(now, arg, heap, pools, net[7])
        elif kind == ARRIVE:
            left[arg] -= 1
            if left[arg] > 0:
                _push(heap, now + draws[srcs[arg, S_DRAW] + k + 1], ARRIVE, arg)
    return last

@njit(cache=True, inline="always", _nrt=False)
def _start(now, srcs, draws, left, heap):
    """The sources' starts, in their order (each one's launch event at ``now``): a slots
    source issues at once, which ISSUE events at ``now`` do in the same order."""
    for s in range(srcs.shape[0]):
        if srcs[s, S_KIND] == POISSON:
            _push(heap, now + draws[srcs[s, S_DRAW]], ARRIVE, s)
        else:
            for _ in range(min(srcs[s, S_SLOTS], left[s])):
                left[s] -= 1
                _push(heap, now, ISSUE, s)


@njit(cache=True, inline="always", _nrt=False)
def _complete(now, j, txns, heap, net, srcs, src_gap, left, out_i, out_f):
    """Transaction ``j`` completes: write it out and free its row. A slots source with
    requests left issues its next one after its gap (an ISSUE event), or now: then
    return the source, to issue in this event (else -1)."""
    issued, rows, free, counts, _ = txns
    s = rows[j, T_SRC]
    net[3][rows[j, T_PATH], P_DONE] += 1
    n = counts[N_OUT]
    out_i[n, 0] = s
    out_i[n, 1] = 2 * rows[j, T_CHOICE] + rows[j, T_WRITE]
    out_f[n, 0], out_f[n, 1] = now, now - issued[j]
    counts[N_OUT] = n + 1
    free[counts[N_FREE]] = j
    counts[N_FREE] += 1
    if srcs[s, S_KIND] == SLOTS and left[s] > 0:
        left[s] -= 1
        if not src_gap[s]:
            return s
        _push(heap, now + src_gap[s], ISSUE, s)
    return -1


@njit(cache=True, inline="always", _nrt=False)
def _link_wake(now, link, rows, tt, heap, net):
    """LinkDirection._wake: transmit the next message waiting, and wake again for the
    one after it."""
    link_q = net[8]
    link_q[link, Q_WAKING] = 0
    head = link_q[link, Q_HEAD]
    link_q[link, Q_HEAD] = rows[head, T_NEXT]
    if link_q[link, Q_HEAD] < 0:
        link_q[link, Q_TAIL] = -1
    _transmit(now, tt[head], link, head, rows, heap, net)
    if link_q[link, Q_HEAD] >= 0:
        _link_wake_at(now, link, heap, net)


@njit(cache=True, inline="always", _nrt=False)
def _pick(s, srcs, src_cdf, draws, drawn):
    """MissSlots' choice: which of the source's paths its next uniform falls on."""
    lo, hi = srcs[s, S_PATH0], srcs[s, S_PATH1]
    if hi - lo == 1:
        return 0
    u = draws[srcs[s, S_DRAW] + drawn[s]]
    drawn[s] += 1
    return min(np.searchsorted(src_cdf[lo:hi], u, side="right"), hi - lo - 1)


@njit(cache=True, inline="always", _nrt=False)
def _collect(now, c, pools, ret):
    """CreditPool._collect: the returns due by ``now`` become available."""
    while pools[c, C_CNT] and ret[pools[c, C_OFF]] <= now:
        _ret_pop(ret, pools, c)
        pools[c, C_AVAIL] += 1


@njit(cache=True, inline="always", _nrt=False)
def _arm(now, c, heap, pools, ret):
    """CreditPool._arm: one wake-up at the earliest return, unless one is pending."""
    if pools[c, C_WAKING] or not pools[c, C_CNT]:
        return
    pools[c, C_WAKING] = 1
    _push(heap, now + max(ret[pools[c, C_OFF]] - now, 0.0), WAKE, c)


@njit(cache=True, inline="always", _nrt=False)
def _issue(now, s, choice, write, txns, heap, net, srcs, src_paths):
    """MemPath.read / write at ``now``: take a credit (CreditPool.take) and return the
    transaction to start, or queue it for a credit (and return -1)."""
    issued, rows, free, counts, tt = txns
    if counts[N_FREE]:
        counts[N_FREE] -= 1
        j = free[counts[N_FREE]]
    else:
        j = counts[N_FRESH]
        counts[N_FRESH] += 1
    p = src_paths[srcs[s, S_PATH0] + choice]
    issued[j] = now
    rows[j, T_SRC], rows[j, T_PATH], rows[j, T_CHOICE] = s, p, choice
    rows[j, T_WRITE], rows[j, T_NEXT] = write, -1
    pools, ret = net[6], net[7]
    c = net[3][p, P_POOL_W] if write else net[3][p, P_POOL_R]
    _collect(now, c, pools, ret)
    if pools[c, C_AVAIL] and pools[c, C_HEAD] < 0:
        pools[c, C_AVAIL] -= 1
        return j
    pools[c, C_STALLS] += 1
    if pools[c, C_TAIL] >= 0:
        rows[pools[c, C_TAIL], T_NEXT] = j
    else:
        pools[c, C_HEAD] = j
    pools[c, C_TAIL] = j
    _arm(now, c, heap, pools, ret)
    return -1


@njit(cache=True, inline="always", _nrt=False)
def _reserve(links, k, wire, at):
    """LinkDirection.reserve for a CXL.cachemem message (no bit errors)."""
    free = links[k, L_FREE]
    start = at if at > free else free
    duration = wire * links[k, L_NSPB]
    links[k, L_FREE] = start + duration
    links[k, L_BUSY] += duration
    links[k, L_SENT] += wire
    return links[k, L_FREE] + links[k, L_LAT]


@njit(cache=True, inline="always", _nrt=False)
def _stage(paths_i, paths_f, p, write, i):
    """Step ``i`` of path ``p``'s route as (stage index, wire bytes); the device's step
    (``i`` = the number of down links) has stage -1."""
    down = paths_i[p, P_DOWN1] - paths_i[p, P_DOWN0]
    if i < down:
        return paths_i[p, P_DOWN0] + i, paths_f[p, P_RWD] if write else paths_f[p, P_REQ]
    if i == down:
        return -1, 0.0
    return (paths_i[p, P_UP0] + i - down - 1,
            paths_f[p, P_NDR] if write else paths_f[p, P_DRS])


@njit(cache=True, inline="always", _nrt=False)
def _advance(now, j, i, t, txns, heap, size, net):
    """journey.advance: carry transaction ``j`` from step ``i``, reached at ``t``, as far
    as it can go now -- exclusive stages reserved at once; a shared one entered now if
    ``t`` is now (a link by LinkDirection.send) or else by a RESUME event at ``t``."""
    links, devs, paths_f, paths_i, stage_link, stage_after, pools, ret, link_q = net
    issued, rows, free, counts, tt = txns
    p = rows[j, T_PATH]
    write = rows[j, T_WRITE]
    steps = paths_i[p, P_DOWN1] - paths_i[p, P_DOWN0] + 1 + paths_i[p, P_UP1] - paths_i[p, P_UP0]
    while i < steps:
        k, wire = _stage(paths_i, paths_f, p, write, i)
        if k < 0:  # the device (MemoryBackend.access), then the credit's return
            d = paths_i[p, P_DEV]
            if not devs[d, D_EXCL] and t > now:
                break
            arrival = t
            if devs[d, D_RT]:
                t = max(t, devs[d, D_CTRL]) + devs[d, D_RT]
                devs[d, D_CTRL] = t
            free_at = devs[d, D_FREE]
            start = t if t > free_at else free_at
            devs[d, D_FREE] = start + size * devs[d, D_NSPB]
            devs[d, D_ACC] += 1
            done = devs[d, D_FREE] + devs[d, D_LAT]
            c = paths_i[p, P_POOL_W] if write else paths_i[p, P_POOL_R]
            _ret_push(ret, pools, c,
                      (done if paths_i[p, P_HELD] else arrival) + paths_f[p, P_CREDIT_RET])
            if pools[c, C_HEAD] >= 0:
                _arm(now, c, heap, pools, ret)
            t = done + paths_f[p, P_AFTER_DEV]
        else:
            link = stage_link[k]
            if not links[link, L_EXCL]:
                if t > now:
                    break
                rows[j, T_STEP] = i
                # LinkDirection.send: wait behind the queue or a busy serializer
                if link_q[link, Q_WAKING] or link_q[link, Q_HEAD] >= 0 \
                        or now < links[link, L_FREE]:
                    tt[j] = now
                    rows[j, T_NEXT] = -1
                    if link_q[link, Q_TAIL] >= 0:
                        rows[link_q[link, Q_TAIL], T_NEXT] = j
                    else:
                        link_q[link, Q_HEAD] = j
                    link_q[link, Q_TAIL] = j
                    if not link_q[link, Q_WAKING]:
                        _link_wake_at(now, link, heap, net)
                else:
                    _transmit(now, now, link, j, rows, heap, net)
                return
            t = _reserve(links, link, wire, t) + stage_after[k]
        i += 1
    if i == steps:
        _push(heap, now + (t - now), COMPLETE, j)
    else:
        rows[j, T_STEP], tt[j] = i, t
        _push(heap, now + (t - now), RESUME, j)


@njit(cache=True, inline="always", _nrt=False)
def _link_wake_at(now, link, heap, net):
    """LinkDirection._wake_at: pick the next message when the serializer frees."""
    net[8][link, Q_WAKING] = 1
    _push(heap, now + max(net[0][link, L_FREE] - now, 0.0), LINK_WAKE, link)


@njit(cache=True, inline="always", _nrt=False)
def _transmit(now, arrived, link, j, rows, heap, net):
    """LinkDirection._transmit of transaction ``j``'s message at its step: serialize it,
    deliver it (DELIVER) its ``after`` latency past the link's."""
    links, paths_f, paths_i, stage_after = net[0], net[2], net[3], net[5]
    k, wire = _stage(paths_i, paths_f, rows[j, T_PATH], rows[j, T_WRITE], rows[j, T_STEP])
    delivered = _reserve(links, link, wire, now if now > arrived else arrived)
    _push(heap, now + (delivered + stage_after[k] - now), DELIVER, j)
