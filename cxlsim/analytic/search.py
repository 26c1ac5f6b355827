"""The least whole number at which a monotone predicate turns true (crossover sizes)."""

from __future__ import annotations

from collections.abc import Callable


def least_true(pred: Callable[[int], bool], lo: int = 0, hi: int = 1,
               limit: int = 2**62) -> int:
    """Smallest n > ``lo`` with ``pred(n)``, for ``pred`` false up to a point and true from
    it on, and false at ``lo`` (or ``lo`` 0: nothing below 1). ``hi`` is a first guess,
    doubled until true (ValueError past ``limit``); then bisection on whole numbers."""
    while not pred(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            raise ValueError(f"the predicate is false up to {limit:,}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi
