"""Sweeps are safe by default: the staging folder is never a user's, a wrong heat map
fails before anything is written, workers die with their parent, swept quantities are
numbers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from cxlsim.cli import main
from cxlsim.errors import InputError
from cxlsim.experiments.kinds.routes import RoutesExperiment
from cxlsim.experiments.sweep import POINTS_MARKER, run_file

TOPOLOGY = Path(__file__).resolve().parents[1] / "topologies"
HOP, FLIT, CAPACITY = ("topology.nodes[2].hop_latency", "topology.links[0].flit_mode",
                       "topology.nodes[3].capacity")


def write_sweep(tmp_path: Path, grid: str, heatmaps: str = "[latency_min_ns]") -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"name: safe\nkind: routes\ntopology: {TOPOLOGY / 'switch-pool.yaml'}\n"
                    f"sweep: {{grid: {grid}, heatmaps: {heatmaps}}}\n", encoding="utf-8")
    return path


GRID = f'{{"{HOP}": ["50 ns", "90 ns"]}}'


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its content, to show nothing was touched."""
    return {str(f.relative_to(folder)): f.read_bytes() for f in folder.rglob("*") if f.is_file()}


@pytest.mark.parametrize("make", ["folder", "file", "symlink"])
def test_a_points_folder_cxlsim_did_not_write_is_refused_and_kept(tmp_path, calls, make):
    stage, theirs = tmp_path / "run.points", tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "point-00000.parquet").write_text("my data")
    (theirs / POINTS_MARKER).touch()  # even a marker behind a symlink is not ours
    if make == "folder":
        stage.mkdir()
        (stage / "point-00000.parquet").write_text("my data")
    elif make == "file":
        stage.write_text("my notes")
    else:
        stage.symlink_to(theirs)
    before = _tree(tmp_path)
    with pytest.raises(InputError) as err:
        run_file(write_sweep(tmp_path, GRID), jobs=1, out=tmp_path / "run")
    assert str(err.value) == (f"--out: {str(stage)!r} exists and was not made by cxlsim (no "
                              f"{POINTS_MARKER} marker); cxlsim keeps a sweep's finished "
                              "points there, so move it away or choose another --out")
    assert calls == []
    assert _tree(tmp_path) == before | {"sweep.yaml": (tmp_path / "sweep.yaml").read_bytes()}
    assert not (tmp_path / "run").exists()


def test_cli_refuses_a_users_points_folder(tmp_path, capsys):
    (tmp_path / "run.points").mkdir()
    code = main(["run", str(write_sweep(tmp_path, GRID)), "--jobs", "1",
                 "--out", str(tmp_path / "run")])
    assert code == 2
    assert capsys.readouterr().err.startswith(
        f"cxlsim: error: --out: {str(tmp_path / 'run.points')!r} exists and was not made by "
        f"cxlsim (no {POINTS_MARKER} marker)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.points", "sweep.yaml"]


def test_wrong_heatmap_on_a_resumed_sweep_fails_before_any_point_runs(tmp_path, calls):
    out = tmp_path / "run"
    run_file(write_sweep(tmp_path, GRID), jobs=1, out=out)
    before = _tree(out)
    calls.clear()
    with pytest.raises(InputError, match=r"sweep\.yaml: sweep\.heatmaps\[1\]: 'nosuchmetric' is "
                                         r"not a numeric metric of sweep point 0 \(kind "
                                         r"'routes'\); its numeric metrics are "
                                         r"bandwidth_min_GBps, .*latency_min_ns"):
        run_file(write_sweep(tmp_path, GRID, "[latency_min_ns, nosuchmetric]"), jobs=1, out=out)
    assert calls == []  # the saved rows name the metrics
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "sweep.yaml"]


