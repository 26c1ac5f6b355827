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
``OUT/points/``. A re-run skips every point whose file, in ``OUT.points/`` or
``OUT/points/``, records the same resolved point config (hence the same swept values).
``OUT.points/`` is made when the first new row is saved and carries the marker
:data:`POINTS_MARKER`; a folder of that name without it is the user's and is refused.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import numbers
import os
import shutil
import sys
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

from cxlsim import scratch, signals
from cxlsim.config import load_document, parse_assignment
from cxlsim.errors import InputError, Location
from cxlsim.experiments.kinds import kind_modules
from cxlsim.experiments.loader import experiment_file, load_experiment
from cxlsim.experiments.output import check_out, write_run_folder
from cxlsim.experiments.progress import REDRAW, count_into, progress_bar
from cxlsim.experiments.quick import quick_overrides
from cxlsim.experiments.result import RunResult
from cxlsim.experiments.spec import Baseline, ExperimentSpec
from cxlsim.runwarnings import Tally, counted, once_each
from cxlsim.units import format_size, parse_quantity

POINTS_MARKER = ".cxlsim-points"
_DIGEST_KEY = b"cxlsim.point_config_sha256"
_ROW_FORMAT = 3  # bump when a saved row's columns change meaning, so old rows rerun
_DASK_EXTRA = "the dask executor needs the optional extra: pip install 'cxlsim[dask]'"


def run_file(path: str | Path, overrides: Sequence[str] = (), progress: bool = False,
             jobs: int | None = None, executor: str | Executor | None = None,
             out: str | Path | None = None, quick: bool = False, report: bool = False
             ) -> RunResult:
    """Load and run an experiment file, or a shipped one by name (every sweep point if it
    has a ``sweep``); ``quick``: its quick form (:mod:`.quick`, what it changes printed
    on stderr).

    ``jobs`` worker processes (default ``sweep.jobs``, else the CPU count; 1 runs in
    this process); ``executor`` is ``"local"`` (default), ``"dask://HOST:PORT"`` or any
    :class:`concurrent.futures.Executor`. With ``out`` the run folder is written there
    (with ``report``: its ``report.html`` too) and sweep points are saved as they
    finish, and resumed on a re-run. ``progress``
    draws a bar on stderr (:mod:`cxlsim.experiments.progress`): per sweep point, else at
    the run's own steps.
    """
    if jobs is not None and jobs < 1:
        raise InputError(f"expected at least 1 job; found {jobs}", key="jobs")
    overrides = tuple(overrides)
    out = None if out is None else check_out(out)  # refused before anything runs
    path = experiment_file(path)
    spec = load_experiment(path, overrides)
    if quick:
        overrides += tuple(quick_overrides(spec))
        spec = load_experiment(path, overrides)
    with once_each() as warned:  # each run warning once, after the progress bar
        if spec.sweep is None:
            result = spec.run(progress=progress)
        else:
            result = _sweep(spec, path, overrides, progress, jobs, executor, out, warned)
    if out is not None:
        write_run_folder(result, out, report)
        if spec.sweep is not None:
            stage_dir(out).rename(out / "points")
    return result


def sweep_points(spec: ExperimentSpec) -> list[dict[str, Any]]:
    """The grid's cartesian product, first key slowest: ``[{key: value, ...}, ...]``."""
    grid = spec.sweep.grid
    return [dict(zip(grid, combo)) for combo in product(*grid.values())]


