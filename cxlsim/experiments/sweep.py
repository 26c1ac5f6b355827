"""Run an experiment file: one point, or every point of its ``sweep.grid``.

A sweep point is the same file loaded with the base overrides plus one ``KEY=VALUE``
per grid key, so a point is exactly what ``cxlsim run FILE --set KEY=VALUE ...`` would
run. All points are validated before any runs; then they run on an executor (a
process pool by default, a Dask cluster on request) and each finished point's row
(point, swept values, scalar metrics) is saved at once, so an interrupted sweep loses
nothing and a re-run resumes.

Point files: while a sweep writing to ``OUT`` runs, rows go to the sibling folder
``OUT.points/point-NNNNN.parquet`` (the run folder itself is only replaced at the
end, see :func:`write_run_folder`); when the run folder is written that folder moves to
``OUT/points/``. A re-run copies ``OUT/points/`` back to ``OUT.points/`` and skips
every point whose file records the same resolved point config (hence the same swept
values).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from cxlsim.errors import InputError
from cxlsim.experiments.loader import load_experiment
from cxlsim.experiments.output import MARKER, is_run_folder, write_run_folder
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import ExperimentSpec
from cxlsim.units import parse_quantity

_DIGEST_KEY = b"cxlsim.point_config_sha256"
_ROW_FORMAT = 2  # bump when a saved row's columns change meaning, so old rows rerun
_DASK_EXTRA = "the dask executor needs the optional extra: pip install 'cxlsim[dask]'"


def run_file(path: str | Path, overrides: Sequence[str] = (), progress: bool = False,
             jobs: int | None = None, executor: str | Executor | None = None,
             out: str | Path | None = None) -> RunResult:
    """Load and run an experiment file (every sweep point if it has a ``sweep``).

    ``jobs`` worker processes (default ``sweep.jobs``, else the CPU count; 1 runs in
    this process); ``executor`` is ``"local"`` (default), ``"dask://HOST:PORT"`` or any
    :class:`concurrent.futures.Executor`. With ``out`` the run folder is written there
    and sweep points are saved as they finish, and resumed on a re-run.
    """
    if jobs is not None and jobs < 1:
        raise InputError(f"expected at least 1 job; found {jobs}", key="jobs")
    overrides = tuple(overrides)
    spec = load_experiment(path, overrides)
    if spec.sweep is None:
        result = spec.run(progress=progress)
    else:
        result = _sweep(spec, Path(path), overrides, progress, jobs, executor,
                        None if out is None else Path(out))
    if out is not None:
        write_run_folder(result, out)
        stage = stage_dir(Path(out))
        if spec.sweep is not None and stage.is_dir():
            stage.rename(Path(out) / "points")
    return result


def sweep_points(spec: ExperimentSpec) -> list[dict[str, Any]]:
    """The grid's cartesian product, first key slowest: ``[{key: value, ...}, ...]``."""
    grid = spec.sweep.grid
    return [dict(zip(grid, combo)) for combo in product(*grid.values())]


def _sweep(spec: ExperimentSpec, path: Path, overrides: tuple[str, ...], progress: bool,
           jobs: int | None, executor: str | Executor | None, out: Path | None) -> RunResult:
    """Validate every point, reuse saved rows, run the rest, collect the table."""
    from tqdm.auto import tqdm

    points = sweep_points(spec)
    specs = [_load_point(path, overrides, i, point) for i, point in enumerate(points)]
    columns = grid_columns(spec.sweep.grid)
    rows: dict[int, dict[str, Any]] = {}

    def record(i: int, row: dict[str, Any], save: bool = True) -> None:
        if not rows:
            _check_heatmaps(spec, path, row, stage)
        if save and stage is not None:
            _write_point(stage, i, row, _digest(specs[i]))
        rows[i] = row
        bar.update()

    def computed(i: int, metrics: dict[str, Any]) -> None:
        swept = {columns[k][0]: columns[k][1](v) for k, v in points[i].items()}
        record(i, {"point": i, **swept, **metrics})

    workers = min(jobs or spec.sweep.jobs or os.cpu_count() or 1, len(points))
    with _open_executor(executor, workers) as pool, \
            tqdm(total=len(points), disable=not progress, desc=spec.name, unit="point") as bar:
        stage = None if out is None else _prepare_stage(out)
        for i, s in enumerate(specs):
            if stage is not None and (row := _read_point(stage, i, _digest(s))) is not None:
                record(i, row, save=False)
        todo = [i for i in range(len(points)) if i not in rows]
        if pool is None:
            for i in todo:
                computed(i, _run_point(specs[i], i))
        else:
            futures = {pool.submit(_run_point, specs[i], i): i for i in todo}
            try:
                for fut in as_completed(futures):
                    computed(futures[fut], fut.result())
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
    if stage is not None:
        keep = {_point_file(stage, i).name for i in rows}
        for f in stage.glob("point-*.parquet"):
            if f.name not in keep:
                f.unlink()
    return _sweep_result(spec, pd.DataFrame([rows[i] for i in sorted(rows)]))


