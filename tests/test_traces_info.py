"""``trace info``: counts, footprint and the per-page access histogram."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.traces.info import trace_info
from cxlsim.traces.native import TraceMeta, write_trace

PAGE = 4096


def test_counts_footprint_and_histogram(tmp_path):
    # pages: 0 three times, 1 once, 5 twice (one record also covers page 6)
    addr = [0, 8, 16, PAGE, 5 * PAGE, 5 * PAGE + 100]
    size = [64, 64, 64, 64, 2 * PAGE, 8]
    path = write_trace(tmp_path / "t.arrow", {
        "time": np.array([10, 20, 30, 40, 50, 60]), "addr": np.array(addr),
        "op": np.array([0, 1, 0, 0, 1, 0]), "size": np.array(size),
        "thread": np.array([0, 1, 1, 0, 2, 0])}, TraceMeta(source="hand-made"))
    info = trace_info(path, PAGE)
    assert (info.records, info.reads, info.writes, info.accesses) == (6, 4, 2, 6)
    assert (info.first_time, info.last_time, info.threads) == (10, 60, 3)
    assert (info.lowest_addr, info.highest_addr) == (0, 5 * PAGE + 100)
    assert info.pages == 4 and info.footprint == 4 * PAGE
    # counts 1, 1, 2, 3: quantiles take the lower page (numpy's method="lower")
    assert info.per_page == {"mean": 7 / 4, "min": 1, "median": 1, "p90": 2, "p99": 2,
                             "max": 3}
    # the hottest 50 % are pages 0 and 5 (3 + 2 of 7); a fraction of a page takes its share
    assert info.hottest == pytest.approx({"1 %": 0.04 * 3 / 7, "5 %": 0.2 * 3 / 7,
                                          "10 %": 0.4 * 3 / 7, "20 %": 0.8 * 3 / 7,
                                          "50 %": 5 / 7})
    assert info.histogram == [(1, 1, 2), (2, 3, 2)]
    assert info.source == "hand-made" and info.to_dict()["footprint"] == 4 * PAGE


def test_weights_and_idle_regions(tmp_path):
    """DAMON-like records: a region counts in the footprint even with no access seen."""
    path = write_trace(tmp_path / "t.arrow", {
        "addr": np.array([0, 10 * PAGE]), "op": np.zeros(2), "size": np.array([4 * PAGE, PAGE]),
        "weight": np.array([0, 20]), "region": np.array([0, 1])},
        TraceMeta(regions={0: "heap", 1: "stack"}))
    info = trace_info(path, PAGE)
    assert info.pages == 5 and info.accesses == 20
    assert info.histogram == [(0, 0, 4), (16, 31, 1)]
    assert info.per_page["min"] == 0 and info.per_page["max"] == 20
    assert info.regions == {"0 heap": 1, "1 stack": 1}


def test_page_types_and_page_size(tmp_path):
    path = write_trace(tmp_path / "t.arrow", {
        "addr": np.arange(0, 64 * 1024, 1024), "op": np.zeros(64), "size": np.full(64, 8),
        "page_type": np.arange(64) % 4 == 0})
    info = trace_info(path, 16 * 1024)
    assert info.page_types == {"anon": 48, "file": 16, "shmem": 0}
    assert info.pages == 4 and info.histogram == [(16, 31, 4)]


def test_empty_trace(tmp_path):
    path = write_trace(tmp_path / "t.arrow", {"addr": np.zeros(0), "op": np.zeros(0)})
    info = trace_info(path)
    assert (info.records, info.pages, info.first_time, info.histogram) == (0, 0, None, [])
