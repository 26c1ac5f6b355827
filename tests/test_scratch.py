"""Folders outside a run folder (cxlsim.scratch): removed at exit, on SIGINT, SIGTERM and
SIGHUP, and what a killed process left at the next start -- never a folder that is not
ours or whose owner runs."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO
from cxlsim import scratch, signals
from cxlsim.cli import main
from cxlsim.experiments import load_experiment, sweep, trace_cache
from cxlsim.traces.generators import trace_bytes
from cxlsim.units import format_size

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="signals and /proc as on Linux")

RUN = """name: tm
kind: trace-memory
topology: selectel-xeon6-cxl
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0, cxl1]}
trace: {generate: uniform, n: %d, params: {footprint: 256MiB, threads: 2}}
epoch: 25000
"""


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    """A private temporary folder, as TMPDIR would choose it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def start(tmp_path, tmp):
    """``start(n, *args)``: ``cxlsim run ARGS`` of a generated trace of ``n`` records in
    the background, its TMPDIR ``tmp``; whatever of it is left at the end is killed."""
    started = []

    def run(n, *args):
        path = tmp_path / "tm.yaml"
        path.write_text(RUN % n)
        started.append(subprocess.Popen(
            [sys.executable, "-m", "cxlsim", "run", str(path), "--out", str(tmp_path / "out"),
             *args], cwd=REPO, env={**os.environ, "TMPDIR": str(tmp)},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,  # a group of its own, to kill it and its workers after
            # as from a terminal, whatever started the tests (a background job ignores
            # SIGINT, one under nohup SIGHUP)
            preexec_fn=_default_signals))
        return started[-1]

    yield run
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _default_signals():
    """The stopping signals' default actions in the child, as a terminal gives them."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _owners(tmp, count):
    """The pids named by ``count`` markers once they are all in ``tmp``."""
    for _ in range(600):
        markers = list(tmp.glob(f"cxlsim-*/{scratch.MARKER}"))
        if len(markers) >= count:
            return [json.loads(m.read_text())["pid"] for m in markers]
        time.sleep(0.1)
    raise AssertionError(f"no {count} folders in {tmp}: {list(tmp.iterdir())}")


def _gone(pid):
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_run_stopped_by_a_signal_leaves_nothing_in_the_temporary_folder(start, tmp,
                                                                         signum):
    run = start(20_000_000)  # seconds to generate: stopped meanwhile
    _owners(tmp, 1)
    run.send_signal(signum)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 128 + signum, err
    message = "interrupted" if signum == signal.SIGINT else \
        f"stopped by {signal.Signals(signum).name}"
    assert err.splitlines()[-1] == f"cxlsim: {message}"
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_sweep_stopped_by_a_signal_to_its_parent_alone_stops_its_workers_and_their_files_go(
        start, tmp, signum):
    """Each worker generates a trace of its own (the points' seeds differ): the signal,
    sent to the parent only (``kill PID``), reaches them, and their folders go."""
    run = start(20_000_000, "--jobs", "2",
                 "--set", "sweep={grid: {trace.seed: [1, 2]}}")
    workers = _owners(tmp, 2)
    assert run.pid not in workers
    run.send_signal(signum)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 128 + signum, err
    assert all(_gone(pid) for pid in workers)
    assert list(tmp.iterdir()) == []


def test_a_stopped_worker_runs_none_of_the_points_queued_for_it(monkeypatch):
    """The pool hands a worker its next task after the one a signal stopped: it ends at
    once, so that the parent, waiting for its workers, is not kept waiting."""
    ran = []
    monkeypatch.setattr(sweep, "_run_point", lambda spec, i: ran.append(i) or {})
    assert sweep._run_points([None, None], [0, 1]) == [{}, {}]
    monkeypatch.setattr(signals, "_stopped_by", signal.SIGTERM)
    with pytest.raises(signals.Stopped) as stopped:
        sweep._run_points([None, None], [2, 3])
    assert ran == [0, 1] and stopped.value.code == 143


def _marker(folder: Path, **owner) -> Path:
    folder.mkdir()
    (folder / scratch.MARKER).write_text(json.dumps(owner))
    return folder


def _ended_process() -> dict:
    """The identity of a process that ran and ended."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        return {"owner": "cxlsim", **scratch._identity(child.pid)}
    finally:
        child.kill()
        child.wait()


def test_the_next_start_removes_what_ended_processes_left_and_nothing_else(tmp, capsys):
    ended = _ended_process()
    living = {"owner": "cxlsim", **scratch._identity(os.getpid())}
    stale = [
        _marker(tmp / "cxlsim-traces-ended", **ended),
        _marker(tmp / "cxlsim-trace-reused", **{**living, "start": living["start"] - 1}),
        _marker(tmp / "cxlsim-traces-rebooted", **{**living, "boot": "another boot"}),
    ]
    kept = [
        _marker(tmp / "cxlsim-traces-living", **living),
        _marker(tmp / "cxlsim-traces-elsewhere", **{**ended, "host": socket.gethostname()
                                                    + "-not"}),
        _marker(tmp / "cxlsim-traces-not-ours", **{**ended, "owner": "someone"}),
        _marker(tmp / "cxlsim-traces-bad-pid", **{**ended, "pid": 0}),
        _marker(tmp / "other-ended", **ended),  # not named as ours
        tmp / "cxlsim-traces-no-marker",
        tmp / "cxlsim-traces-bad-marker",
        tmp / "cxlsim-traces-link",
        tmp / "cxlsim-file",
    ]
    kept[5].mkdir()
    kept[6].mkdir()
    (kept[6] / scratch.MARKER).write_text("{not json")
    kept[7].symlink_to(stale[0], target_is_directory=True)
    kept[8].write_text(json.dumps(ended))
    assert main(["trace", "list"]) == 0  # any command
    assert sorted(tmp.iterdir()) == sorted(kept)
    assert (kept[7] / scratch.MARKER).exists() is False  # its target went: it was stale


def _in_fork(queue, parent: str) -> None:
    own = scratch.make("cxlsim-test-")
    scratch.remove_own()  # what an orphaned worker does before it ends
    queue.put((str(own), own.exists(), Path(parent).exists()))


def test_a_forked_process_removes_its_own_folders_never_its_parents(tmp):
    with scratch.temporary("cxlsim-test-") as parent:
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_in_fork, args=(queue, str(parent)))
        child.start()
        own, own_left, parent_left = queue.get(timeout=60)
        child.join(60)
        assert (own_left, parent_left) == (False, True) and parent.exists()
        assert json.loads((parent / scratch.MARKER).read_text())["pid"] == os.getpid()
    assert not parent.exists() and list(tmp.iterdir()) == []