def _sweep(spec: ExperimentSpec, path: Path, overrides: tuple[str, ...], progress: bool,
           jobs: int | None, executor: str | Executor | None, out: Path | None,
           warned: Tally) -> RunResult:
    """Validate every point, reuse saved rows, run the rest, collect the table (the run
    warnings of points run in workers added to ``warned``)."""
    points = sweep_points(spec)
    specs = [_load_point(path, overrides, i, point) for i, point in enumerate(points)]
    swept, ticks = swept_cells(spec.sweep.grid, points, specs)
    columns = list(swept[0])
    stage = None if out is None else _stage(out)
    saved = {} if out is None else _saved_points(specs, (stage, out / "points"))
    rows = {i: row for i, (row, _) in saved.items()}
    if rows:
        _check_heatmaps(spec, path, rows[min(rows)], columns)
    todo = [i for i in range(len(points)) if i not in rows]
    twins = _twins(specs, todo)  # point run -> the points that copy its metrics
    todo = list(twins)

    def computed(i: int, metrics: dict[str, Any]) -> None:
        for j in twins.get(i, [i]):
            rows[j] = {"point": j, **swept[j], **metrics}
            if len(rows) == 1:  # the first row, checked before it is saved
                _check_heatmaps(spec, path, rows[j], columns)
            if stage is not None:
                _write_point(stage, j, rows[j], _digest(specs[j]))
            bar.update()

    workers = min(jobs or spec.sweep.jobs or os.cpu_count() or 1, len(todo))
    _prepare([specs[i] for i in todo], executor, workers, progress)
    counter = _step_counter(progress, executor)
    with open_executor(executor, workers, counter) as pool, \
            progress_bar(progress, len(points), spec.name, "point", initial=len(rows)) as bar, \
            _showing_steps(bar, counter, spec.step_unit):
        if pool is None:
            for i in todo:
                computed(i, _run_point(specs[i], i))
        else:
            futures = {pool.submit(counted, _run_points, [specs[i] for i in batch], batch):
                       batch for batch in batches(todo, workers)}
            try:
                for fut in as_completed(futures):
                    rows_of_batch, tally = fut.result()
                    warned.merge(tally)
                    for i, metrics in zip(futures[fut], rows_of_batch):
                        computed(i, metrics)
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
    if stage is not None:
        _complete_stage(stage, len(points), {i: f for i, (_, f) in saved.items()})
    table = pd.DataFrame([rows[i] for i in sorted(rows)])
    if spec.sweep.baseline is not None:
        _compare(table, points, spec.sweep.baseline)
    return _sweep_result(spec, table, columns, ticks)


def _twins(specs: list[ExperimentSpec], todo: list[int]) -> dict[int, list[int]]:
    """The points to run, each with every point of ``todo`` whose run gives the same
    metrics (:meth:`ExperimentSpec.run_key`): run once, copied to the others."""
    first: dict[Any, int] = {}
    out: dict[int, list[int]] = {}
    for i in todo:
        key = specs[i].run_key()
        at = i if key is None else first.setdefault(key, i)
        out.setdefault(at, []).append(i)
    return out


def _prepare(specs: list[ExperimentSpec], executor: str | Executor | None,
             workers: int, progress: bool) -> None:
    """Make once, here, the input every point shares (a policy study's trace: ~20 s and
    6.6 GB to write) when the points run in workers forked from this process, which
    inherit it, instead of each worker making its own copy at the same time."""
    keys = {s.shared_input() for s in specs}
    if (len(keys) == 1 and None not in keys and workers > 1 and executor in (None, "local")
            and _worker_context().get_start_method() == "fork"):
        specs[0].prepare(progress)


def _compare(table: pd.DataFrame, points: list[dict[str, Any]], baseline: Baseline) -> None:
    """Add ``METRIC_loss`` columns: each point's metric against its baseline point's
    (:meth:`Baseline.loss`: positive when worse)."""
    others = [tuple(_yaml_text(v) for k, v in p.items() if k != baseline.key) for p in points]
    base = {o: i for i, (o, p) in enumerate(zip(others, points))
            if p[baseline.key] == baseline.value}
    at = [base[o] for o in others]
    for m, column in zip(baseline.metrics, baseline.columns()):
        value = table[m].to_numpy(dtype=float)
        table[column] = baseline.loss(m, value, value[at])


#: A task takes 1 / (GUIDE x workers) of the points left: large tasks first, so that
#: sending one (a spec to pickle, a round trip to a Dask scheduler) stays small next to
#: running its points, single points last, so that the workers finish together
#: (guided self-scheduling; deceval-sweep's 20 points of 0.2-0.8 s in fixed tasks of two
#: left a worker idle for a task's length at the end).
GUIDE = 2


