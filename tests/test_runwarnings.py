"""Run warnings: counted over a study's runs (in this process and in workers) and shown
once each, with the count, as one line wherever Python shows warnings."""

from __future__ import annotations

import subprocess
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

import cxlsim
from cxlsim.errors import RunWarning
from cxlsim.runwarnings import Tally, counted, once_each

#: A trace run of two epochs whose policy never acts (its first NUMA scan is 1 s away),
#: swept over three seeds.
IDLE_SWEEP = """name: tm
kind: trace-memory
topology: selectel-xeon6-cxl
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0, cxl1]}
trace: {generate: uniform, n: 50000, params: {footprint: 64MiB, threads: 2}}
epoch: 25000
policy: tpp
sweep:
  grid: {seed: [1, 2, 3]}
"""
IDLE = "policy tpp never acted: no NUMA scan before the end"


def _warn_twice(subject: str) -> int:
    for _ in range(2):
        warnings.warn(RunWarning("idle", subject))
    return 7


def test_a_run_warning_reads_subject_message_and_count():
    assert str(RunWarning("idle")) == "idle"
    assert str(RunWarning("idle", "tm")) == "tm: idle"
    assert str(RunWarning("idle", "tm, tp", 3)) == "tm, tp: idle (3 times)"


def test_repeats_are_shown_once_with_their_count_and_subjects():
    with pytest.warns(RunWarning) as caught:
        with once_each():
            _warn_twice("a")
            _warn_twice("b")
            warnings.warn(RunWarning("other", "a"))
    assert [str(w.message) for w in caught] == ["a, b: idle (4 times)", "a: other"]


def test_other_warnings_pass_at_once_and_an_inner_region_leaves_its_count_outside():
    with pytest.warns(Warning) as caught:
        with once_each():
            with once_each():
                _warn_twice("a")
                warnings.warn("plain", UserWarning)
                assert [str(w.message) for w in caught] == ["plain"]  # not held back
            _warn_twice("a")
            assert len(caught) == 1  # the inner region's count waits for the outer's
    assert [str(w.message) for w in caught] == ["plain", "a: idle (4 times)"]


def test_warnings_of_a_failed_run_are_still_shown():
    with pytest.warns(RunWarning, match="a: idle"), pytest.raises(KeyError):
        with once_each():
            _warn_twice("a")
            raise KeyError("boom")


def test_a_workers_warnings_come_back_counted():
    with ProcessPoolExecutor(2) as pool:
        done = [pool.submit(counted, _warn_twice, s).result() for s in ("a", "b", "a")]
    total = Tally()
    for result, tally in done:
        assert result == 7
        total.merge(tally)
    assert [str(w) for w in total.summary()] == ["a, b: idle (6 times)"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_sweep_warns_once_for_all_its_points(tmp_path, jobs):
    path = tmp_path / "tm.yaml"
    path.write_text(IDLE_SWEEP)
    with pytest.warns(RunWarning) as caught:
        cxlsim.run(path, jobs=jobs)
    assert len(caught) == 1
    assert str(caught[0].message).startswith(f"tm: {IDLE}")
    assert str(caught[0].message).endswith(" (3 times)")


def test_the_cli_prints_a_sweeps_warning_once_after_its_progress_bar(tmp_path):
    path = tmp_path / "tm.yaml"
    path.write_text(IDLE_SWEEP)
    proc = subprocess.run([sys.executable, "-m", "cxlsim", "run", str(path), "--jobs", "2",
                           "--progress", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warned) == 1 and warned[0].startswith(f"cxlsim: warning: tm: {IDLE}")
    assert warned[0].endswith(" (3 times)")
    assert proc.stderr.index("3/3") < proc.stderr.index("cxlsim: warning")


def test_importing_cxlsim_shows_a_run_warning_as_one_line():
    """As in a notebook: no file name, no source line, whoever shows it."""
    code = ("import warnings, cxlsim; from cxlsim.errors import RunWarning\n"
            "warnings.warn(RunWarning('policy tpp never acted', 'tm', 2))\n"
            "warnings.warn('plain')\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stderr.splitlines()
    assert err[0] == "cxlsim: warning: tm: policy tpp never acted (2 times)"
    assert "UserWarning: plain" in err[1]  # other warnings as Python shows them


def test_a_thread_pool_sweep_counts_in_the_main_threads_region_and_leaves_no_trace(
        tmp_path):
    """Threads do not touch Python's warning settings (shared by the whole process):
    their warnings are counted by the region the main thread has open, and the settings
    are as they were afterwards."""
    path = tmp_path / "tm.yaml"
    path.write_text(IDLE_SWEEP)
    with pytest.warns(RunWarning) as caught, ThreadPoolExecutor(2) as pool:
        show, filters = warnings.showwarning, list(warnings.filters)
        cxlsim.run(path, jobs=2, executor=pool)
        assert warnings.showwarning is show and warnings.filters == filters
    assert [str(w.message)[-10:] for w in caught] == [" (3 times)"]