def test_cli_wrong_heatmap_with_a_pool_leaves_nothing(tmp_path, capsys):
    path = write_sweep(tmp_path, GRID, "[nosuchmetric]")
    assert main(["run", str(path), "--jobs", "2", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cxlsim: error: {path}: sweep.heatmaps[0]: 'nosuchmetric' is not a "
                          "numeric metric of sweep point ")
    assert "its numeric metrics are bandwidth_min_GBps, " in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_heatmap_metric_must_be_a_number(tmp_path, monkeypatch):
    original = RoutesExperiment.run

    def with_text(self, progress=False, point=0):
        result = original(self, progress, point)
        result.metrics["verdict"] = "flat"
        return result

    monkeypatch.setattr(RoutesExperiment, "run", with_text)
    with pytest.raises(InputError) as err:
        run_file(write_sweep(tmp_path, GRID, "[verdict]"), jobs=1, out=tmp_path / "run")
    assert "sweep.heatmaps[0]: 'verdict' is not a numeric metric of sweep point 0" in str(err.value)
    assert "verdict" not in str(err.value).split("its numeric metrics are")[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_swept_quantities_are_numbers_in_internal_units(tmp_path, calls):
    grid = f'{{"{HOP}": [0, "0.04 us"], "{FLIT}": [68B, 256B], "{CAPACITY}": ["128 GiB", 1024]}}'
    out = tmp_path / "run"
    table = run_file(write_sweep(tmp_path, grid), jobs=1, out=out).tables["points"]
    hop, capacity = f"{HOP} [ns]", f"{CAPACITY} [B]"
    assert list(table.columns[:4]) == ["point", hop, FLIT, capacity]
    assert list(table[hop]) == [0.0] * 4 + [40.0] * 4  # a bare 0 is a time too
    assert list(table[FLIT]) == ["68B", "68B", "256B", "256B"] * 2  # text, not 256 bytes
    assert list(table[capacity]) == [128 * 2**30, 1024] * 4
    saved = pd.read_parquet(out / "points.parquet")
    assert (saved[hop].dtype, saved[capacity].dtype) == ("float64", "int64")
    calls.clear()
    again = run_file(write_sweep(tmp_path, grid), jobs=1, out=out)
    assert calls == []  # every row read back from its point file, numbers intact
    pd.testing.assert_frame_equal(again.tables["points"], table)
    (heat,) = again.figures["latency_min_ns"].data
    assert list(heat.x) == ["0", "0.04 us"] and list(heat.y) == ["68B", "256B"]


def _children(pid: int) -> set[int]:
    """Direct child processes of ``pid`` (from /proc: psutil is not a dependency)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _poll(condition, seconds: float) -> bool:
    """Wait until ``condition()`` holds (liveness, not speed: the bound is generous)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killed_cli_sweep_leaves_no_workers(tmp_path):
    path = tmp_path / "slow.yaml"  # points of several seconds each: still running when killed
    path.write_text(f"name: slow\nkind: link-loaded\ntopology: {TOPOLOGY / 'single-expander.yaml'}"
                    "\nflit_modes: [68B]\nwidths: [8]\nloads: [0.5]\nrequests: 5000000\n"
                    "sweep: {grid: {seed: [1, 2, 3, 4]}}\n", encoding="utf-8")
    parent = subprocess.Popen(
        [sys.executable, "-c", "import sys; from cxlsim.cli import main; sys.exit(main())",
         "run", str(path), "--jobs", "2", "--out", str(tmp_path / "run")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()

    def two_workers() -> bool:
        """Workers: spawned ones run spawn_main, forked ones are copies of the parent."""
        try:
            own = Path(f"/proc/{parent.pid}/cmdline").read_bytes()
        except OSError:
            return False
        for child in _children(parent.pid):
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in cmd or cmd == own:
                workers.add(child)
        return len(workers) >= 2

    try:
        assert _poll(two_workers, 60), "the sweep never started its two workers"
        everyone = _children(parent.pid) | workers  # the resource tracker too
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _poll(lambda: not any(map(_alive, everyone)), 10)
    finally:
        parent.kill()
        parent.wait()
        for pid in filter(_alive, workers):
            os.kill(pid, signal.SIGKILL)
