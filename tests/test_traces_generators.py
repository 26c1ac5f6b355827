"""Synthetic generators: reproducible, shaped as their parameters say, YCSB's formulas."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.errors import InputError
from cxlsim.traces.generators import KINDS, generate, trace_bytes
from cxlsim.traces.generators.base import CHUNK
from cxlsim.traces.generators.zipf import (
    SCRAMBLED_ZETAN, ScrambledZipfian, Zipfian, fnv64, zeta)
from cxlsim.traces.native import ANON, FIELD, FILE, READ, REQUIRED, WRITE, open_trace

SMALL = ["footprint=4 MiB"]  # 1024 pages: quick to shuffle and to count


def gen(tmp_path, kind: str, n: int, *params: str, seed: int = 1):
    """The columns and metadata of a generated trace."""
    path = generate(kind, n, seed, tmp_path / f"{kind}-{seed}.arrow", params)
    trace = open_trace(path)
    return trace.read(), trace.meta


def _small(kind: str) -> list[str]:
    if kind in ("kv", "gups"):
        return []
    if kind == "redis":  # the run phase starts at settle + 2 keys = 900
        return ["keys=200", "settle=500", "cold=256 KiB"]
    if "real_footprint" in KINDS[kind].params:  # the page heat of a service no larger
        return SMALL + ["real_footprint=4 MiB"]
    return SMALL + (["file_size=64 KiB"] if kind == "file-warmup" else [])


@pytest.mark.parametrize("kind", list(KINDS))
def test_same_seed_same_trace_and_common_columns(tmp_path, kind):
    params = [*_small(kind), "threads=3", "interval=2.5 ns"]
    a, meta = gen(tmp_path, kind, 5000, *params)
    b, _ = gen(tmp_path, kind, 5000, *params)  # written again over the first
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert len(a["addr"]) == 5000
    assert a["time"].tolist() == [int(i * 2.5) for i in range(5000)]
    assert a["thread"].tolist() == [i % 3 for i in range(5000)]
    assert meta.clock == "ns" and meta.source.startswith(f"gen {kind} --n=5000 --seed=1")
    assert meta.regions == dict(KINDS[kind].regions)


@pytest.mark.parametrize("kind, n", [*((k, 5000) for k in KINDS), ("uniform", 2 * CHUNK + 1)])
def test_a_generated_file_takes_at_most_what_trace_bytes_says(tmp_path, kind, n):
    """The columns a generator declares are those it writes, and their bytes a record
    with a few kB of the format's own are the file's size (what the room check asks)."""
    path = generate(kind, n, 1, tmp_path / "t.arrow", _small(kind))
    fields = open_trace(path).fields
    assert set(fields) == {*REQUIRED, *KINDS[kind].columns}
    values = n * sum(FIELD[f].dtype.itemsize for f in fields)
    assert values < path.stat().st_size <= trace_bytes(kind, n) < values + 8192


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in ("sequential", "stream")])
def test_other_seed_other_trace(tmp_path, kind):
    a, _ = gen(tmp_path, kind, 2000, *_small(kind), seed=1)
    b, _ = gen(tmp_path, kind, 2000, *_small(kind), seed=2)
    assert not np.array_equal(a["addr"], b["addr"])


@pytest.mark.parametrize("kind", ["uniform", "zipfian", "hotspot", "phases", "pointer-chase"])
def test_addresses_stay_in_the_footprint(tmp_path, kind):
    cols, _ = gen(tmp_path, kind, 20000, "footprint=1 MiB", "base=0x1000000", "size=8 B")
    assert cols["addr"].min() >= 0x1000000 and cols["addr"].max() + 8 <= 0x1000000 + (1 << 20)
    assert (cols["addr"] % 8 == 0).all() and (cols["size"] == 8).all()


def test_read_ratio(tmp_path):
    cols, _ = gen(tmp_path, "uniform", 50000, *SMALL, "read_ratio=0.3")
    assert abs(np.mean(cols["op"] == READ) - 0.3) < 0.01


# --- YCSB zipfian -----------------------------------------------------------------------

def test_zeta_matches_ycsb_precomputed_constant():
    assert zeta(10**10, 0.99) == pytest.approx(SCRAMBLED_ZETAN, rel=1e-11)
    exact = float(np.sum(np.arange(1, 20_000_001, dtype=np.float64) ** -0.5))
    assert zeta(20_000_000, 0.5) == pytest.approx(exact, rel=1e-12)  # tail formula


def test_zipfian_head_probabilities():
    """YCSB returns item 0 when u*zeta(n) < 1 and item 1 below 1 + 0.5^theta."""
    z = Zipfian(1000, 0.99)
    draws = z.draw(np.random.default_rng(5).random(400_000))
    assert np.mean(draws == 0) == pytest.approx(1 / zeta(1000, 0.99), abs=0.003)
    assert np.mean(draws == 1) == pytest.approx(0.5 ** 0.99 / zeta(1000, 0.99), abs=0.003)
    assert draws.min() == 0 and draws.max() < 1000


def test_zipfian_formula_at_chosen_points():
    z = Zipfian(100, 0.8)
    u = np.array([0.0, 0.5 / z.zetan, 1.2 / z.zetan, 0.9])
    expected = int(100 * (z.eta * 0.9 - z.eta + 1) ** (1 / 0.2))
    assert z.draw(u).tolist() == [0, 0, 1, expected]


def test_fnv64_is_ycsbs():
    def java(val: int) -> int:
        h = 0xCBF29CE484222325
        for _ in range(8):
            h = ((h ^ (val & 0xFF)) * 1099511628211) % 2**64
            val >>= 8
        return abs(h - 2**64 if h >= 2**63 else h)

    values = np.array([0, 1, 255, 12345, 10**10, 2**40 + 7], np.int64)
    assert fnv64(values).tolist() == [java(int(v)) for v in values]


def test_scrambled_zipfian_scatters_the_hot_items():
    draws = ScrambledZipfian(1000).draw(np.random.default_rng(3).random(200_000))
    counts = np.bincount(draws, minlength=1000)
    # The hottest item keeps YCSB's 1/zeta(10^10) share but sits elsewhere than item 0.
    assert counts.argmax() != 0
    assert counts.max() / len(draws) == pytest.approx(1 / SCRAMBLED_ZETAN, abs=0.003)
    hottest = np.argsort(counts)[::-1][:10]
    assert hottest.max() - hottest.min() > 100  # not clustered


def test_zipfian_trace_is_skewed(tmp_path):
    cols, _ = gen(tmp_path, "zipfian", 50000, *SMALL, "item=4 KiB")
    pages = np.bincount((cols["addr"] - np.uint64(0x100000000)) // np.uint64(4096))
    assert pages.argmax() == 0 and pages[0] / 50000 == pytest.approx(1 / zeta(1024, 0.99),
                                                                     abs=0.01)


# --- hot sets ---------------------------------------------------------------------------

def _page(cols, base=0x100000000):
    return ((cols["addr"] - np.uint64(base)) // np.uint64(4096)).astype(np.int64)


def test_hotspot_share(tmp_path):
    cols, _ = gen(tmp_path, "hotspot", 50000, *SMALL, "hot_fraction=0.1", "hot_ops=0.7")
    assert np.mean(_page(cols) < 102) == pytest.approx(0.7, abs=0.01)


def test_phases_move_the_hot_set(tmp_path):
    cols, _ = gen(tmp_path, "phases", 40000, *SMALL, "phases=4", "hot_fraction=0.1",
                  "hot_ops=1", "shift=0.25")
    page = _page(cols)
    for phase in range(4):
        part = page[phase * 10000:(phase + 1) * 10000]
        assert part.min() >= phase * 256 and part.max() < phase * 256 + 102


# --- patterns ---------------------------------------------------------------------------

def test_sequential_stride_wraps(tmp_path):
    cols, _ = gen(tmp_path, "sequential", 10, "footprint=256 B", "stride=64 B", "base=0")
    assert cols["addr"].tolist() == [0, 64, 128, 192] * 2 + [0, 64]
    assert (cols["op"] == READ).all()


def test_stream_triad(tmp_path):
    cols, meta = gen(tmp_path, "stream", 9, "footprint=3 KiB", "size=64 B", "base=0")
    lines = 1024 // 64
    b, c, a = lines * 64, 2 * lines * 64, 0
    assert cols["addr"].tolist() == [b, c, a, b + 64, c + 64, a + 64, b + 128, c + 128,
                                     a + 128]
    assert cols["op"].tolist() == [READ, READ, WRITE] * 3
    assert cols["region"].tolist() == [1, 2, 0] * 3 and meta.regions == {0: "a", 1: "b", 2: "c"}


def test_gups_hot_region_and_updates(tmp_path):
    cols, _ = gen(tmp_path, "gups", 40000, "footprint=72 MiB", "hot=20 MiB", "base=0")
    assert (cols["addr"][0::2] == cols["addr"][1::2]).all()  # read then write the element
    assert cols["op"][:4].tolist() == [READ, WRITE, READ, WRITE]
    hot = cols["addr"] >= (52 << 20)
    assert hot.mean() == pytest.approx(0.9, abs=0.01)
    assert (cols["region"] == hot).all() and (cols["size"] == 8).all()


def test_pointer_chase_visits_every_node_once_per_round(tmp_path):
    cols, _ = gen(tmp_path, "pointer-chase", 2048, "footprint=64 KiB", "item=64 B", "base=0")
    first, second = cols["addr"][:1024], cols["addr"][1024:]
    assert sorted(first.tolist()) == list(range(0, 65536, 64))
    np.testing.assert_array_equal(first, second)
    assert (cols["op"] == READ).all()


def test_pointer_chase_too_many_nodes(tmp_path):
    with pytest.raises(InputError, match="too many to shuffle"):
        generate("pointer-chase", 1, 0, tmp_path / "p.arrow", ["footprint=1 TiB"])


# --- key-value store --------------------------------------------------------------------

@pytest.mark.parametrize("workload, log_share, write_share", [
    ("A", 0.5 / (0.5 * 2 + 0.5 * 3), 1.0 / 2.5),   # update: value and log written
    ("B", 0.05 / (0.95 * 2 + 0.05 * 3), 0.1 / 2.05),
    ("C", 0.0, 0.0),
    ("F", 0.5 / (0.5 * 2 + 0.5 * 4), 1.0 / 3.0),   # read-modify-write
])
def test_kv_workload_mixes(tmp_path, workload, log_share, write_share):
    cols, meta = gen(tmp_path, "kv", 60000, f"workload={workload}", "keys=10000")
    log = cols["region"] == 2
    assert log.mean() == pytest.approx(log_share, abs=0.01)
    assert (cols["op"] == WRITE).mean() == pytest.approx(write_share, abs=0.01)
    assert (cols["page_type"][log] == FILE).all() and (cols["page_type"][~log] == ANON).all()
    assert meta.regions == {0: "index", 1: "values", 2: "log"}


def test_kv_inserts_grow_the_key_space_and_latest_reads_them(tmp_path):
    cols, _ = gen(tmp_path, "kv", 60000, "workload=D", "keys=10000", "value_size=1000 B")
    values = cols["region"] == 1
    slot = (cols["addr"][values] - cols["addr"][values].min()) // np.uint64(1024)
    assert slot.max() >= 10000  # new keys were inserted after the loaded ones
    reads = values & (cols["op"] == READ)
    newest_half = (cols["addr"][reads] - cols["addr"][values].min()) // np.uint64(1024) > 5000
    assert newest_half.mean() > 0.8  # 'latest' favours recent keys


def test_kv_scans_read_consecutive_values(tmp_path):
    cols, _ = gen(tmp_path, "kv", 20000, "workload=E", "keys=10000", "max_scan=10")
    values = cols["addr"][cols["region"] == 1].astype(np.int64)
    steps = np.diff(values)
    assert np.mean(steps == 1024) > 0.5  # most value reads follow the previous one


# --- TPP building blocks ----------------------------------------------------------------

def test_alloc_bursts_are_fresh_and_short_lived(tmp_path):
    cols, meta = gen(tmp_path, "alloc-bursts", 40000, *SMALL, "burst_size=1 MiB",
                     "burst_every=10000", "burst_life=2500", "burst_ops=0.8")
    burst = cols["region"] == 1
    index = np.arange(40000)
    assert not burst[index % 10000 >= 2500].any()  # dead bursts are never touched
    assert burst[index % 10000 < 2500].mean() == pytest.approx(0.8, abs=0.02)
    starts = [cols["addr"][burst & (index // 10000 == k)] for k in range(4)]
    for earlier, later in zip(starts, starts[1:]):
        assert later.min() >= earlier.max()  # each burst is a new allocation
    assert (cols["page_type"] == ANON).all() and meta.regions == {0: "heap", 1: "burst"}


def test_file_warmup_reads_the_file_once_first(tmp_path):
    cols, _ = gen(tmp_path, "file-warmup", 3000, *SMALL, "file_size=4 MiB", "file_ops=0")
    warm = 1024  # 4 MiB of 4 KiB items
    assert (cols["page_type"][:warm] == FILE).all() and (cols["op"][:warm] == READ).all()
    assert (np.diff(cols["addr"][:warm].astype(np.int64)) == 4096).all()
    assert (cols["size"][:warm] == 4096).all()
    assert (cols["page_type"][warm:] == ANON).all()


def test_anon_file_mix(tmp_path):
    cols, _ = gen(tmp_path, "anon-file-mix", 50000, *SMALL, "file_size=8 MiB", "file_ops=0.3")
    file = cols["page_type"] == FILE
    assert file.mean() == pytest.approx(0.3, abs=0.01)
    assert (cols["region"] == file).all()
    assert cols["addr"][file].min() >= 0x100000000 + (1 << 30)  # file after the anon GiB


# --- bad parameters ---------------------------------------------------------------------

@pytest.mark.parametrize("params, message", [
    (["theta=1"], "--param theta=1: expected a number in (0, 1); found '1'"),
    (["thetta=0.5"], "--param thetta=0.5: unknown parameter 'thetta' for generator zipfian; "
                     "did you mean 'theta'?; known: threads, interval, footprint, base, item, "
                     "size, read_ratio, theta, scrambled"),
    (["footprint=1 Gb"], "--param footprint=1 Gb: expected a size such as '64 B', '8 GiB' or "
                         "'8 GB'; found '1 Gb' ('Gb' means bits; a size is in bytes, e.g. "
                         "'GB' or 'GiB')"),
    (["item=64 B", "size=128 B"], "--param: item (64 B) must be at least size (128 B)"),
    (["threads=0"], "--param threads=0: expected a whole number 1..4294967295; found '0'"),
    (["scrambled=maybe"], "--param scrambled=maybe: expected yes or no; found 'maybe'"),
    (["=3"], "--param =3: expected NAME=VALUE, e.g. theta=0.9"),
])
def test_bad_parameters(tmp_path, params, message):
    with pytest.raises(InputError) as err:
        generate("zipfian", 10, 0, tmp_path / "z.arrow", params)
    assert str(err.value) == message
    assert list(tmp_path.iterdir()) == []


def test_unknown_generator(tmp_path):
    with pytest.raises(InputError, match="^cxlsim trace gen: unknown generator 'zipf'; "
                                         "expected one of uniform, zipfian,"):
        generate("zipf", 10, 0, tmp_path / "z.arrow")
