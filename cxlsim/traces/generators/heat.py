"""Page heat from object popularity: how often each page of a hot set is used when the
pages hold objects whose popularity is zipfian.

A real service's hot set of ``real`` pages holds ``per_page`` objects a page; the objects'
popularity ranks follow a Zipf law of exponent ``alpha`` (rank ``r`` drawn in proportion
to ``r^-alpha``), and an object lands on a page regardless of its popularity (a slab
allocator places it by size and arrival), so a page is as hot as the sum of its objects:
the least skewed page heat the object popularity allows (an allocator that grouped
popular objects would make it more skewed). The objects are dealt onto the real pages
once, by a fixed seed: the service is the same for every trace, whose own seed picks
which of its pages are hot. A trace of ``pages`` pages standing for that service (the
similarity law: each trace page stands for ``real / pages`` real pages) gives its
``j``-th hottest page the heat of the real pages of ranks ``j real / pages`` to
``(j + 1) real / pages`` together, so the share of the accesses any top fraction of the
pages takes is the real service's at every size. With ``alpha > 1`` that share depends
on the real size (the objects past the head hold a share that shrinks only as
``N^(1 - alpha)``), which is why the real size is an input.

:class:`Alias` draws pages by such weights in constant time a draw (Walker's alias
method, built by Vose's algorithm), where a binary search over their cumulative sum
would take a cache miss a step.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

#: Real pages whose heat is summed at a time (bounds the memory beside the ranks).
_BLOCK = 1 << 16
#: The seed of the one draw of objects onto a real service's pages.
_SEED = 0


def page_heat(pages: int, real: int, per_page: int, alpha: float) -> np.ndarray:
    """Shares of the accesses (summing to 1, hottest first) of ``pages`` pages standing
    for ``real`` real pages (at least ``pages``) of ``per_page`` objects each, the objects'
    popularity zipfian with exponent ``alpha`` (0: every page alike)."""
    if pages < 1 or per_page < 1 or alpha < 0:
        raise ValueError(f"need pages >= 1, per_page >= 1, alpha >= 0, not {pages}, "
                         f"{per_page}, {alpha}")
    if alpha == 0:
        return np.full(pages, 1.0 / pages)
    real = max(real, pages)
    held = _held(real, per_page, alpha)
    edges = np.interp(np.arange(pages + 1) * (real / pages), np.arange(real + 1), held)
    return np.diff(edges) / held[-1]


@lru_cache(maxsize=8)
def _held(real: int, per_page: int, alpha: float) -> np.ndarray:
    """The accesses the hottest ``k`` real pages hold, for ``k`` from 0 to ``real``
    (unnormalised): the objects dealt onto the pages at random, each page the sum of its
    objects' ``rank^-alpha``."""
    objects = real * per_page
    rank = np.arange(1, objects + 1, dtype=np.int32 if objects < 1 << 31 else np.int64)
    np.random.default_rng(_SEED).shuffle(rank)  # real page p: rank[p * per_page:][:per_page]
    heat = np.empty(real)
    for first in range(0, real, _BLOCK):
        last = min(first + _BLOCK, real)
        block = rank[first * per_page:last * per_page].astype(np.float64) ** -alpha
        heat[first:last] = block.reshape(-1, per_page).sum(axis=1)
    heat[::-1].sort()  # hottest first
    held = np.concatenate([[0.0], np.cumsum(heat)])
    held.flags.writeable = False  # shared by the callers of the cache
    return held


class Alias:
    """Walker's alias table over ``weights`` (non-negative, not all 0): :meth:`draw`
    gives index ``i`` with probability ``weights[i] / sum(weights)``."""

    def __init__(self, weights: np.ndarray) -> None:
        weights = np.asarray(weights, np.float64)
        scaled = weights / np.sum(weights) * len(weights)  # this order: a tiny sum cannot overflow
        self.keep = np.ones(len(weights))
        self.alias = np.arange(len(weights))
        _vose(scaled, self.keep, self.alias)

    def draw(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """``m`` indices (int64)."""
        slot = rng.integers(0, len(self.keep), m)
        return np.where(rng.random(m) < self.keep[slot], slot, self.alias[slot])


@njit(cache=True)
def _vose(scaled: np.ndarray, keep: np.ndarray, alias: np.ndarray) -> None:
    """Vose's construction: each column ``i`` keeps ``keep[i]`` of itself and gives the
    rest to ``alias[i]`` (``scaled``: the weights times count over sum, consumed)."""
    n = len(scaled)
    stack = np.empty(n, np.int64)  # columns below 1 from the front, the others from the back
    below = above = 0
    for i in range(n):
        below, above = _push(stack, i, scaled[i] < 1.0, below, above)
    while below and above:
        below, above = below - 1, above - 1
        s, big = stack[below], stack[n - 1 - above]
        keep[s] = scaled[s]
        alias[s] = big
        scaled[big] += scaled[s] - 1.0
        below, above = _push(stack, big, scaled[big] < 1.0, below, above)


@njit(cache=True)
def _push(stack: np.ndarray, i: int, small: bool, below: int, above: int) -> tuple[int, int]:
    """Column ``i`` onto its end of ``stack``; the new counts."""
    if small:
        stack[below] = i
        return below + 1, above
    stack[len(stack) - 1 - above] = i
    return below, above + 1
