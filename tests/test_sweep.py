"""Sweeps: grid expansion, process pool, resumable point files, heat maps, CLI."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cxlsim.cli import main
from cxlsim.config import parse_assignment
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.experiments.kinds.routes import RoutesExperiment
from cxlsim.experiments.sweep import _yaml_text, batches, run_file

TOPOLOGY = Path(__file__).resolve().parents[1] / "topologies" / "switch-pool.yaml"
WIDTH, HOP = "topology.links[0].width", "topology.nodes[2].hop_latency"
HOP_NS = f"{HOP} [ns]"  # swept quantities are stored as numbers in cxlsim's internal unit


def write_experiment(tmp_path: Path, grid: str | None = None, heatmaps: str = "[latency_min_ns]"
                     ) -> Path:
    grid = grid or f'{{"{WIDTH}": [4, 8, 16], "{HOP}": ["50 ns", "90 ns"]}}'
    path = tmp_path / "sweep.yaml"
    path.write_text(f"name: pool-sweep\nkind: routes\ntopology: {TOPOLOGY}\n"
                    f"sweep: {{grid: {grid}, heatmaps: {heatmaps}}}\n", encoding="utf-8")
    return path


def test_grid_expands_to_points_with_expected_metrics(tmp_path):
    result = run_file(write_experiment(tmp_path), jobs=1)
    table = result.tables["points"]
    assert list(table.columns[:3]) == ["point", WIDTH, HOP_NS]
    assert list(table["point"]) == list(range(6))
    assert table[HOP_NS].dtype == float
    assert list(zip(table[WIDTH], table[HOP_NS])) == [
        (4, 50), (4, 90), (8, 50), (8, 90), (16, 50), (16, 90)]
    by = table.set_index([WIDTH, HOP_NS])
    for width in (4, 8, 16):  # the switch hop is on every route once: +40 ns
        assert by.loc[(width, 90), "latency_min_ns"] == pytest.approx(
            by.loc[(width, 50), "latency_min_ns"] + 40)
    bw = by.xs(50, level=HOP_NS)["bandwidth_min_GBps"]
    assert bw[4] == pytest.approx(bw[8] / 2)  # an x4 uplink is the bottleneck
    assert bw[16] == pytest.approx(bw[8])      # beyond x8 the device links are
    # a point is exactly the file run with --set KEY=VALUE
    single = load_experiment(tmp_path / "sweep.yaml", [f"{WIDTH}=4", f"{HOP}=90 ns"]).run()
    for key, value in single.metrics.items():
        assert by.loc[(4, 90), key] == value
    assert result.metrics == {"points": 6,
                              "latency_min_ns_min": table["latency_min_ns"].min(),
                              "latency_min_ns_max": table["latency_min_ns"].max()}


def test_process_pool_gives_the_same_table(tmp_path):
    path = write_experiment(tmp_path)
    pd.testing.assert_frame_equal(run_file(path, jobs=2).tables["points"],
                                  run_file(path, jobs=1).tables["points"])


def test_points_are_saved_and_resumed(tmp_path, calls):
    path, out = write_experiment(tmp_path), tmp_path / "run"
    first = run_file(path, jobs=1, out=out)
    files = sorted((out / "points").glob("point-*.parquet"))
    assert [f.name for f in files] == [f"point-{i:05d}.parquet" for i in range(6)]
    assert not (tmp_path / "run.points").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(out / "points.parquet"), first.tables["points"])

    calls.clear()
    files[3].unlink()
    again = run_file(path, jobs=1, out=out)
    assert calls == [3]
    pd.testing.assert_frame_equal(again.tables["points"], first.tables["points"])

    calls.clear()
    run_file(path, ["seed=7"], jobs=1, out=out)  # another config: no saved row applies
    assert calls == list(range(6))


def test_interrupted_sweep_keeps_finished_points(tmp_path, calls, monkeypatch):
    path, out = write_experiment(tmp_path), tmp_path / "run"
    counting = RoutesExperiment.run

    def failing(self, progress=False, point=0):
        if point == 4:
            raise RuntimeError("power cut")
        return counting(self, progress, point)

    monkeypatch.setattr(RoutesExperiment, "run", failing)
    with pytest.raises(RuntimeError, match="power cut"):
        run_file(path, jobs=1, out=out)
    assert not out.exists()
    assert len(list((tmp_path / "run.points").glob("point-*.parquet"))) == 4
    monkeypatch.setattr(RoutesExperiment, "run", counting)
    calls.clear()
    assert run_file(path, jobs=1, out=out).metrics["points"] == 6
    assert calls == [4, 5]
    assert not (tmp_path / "run.points").exists()


@pytest.mark.parametrize("grid, key, at, named", [
    ('{"topology.linkz[0].width": [4, 8]}', "topology.linkz[0].width", "4, 8]",
     "sweep point 0 (topology.linkz[0].width=4)"),
    (f'{{"{WIDTH}": [8, 7]}}', WIDTH, "7]", f"sweep point 1 ({WIDTH}=7)"),
    (f'{{"{WIDTH}": [8, 16], "{HOP}": ["90 ns", fast]}}', HOP, "fast]",
     f"sweep point 1 ({WIDTH}=8, {HOP}=fast)"),
])
def test_bad_grid_fails_before_any_point_runs(tmp_path, calls, grid, key, at, named):
    path = write_experiment(tmp_path, grid, heatmaps="[]")
    with pytest.raises(InputError) as err:
        run_file(path, jobs=1, out=tmp_path / "run")
    column = path.read_text().splitlines()[3].index(at) + 1  # the bad value in the grid
    assert f"sweep.yaml:4:{column}: sweep.grid.{key}: {named}: --set {key}=" in str(err.value)
    assert calls == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_empty_value_list_and_unknown_heatmap_metric(tmp_path, calls):
    with pytest.raises(InputError, match=r"sweep\.yaml:4:\d+: sweep\.grid\.seed: expected at "
                                         r"least 1 item; found none"):
        run_file(write_experiment(tmp_path, '{seed: []}'), jobs=1)
    with pytest.raises(InputError, match=r"sweep\.yaml: sweep\.heatmaps\[1\]: 'latency' is not a "
                                         r"numeric metric of sweep point 0 \(kind "
                                         r"'routes'\); its numeric metrics are "
                                         r"bandwidth_min_GBps, "):
        run_file(write_experiment(tmp_path, heatmaps="[latency_min_ns, latency]"), jobs=1,
                 out=tmp_path / "run")
    assert calls == [0]  # stopped at the first point's row
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]  # no staging left


def test_heatmap_and_line_figures(tmp_path):
    fig = run_file(write_experiment(tmp_path), jobs=1).figures["latency_min_ns"]
    (trace,) = fig.data
    assert isinstance(trace, go.Heatmap)
    assert list(trace.x) == ["4", "8", "16"] and list(trace.y) == ["50 ns", "90 ns"]
    assert fig.layout.yaxis.title.text == HOP_NS
    assert trace.z.shape == (2, 3) and trace.z[1][0] - trace.z[0][0] == pytest.approx(40)
    # one grid key: a line over the numeric axis, ticks as the grid wrote the values
    line = run_file(write_experiment(tmp_path, f'{{"{HOP}": ["50 ns", "0.07 us", "90 ns"]}}'),
                    jobs=1).figures["latency_min_ns"]
    (trace,) = line.data
    assert isinstance(trace, go.Scatter) and list(trace.x) == [50, 70, 90]
    assert list(line.layout.xaxis.ticktext) == ["50 ns", "0.07 us", "90 ns"]


def test_dask_executor_needs_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(InputError, match=r"pip install 'cxlsim\[dask\]'"):
        run_file(write_experiment(tmp_path), executor="dask://127.0.0.1:8786",
                 out=tmp_path / "run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]  # nothing written
    with pytest.raises(InputError, match="expected executor 'local' or 'dask://HOST:PORT'"):
        run_file(write_experiment(tmp_path), executor="ray")


class _CountingExecutor(ThreadPoolExecutor):
    """Runs tasks on threads and keeps the points each task carried."""

    def __init__(self) -> None:
        super().__init__(2)
        self.tasks: list[list[int]] = []

    def submit(self, fn, *args, **kwargs):
        self.tasks.append(list(args[-1]))
        return super().submit(fn, *args, **kwargs)


def test_points_go_to_workers_in_batches(tmp_path):
    """A task carries several points (one round trip each, e.g. to a Dask scheduler);
    the table is the one of a serial run."""
    path = write_experiment(tmp_path, f'{{"{WIDTH}": [1, 2, 4, 8, 16], '
                                      f'"{HOP}": ["30 ns", "50 ns", "70 ns", "90 ns"]}}')
    serial = run_file(path, jobs=1).tables["points"]
    with _CountingExecutor() as pool:
        batched = run_file(path, jobs=2, executor=pool).tables["points"]
    assert sorted(i for task in pool.tasks for i in task) == list(range(20))
    assert [len(task) for task in pool.tasks] == [5, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1]
    pd.testing.assert_frame_equal(serial, batched)


@given(points=st.integers(0, 500), workers=st.integers(1, 16))
def test_tasks_shrink_to_single_points(points, workers):
    """Every point once, in order; tasks never grow; the last few are single points."""
    tasks = batches(list(range(points)), workers)
    assert [i for task in tasks for i in task] == list(range(points))
    sizes = [len(task) for task in tasks]
    assert sizes == sorted(sizes, reverse=True) and all(sizes)
    assert sizes[-min(len(sizes), 2 * workers - 1):] == [1] * min(len(sizes), 2 * workers - 1)


def test_a_dask_cluster_runs_the_sweep(tmp_path):
    """``--executor dask://HOST:PORT`` against a local cluster gives the serial table."""
    distributed = pytest.importorskip("distributed")
    path = write_experiment(tmp_path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp", scheduler_port=0,
                                  dashboard_address=None) as cluster:
        port = cluster.scheduler.port
        table = run_file(path, executor=f"dask://127.0.0.1:{port}", jobs=2).tables["points"]
    pd.testing.assert_frame_equal(run_file(path, jobs=1).tables["points"], table)


