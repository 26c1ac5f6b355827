"""Per-run random number generators.

Every run owns exactly one :class:`numpy.random.Generator`; nothing in cxlsim may use
a global RNG. Seeding from ``(seed, point)`` through a :class:`numpy.random.SeedSequence`
spawn key gives each sweep point its own statistically independent stream while the
whole sweep stays reproducible from one experiment seed.
"""

from __future__ import annotations

import numpy as np


def make_rng(seed: int, point: int = 0) -> np.random.Generator:
    """Return the generator for sweep point ``point`` of the experiment seeded ``seed``.

    The same ``(seed, point)`` always yields the same stream, bit for bit.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(point,)))
