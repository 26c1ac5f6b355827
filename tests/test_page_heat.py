"""Page heat from zipfian object popularity (:mod:`cxlsim.traces.generators.heat`): the
shares sum to one hottest first, one object a page is the Zipf law itself, pages average
their objects, a trace of any size gives a top fraction of its pages the real service's
share, and the alias table draws pages by their heat."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.engine.rng import make_rng
from cxlsim.traces.generators.heat import Alias, page_heat


def _top(heat: np.ndarray, fraction: float) -> float:
    """Share of the accesses the hottest ``fraction`` of the pages take."""
    return float(heat[:round(fraction * heat.size)].sum())


def test_shares_sum_to_one_hottest_first():
    heat = page_heat(200, 5000, 12, 1.28)
    assert heat.size == 200 and heat.sum() == pytest.approx(1, abs=1e-12)
    assert (np.diff(heat) <= 0).all()


def test_alpha_zero_makes_every_page_alike():
    np.testing.assert_array_equal(page_heat(8, 10**9, 12, 0.0), np.full(8, 1 / 8))


def test_one_object_a_page_is_the_zipf_law():
    ranks = np.arange(1, 1001, dtype=np.float64) ** -1.28
    np.testing.assert_allclose(page_heat(1000, 1000, 1, 1.28),
                               ranks / ranks.sum(), rtol=1e-9)


def test_a_top_fraction_takes_the_real_services_share_at_every_size():
    """Pages standing for the same real service (one draw of its objects onto its pages)
    give their hottest 10 % the same share, at 100 or 1000 pages or at the real
    100000."""
    shares = [_top(page_heat(pages, 100_000, 12, 1.28), 0.1)
              for pages in (100, 1000, 100_000)]
    assert shares == pytest.approx([shares[-1]] * 3, abs=1e-12)
    # a smaller real service (fewer objects in the head's long tail) is less skewed
    assert _top(page_heat(100, 1000, 12, 1.28), 0.1) < shares[-1] - 0.05


@settings(max_examples=40, deadline=None)
@given(st.floats(0.1, 3.0), st.integers(1, 32), st.sampled_from([0.01, 0.1, 0.5]),
       st.integers(10, 400))
def test_pages_average_their_objects(alpha, per_page, fraction, pages):
    """A top fraction of the pages holds at least its share of the accesses and at most
    what the same count of the most popular objects would (a page mixes popular and
    unpopular objects)."""
    top = max(1, round(fraction * pages))
    held = page_heat(pages, pages, per_page, alpha)[:top].sum()
    objects = np.arange(1, pages * per_page + 1, dtype=np.float64) ** -alpha
    assert top / pages - 1e-9 <= held <= objects[:top * per_page].sum() / objects.sum() + 1e-9


def test_more_objects_a_page_spread_the_heat():
    one, twelve = (_top(page_heat(2000, 2000, k, 1.28), 0.1) for k in (1, 12))
    assert 0.1 < twelve < one


@pytest.mark.parametrize("args", [(0, 10, 12, 1.0), (10, 10, 0, 1.0), (10, 10, 12, -0.5)])
def test_bad_arguments_are_refused(args):
    with pytest.raises(ValueError, match="need pages >= 1, per_page >= 1, alpha >= 0"):
        page_heat(*args)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50).filter(lambda w: sum(w) > 0),
       st.integers(0, 2**32))
def test_the_alias_table_draws_each_index_by_its_weight(weights, seed):
    w = np.array(weights)
    table = Alias(w)
    assert ((table.keep >= 0) & (table.keep <= 1 + 1e-9)).all()
    # each index's probability: its own column's keep plus what other columns give it
    given = np.bincount(table.alias, weights=1 - table.keep, minlength=w.size)
    np.testing.assert_allclose((table.keep + given) / w.size, w / w.sum(), atol=1e-9)
    drawn = table.draw(make_rng(seed), 20_000)
    assert drawn.dtype == np.int64 and (w[drawn] > 0).all()  # a weight 0 is never drawn


def test_the_alias_table_on_a_skewed_heat():
    heat = page_heat(5000, 5000, 12, 1.28)
    counts = np.bincount(Alias(heat).draw(make_rng(1), 1_000_000), minlength=heat.size)
    assert counts[:50].sum() / 1e6 == pytest.approx(heat[:50].sum(), abs=0.003)
    assert counts[0] / 1e6 == pytest.approx(heat[0], abs=0.003)
