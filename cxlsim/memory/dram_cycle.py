"""A cycle-level reference of one DRAM data bus: FR-FCFS over JEDEC timings.

The epoch level's DRAM model (:mod:`cxlsim.memory.dram`) is a set of closed formulas;
this is the controller they stand for, simulated clock by clock on one data bus (a DDR5
subchannel, a DDR4 or HBM2 channel), so that the formulas can be checked against it on
the same request streams (``tests/test_dram_cycle.py``). It is small on purpose:

- the bus's ranks x bank groups x banks, each bank with one row open or none; a row is
  closed as soon as no queued request hits it (an auto-precharge), so a burst of lines
  to one row is served by one activation and the next burst finds its bank closed;
- a read queue (``read_queue`` entries) and a write queue (``write_queue`` requests of
  ``request_lines`` lines); the bus serves reads until the write queue reaches its high
  watermark, then writes until it is down to the low one (or empty, or no read waits);
- FR-FCFS within the mode (Rixner et al., ISCA 2000): each clock the oldest request
  whose row is open and whose column command may issue goes first; else the oldest
  request whose activate (or precharge, when no queued request hits the open row) may;
- the JEDEC constraints between commands: tRCD, tRP, tRAS, tRC, tRTP, write recovery
  (CWL + burst + tWR), tCCD_S / tCCD_L (tCCD_L_WR between writes), tRRD_S / tRRD_L,
  tFAW, tWTR_S / tWTR_L, the read-to-write gap, a rank switch's tRTRS; refresh on
  schedule, staggered: every tREFI an all-bank refresh holds a rank tRFC, or (with
  ``trfc_sb``) a same-bank refresh holds one bank of every bank group tRFCsb.

One command a clock; requests are admitted in arrival order while their queue has room.
Not modelled: the command bus's two-cycle commands, postponed refreshes, power-down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from cxlsim.memory.dram import DramParams

#: Timing slots of the clock array the kernel reads, in clocks.
(BL, CL, CWL, RCD, RP, RAS, RC, RTP, WR, CCDS, CCDL, CCDLW, RRDS, RRDL, FAW, WTRS, WTRL,
 RTW, RTRS, RFC, REFI) = range(21)
#: Rows a random request picks from (large: two random requests to a bank never share one).
RANDOM_ROWS = 1 << 20


@dataclass(frozen=True)
class Requests:
    """A request stream for one data bus: arrival (ns), write or read, and the
    rank, bank group, bank and row each addresses."""

    arrival: np.ndarray
    write: np.ndarray
    rank: np.ndarray
    group: np.ndarray
    bank: np.ndarray
    row: np.ndarray


@dataclass(frozen=True)
class Served:
    """What the bus did with a stream: each request's completion (ns, its last data on
    the bus) and the stream's totals."""

    requests: Requests
    done: np.ndarray

    @property
    def reads(self) -> np.ndarray:
        """Which requests are reads."""
        return ~self.requests.write

    def read_latency(self, skip: float = 0.1) -> float:
        """Mean read latency (ns, arrival to last data), the first ``skip`` of the
        reads left out (the queues filling from empty)."""
        latency = (self.done - self.requests.arrival)[self.reads]
        return float(latency[int(skip * latency.size):].mean())

    def throughput(self, skip: float = 0.1) -> float:
        """Lines per ns served after the first ``skip`` of the requests completed."""
        done = np.sort(self.done)
        first = int(skip * done.size)
        return (done.size - 1 - first) / (done[-1] - done[first])


def clocks(params: DramParams) -> tuple[float, np.ndarray]:
    """The clock period (ns) of ``params``' data bus and its timings in whole clocks
    (rounded up, as JEDEC's nCK), for :func:`serve`."""
    p = params
    tck = 2e9 / p.data_rate
    burst = round(p.line_time / tck)

    def n(ns: float) -> int:
        return max(0, math.ceil(ns / tck - 1e-6))

    t = np.zeros(21, dtype=np.int64)
    t[BL], t[CL], t[CWL], t[RCD], t[RP] = burst, n(p.cl), n(p.cwl or p.cl), n(p.trcd), n(p.trp)
    t[RAS], t[RC], t[RTP], t[WR] = n(p.tras), n(p.trc or p.tras + p.trp), n(p.trtp), n(p.twr)
    t[CCDS] = max(burst, n(p.tccd_s))
    t[CCDL] = max(t[CCDS], n(p.tccd_l))
    t[CCDLW] = max(t[CCDL], n(p.tccd_l_wr))
    t[RRDS], t[RRDL], t[FAW] = n(p.trrd_s), max(n(p.trrd_s), n(p.trrd_l)), n(p.tfaw)
    t[WTRS], t[WTRL] = n(p.twtr), max(n(p.twtr), n(p.twtr_l))
    t[RTW], t[RTRS], t[RFC] = n(p.trtw), n(p.trtrs), n(p.trfc_sb or p.trfc)
    t[REFI] = n(p.trefi) if p.trefi else 1 << 62
    return tck, t