def batches(points: list[int], workers: int) -> list[list[int]]:
    """``points`` cut into tasks for ``workers``, in order, of shrinking size."""
    out, at = [], 0
    while at < len(points):
        size = max(1, (len(points) - at) // (workers * GUIDE))
        out.append(points[at:at + size])
        at += size
    return out


def _run_points(specs: list[ExperimentSpec], points: list[int]) -> list[dict[str, Any]]:
    """Worker: run several points in turn (one task, one round trip); none once a
    signal stopped this worker (the tasks queued for it end at once)."""
    out = []
    for spec, i in zip(specs, points):
        signals.check()
        out.append(_run_point(spec, i))
    return out


def _run_point(spec: ExperimentSpec, point: int) -> dict[str, Any]:
    """Worker: run one point and keep its scalar metrics (top level, so it pickles)."""
    result = spec.model_copy(update={"figures": False}).run(progress=False, point=point)
    return {k: _py(v) for k, v in result.metrics.items() if v is None or np.isscalar(v)}


def _py(value: Any) -> Any:
    """A numpy scalar as the Python one (plain values print and pickle simply)."""
    return value.item() if isinstance(value, np.generic) else value


def _load_point(path: Path, overrides: tuple[str, ...], i: int,
                point: dict[str, Any]) -> ExperimentSpec:
    """The point's validated spec (without ``sweep``); errors name the point's values and
    where in the file the value at fault (else the grid) is."""
    assigns = {key: f"{key}={_yaml_text(value)}" for key, value in point.items()}
    try:
        return load_experiment(path, (*overrides, *assigns.values(), "sweep=null"))
    except InputError as exc:
        doc = load_document(path, overrides)
        grid = doc.data["sweep"]["grid"]
        culprit = next((k for k, text in assigns.items()
                        if exc.location == Location(f"--set {text}")), None)
        where, key = (("sweep", "grid"), "sweep.grid") if culprit is None else (
            ("sweep", "grid", culprit, grid[culprit].index(point[culprit])),
            f"sweep.grid.{culprit}")
        raise InputError(f"sweep point {i} ({', '.join(assigns.values())}): {exc}",
                         location=doc.locate(where), key=key) from None


def _yaml_text(value: Any) -> str:
    """``value`` as one-line YAML that ``--set`` reads back as the same value."""
    text = yaml.safe_dump(value, default_flow_style=True, width=float("inf"))
    return text.removesuffix("\n...\n").strip()


def swept_cells(grid: dict[str, list[Any]], points: list[dict[str, Any]],
                specs: list[ExperimentSpec]) -> tuple[list[dict[str, Any]],
                                                      dict[str, dict[Any, str]]]:
    """Per point its swept columns ``{column: cell}``; per quantity column, tick texts.

    A key whose values are quantities of one unit ("20 ns", "1.5 us"; plain numbers
    may mix in, e.g. a bare 0) and that every point's validated config holds as a
    number becomes the column ``"KEY [ns]"`` holding that number in cxlsim's internal
    unit (see :mod:`cxlsim.units`), so it sorts, plots and filters as numbers; its
    ticks show each number as the grid wrote it. Any other key keeps its values
    (collections as YAML text): a string that only looks like a quantity, such as the
    flit mode "256B", stays a string.
    """
    dumps = [s.model_dump(by_alias=True) for s in specs]
    units = {key: _unit(key, values, dumps) for key, values in grid.items()}
    columns = {key: f"{key} [{unit}]" if unit else key for key, unit in units.items()}
    cells = [{columns[k]: _at(dump, k) if units[k] else _cell(v) for k, v in point.items()}
             for point, dump in zip(points, dumps)]
    ticks = {columns[k]: {row[columns[k]]: str(point[k]) for point, row in zip(points, cells)}
             for k, unit in units.items() if unit}
    return cells, ticks


def _unit(key: str, values: list[Any], dumps: list[dict[str, Any]]) -> str | None:
    """The unit of grid key ``key`` if it is a quantity (see :func:`swept_cells`)."""
    quantities = [parse_quantity(v) for v in values if not _is_number(v)]
    units = {q[1] if q else None for q in quantities}
    if len(units) != 1 or None in units or not all(_is_number(_at(d, key)) for d in dumps):
        return None
    return units.pop()


def _at(dump: dict[str, Any], key: str) -> Any:
    """The value at ``key`` (a ``--set`` key path) in a config dump; None if none."""
    node: Any = dump
    for part in parse_assignment(f"{key}=")[0]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _is_number(value: Any) -> bool:
    """A plain real number (not a bool, which YAML users mean as a flag)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


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


def _stage(out: Path) -> Path:
    """``OUT.points/``, checked before anything runs: absent, or made by cxlsim (it holds
    :data:`POINTS_MARKER`); anything else there is the user's and is refused."""
    stage = stage_dir(out)
    if stage.is_symlink() or (stage.exists() and not (stage / POINTS_MARKER).is_file()):
        raise InputError(f"{str(stage)!r} exists and was not made by cxlsim (no "
                         f"{POINTS_MARKER} marker); cxlsim keeps a sweep's finished points "
                         "there, so move it away or choose another --out", key="--out")
    return stage


def _saved_points(specs: list[ExperimentSpec], folders: tuple[Path, ...]
                  ) -> dict[int, tuple[dict[str, Any], Path]]:
    """Per point saved with the same config, its row and file (first folder first)."""
    saved = {}
    for i, spec in enumerate(specs):
        digest = _digest(spec)
        for folder in folders:
            if (row := _read_point(_point_file(folder, i), digest)) is not None:
                saved[i] = row, _point_file(folder, i)
                break
    return saved


def _make_stage(stage: Path) -> None:
    """Create ``stage`` (checked by :func:`_stage`) with its marker, if not there yet."""
    stage.mkdir(parents=True, exist_ok=True)
    (stage / POINTS_MARKER).touch()


def _complete_stage(stage: Path, points: int, resumed: dict[int, Path]) -> None:
    """Make ``stage`` hold exactly the sweep's rows: copy in those resumed from the old
    run folder, drop files of points no longer in the grid and unfinished writes."""
    _make_stage(stage)
    for i, f in resumed.items():
        if f.parent != stage:
            shutil.copy2(f, _point_file(stage, i))
    keep = {_point_file(stage, i).name for i in range(points)}
    for f in [*stage.glob("point-*.parquet"), *stage.glob(".point-*.tmp")]:
        if f.name not in keep:
            f.unlink()


def _write_point(stage: Path, i: int, row: dict[str, Any], digest: str) -> None:
    """One row as a Parquet file, written atomically, tagged with the config digest;
    the first one makes ``stage``."""
    _make_stage(stage)
    table = pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _DIGEST_KEY:
                                           digest.encode()})
    target = _point_file(stage, i)
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, target)


