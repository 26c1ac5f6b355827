"""Pointer chase and sequential read over a block (cxlsim.apps.pointer_chase)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.apps.pointer_chase import BLOCK_VA, chase_lap, pointer_chase, sequential_read
from test_memory_hierarchy import TOY

KiB = 1024


@settings(max_examples=30, deadline=None)
@given(lines=st.integers(1, 5000), seed=st.integers(0, 2**32 - 1))
def test_a_lap_touches_every_line_of_the_block_once(lines, seed):
    lap = chase_lap(lines * 64, 64, np.random.default_rng(seed))
    assert sorted(((lap - BLOCK_VA) // 64).tolist()) == list(range(lines))
    assert ((lap - BLOCK_VA) % 64 == 0).all()


def test_the_cycle_visits_lines_in_random_order():
    lap = chase_lap(64 * KiB, 64, np.random.default_rng(1))
    assert (np.diff(lap) != 64).mean() > 0.99


@pytest.mark.parametrize("block, level, ns", [(256, "L1D", 2), (1 * KiB, "L2", 5),
                                              (4 * KiB, "L3", 11)])
def test_a_block_that_fits_a_level_runs_at_its_latency(block, level, ns):
    run = pointer_chase(TOY, block, 2**21, rng=np.random.default_rng(1))
    assert run.ns_per_load == ns and run.stats.walks == 0
    assert run.bytes_per_s == pytest.approx(64 / ns * 1e9)


def test_a_block_beyond_the_caches_runs_at_memory_latency():
    run = pointer_chase(TOY, 64 * KiB, 2**21, rng=np.random.default_rng(1))
    assert run.ns_per_load == 50 and run.stats.memory.tolist() == [run.stats.accesses]


def test_loads_measure_part_of_a_lap_or_more_than_one():
    rng = np.random.default_rng(1)
    assert pointer_chase(TOY, 4 * KiB, rng=rng, loads=10).stats.accesses == 10
    assert pointer_chase(TOY, 4 * KiB, rng=rng, loads=1000).stats.accesses == 1000


def test_sequential_read_overlaps_mlp_loads():
    run = sequential_read(TOY, 64 * KiB, 2**21)
    assert run.ns_per_load == pytest.approx(50 / TOY.mlp)
    assert run.bytes_per_s == pytest.approx(64 * TOY.mlp / 50 * 1e9)


def test_sequential_read_walks_once_per_page_beyond_tlb_reach():
    # 64 pages of 4 KiB, the L2 DTLB holds 16: every page walks once per lap.
    run = sequential_read(TOY, 64 * 4 * KiB, 4096)
    assert run.stats.walks == 64 and run.stats.accesses == 64 * 64


def test_the_block_must_be_whole_lines():
    with pytest.raises(ValueError, match="must be a whole number of 64 B lines, got 100 B"):
        pointer_chase(TOY, 100, rng=np.random.default_rng(1))
