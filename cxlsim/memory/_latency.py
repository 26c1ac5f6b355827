"""Compiled loaded-latency formulas of the memory targets, and one node's fixed point.

One source for the queues' waits: :class:`~cxlsim.memory.dram.DramTarget` and
:class:`~cxlsim.memory.expander.ExpanderTarget` report their servers from
:func:`dram_waits` and :func:`expander_waits`, and the epoch level's equilibrium
(:meth:`cxlsim.memory.epoch.MemorySystem.solve`) evaluates the same functions in
:func:`node_fixed_point`, with no Python between the evaluations of its root finder.

A target is a row of floats (its *spec*, a slice of a flat array), laid out as below;
an expander's spec is followed by its device DRAM's spec (if any), its links' mixed
message costs down and up, the nanoseconds per wire byte of each of its links, and what
other hosts put on the parts of it they share (a pooled device's). The arithmetic is the Python models'
operation for operation, so both give the same floats.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Target kinds (a spec's first float).
DRAM, EXPANDER, CURVES = 0, 1, 2
#: A DRAM spec (one data bus's figures, :meth:`cxlsim.memory.dram.DramParams.spec`):
#: kind, idle latency, peak B/s of all buses, ns a line holds a bus, ns of bus a line
#: costs at saturation (the line, or its share of the activations the rank may issue),
#: share of the bus lost to refresh, a refresh's stall (its second moment per ns),
#: ns a write drain turns the bus around, lines drained at the watermark, lines per row
#: activation (a burst), ns a burst holds its bank, banks in all, buses.
(K_KIND, D_IDLE, D_PEAK, D_LINE, D_TAU, D_REFRESH, D_STALL, D_TURN, D_DRAIN, D_BURST,
 D_BANK_T, D_BANKS, D_BUSES) = range(13)
DRAM_FLOATS = 13
#: An expander spec: kind, idle latency, links, wire bytes of M2S Req, M2S RwD, S2M NDR,
#: S2M DRS (each in a stream of its own kind), media ns a line, controller ns a request,
#: request buffer (0: none), has a DRAM, the steps m of its mixed costs; then its DRAM
#: spec (if any), the mean wire bytes of a mixed message stream down and up at read
#: fractions k / m, k = 0..m (:func:`cxlsim.link.flits.mixed_costs`), its links' ns
#: per byte, and the load of other hosts on a pooled device: the first of its links
#: they share (those after it too: the route is a tree's), their read and write B/s
#: (:data:`SHARED_FLOATS`, at :func:`shared_at`; they load the shared links, the DRAM,
#: media, controller and request buffer as the host's own traffic does).
SHARED_FLOATS = 3
(X_IDLE, X_HOPS, X_REQ, X_RWD, X_NDR, X_DRS, X_MEDIA, X_CTRL, X_BUFFER,
 X_HAS_DRAM, X_STEPS) = range(1, 12)
EXPANDER_FLOATS = 12
#: A curves spec: kind, idle latency, curves; then per curve (by read fraction): its read
#: fraction, points, the points' bandwidths (B/s) and latencies (ns).
C_CURVES = 2
CURVES_FLOATS = 3
#: Bytes of a cache line.
LINE = 64.0
#: Most servers a target reports.
MAX_SERVERS = 64


@njit(cache=True)
def md1_wait(rho, service):
    """M/D/1 mean wait (ns), infinite at or past saturation."""
    if rho >= 1.0:
        return math.inf
    rho = max(rho, 0.0)
    return rho * service / (2 * (1 - rho))


@njit(cache=True)
def mg1_wait(rate1, service1, rate2, service2):
    """(utilisation, mean wait) of a FIFO server fed by two Poisson flows (P-K)."""
    rho = second = 0.0
    rho += rate1 * service1
    second += rate1 * service1 * service1
    rho += rate2 * service2
    second += rate2 * service2 * service2
    if rho >= 1.0:
        return rho, math.inf
    return rho, second / (2.0 * (1.0 - rho))


@njit(cache=True)
def mdc_wait(servers, offered, service):
    """M/D/c mean wait, Allen-Cunneen: half the M/M/c wait (Erlang C from Erlang B)."""
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1 - rho * (1 - b)) * service / (servers - offered) / 2


@njit(cache=True)
def mix_efficiency(spec, at, read_fraction):
    """Sustained fraction of the peak at this read fraction: the lines per ns at which
    refresh, the lines' own cost and the drains' turnarounds fill the bus,
    ``lines x (D_TAU + min(r, 1 - r) / D_DRAIN x D_TURN) = 1 - D_REFRESH`` (a drain per
    ``D_DRAIN`` lines of the lighter kind: with few reads the bus turns back to them as
    seldom as they come)."""
    tau = spec[at + D_TAU]
    lighter = min(read_fraction, 1.0 - read_fraction)
    per_line = tau + lighter / spec[at + D_DRAIN] * spec[at + D_TURN]
    return (1.0 - spec[at + D_REFRESH]) / per_line * spec[at + D_LINE]


@njit(cache=True)
def dram_waits(spec, at, read_bps, write_bps, rho, wait, n):
    """The queues a read crosses on the DRAM spec at ``at``: its data bus, its bank, the
    write drains and the refreshes it waits behind (their bus shares and waits to
    ``rho[n:]``, ``wait[n:]``); returns the new ``n``.

    The bus is an M/G/1 queue of three kinds of work: bursts of reads, write drains
    (each ``D_DRAIN`` writes and a turnaround, turned to at the watermark) and
    refreshes, which take the bus away a share ``f`` of the time. A read waits the
    residual work it finds, ``W0 = sum(rate x service^2 / 2)``, over
    ``(1 - f)(1 - u)``, ``u`` the bus's whole utilisation (the Pollaczek-Khinchine mean
    with refresh as a priority interruption; checked against the cycle-level reference,
    :mod:`cxlsim.memory.dram_cycle`). The stall a read sees from refresh at no load is
    in the idle latency."""
    buses = spec[at + D_BUSES]
    reads = read_bps / LINE * 1e-9 / buses  # lines per ns on one bus
    writes = write_bps / LINE * 1e-9 / buses
    tau, burst, turn = spec[at + D_TAU], spec[at + D_BURST], spec[at + D_TURN]
    refresh, stall = spec[at + D_REFRESH], spec[at + D_STALL]
    drains = min(reads, writes) / spec[at + D_DRAIN] if turn else 0.0
    drain = writes / drains * tau + turn if drains else 0.0  # ns a drain holds the bus
    busy = refresh + (reads + writes) * tau + drains * turn
    den = (1.0 - refresh) * (1.0 - busy)
    rho[n] = busy
    wait[n] = reads * burst * tau * tau / 2.0 / den if den > 0.0 else math.inf
    n += 1
    if spec[at + D_BANK_T]:
        # a burst holds its bank for D_BANK_T: an M/D/1 queue at each bank
        rho[n] = ((reads + writes) * buses / burst * spec[at + D_BANK_T]
                  / spec[at + D_BANKS])
        wait[n] = md1_wait(rho[n], spec[at + D_BANK_T])
        n += 1
    if turn:
        rho[n] = drains * drain
        wait[n] = drains * drain * drain / 2.0 / den if den > 0.0 else math.inf
        n += 1
    if stall:
        rho[n] = refresh
        wait[n] = stall / den - stall / (1.0 - refresh) ** 2 if den > 0.0 else math.inf
        n += 1
    return n


@njit(cache=True)
def mixed_scale(spec, table, steps, read_fraction, read_cost, write_cost):
    """Factor on both kinds' own-stream costs that gives a direction's mixed cost at
    this read fraction (the ``steps + 1`` costs at ``table``, linear between them), as
    :func:`cxlsim.link.flits.mixed_message_bytes` shares it."""
    x = read_fraction * steps
    k = min(int(x), steps - 1)
    mean = spec[table + k] + (x - k) * (spec[table + k + 1] - spec[table + k])
    return mean / (read_fraction * read_cost + (1.0 - read_fraction) * write_cost)


@njit(cache=True)
def shared_at(spec, at):
    """Where the expander spec at ``at`` keeps what other hosts share of it: the first
    shared link, then their read and write B/s."""
    down = at + EXPANDER_FLOATS + (DRAM_FLOATS if spec[at + X_HAS_DRAM] != 0.0 else 0)
    return down + 2 * (int(spec[at + X_STEPS]) + 1) + int(spec[at + X_HOPS])


@njit(cache=True)
def foreign_load(spec, starts, targets, node, x, foreign):
    """Other hosts' load on node ``node``'s pooled targets when the node answers in
    ``x`` ns, written where each target keeps it (:func:`shared_at`). ``foreign``: a
    row per thread class of the others, (target k, threads, MLP, gap -- its wait on its
    own other nodes included --, the target's weight in its mean latency, its share of
    the accesses, read fraction): it loads target ``k`` closed-loop, as this host's
    threads do, seeing the device as this host does."""
    for k in range(targets[node], targets[node + 1]):
        if spec[starts[k] + K_KIND] == EXPANDER:
            at = shared_at(spec, starts[k])
            spec[at + 1] = 0.0
            spec[at + 2] = 0.0
    for i in range(foreign.shape[0]):
        k = int(foreign[i, 0])
        if k < targets[node] or k >= targets[node + 1]:
            continue
        mlp = foreign[i, 2]
        line_rate = (foreign[i, 1] * mlp / (mlp * foreign[i, 3] + foreign[i, 4] * x)
                     * foreign[i, 5] * 1e9 * LINE)
        at = shared_at(spec, starts[k])
        spec[at + 1] += line_rate
        spec[at + 2] += line_rate * (1 - foreign[i, 6]) / foreign[i, 6]


@njit(cache=True)
def expander_waits(spec, at, read_bps, write_bps, rho, wait):
    """The queues of the expander spec at ``at``: each link's down and up directions, its
    DRAM's, the media, the controller, the request buffer; returns how many. Other
    hosts' load on a pooled device joins this host's from the first shared link on."""
    hops = int(spec[at + X_HOPS])
    has_dram = spec[at + X_HAS_DRAM] != 0.0
    down = at + EXPANDER_FLOATS + (DRAM_FLOATS if has_dram else 0)
    steps = int(spec[at + X_STEPS])
    up = down + steps + 1
    links = up + steps + 1
    shared = int(spec[shared_at(spec, at)])
    req, rwd, drs, ndr = spec[at + X_REQ], spec[at + X_RWD], spec[at + X_DRS], spec[at + X_NDR]
    reads = writes = 0.0
    s_down = s_up = 1.0
    n = 0
    for h in range(hops):
        if h == 0 or h == shared:  # this host's own load, then with the others'
            if h == shared:
                read_bps += spec[links + hops + 1]
                write_bps += spec[links + hops + 2]
            reads = read_bps / LINE * 1e-9  # lines per ns
            writes = write_bps / LINE * 1e-9
            mix = reads / (reads + writes) if reads + writes > 0 else 1.0
            s_down = mixed_scale(spec, down, steps, mix, req, rwd)
            s_up = mixed_scale(spec, up, steps, mix, drs, ndr)
        nspb = spec[links + h]
        rho[n], wait[n] = mg1_wait(reads, req * s_down * nspb, writes, rwd * s_down * nspb)
        rho[n + 1], wait[n + 1] = mg1_wait(reads, drs * s_up * nspb, writes,
                                           ndr * s_up * nspb)
        n += 2
    if shared >= hops:  # the device's own queues are shared past all of its links
        read_bps += spec[links + hops + 1]
        write_bps += spec[links + hops + 2]
        reads = read_bps / LINE * 1e-9
        writes = write_bps / LINE * 1e-9
    if has_dram:
        n = dram_waits(spec, at + EXPANDER_FLOATS, read_bps, write_bps, rho, wait, n)
    for service in (spec[at + X_MEDIA], spec[at + X_CTRL]):
        if service:
            rho[n] = (reads + writes) * service
            wait[n] = md1_wait(rho[n], service)
            n += 1
    c = int(spec[at + X_BUFFER])
    if c:
        waits = 0.0
        for k in range(n):
            waits += wait[k]
        hold = spec[at + X_IDLE] + waits
        offered = (reads + writes) * hold
        if not math.isfinite(hold) or offered >= c:
            rho[n] = 1.0 if offered >= c else offered / c
            wait[n] = math.inf
        else:
            rho[n] = offered / c
            wait[n] = mdc_wait(c, offered, hold)
        n += 1
    return n


@njit(cache=True)
def _curve_pair(spec, at, read_fraction):
    """The measured curves around ``read_fraction`` and the weight of the second:
    (offset of one, offset of the other, weight); the nearest one outside their range."""
    first = at + CURVES_FLOATS
    last = first
    for _ in range(int(spec[at + C_CURVES]) - 1):
        last += 2 + 2 * int(spec[last + 1])
    if read_fraction <= spec[first]:
        return first, first, 0.0
    if read_fraction >= spec[last]:
        return last, last, 0.0
    a = first
    b = a + 2 + 2 * int(spec[a + 1])
    while spec[b] < read_fraction:  # the first curve at or above the fraction
        a = b
        b = a + 2 + 2 * int(spec[a + 1])
    return a, b, (read_fraction - spec[a]) / (spec[b] - spec[a])


@njit(cache=True)
def curves_capacity(spec, at, read_fraction):
    """Bandwidth (B/s) at the last measured point, interpolated between the curves."""
    a, b, w = _curve_pair(spec, at, read_fraction)
    return (1 - w) * spec[a + 1 + int(spec[a + 1])] + w * spec[b + 1 + int(spec[b + 1])]


@njit(cache=True)
def _curve_at(spec, c, bandwidth):
    """Latency read off curve ``c`` at ``bandwidth`` (infinite past its last point)."""
    points = int(spec[c + 1])
    bw = spec[c + 2:c + 2 + points]
    if bandwidth > bw[points - 1]:
        return math.inf
    return np.interp(bandwidth, bw, spec[c + 2 + points:c + 2 + 2 * points])


@njit(cache=True)
def curves_latency(spec, at, read_bps, write_bps):
    """Mean read latency off the measured curves: each curve read at the same fraction of
    its capacity, the two around the mix weighted linearly (CurveTarget)."""
    total = read_bps + write_bps
    mix = read_bps / total if total > 0 else 1.0
    capacity = curves_capacity(spec, at, mix)
    if total > capacity:
        return math.inf
    a, b, w = _curve_pair(spec, at, mix)
    u = total / capacity
    top_a = spec[a + 1 + int(spec[a + 1])]
    top_b = spec[b + 1 + int(spec[b + 1])]
    la = _curve_at(spec, a, min(u * top_a, top_a))
    lb = _curve_at(spec, b, min(u * top_b, top_b))
    return (1 - w) * la + w * lb


@njit(cache=True)
def target_latency(spec, at, read_bps, write_bps, rho, wait):
    """Mean read latency (ns) of the target spec at ``at``: idle plus the waits."""
    if spec[at + K_KIND] == CURVES:
        return curves_latency(spec, at, read_bps, write_bps)
    if spec[at + K_KIND] == DRAM:
        n = dram_waits(spec, at, read_bps, write_bps, rho, wait, 0)
    else:
        n = expander_waits(spec, at, read_bps, write_bps, rho, wait)
    total = 0.0
    for k in range(n):
        total += wait[k]
    return spec[at + D_IDLE] + total  # every kind keeps its idle latency there


@njit(cache=True)
def node_latency(spec, starts, fractions, first, last, read_bps, write_bps, rho, wait):
    """Mean read latency of a node interleaving targets ``first`` to ``last - 1`` (their
    specs at ``starts[k]``) by ``fractions[k]``."""
    total = 0.0
    for k in range(first, last):
        f = fractions[k]
        total += f * target_latency(spec, starts[k], f * read_bps, f * write_bps, rho, wait)
    return total


@njit(cache=True)
def demand_latency(d, shares, order, latency):
    """Demand ``d``'s mean read latency over its nodes, added in ``order[d]``'s order."""
    mean = 0.0
    for k in range(order.shape[1]):
        m = order[d, k]
        if m < 0:
            break
        if shares[d, m] > 0:
            mean += shares[d, m] * latency[m]
    return mean


@njit(cache=True)
def _excess(x, node, spec, starts, fractions, targets, threads, mlp, gap, read_fraction,
            shares, order, latency, rho, wait, foreign):
    """x minus node ``node``'s latency at the load the demands put on it when its
    latency is ``x`` (the others' in ``latency``): increasing in x, zero at the point.
    Demand ``d`` shares ``shares[d, m]`` of its accesses to node ``m``; ``order[d]``
    lists its nodes as its shares do (-1 after the last): its mean latency adds them
    in that order. ``latency``'s last entry, after the nodes', is the wait for a
    tracker of the host's shared pool (0 without one: :func:`tracker_fixed_point`);
    ``foreign``: other hosts' threads on the node's pooled targets
    (:func:`foreign_load`)."""
    latency[node] = x
    if foreign.shape[0]:
        foreign_load(spec, starts, targets, node, x, foreign)
    reads = 0.0
    writes = 0.0
    pool_wait = latency[latency.shape[0] - 1]
    for d in range(threads.shape[0]):
        mean = demand_latency(d, shares, order, latency)
        rate = mlp[d] / (mlp[d] * gap[d] + mean + pool_wait)
        line_rate = threads[d] * rate * shares[d, node] * 1e9 * LINE
        reads += line_rate
        writes += line_rate * (1 - read_fraction[d]) / read_fraction[d]
    return x - node_latency(spec, starts, fractions, targets[node], targets[node + 1], reads,
                            writes, rho, wait)


@njit(cache=True)
def tracker_load(threads, mlp, gap, shares, order, latency, wait):
    """(reads per ns, trackers held) of the demands when a read waits ``wait`` ns for a
    tracker and then holds it for its node's latency (``latency[m]``): Little's law,
    ``held = sum of rate x hold``."""
    reads = 0.0
    held = 0.0
    for d in range(threads.shape[0]):
        mean = demand_latency(d, shares, order, latency)
        rate = threads[d] * mlp[d] / (mlp[d] * gap[d] + mean + wait)
        reads += rate
        held += rate * mean
    return reads, held


@njit(cache=True)
def tracker_wait(trackers, threads, mlp, gap, shares, order, latency, wait):
    """The mean wait (ns) for one of ``trackers`` when the demands' reads wait ``wait``:
    M/D/c (:func:`mdc_wait`) with the trackers as servers, the reads' mean latency as
    the holding time; infinite when the reads would hold every tracker."""
    reads, held = tracker_load(threads, mlp, gap, shares, order, latency, wait)
    if reads <= 0.0:
        return 0.0
    if held >= trackers:
        return math.inf
    return mdc_wait(trackers, held, held / reads)


@njit(cache=True)
def tracker_fixed_point(trackers, tol, threads, mlp, gap, shares, order, latency):
    """The wait for a tracker consistent with the load it leaves, the nodes' latencies
    held at ``latency``: the root of ``w - tracker_wait(w)``, which rises with ``w``
    (a longer wait slows the threads and frees trackers). The root lies below the wait
    at no wait, ``[0, tracker_wait(0)]``; when that is infinite (the reads would hold
    every tracker) the bracket is doubled from ``max(1 ns, latency[-1])``. Bisection to
    ``tol`` of the bracket's upper end or of 1 ns, whichever is more."""
    lo = 0.0
    hi = tracker_wait(trackers, threads, mlp, gap, shares, order, latency, lo)
    if hi <= 0.0:
        return lo
    if not math.isfinite(hi):
        hi = max(1.0, latency[latency.shape[0] - 1])
        while hi - tracker_wait(trackers, threads, mlp, gap, shares, order, latency, hi) < 0.0:
            lo, hi = hi, 2.0 * hi
    while hi - lo > tol * max(hi, 1.0):
        mid = 0.5 * (lo + hi)
        if mid - tracker_wait(trackers, threads, mlp, gap, shares, order, latency, mid) < 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@njit(cache=True)
def node_fixed_point(node, idle, tol, spec, starts, fractions, targets, threads, mlp, gap,
                     read_fraction, shares, order, latency, foreign):
    """Node ``node``'s latency consistent with its own load, the other nodes held at
    ``latency`` (:meth:`~cxlsim.memory.epoch.MemorySystem._node_fixed_point`): idle if
    the demands do not load it past idle, else Brent's root of the excess in a bracket
    doubled from ``[idle, max(2 idle, latency[node])]``. Node ``m``'s targets are
    ``targets[m]`` to ``targets[m + 1] - 1`` of ``starts`` and ``fractions``."""
    lat = latency.copy()
    rho = np.empty(MAX_SERVERS)
    wait = np.empty(MAX_SERVERS)
    args = (node, spec, starts, fractions, targets, threads, mlp, gap, read_fraction, shares,
            order, lat, rho, wait, foreign)
    lo = idle
    if _excess(lo, *args) >= 0:
        return lo
    hi = max(2 * lo, latency[node])
    while _excess(hi, *args) < 0:
        lo, hi = hi, 2 * hi
    return _brent(lo, hi, tol * lo, 4 * np.finfo(np.float64).eps, args)


@njit(cache=True)
def _brent(xa, xb, xtol, rtol, args):
    """Brent's root of :func:`_excess` in ``[xa, xb]`` (the root bracketed), step for
    step as SciPy's ``brentq``: inverse quadratic or secant steps kept while they beat
    bisection, bisection otherwise."""
    xpre, xcur = xa, xb
    xblk = fblk = spre = scur = 0.0
    fpre = _excess(xpre, *args)
    fcur = _excess(xcur, *args)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    for _ in range(100):
        if fpre != 0 and fcur != 0 and (fpre < 0) != (fcur < 0):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # secant
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # inverse quadratic
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = _excess(xcur, *args)
    return xcur