def _read_point(file: Path, digest: str) -> dict[str, Any] | None:
    """The row saved in ``file`` if it exists and was run with the same config."""
    try:
        table = pq.read_table(file)
    except (OSError, pa.ArrowException):
        return None
    if (table.schema.metadata or {}).get(_DIGEST_KEY) != digest.encode():
        return None
    return table.to_pylist()[0]


def _check_heatmaps(spec: ExperimentSpec, path: Path, row: dict[str, Any],
                    columns: list[str]) -> None:
    """Fail if a heat-map or baseline metric is missing from ``row`` or not a number
    there (a heat map may also draw a baseline comparison's column).

    Metric names are only known from a run (they may depend on the point's config), so
    the first row (saved, else the first to finish, before it is saved) is the earliest
    check: nothing of this run is written yet. Later rows may lack the metric (NaN).
    """
    swept = {"point", *columns}
    numeric = sorted(k for k, v in row.items()
                     if k not in swept and (v is None or _is_number(v)))
    baseline = spec.sweep.baseline
    compared = baseline.columns() if baseline else []
    for key, names in (("baseline.metrics", baseline.metrics if baseline else []),
                       ("heatmaps", spec.sweep.heatmaps)):
        for i, m in enumerate(names):
            if m not in numeric and (key == "baseline.metrics" or m not in compared):
                raise InputError(f"{m!r} is not a numeric metric of sweep point "
                                 f"{row['point']} (kind {spec.kind!r}); its numeric metrics "
                                 f"are {', '.join(numeric + compared) or 'none'}",
                                 location=str(path), key=f"sweep.{key}[{i}]")


def _step_counter(progress: bool, executor: str | Executor | None) -> Any:
    """The integer a sweep's points count their steps into (their epochs, ...), shared
    with its local workers, when the sweep shows progress; else None."""
    if not progress or executor not in (None, "local"):
        return None
    return _worker_context().Value("q", 0)