def serve(params: DramParams, requests: Requests, read_queue: int = 64) -> Served:
    """Run ``requests`` through one data bus of ``params`` (FR-FCFS, a read queue of
    ``read_queue`` entries, its write queue and watermarks)."""
    tck, t = clocks(params)
    p = params
    arrive = np.ceil(requests.arrival / tck).astype(np.int64)
    lines = p.write_queue * p.request_lines  # the write queue's requests, in lines
    done = _serve(t, arrive, requests.write, requests.rank.astype(np.int64),
                  requests.group.astype(np.int64), requests.bank.astype(np.int64),
                  requests.row.astype(np.int64), p.ranks, p.bank_groups,
                  p.banks // p.bank_groups, read_queue, lines,
                  int(math.ceil(lines * p.drain_high)), int(math.floor(lines * p.drain_low)),
                  bool(p.trfc_sb))
    return Served(requests, done * tck)


def poisson(n: int, load: float, params: DramParams, read_fraction: float, run: int,
            seed: int = 0) -> Requests:
    """``n`` requests at ``load`` (a fraction of the bus's peak) in runs of ``run``
    lines: each run arrives at once (Poisson run arrivals), is all reads (with
    probability ``read_fraction``) or all writes, and addresses one row of one bank,
    its lines the row's next columns. ``run=1`` is random traffic, every request a
    row of its own; a longer run is a sequential stream's lines on this bus, runs
    landing on banks at random."""
    rng = np.random.default_rng(seed)
    p = params
    runs = -(-n // run)
    gap = run * p.line_time / load
    start = np.cumsum(rng.exponential(gap, runs))
    write = rng.random(runs) >= read_fraction
    per_group = p.banks // p.bank_groups

    def each(values: np.ndarray) -> np.ndarray:
        return np.repeat(values, run)[:n]

    return Requests(each(start), each(write), each(rng.integers(0, p.ranks, runs)),
                    each(rng.integers(0, p.bank_groups, runs)),
                    each(rng.integers(0, per_group, runs)),
                    each(rng.integers(0, RANDOM_ROWS, runs)))


@njit(cache=True)
def _serve(t, arrive, write, rank, group, bank, row, ranks, groups, per_group, rq_cap,
           wq_cap, high, low, same_bank):
    """Each request's completion clock (see the module docstring); ``t`` the timings
    in clocks, queue sizes and watermarks in lines, ``same_bank`` the refresh."""
    n = arrive.size
    nb = ranks * groups * per_group
    grp = rank * groups + group  # each request's bank group and bank, flat
    bnk = grp * per_group + bank
    open_row = np.full(nb, -1, np.int64)
    act_ok = np.zeros(nb, np.int64)  # the clock from which each command may issue
    cas_ok = np.zeros(nb, np.int64)
    pre_ok = np.zeros(nb, np.int64)
    rank_act = np.zeros(ranks, np.int64)
    group_act = np.zeros(ranks * groups, np.int64)
    faw = np.full((ranks, 4), -(1 << 40), np.int64)  # each rank's last four activates
    faw_at = np.zeros(ranks, np.int64)
    rd_ok = np.zeros(ranks, np.int64)
    wr_ok = np.zeros(ranks, np.int64)
    group_rd = np.zeros(ranks * groups, np.int64)
    group_wr = np.zeros(ranks * groups, np.int64)
    units = ranks * (per_group if same_bank else 1)  # refreshed apart, staggered
    next_ref = np.array([t[REFI] * (u + 1) // units for u in range(units)], np.int64)
    rq = np.empty(n, np.int64)
    wq = np.empty(n, np.int64)
    nr = nw = 0
    done = np.zeros(n)
    writing = False
    p = 0
    now = 0
    served = 0
    while served < n:
        while p < n and arrive[p] <= now:  # admit in order while the queue has room
            if write[p]:
                if nw >= wq_cap:
                    break
                wq[nw] = p
                nw += 1
            else:
                if nr >= rq_cap:
                    break
                rq[nr] = p
                nr += 1
            p += 1
        # refreshes on schedule: up to the next arrival when idle, else up to now
        horizon = arrive[p] if nr == 0 and nw == 0 else now
        for u in range(units):
            while next_ref[u] <= horizon:
                _refresh(u, next_ref[u], units // ranks, groups, per_group, open_row, pre_ok,
                         act_ok, t[RP], t[RFC])
                next_ref[u] += t[REFI]
        if nr == 0 and nw == 0:
            now = max(now, arrive[p])
            continue
        if writing:  # writes from the high watermark down to the low one
            if nw == 0 or (nw <= low and nr > 0):
                writing = False
        elif nw >= high or (nr == 0 and p >= n):
            writing = True
        elif nr == 0:  # writes below the watermark only: on to the next arrival
            nxt = arrive[p]
            for u in range(units):
                nxt = min(nxt, next_ref[u])
            now = max(now + 1, nxt)
            continue
        q = wq if writing else rq
        nq = nw if writing else nr
        issued = -1
        for i in range(nq):  # first the oldest row hit whose column command may go
            r = q[i]
            b, g, k = bnk[r], grp[r], rank[r]
            if open_row[b] != row[r]:
                continue
            if writing:
                if now < max(cas_ok[b], wr_ok[k], group_wr[g]):
                    continue
                for j in range(ranks):
                    wr_ok[j] = max(wr_ok[j], now + (t[CCDS] if j == k else t[BL] + t[RTRS]))
                    rd_ok[j] = max(rd_ok[j], now + t[CWL] + t[BL] + t[WTRS] if j == k
                                   else now + t[CWL] + t[BL] + t[RTRS] - t[CL])
                group_wr[g] = now + t[CCDLW]
                group_rd[g] = max(group_rd[g], now + t[CWL] + t[BL] + t[WTRL])
                pre_ok[b] = max(pre_ok[b], now + t[CWL] + t[BL] + t[WR])
                done[r] = now + t[CWL] + t[BL]
            else:
                if now < max(cas_ok[b], rd_ok[k], group_rd[g]):
                    continue
                for j in range(ranks):
                    rd_ok[j] = max(rd_ok[j], now + (t[CCDS] if j == k else t[BL] + t[RTRS]))
                    wr_ok[j] = max(wr_ok[j], now + t[CL] + t[BL] + t[RTW] - t[CWL]
                                   + (0 if j == k else t[RTRS]))
                group_rd[g] = max(group_rd[g], now + t[CCDL])
                pre_ok[b] = max(pre_ok[b], now + t[RTP])
                done[r] = now + t[CL] + t[BL]
            issued = i
            break
        if issued >= 0:
            r = q[issued]
            q[issued:nq - 1] = q[issued + 1:nq]
            if writing:
                nw -= 1
            else:
                nr -= 1
            served += 1
            b = bnk[r]
            if not (_hits(rq, nr, bnk, row, b, row[r]) or _hits(wq, nw, bnk, row, b, row[r])):
                open_row[b] = -1  # an auto-precharge: no queued request wants the row
                act_ok[b] = max(act_ok[b], pre_ok[b] + t[RP])
        else:  # then the oldest request whose activate or precharge may go
            for i in range(nq):
                r = q[i]
                b, g, k = bnk[r], grp[r], rank[r]
                if open_row[b] == row[r]:
                    continue
                if open_row[b] < 0:
                    if now < max(act_ok[b], rank_act[k], group_act[g],
                                 faw[k, faw_at[k]] + t[FAW]):
                        continue
                    open_row[b] = row[r]
                    cas_ok[b] = now + t[RCD]
                    pre_ok[b] = now + t[RAS]
                    act_ok[b] = now + t[RC]
                    rank_act[k] = now + t[RRDS]
                    group_act[g] = now + t[RRDL]
                    faw[k, faw_at[k]] = now
                    faw_at[k] = (faw_at[k] + 1) % 4
                    break
                if now < pre_ok[b] or _hits(q, nq, bnk, row, b, open_row[b]):
                    continue
                open_row[b] = -1
                act_ok[b] = max(act_ok[b], now + t[RP])
                break
        now += 1
    return done


@njit(cache=True)
def _hits(q, nq, bnk, row, b, wanted):
    """Whether one of the ``nq`` requests queued in ``q`` is for row ``wanted`` of bank
    ``b``."""
    for i in range(nq):
        if bnk[q[i]] == b and row[q[i]] == wanted:
            return True
    return False


@njit(cache=True)
def _refresh(u, due, per_rank, groups, per_group, open_row, pre_ok, act_ok, rp, rfc):
    """Refresh unit ``u`` (``per_rank`` units a rank: the whole rank, or the same bank
    of every bank group) from ``due``: its open rows closed (once they may be), its
    banks held ``rfc`` clocks."""
    k, j = u // per_rank, u % per_rank
    start = due
    for g in range(groups):
        for i in range(per_group):
            b = (k * groups + g) * per_group + i
            if (per_rank == 1 or i == j) and open_row[b] >= 0:
                start = max(start, pre_ok[b] + rp)
    for g in range(groups):
        for i in range(per_group):
            b = (k * groups + g) * per_group + i
            if per_rank == 1 or i == j:
                open_row[b] = -1
                act_ok[b] = max(act_ok[b], start + rfc)