def test_a_conversion_between_tools_goes_through_a_folder_of_ours_and_leaves_nothing(
        tmp_path, tmp, monkeypatch):
    made, make = [], scratch.make
    monkeypatch.setattr(scratch, "make", lambda prefix: made.append(make(prefix)) or made[-1])
    out = tmp_path / "l.trace"
    assert main(["trace", "convert", str(REPO / "traces" / "samples" / "lackey.txt"), str(out),
                 "--from", "lackey", "--to", "ramulator"]) == 0
    assert out.read_text().startswith("0x1ffefffd88 W\n")
    assert [p.parent for p in made] == [tmp] and list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.trace", "tmp"]


def test_a_temporary_folder_without_room_is_refused_before_the_run(tmp_path, tmp,
                                                                    monkeypatch, capsys):
    monkeypatch.setattr(trace_cache, "_cache", trace_cache._Cache())  # none kept yet
    monkeypatch.setattr(scratch.shutil, "disk_usage", lambda path: SimpleNamespace(free=10**6))
    (tmp_path / "tm.yaml").write_text(RUN % 60_000)
    assert main(["run", str(tmp_path / "tm.yaml")]) == 2
    needed = format_size(trace_bytes("uniform", 60_000), 3)
    assert capsys.readouterr().err == (
        f"cxlsim: error: generating a trace of 60,000 records needs {needed} in {tmp} (the "
        f"temporary folder: TMPDIR), which has 1 MB free: point TMPDIR at a folder with "
        f"room or free some\n")
    assert {p.name for p in tmp.rglob("*") if p.is_file()} == {scratch.MARKER}


def test_a_large_trace_is_announced_with_the_room_it_takes(tmp_path, tmp, monkeypatch,
                                                            capsys):
    monkeypatch.setattr(trace_cache, "_cache", trace_cache._Cache())  # none kept yet
    monkeypatch.setattr(scratch, "ANNOUNCED", 1_000_000)
    (tmp_path / "tm.yaml").write_text(RUN % 60_000)
    load_experiment(tmp_path / "tm.yaml").run()
    needed = format_size(trace_bytes("uniform", 60_000), 3)
    assert capsys.readouterr().err.count(
        f"generating a trace of 60,000 records: {needed} in {tmp} (the temporary folder: "
        f"TMPDIR)\n") == 1