def test_cli_run_sweep_json(tmp_path, capsys):
    code = main(["run", str(write_experiment(tmp_path)), "--json", "--jobs", "1",
                 "--out", str(tmp_path / "run")])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["metrics"]["points"] == 6
    assert [row[HOP_NS] for row in payload["tables"]["points"]] == [50, 90] * 3
    assert (tmp_path / "run" / "points" / "point-00005.parquet").is_file()
    assert main(["run", str(tmp_path / "sweep.yaml"), "--jobs", "0"]) == 2
    assert "expected at least 1 job" in capsys.readouterr().err


@given(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
       | st.text() | st.lists(st.integers(), max_size=3))
def test_swept_values_round_trip_through_set(value):
    assert parse_assignment(f"a.b[0]={_yaml_text(value)}")[1] == value



def test_a_worker_watches_its_sweeps_process_not_its_forkserver():
    import subprocess

    from cxlsim.experiments.sweep import _alive, _worker_context

    assert _alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not _alive(child.pid)
    assert _worker_context().get_start_method() in ("fork", "forkserver", "spawn")


def test_a_sweep_ends_with_its_points_table_within_the_terminal(tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    path = write_experiment(tmp_path)
    assert main(["run", str(path), "--jobs", "1", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    table = out[out.index("\n\n") + 2:].splitlines()
    assert table[0].split("  ") == [WIDTH, HOP_NS, "latency_min_ns"]
    assert len(table) == 2 + 6 and all(len(line) <= 80 for line in table)
    assert table[2].split()[:2] == ["4", "50"]
