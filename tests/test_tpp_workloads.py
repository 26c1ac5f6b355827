"""The TPP service workloads (web1, cache1, cache2, warehouse) in time: warm pages
re-accessed once per ``reaccess_window``, cold pages left idle, hot pages used in every
``hot_window``, churn replacing hot pages with new ones, and bad combinations refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.cli import main
from cxlsim.engine.rng import make_rng
from cxlsim.errors import InputError
from cxlsim.traces.generators import KINDS
from cxlsim.traces.generators.heat import page_heat
from cxlsim.traces.native import ANON, FILE
from cxlsim.traces.params import parse_params

PAGES = 1024  # footprint 4 MiB of 4 KiB pages: the start is the first PAGES records


def _trace(kind: str, after: int, *params: str, pages: int = PAGES, seed: int = 1):
    """(parameters, item index, page type) of the ``after`` records that follow the start
    of ``kind`` over ``pages`` pages (the real service of the page heat no larger)."""
    size = f"{4 * pages} KiB"
    values = parse_params(KINDS[kind].params, [f"footprint={size}", f"real_footprint={size}",
                                               *params], flag="--param", owner=kind)
    n = pages + after
    stream, parts, done = KINDS[kind].stream(values, make_rng(seed), n), [], 0
    while done < n:
        parts.append(next(stream))
        done += len(parts[-1]["addr"])
    addr = np.concatenate([c["addr"] for c in parts])[:n]
    kind_ = np.concatenate([c["page_type"] for c in parts])[:n]
    index = ((addr - np.uint64(values["base"])) // np.uint64(values["item"])).astype(np.int64)
    assert np.unique(index[:pages]).size == pages  # the start: every page once
    return values, index[pages:], kind_[pages:]


def _sizes(p, pages: int = PAGES):
    """{type: (pages, hot pages, cold pages)} as the model sizes them."""
    n_file = int(round(pages * p["file_share"]))
    out = {}
    for code, size, share in ((ANON, pages - n_file, p["anon_hot"]),
                              (FILE, n_file, p["file_hot"])):
        hot = max(int(round(size * share)), 1)
        out[code] = (size, hot, size - hot)
    return out


def _blocks(after: int, count: int) -> list[slice]:
    """The records after the start cut into ``count`` equal time windows."""
    edges = np.linspace(0, after, count + 1).round().astype(int)
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]


# --- warm pages ------------------------------------------------------------------------------

def test_warm_pages_are_touched_once_per_reaccess_window():
    after = 80_000  # four windows of 20000 records; hot pages: 5 hot_windows in each
    p, page, _ = _trace("web1", after, "span=2400 s")
    counts = np.bincount(page, minlength=PAGES)
    sizes = _sizes(p)
    n_hot = sum(s[1] for s in sizes.values())
    n_warm = sum(int(round(s[2] * p["reaccess"])) for s in sizes.values())
    hot = counts > 8
    assert hot.sum() == n_hot and counts[hot].min() >= 20  # once per hot_window at least
    warm = (counts > 0) & ~hot
    assert warm.sum() == n_warm == 589
    assert (counts[warm] == 4).all()  # four windows: four touches, no more
    per_window = np.stack([np.bincount(page[b], minlength=PAGES)[warm]
                           for b in _blocks(after, 4)])
    assert (per_window == 1).mean() > 0.99  # one in each window, but at the edges
    # each window at a random phase: the warm pages in a new order every window
    is_warm = warm[page]
    order = [page[b][is_warm[b]] for b in _blocks(after, 4)]
    assert not np.array_equal(order[0][:100], order[1][:100])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["web1", "cache1", "cache2", "warehouse"]),
       st.floats(0, 1), st.integers(0, 2**32))
def test_the_cold_pages_never_reaccessed_are_1_minus_reaccess(kind, reaccess, seed):
    pages = 256
    p, page, ptype = _trace(kind, 20_000, f"reaccess={reaccess}", "churn=0", "span=610 s",
                            pages=pages, seed=seed)
    counts = np.bincount(page, minlength=pages)
    for code, (size, hot, cold) in _sizes(p, pages).items():
        of_type = np.zeros(pages, bool)
        of_type[page[ptype == code]] = True
        touched = counts[of_type]
        # hot pages: in every hot_window (5 or 10 in 610 s); warm: once or twice
        assert (touched > 2).sum() == hot
        reaccessed = ((touched > 0) & (touched <= 2)).sum()
        assert reaccessed == int(round(cold * reaccess))
        assert 1 - reaccessed / max(cold, 1) == pytest.approx(1 - reaccess,
                                                              abs=0.5 / max(cold, 1) + 1e-12)


def test_warm_pages_take_reaccess_of_each_type():
    p, page, ptype = _trace("cache1", 40_000, "span=1200 s")
    counts = np.bincount(page, minlength=PAGES)
    for code, (size, hot, cold) in _sizes(p).items():
        touched = np.bincount(page[ptype == code], minlength=PAGES)
        assert ((touched > 0) & (touched <= 3)).sum() == int(round(cold * 0.5))
    assert counts.sum() == 40_000


# --- hot pages -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["web1", "cache1", "cache2", "warehouse"])
def test_without_reaccess_or_churn_only_the_hot_pages_are_used_in_every_hot_window(kind):
    after = 60_000
    p, page, ptype = _trace(kind, after, "reaccess=0", "churn=0", "anon_churn=0")
    sizes = _sizes(p)
    assert page.max() < PAGES  # nothing allocated after the footprint
    for code, (_, hot, _) in sizes.items():
        assert np.unique(page[ptype == code]).size == hot
    n_hot = sum(s[1] for s in sizes.values())
    windows = round(p["span"] / p["hot_window"])  # 5, cache2 10
    for block in _blocks(after, windows):
        assert np.unique(page[block]).size >= n_hot - 1  # all, but at an edge
    # the file share of the accesses: the hot pages' share (anon_ops 'pages'), else the
    # rest of anon_ops (Cache2's identified default), but for the round of every hot page
    # each hot_window, which is dealt by pages (within 2 points here)
    if p["anon_ops"] is None:
        assert (ptype == FILE).mean() == pytest.approx(sizes[FILE][1] / n_hot, abs=0.01)
    else:
        assert (ptype == FILE).mean() == pytest.approx(1 - p["anon_ops"], abs=0.02)


def test_hot_window_sets_how_often_every_hot_page_is_used():
    after = 60_000
    for hot_window, least in (("600 s", 1), ("60 s", 10)):
        _, page, _ = _trace("cache1", after, "reaccess=0", f"hot_window={hot_window}")
        counts = np.bincount(page)
        assert counts[counts > 0].min() >= least


# --- page heat -----------------------------------------------------------------------------

def _hot_counts(kind: str, *params: str, pages: int = PAGES):
    """{type: accesses of each of its hot pages, hottest first} after the start (no warm
    pages)."""
    p, page, ptype = _trace(kind, 200 * pages, "reaccess=0", *params, pages=pages)
    counts = {}
    for code in (ANON, FILE):
        c = np.bincount(page[ptype == code], minlength=pages)
        counts[code] = np.sort(c[c > 0])[::-1]
    return p, counts


def _top(counts: np.ndarray, fraction: float) -> float:
    return float(counts[:round(fraction * counts.size)].sum() / counts.sum())


@pytest.mark.parametrize("kind", ["cache1", "web1"])
def test_each_types_hot_records_follow_its_page_heat(kind):
    """The hottest 10 % of each type's hot pages take the share page_heat gives them
    (within the records' spread), and each type keeps its share of the hot records."""
    p, counts = _hot_counts(kind, pages=4096)
    per_page = 4096 // 321  # item // object_size
    for code, alpha in ((ANON, "anon_alpha"), (FILE, "file_alpha")):
        heat = page_heat(counts[code].size, counts[code].size, per_page, p[alpha])
        assert _top(counts[code], 0.1) == pytest.approx(float(heat[:round(
            0.1 * heat.size)].sum()), abs=0.05)
        assert _top(counts[code], 0.1) > 0.5  # skewed: far above the uniform 10 %
    hot = {code: c.size for code, c in counts.items()}
    share = counts[FILE].sum() / (counts[FILE].sum() + counts[ANON].sum())
    assert share == pytest.approx(hot[FILE] / (hot[FILE] + hot[ANON]), abs=0.01)


def test_alpha_zero_makes_every_hot_page_alike():
    _, counts = _hot_counts("cache1", "anon_alpha=0", "file_alpha=0")
    both = np.concatenate(list(counts.values()))
    assert both.max() < 1.5 * both.mean() and both.min() > 0.5 * both.mean()
    assert _top(both, 0.1) == pytest.approx(0.1, abs=0.02)


def test_every_hot_page_is_still_used_in_every_hot_window():
    """The heat adds to the rounds: even the coldest hot page is in each hot_window."""
    after = 60_000
    p, page, _ = _trace("cache1", after, "reaccess=0", "anon_alpha=2.5", "file_alpha=2.5")
    for block in _blocks(after, round(p["span"] / p["hot_window"])):
        assert np.unique(page[block]).size >= sum(s[1] for s in _sizes(p).values()) - 1


def test_a_trace_of_any_footprint_has_the_real_services_heat():
    """Traces of 4 and 16 MiB standing for the same 64 MiB service: the hottest 1-50 %
    of their hot pages take the same shares (the similarity law's pages of like heat)."""
    shares = []
    for pages in (1024, 4096):
        values = parse_params(KINDS["cache1"].params, [
            f"footprint={4 * pages} KiB", "real_footprint=64 MiB", "reaccess=0"],
            flag="--param", owner="cache1")
        stream, n, parts = KINDS["cache1"].stream(values, make_rng(1), 300 * pages), 0, []
        while n < 300 * pages:
            parts.append(next(stream)["addr"])
            n += parts[-1].size
        addr = np.concatenate(parts)[pages:300 * pages]  # after the start
        counts = np.sort(np.bincount((addr >> np.uint64(12)).astype(np.int64)))[::-1]
        counts = counts[counts > 0]
        shares.append([_top(counts, f) for f in (0.01, 0.05, 0.1, 0.2, 0.5)])
    np.testing.assert_allclose(shares[0], shares[1], atol=0.03)


@pytest.mark.parametrize("params, message", [
    (["object_size=0 B"], r"^--param: object_size must be at least 1 B$"),
    (["file_alpha=-1"], r"file_alpha=-1: expected a number in \[0, 10\]; found '-1'$"),
])
def test_bad_heat_parameters_are_one_line(params, message):
    with pytest.raises(InputError, match=message):
        _trace("cache1", 5000, *params)


# --- churn ---------------------------------------------------------------------------------

@pytest.mark.parametrize("churn", [0.25, 0.8, 1.0])
def test_churn_replaces_its_share_of_the_hot_file_pages_each_window(churn):
    after, windows = 80_000, 4
    p, page, ptype = _trace("warehouse", after, f"churn={churn}", "file_hot=0.5",
                            "hot_window=30 s", f"span={600 * windows} s")
    hot_file = _sizes(p)[FILE][1]
    per_window = int(round(churn * hot_file))
    new = page >= PAGES
    fresh = np.unique(page[new])
    # new pages: addresses right after the footprint, in order, file pages
    assert fresh.size in (per_window * windows, per_window * windows - 1)
    assert np.array_equal(fresh, PAGES + np.arange(fresh.size))
    assert (ptype[new] == FILE).all()
    first = np.unique(page, return_index=True)
    appear = first[1][first[0] >= PAGES]
    assert np.all(np.diff(appear) > 0)  # first touched when they appear, one by one
    blocks = _blocks(after, windows)
    # each window: its share of new pages, and as many hot file pages go idle
    last = np.zeros(page.max() + 1, int)
    last[page] = np.arange(after)
    files = np.unique(page[ptype == FILE])
    for j, block in enumerate(blocks):
        born = ((appear >= block.start) & (appear < block.stop)).sum()
        assert abs(born - per_window) <= 1
        if j < windows - 1:  # pages retired in the last window look alive at the end
            idle = ((last[files] >= block.start) & (last[files] < block.stop)).sum()
            assert abs(idle - per_window) <= max(3, per_window // 5)
    # the hot file set keeps its size: the pages used in the last hot_window
    tail = slice(after - after * 30 // (600 * windows), after)
    assert abs(np.unique(page[tail][ptype[tail] == FILE]).size - hot_file) <= per_window // 10 + 2


def test_anon_churn_replaces_hot_anon_pages():
    p, page, ptype = _trace("web1", 40_000, "reaccess=0", "anon_churn=0.5", "span=1200 s")
    new = page >= PAGES
    assert (ptype[new] == ANON).all()
    assert np.unique(page[new]).size in (2 * round(0.5 * _sizes(p)[ANON][1]) - k
                                         for k in (0, 1))


def test_without_churn_the_default_services_stay_in_the_footprint():
    for kind in ("web1", "cache1", "cache2"):
        _, page, _ = _trace(kind, 30_000)
        assert page.max() < PAGES


def test_the_warehouse_grows_by_its_churned_hot_file_pages():
    p, page, _ = _trace("warehouse", 100_000, "span=3000 s")  # five windows
    per_window = int(round(0.8 * _sizes(p)[FILE][1]))          # 0.8 of 8 hot file pages
    assert page.max() + 1 - PAGES in (5 * per_window, 5 * per_window - 1)


# --- bad combinations ------------------------------------------------------------------------

@pytest.mark.parametrize("params, message", [
    (["reaccess_window=120 s"],
     r"^--param: reaccess_window \(120 s\) must be longer than hot_window \(120 s\): a page "
     r"re-accessed once per reaccess_window would be hot$"),
    (["span=0 s"], r"^--param: span must be longer than 0 s$"),
    (["hot_window=0"], r"^--param: hot_window must be longer than 0 s$"),
    (["span=6000 s"],
     r"^--param: 589 warm and 0 churned pages a reaccess_window \(600 s\) need more than "
     r"its 500 records \(5000 records after the start stand for span 6000 s\): raise n, "
     r"lengthen span or lower reaccess or churn$"),
    (["reaccess=0", "churn=1", "anon_churn=1", "base=0xFFFFFFFFFFC00000"],
     r"^--param: footprint plus the pages churn allocates over span \(4 KiB x \d+\) must "
     r"stay below 2\^64 from base$"),
])
def test_bad_combinations_are_one_line(params, message):
    with pytest.raises(InputError, match=message) as err:
        _trace("web1", 5000, *params)
    assert "\n" not in str(err.value)


def test_reaccess_window_may_equal_hot_window_without_warm_pages():
    _trace("web1", 5000, "reaccess=0", "reaccess_window=120 s")


def test_the_cli_reports_a_bad_combination_on_one_line(tmp_path, capsys):
    argv = ["trace", "gen", "cache2", "--n", "30000", "--param", "footprint=4 MiB",
            "--param", "span=-1 s", str(tmp_path / "t.arrow")]
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1
    argv[-2] = "reaccess_window=30 s"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be longer than hot_window (60 s)" in err
