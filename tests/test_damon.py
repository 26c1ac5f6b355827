"""The DAMON-style monitor: sampled regions find the hot range; merge and split keep the
region count within bounds; age counts stable aggregations."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.mm.damon import Damon, DamonParams


def _monitor(pages=10_000, hot=(2000, 3000), aggregations=6, seed=1):
    rng = np.random.default_rng(seed)
    d = Damon(pages, DamonParams(), rng)
    for _ in range(aggregations):
        for _ in range(21):
            d.sample()
            d.access(np.arange(*hot))
            d.access(rng.integers(0, pages, 50))
        regions = np.array(d.aggregate())
    return regions


def test_the_hot_range_stands_out_and_ages():
    r = _monitor()
    inside = (r[:, 0] >= 2000) & (r[:, 1] <= 3000)
    outside = (r[:, 1] <= 2000) | (r[:, 0] >= 3000)
    assert r[inside, 2].min() == 20 and r[outside, 2].mean() < 1
    assert r[:, 3].max() >= 3  # a stable pattern keeps its regions' age growing


@settings(max_examples=30, deadline=None)
@given(pages=st.integers(1, 50_000), seed=st.integers(0, 100))
def test_regions_tile_the_space_within_the_bounds(pages, seed):
    r = _monitor(pages, (0, max(pages // 7, 1)), aggregations=4, seed=seed)
    assert r[0, 0] == 0 and r[-1, 1] == pages
    assert np.all(r[1:, 0] == r[:-1, 1]) and np.all(r[:, 1] > r[:, 0])
    assert len(r) <= 1000
    # a merged region stays within a tenth (1/min_regions) of the space
    assert (r[:, 1] - r[:, 0]).max() <= -(-pages // 10)


def test_uniform_access_keeps_regions_small_and_counts_every_sample():
    """No region swallows the space (kdamond_merge_regions' size limit), and with pages
    picked right after each aggregation its first sample counts too."""
    rng = np.random.default_rng(3)
    d = Damon(100_000, DamonParams(), rng)
    for _ in range(6):
        for _ in range(20):
            d.access(np.arange(100_000))
            d.sample()
        r = np.array(d.aggregate())
    assert (r[:, 1] - r[:, 0]).max() <= 10_000
    assert r[:, 2].max() == 20


def test_no_split_above_half_the_maximum_regions():
    d = Damon(10_000, DamonParams(max_regions=30), np.random.default_rng(0))
    counts = []
    for _ in range(6):
        d.sample()
        d.aggregate()
        counts.append(d.start.size)
    assert max(counts) <= 30 and counts[-1] > 15 and counts[-1] <= 2 * 15
