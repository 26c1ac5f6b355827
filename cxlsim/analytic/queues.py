"""Queueing closed forms used to check the discrete-event models.

M/D/1 and M/M/1 mean waits are the Pollaczek-Khinchine formula W_q = rho*S*(1 + c_s^2)
/ (2(1 - rho)) with service-time coefficient of variation c_s = 0 and 1; with c servers
(M/M/c, M/D/c) the Erlang-C probability of waiting sets the wait (Allen-Cunneen's
(1 + c_s^2) / 2 factor for M/D/c); ``lindley`` is
the FIFO single-server recursion D_i = max(A_i, D_{i-1}) + S_i in closed form; Little's
law is L = lambda * W. Any consistent time unit works (cxlsim uses ns).
"""

from __future__ import annotations

import numpy as np


def _check(rho: float, service: float) -> None:
    if not 0 <= rho < 1:
        raise ValueError(f"utilisation rho must be in [0, 1) for a stable queue, not {rho!r}")
    if not service >= 0:
        raise ValueError(f"service time must be >= 0, not {service!r}")


def md1_mean_wait(rho: float, service: float) -> float:
    """Mean time in queue (before service) of M/D/1: rho*S / (2(1 - rho))."""
    _check(rho, service)
    return rho * service / (2 * (1 - rho))


def mm1_mean_wait(rho: float, service: float) -> float:
    """Mean time in queue (before service) of M/M/1 with mean service S: rho*S / (1 - rho)."""
    _check(rho, service)
    return rho * service / (1 - rho)


def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits in M/M/c with ``offered`` load a = lambda*S < c
    (from the Erlang-B recursion, stable for thousands of servers)."""
    if servers < 1 or not 0 <= offered < servers:
        raise ValueError(f"need c >= 1 servers and offered load 0 <= a < c, not c={servers!r}, "
                         f"a={offered!r}")
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1 - rho * (1 - b))


def mmc_mean_wait(servers: int, offered: float, service: float) -> float:
    """Mean time in queue of M/M/c: C(c, a) * S / (c - a)."""
    return erlang_c(servers, offered) * service / (servers - offered)


def mdc_mean_wait(servers: int, offered: float, service: float) -> float:
    """Mean time in queue of M/D/c, Allen-Cunneen's approximation: half the M/M/c wait
    (exact for c = 1, within a few per cent for many servers at high load)."""
    return mmc_mean_wait(servers, offered, service) / 2


def lindley(arrivals, services) -> np.ndarray:
    """Departure times of a FIFO single server, without a Python loop.

    Unrolling D_i = max(A_i, D_{i-1}) + S_i gives D_i = C_i + max_{j<=i}(A_j - C_{j-1})
    with C the cumulative service (C_{-1} = 0): a cumsum and a running maximum.
    """
    a = np.asarray(arrivals, dtype=float)
    s = np.asarray(services, dtype=float)
    if a.ndim != 1 or a.shape != s.shape:
        raise ValueError(f"arrivals and services must be 1-D and of equal length, "
                         f"not shapes {a.shape} and {s.shape}")
    if np.any(np.diff(a) < 0) or np.any(s < 0):
        raise ValueError("arrivals must be in order and services >= 0")
    done = np.cumsum(s)
    return done + np.maximum.accumulate(a - (done - s))


def littles_law_L(arrival_rate: float, mean_sojourn: float) -> float:
    """Mean number in the system, L = lambda * W (rate per unit of W's time)."""
    return arrival_rate * mean_sojourn
