"""YCSB's zipfian item choosers, vectorised over numpy arrays of uniform draws.

``ZipfianGenerator`` follows Gray et al. (SIGMOD'94): with ``zeta(n, t) = sum i^-t``,
``alpha = 1/(1-t)`` and ``eta = (1 - (2/n)^(1-t)) / (1 - zeta(2,t)/zeta(n,t))``, a uniform
``u`` gives item 0 when ``u*zeta(n) < 1``, item 1 when it is below ``1 + 0.5^t``, and
otherwise ``floor(n * (eta*u - eta + 1)^alpha)``; item 0 is the most popular and the
popular items sit together. ``ScrambledZipfianGenerator`` draws from that distribution
over 10^10 (+1) items with the precomputed ``zeta = 26.46902820178302`` (theta 0.99) and
maps the result through a 64-bit FNV hash modulo the item count, scattering the popular
items over the space.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

THETA = 0.99                       # YCSB's ZIPFIAN_CONSTANT
SCRAMBLED_ITEMS = 10_000_000_000   # ScrambledZipfianGenerator.ITEM_COUNT
SCRAMBLED_ZETAN = 26.46902820178302  # zeta(ITEM_COUNT, 0.99), precomputed by YCSB

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(1099511628211)
_LOW_BYTE = np.uint64(0xFF)
_EIGHT = np.uint64(8)
_EXACT_TERMS = 10_000_000  # up to here zeta is summed term by term
_HEAD = 1_000_000          # beyond it, the first terms are summed and the tail integrated


@lru_cache(maxsize=64)
def zeta(n: int, theta: float) -> float:
    """``sum(i^-theta for i in 1..n)``; for large ``n`` the first million terms exactly
    plus the Euler-Maclaurin tail (error far below double precision)."""
    if n <= _EXACT_TERMS:
        return _partial(1, n + 1, theta)
    m = _HEAD
    head = _partial(1, m, theta)  # terms 1 .. m-1

    def f(x: float) -> float:
        return x ** -theta

    def d1(x: float) -> float:
        return -theta * x ** (-theta - 1)

    def d3(x: float) -> float:
        return -theta * (theta + 1) * (theta + 2) * x ** (-theta - 3)

    integral = (n ** (1 - theta) - m ** (1 - theta)) / (1 - theta)
    tail = integral + (f(m) + f(n)) / 2 + (d1(n) - d1(m)) / 12 - (d3(n) - d3(m)) / 720
    return head + tail


def _partial(start: int, stop: int, theta: float) -> float:
    """``sum(i^-theta for i in start..stop-1)`` in blocks (bounded memory)."""
    total = 0.0
    for lo in range(start, stop, 1 << 20):
        i = np.arange(lo, min(lo + (1 << 20), stop), dtype=np.float64)
        total += float(np.sum(i ** -theta))
    return total


class Zipfian:
    """YCSB's ZipfianGenerator over items ``0 .. items-1``."""

    def __init__(self, items: int, theta: float = THETA, zetan: float | None = None) -> None:
        if items < 1 or not 0 < theta < 1:
            raise ValueError(f"need items >= 1 and 0 < theta < 1, not {items}, {theta}")
        self.items = items
        self.theta = theta
        self.zetan = zeta(items, theta) if zetan is None else zetan
        self.alpha = 1.0 / (1.0 - theta)
        self.eta = (1.0 - (2.0 / items) ** (1.0 - theta)) / (1.0 - zeta(2, theta) / self.zetan)
        self.second = 1.0 + 0.5 ** theta

    def draw(self, u: np.ndarray) -> np.ndarray:
        """Items (int64) for uniform draws ``u`` in [0, 1)."""
        out = np.empty(len(u), np.int64)
        _draw(u, self.items, self.zetan, self.eta, self.alpha, self.second, out)
        return out


@njit(cache=True)
def _draw(u, items, zetan, eta, alpha, second, out):
    """The YCSB formula, one draw at a time (numpy's temporaries cost 5x more)."""
    for i in range(len(u)):
        uz = u[i] * zetan
        if uz < 1.0:
            out[i] = 0
        elif uz < second:
            out[i] = 1
        else:
            out[i] = min(np.int64(items * max(eta * u[i] - eta + 1.0, 0.0) ** alpha), items - 1)


@njit(cache=True)
def fnv64(values):
    """YCSB's ``Utils.fnvhash64`` of each value: FNV-1 over its 8 bytes, low byte first,
    then the absolute value as a signed 64-bit number (int64 array)."""
    out = np.empty(len(values), np.int64)
    for i in range(len(values)):
        v = np.uint64(values[i])
        h = _FNV_OFFSET
        for _ in range(8):
            h = (h ^ (v & _LOW_BYTE)) * _FNV_PRIME
            v = v >> _EIGHT
        signed = np.int64(h)
        out[i] = -signed if signed < 0 else signed
    return out


class ScrambledZipfian:
    """YCSB's ScrambledZipfianGenerator over items ``0 .. items-1``."""

    def __init__(self, items: int, theta: float = THETA) -> None:
        # YCSB builds ZipfianGenerator(0, ITEM_COUNT): ITEM_COUNT + 1 items.
        zetan = SCRAMBLED_ZETAN if theta == THETA else None
        self.items = items
        self.zipfian = Zipfian(SCRAMBLED_ITEMS + 1, theta, zetan)

    def draw(self, u: np.ndarray) -> np.ndarray:
        return fnv64(self.zipfian.draw(u)) % self.items