def _run_point(spec: ExperimentSpec, point: int) -> dict[str, Any]:
    """Worker: run one point and keep its scalar metrics (top level, so it pickles)."""
    result = spec.run(progress=False, point=point)
    return {k: _py(v) for k, v in result.metrics.items() if v is None or np.isscalar(v)}


def _py(value: Any) -> Any:
    """A numpy scalar as the Python one (plain values print and pickle simply)."""
    return value.item() if isinstance(value, np.generic) else value


def _load_point(path: Path, overrides: tuple[str, ...], i: int,
                point: dict[str, Any]) -> ExperimentSpec:
    """The point's validated spec (without ``sweep``); errors name the point's values."""
    assigns = [f"{key}={_yaml_text(value)}" for key, value in point.items()]
    try:
        return load_experiment(path, (*overrides, *assigns, "sweep=null"))
    except InputError as exc:
        raise InputError(f"sweep point {i} ({', '.join(assigns)}): {exc}",
                         location=str(path), key="sweep.grid") from None


def _yaml_text(value: Any) -> str:
    """``value`` as one-line YAML that ``--set`` reads back as the same value."""
    text = yaml.safe_dump(value, default_flow_style=True, width=float("inf"))
    return text.removesuffix("\n...\n").strip()


def grid_columns(grid: dict[str, list[Any]]) -> dict[str, tuple[str, Any]]:
    """Per grid key, its column in the points table and how a value becomes a cell.

    A key whose values are all quantities of one unit ("20 ns", "1.5 us") becomes
    ``"KEY [ns]"`` holding numbers in cxlsim's internal unit, so the column sorts,
    plots and filters as numbers; any other key keeps its values (collections as
    YAML text).
    """
    columns = {}
    for key, values in grid.items():
        parsed = [parse_quantity(v) for v in values]
        units = {q[1] for q in parsed if q is not None}
        if None not in parsed and len(units) == 1:
            columns[key] = (f"{key} [{units.pop()}]", lambda v: parse_quantity(v)[0])
        else:
            columns[key] = (key, _cell)
    return columns


def _cell(value: Any) -> Any:
    """A swept value as a table cell: scalars as they are, collections as YAML text."""
    return value if value is None or np.isscalar(value) else _yaml_text(value)


def _digest(spec: ExperimentSpec) -> str:
    """Fingerprint of a point's resolved config: a saved row is reused only if it matches."""
    text = json.dumps([_ROW_FORMAT, spec.model_dump(mode="json")], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def stage_dir(out: Path) -> Path:
    """The sibling folder ``OUT.points/`` where a sweep's finished points wait."""
    return out.with_name(out.name + ".points")


def _point_file(stage: Path, i: int) -> Path:
    return stage / f"point-{i:05d}.parquet"


def _prepare_stage(out: Path) -> Path:
    """``OUT.points/``, holding the rows of an earlier run (folder or interrupted run).

    A folder of that name that cxlsim did not make (no marker) is refused, not used.
    """
    stage = stage_dir(out)
    if (stage.exists() or stage.is_symlink()) and not is_run_folder(stage):
        raise InputError(f"{str(stage)!r} exists and was not made by cxlsim (no {MARKER} "
                         "marker); move it away or choose another --out", key="--out")
    stage.mkdir(parents=True, exist_ok=True)
    (stage / MARKER).touch()
    for f in (out / "points").glob("point-*.parquet"):
        if not (stage / f.name).exists():
            shutil.copy2(f, stage / f.name)
    return stage


def _write_point(stage: Path, i: int, row: dict[str, Any], digest: str) -> None:
    """One row as a Parquet file, written atomically, tagged with the config digest."""
    table = pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _DIGEST_KEY:
                                           digest.encode()})
    target = _point_file(stage, i)
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, target)


