"""Tests for the statistics monitors and registry."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cxlsim.engine import Counter, Level, StatsRegistry, Tally

# no subnormals: numpy.histogram cannot split a range as narrow as 5e-324 into bins
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False,
                   allow_subnormal=False)


@given(st.lists(finite, min_size=1, max_size=200), st.floats(min_value=0, max_value=100))
def test_tally_matches_numpy(values, q):
    t = Tally()
    for v in values:
        t.record(v, 0.0)
    a = np.array(values)
    assert t.count == len(values)
    assert t.mean == pytest.approx(a.mean(), rel=1e-9, abs=1e-6)
    assert t.std == pytest.approx(a.std(), rel=1e-9, abs=1e-6)
    assert t.min == a.min() and t.max == a.max()
    assert t.percentile(q) == pytest.approx(np.percentile(a, q), rel=1e-9, abs=1e-6)
    s = t.summary()
    assert list(s) == ["count", "mean", "std", "min", "p50", "p95", "p99", "max"]
    assert s["p95"] == pytest.approx(np.percentile(a, 95), rel=1e-9, abs=1e-6)
    counts, edges = t.histogram(bins=5)
    ref_counts, ref_edges = np.histogram(a, bins=5)
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_array_equal(edges, ref_edges)


def test_tally_warmup_excludes_early_samples():
    t = Tally(warmup=100.0)
    for now, v in [(0.0, 1e9), (99.9, 1e9), (100.0, 1.0), (150.0, 3.0)]:
        t.record(v, now)
    assert t.count == 2
    assert t.mean == 2.0
    assert t.max == 3.0


def test_empty_tally_is_nan():
    t = Tally()
    assert t.count == 0
    assert math.isnan(t.mean) and math.isnan(t.percentile(50))
    s = t.summary()
    assert s["count"] == 0 and all(math.isnan(v) for k, v in s.items() if k != "count")


def test_percentile_range_checked():
    with pytest.raises(ValueError):
        Tally().percentile(101)
    with pytest.raises(ValueError):
        Level().percentile(-1, 0.0)


def test_level_hand_computed():
    # 0 on [0,10), 4 on [10,15), 2 on [15,30): mean = (0*10 + 4*5 + 2*15) / 30 = 50/30
    lv = Level()
    lv.set(0, 0.0)
    lv.set(4, 10.0)
    lv.set(2, 15.0)
    assert lv.mean(30.0) == pytest.approx(50 / 30)
    assert lv.max(30.0) == 4
    assert lv.percentile(50, 30.0) == 2      # 0 held 1/3, 2 held 1/2 -> median is 2
    assert lv.percentile(30, 30.0) == 0
    assert lv.percentile(100, 30.0) == 4
    assert lv.value == 2


def test_level_warmup_window():
    # window is [max(warmup=12, first set=0), 30]: 4 on [12,15), 2 on [15,30)
    lv = Level(warmup=12.0)
    lv.set(100, 0.0)     # before warm-up, replaced before it ends: never counts
    lv.set(0, 1.0)
    lv.set(4, 10.0)
    lv.set(2, 15.0)
    assert lv.mean(30.0) == pytest.approx((4 * 3 + 2 * 15) / 18)
    assert lv.max(30.0) == 4


def test_level_window_starts_at_first_sample():
    lv = Level(warmup=5.0)
    lv.set(3, 20.0)
    lv.add(-2, 30.0)
    assert lv.mean(40.0) == pytest.approx(2.0)   # 3 on [20,30), 1 on [30,40)
    assert math.isnan(Level().mean(10.0))         # never set
    early = Level(warmup=50.0)
    early.set(1, 0.0)
    assert math.isnan(early.mean(40.0))           # window not started yet
    assert math.isnan(early.max(40.0))


def test_level_instantaneous_peak_counts_for_max_only():
    lv = Level()
    lv.set(1, 0.0)
    lv.set(9, 5.0)
    lv.set(1, 5.0)       # 9 held for zero time
    assert lv.max(10.0) == 9
    assert lv.mean(10.0) == pytest.approx(1.0)
    assert lv.percentile(100, 10.0) == 1


def test_level_rejects_time_going_backwards():
    lv = Level()
    lv.set(1, 10.0)
    with pytest.raises(ValueError):
        lv.set(2, 5.0)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(-20, 20)), min_size=1, max_size=40),
       st.integers(0, 500), st.integers(0, 100), st.integers(0, 100))
def test_level_matches_step_function(steps, warmup, tail, q):
    """Integer step function: expand to one sample per ns and compare with numpy."""
    lv = Level(warmup=float(warmup))
    starts, now, peak = [], 0, -math.inf
    for i, (dt, value) in enumerate(steps):
        now += dt if i else 0
        starts.append(now)
        lv.set(value, float(now))
        if now >= warmup:
            peak = max(peak, value)
    end = now + tail
    expanded = []
    for (_, value), lo, hi in zip(steps, starts, starts[1:] + [end]):
        held = hi - max(lo, warmup)
        if held > 0:
            expanded.extend([value] * held)
            peak = max(peak, value)
    if not expanded:
        assert math.isnan(lv.mean(float(end)))
        assert math.isnan(lv.percentile(q, float(end)))
        return
    a = np.array(expanded, dtype=float)
    assert lv.mean(float(end)) == pytest.approx(a.mean(), rel=1e-12, abs=1e-12)
    assert lv.percentile(q, float(end)) == np.percentile(a, q, method="inverted_cdf")
    assert lv.max(float(end)) == peak


def test_counter():
    c = Counter(warmup=10.0)
    c.add()
    c.add(4)
    assert c.value == 5
    assert c.summary(20.0) == {"value": 5.0, "rate": 0.5}


def test_registry_create_or_get_and_kind_clash():
    reg = StatsRegistry(warmup=5.0)
    assert reg.warmup == 5.0
    t = reg.tally("host0.link.latency")
    assert reg.tally("host0.link.latency") is t
    assert "host0.link.latency" in reg and len(reg) == 1
    with pytest.raises(TypeError, match="tally"):
        reg.counter("host0.link.latency")
    with pytest.raises(TypeError):
        reg.level("host0.link.latency")
    for bad in ["", "a..b", ".a", "a."]:
        with pytest.raises(ValueError):
            reg.counter(bad)
    with pytest.raises(ValueError):
        StatsRegistry(warmup=-1)


def test_registry_warmup_applies_to_all_and_end_warmup_zeroes_counters():
    reg = StatsRegistry(warmup=10.0)
    reg.tally("t").record(1.0, 5.0)
    reg.level("l").set(7, 0.0)
    reg.counter("c").add(3)
    reg.end_warmup()
    reg.counter("c").add(2)
    assert reg.tally("t").count == 0
    assert reg.level("l").mean(20.0) == 7
    assert reg.counter("c").value == 2


def test_registry_to_dict_and_frame():
    reg = StatsRegistry()
    reg.counter("a.reads").add(10)
    for v in (1.0, 2.0, 3.0):
        reg.tally("a.lat").record(v, 0.0)
    reg.level("a.q").set(2, 0.0)
    d = reg.to_dict(10.0)
    assert d["a.reads.value"] == 10 and d["a.reads.rate"] == 1.0
    assert d["a.lat.mean"] == 2.0 and d["a.lat.count"] == 3
    assert d["a.q.mean"] == 2.0 and d["a.q.p99"] == 2
    df = reg.to_frame(10.0)
    assert list(df.columns) == ["name", "kind", "stat", "value"]
    assert set(df["kind"]) == {"counter", "tally", "level"}
    assert len(df) == len(d)
    flat = {f"{r.name}.{r.stat}": r.value for r in df.itertuples()}
    assert flat == d
    empty = StatsRegistry().to_frame(0.0)
    assert isinstance(empty, pd.DataFrame) and list(empty.columns) == list(df.columns)


# --- streaming tallies --------------------------------------------------------------------

from cxlsim.engine.stats import BLOCK, RESOLUTION, StreamingTally  # noqa: E402


@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_subnormal=False),
                min_size=1, max_size=300), st.integers(1, 4))
def test_a_streaming_tally_summarises_like_a_kept_one(values, repeat):
    """Folded block by block (a tiny block here), the count, mean, std, min and max are
    the exact ones up to rounding, and percentiles are within one bin of them."""
    import cxlsim.engine.stats as stats

    data = np.array(values * repeat)
    kept, streamed = Tally(), StreamingTally()
    old = stats.BLOCK
    stats.BLOCK = 7  # fold often
    try:
        for v in data:
            kept.record(float(v), 0.0)
            streamed.record(float(v), 0.0)
    finally:
        stats.BLOCK = old
    assert streamed.count == kept.count == data.size
    assert streamed.mean == pytest.approx(kept.mean, rel=1e-9, abs=1e-9)
    assert streamed.std == pytest.approx(kept.std, rel=1e-6, abs=1e-6)
    assert (streamed.min, streamed.max) == (kept.min, kept.max)
    for q in (0, 50, 95, 99, 100):
        if data.size < 7:  # nothing folded yet: exact, numpy's interpolation
            assert streamed.percentile(q) == kept.percentile(q)
        else:  # the bin of the sample at the rank is reported
            exact = np.percentile(data, q, method="lower")
            assert abs(streamed.percentile(q) - exact) <= RESOLUTION * exact


def test_a_streaming_tally_holds_at_most_a_block():
    t = StreamingTally()
    rng = np.random.default_rng(1)
    for v in rng.exponential(10.0, 3 * BLOCK + 5):
        t.record(float(v), 0.0)
    assert len(t._values) < BLOCK and t.count == 3 * BLOCK + 5
    assert t.percentile(50) == pytest.approx(10.0 * math.log(2), rel=0.02)
    with pytest.raises(RuntimeError, match="keeps no samples"):
        t.values()


def test_keep_samples_false_makes_streaming_tallies():
    assert isinstance(StatsRegistry(keep_samples=False).tally("a.b"), StreamingTally)
    assert type(StatsRegistry().tally("a.b")) is Tally


@given(st.lists(st.tuples(st.floats(0, 1e3), st.floats(0, 100)), max_size=60),
       st.floats(0, 100), st.integers(1, 5), st.booleans())
def test_record_many_is_record_in_turn(samples, warmup, block, streaming):
    """A streamed source's bulk recording keeps the same samples, and a streaming tally
    folds at the same sample counts, as recording them one by one."""
    import cxlsim.engine.stats as stats

    values = np.array([v for v, _ in samples], float)
    times = np.array([t for _, t in samples], float)
    cls = StreamingTally if streaming else Tally
    one, bulk = cls(warmup), cls(warmup)
    old = stats.BLOCK
    stats.BLOCK = block
    try:
        for v, t in samples:
            one.record(v, t)
        bulk.record_many(values[: len(values) // 2], times[: len(values) // 2])
        bulk.record_many(values[len(values) // 2:], times[len(values) // 2:])
    finally:
        stats.BLOCK = old
    assert one.count == bulk.count
    assert list(one._values) == list(bulk._values)
    if streaming:
        assert one._summed() == bulk._summed() or one.count == 0
        assert one._bins == bulk._bins