@contextmanager
def _showing_steps(bar: Any, counter: Any, unit: str) -> Iterator[None]:
    """While the block runs, the steps (in ``unit``) done inside points (``counter``)
    beside the points on ``bar``, redrawn by a thread of this process."""
    if counter is None:
        yield
        return
    count_into(counter)  # the points run here when there is one worker
    done = threading.Event()

    def show() -> None:
        inside = format_size(counter.value) if unit == "B" else f"{counter.value:,} {unit}s"
        bar.set_postfix_str(f"{inside} inside points", refresh=True)

    def watch() -> None:
        while not done.wait(1 / REDRAW):
            show()

    watcher = threading.Thread(target=watch, name="cxlsim-steps", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        count_into(None)
        show()


@contextmanager
def open_executor(executor: str | Executor | None, jobs: int, counter: Any = None
                  ) -> Iterator[Executor | None]:
    """The executor to use, or None to run in this process; closes what it opened.
    Local workers count their points' steps into ``counter`` (:func:`_step_counter`)."""
    if isinstance(executor, Executor):
        yield executor
    elif executor in (None, "local"):
        if jobs <= 1:
            yield None
        else:
            with ProcessPoolExecutor(jobs, mp_context=_worker_context(),
                                     initializer=_start_worker,
                                     initargs=(os.getpid(), jobs, counter)) as pool:
                pool.submit(int).result()  # workers start now, before any progress thread
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


#: What a forkserver imports before forking workers: the sweep and every experiment kind.
PRELOAD = ["cxlsim.experiments.sweep", *sorted(set(kind_modules().values()))]


def _worker_context() -> multiprocessing.context.BaseContext:
    """How workers start, cheapest safe way first.

    * Linux, this process single-threaded (the CLI): ``fork`` -- a worker is a copy of
      this process, everything already imported; forking is unsafe only while other
      threads may hold locks, and there are none.
    * Otherwise (Jupyter, tqdm's monitor, a user's threads; macOS, whose system
      libraries do not survive a fork): ``forkserver`` with :data:`PRELOAD` -- workers
      forked from a clean single-threaded server that imported cxlsim once, so each
      starts in milliseconds instead of importing pandas, plotly, numba and every kind
      anew (about a second).
    * Where neither exists (Windows): ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _start_worker(parent: int, jobs: int, counter: Any = None) -> None:
    """Worker initializer: a share of the host's CPUs for the worker's own threads
    (:data:`cxlsim.memory.cores.THREADS_ENV`), an end when its parent is gone, and its
    points' steps counted into the sweep's ``counter`` (None: not shown)."""
    os.environ["CXLSIM_THREADS"] = str(max((os.cpu_count() or 1) // jobs, 1))
    count_into(counter)
    _exit_with_parent(parent)


def _exit_with_parent(parent: int, poll: float = 0.5) -> None:
    """Worker initializer: end this worker once its parent is gone (e.g. killed by
    SIGKILL, which gives the pool no chance to stop its workers), with the temporary
    folders it made."""
    def watch() -> None:  # the parent is not ours to wait for: a forkserver forked us
        while _alive(parent):
            time.sleep(poll)
        scratch.remove_own()
        os._exit(1)

    threading.Thread(target=watch, name="cxlsim-parent-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (signal 0 checks without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else (the pid was reused)
        return False
    return True


def _sweep_result(spec: ExperimentSpec, table: pd.DataFrame, keys: list[str],
                  ticks: dict[str, dict[Any, str]]) -> RunResult:
    """Metrics (point count, min/max of each heat-map metric), the table, the figures.

    One grid key gives line plots, two or more heat maps over the first two keys
    (``keys``, the swept columns; ``ticks`` as from :func:`swept_cells`).
    """
    from cxlsim.plot.heatmap import heatmap

    for key in keys:  # a column mixing numbers and text cannot go to Parquet: text it
        if pd.api.types.infer_dtype(table[key], skipna=True) in ("mixed", "mixed-integer"):
            table[key] = table[key].astype(str)
    metrics: dict[str, Any] = {"points": len(table)}
    figures = {}
    for m in spec.sweep.heatmaps:
        metrics[f"{m}_min"], metrics[f"{m}_max"] = _py(table[m].min()), _py(table[m].max())
        y = keys[1] if len(keys) > 1 else None
        title = f"{m} over {keys[0]}" + (f" and {y}" if y else "")
        figures[m] = heatmap(table, keys[0], y, m, title, ticks)
    return RunResult(spec.name, spec, metrics, {"points": table}, figures)