def _read_point(stage: Path, i: int, digest: str) -> dict[str, Any] | None:
    """The saved row of point ``i`` if it exists and was run with the same config."""
    try:
        table = pq.read_table(_point_file(stage, i))
    except (OSError, pa.ArrowException):
        return None
    if (table.schema.metadata or {}).get(_DIGEST_KEY) != digest.encode():
        return None
    return table.to_pylist()[0]


def _check_heatmaps(spec: ExperimentSpec, path: Path, row: dict[str, Any],
                    stage: Path | None) -> None:
    """Fail at the first row, not after the last, if a heat-map metric does not exist.

    Nothing is saved yet then, so the staging folder this run made is removed again.
    """
    metrics = set(row) - {"point"} - {c for c, _ in grid_columns(spec.sweep.grid).values()}
    for i, m in enumerate(spec.sweep.heatmaps):
        if m not in metrics:
            if stage is not None and not any(stage.glob("point-*.parquet")):
                (stage / MARKER).unlink(missing_ok=True)
                stage.rmdir()
            raise InputError(f"{m!r} is not a metric of kind {spec.kind!r}; its metrics "
                             f"are {', '.join(sorted(metrics))}",
                             location=str(path), key=f"sweep.heatmaps[{i}]")


@contextmanager
def _open_executor(executor: str | Executor | None, jobs: int) -> Iterator[Executor | None]:
    """The executor to use, or None to run in this process; closes what it opened."""
    if isinstance(executor, Executor):
        yield executor
    elif executor in (None, "local"):
        if jobs <= 1:
            yield None
        else:
            # spawn: safe with threads (Jupyter, tqdm) and the same on every OS
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                     initializer=_exit_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                yield pool
    elif isinstance(executor, str) and executor.startswith("dask://") and executor[7:]:
        try:
            from distributed import Client
        except ImportError:
            raise InputError(_DASK_EXTRA) from None
        with Client(f"tcp://{executor[7:]}") as client:
            yield client.get_executor()
    else:
        raise InputError(f"expected executor 'local' or 'dask://HOST:PORT'; found {executor!r}",
                         key="executor")


def _exit_with_parent(parent: int, poll: float = 1.0) -> None:
    """Worker initializer: end this worker once its parent is gone (e.g. killed by
    SIGKILL, which gives the pool no chance to stop its workers)."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        os._exit(1)

    threading.Thread(target=watch, name="cxlsim-parent-watch", daemon=True).start()


def _sweep_result(spec: ExperimentSpec, table: pd.DataFrame) -> RunResult:
    """Metrics (point count, min/max of each heat-map metric), the table, the figures."""
    from cxlsim.plot.heatmap import heatmap

    keys = [column for column, _ in grid_columns(spec.sweep.grid).values()]
    for key in keys:  # a column mixing numbers and text cannot go to Parquet: text it
        if pd.api.types.infer_dtype(table[key], skipna=True) in ("mixed", "mixed-integer"):
            table[key] = table[key].astype(str)
    metrics: dict[str, Any] = {"points": len(table)}
    figures = {}
    for m in spec.sweep.heatmaps:
        metrics[f"{m}_min"], metrics[f"{m}_max"] = _py(table[m].min()), _py(table[m].max())
        y = keys[1] if len(keys) > 1 else None
        title = f"{m} over {keys[0]}" + (f" and {y}" if y else "")
        figures[m] = heatmap(table, keys[0], y, m, title)
    return RunResult(spec.name, spec, metrics, {"points": table}, figures)
