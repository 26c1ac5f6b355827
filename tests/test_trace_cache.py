"""Generated traces shared by the runs of one process (cxlsim.experiments.trace_cache)."""

from __future__ import annotations

import multiprocessing
import os

from cxlsim.experiments import load_experiment, trace_cache
from cxlsim.experiments import trace_input
from cxlsim.tiered.trace_survey import survey as real_survey
from test_trace_memory import _spec


def _traces(folder):
    """The kept traces' folders in the cache's folder (beside its owner marker)."""
    return [p for p in folder.iterdir() if p.is_dir()]


def test_runs_of_one_trace_share_its_file_and_survey_with_the_same_results(tmp_path,
                                                                          monkeypatch):
    surveys = []
    monkeypatch.setattr(trace_input, "survey",
                        lambda chunks: surveys.append(1) or real_survey(chunks))
    spec = _spec(tmp_path, n=60_000, epoch=20_000)
    first, second = spec.run(), spec.run()
    assert first.metrics == second.metrics and len(surveys) == 1
    path, surveyed = trace_cache.generated(("uniform", 60_000, spec.trace.seed, tuple(
        f"{k}={v}" for k, v in spec.trace.params.items())), 60_000, None, None)
    assert path.is_file() and surveyed[0] is not None
    assert not surveyed[0].counts.flags.writeable  # shared: a run cannot change it
    monkeypatch.setattr(trace_cache, "CACHED_RECORDS", 0)  # nothing kept: same results
    assert spec.run().metrics == first.metrics and len(surveys) == 2


def test_only_the_last_few_traces_within_the_record_budget_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_cache, "_cache", trace_cache._Cache())
    made = []

    def make(folder):
        made.append(folder)
        (folder / "t").write_text("x")
        return folder / "t"

    for k in range(trace_cache.CACHED_TRACES + 2):
        trace_cache.generated(k, 10, make, None)
    own = trace_cache._cache.folder
    assert own.name.startswith("cxlsim-traces-")
    assert len(_traces(own)) == trace_cache.CACHED_TRACES  # the oldest two gone
    assert not made[0].exists() and made[-1].exists()
    trace_cache.generated(trace_cache.CACHED_TRACES + 1, 10, make, None)  # kept: not made
    assert len(made) == trace_cache.CACHED_TRACES + 2
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    path, surveyed = trace_cache.generated("big", trace_cache.CACHED_RECORDS + 1, make,
                                           lambda: scratch)
    assert path.parent == scratch and surveyed == [None]
    # a trace as large as the budget: every other one goes to make room, it stays
    trace_cache.generated("large", trace_cache.CACHED_RECORDS, make, None)
    assert len(_traces(own)) == 1 and made[-1].exists()
    trace_cache.generated("large", trace_cache.CACHED_RECORDS, make, None)  # kept
    assert len(made) == trace_cache.CACHED_TRACES + 4  # the scratch one too


def _child(queue):
    path, _ = trace_cache.generated("child", 10, _make_in, None)
    queue.put((os.getpid(), str(path)))


def _make_in(folder):
    (folder / "t").write_text("x")
    return folder / "t"


def test_a_forked_worker_keeps_its_own_traces_and_removes_them(tmp_path):
    parent, _ = trace_cache.generated("parent", 10, _make_in, None)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    pid, path = queue.get(timeout=60)
    child.join(60)
    assert pid != os.getpid() and not path.startswith(str(parent.parent.parent))
    assert not os.path.exists(path)          # the worker's folder went with it
    assert parent.is_file()                   # the parent's trace is untouched
    assert parent.read_text() == "x"


def _child_reads(queue):
    made = []
    path, surveyed = trace_cache.generated(
        "shared", 10, lambda folder: made.append(folder) or _make_in(folder), None)
    for k in range(trace_cache.CACHED_TRACES + 1):  # room for its own: the parent's stays
        trace_cache.generated(("own", k), 10, _make_in, None)
    queue.put((str(path), len(made), surveyed[0]))


def test_a_forked_worker_reads_the_traces_its_parent_kept_and_never_removes_them():
    parent, surveyed = trace_cache.generated("shared", 10, _make_in, None)
    surveyed[0] = "the survey"
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_reads, args=(queue,))
    child.start()
    path, made, survey = queue.get(timeout=60)
    child.join(60)
    assert (path, made, survey) == (str(parent), 0, "the survey")
    assert parent.read_text() == "x"


def test_a_sweep_generates_its_shared_trace_once_before_forking(tmp_path, monkeypatch):
    """Every point of this sweep reads one generated trace: the sweep makes it in this
    process, and the forked workers read it instead of each generating a copy."""
    from cxlsim.experiments import sweep
    from test_trace_memory import BASE

    real = trace_input.generate
    makers = tmp_path / "makers"
    makers.mkdir()

    def generate(*args):
        (makers / str(os.getpid())).touch()
        return real(*args)

    monkeypatch.setattr(trace_input, "generate", generate)
    monkeypatch.setattr(trace_cache, "_cache", trace_cache._Cache())
    # as from the CLI (pytest's own threads would make the sweep choose forkserver)
    monkeypatch.setattr(sweep, "_worker_context", lambda: multiprocessing.get_context("fork"))
    path = tmp_path / "tm.yaml"
    path.write_text(BASE % ("uniform", 40_000, "64MiB", "", 20_000)
                    + "sweep: {grid: {policy: [all-local, static, all-cxl, tpp]}}\n")
    parallel = sweep.run_file(path, jobs=2).tables["points"]
    assert [p.name for p in makers.iterdir()] == [str(os.getpid())]
    assert parallel.equals(sweep.run_file(path, jobs=1).tables["points"])


def test_a_sweep_runs_a_bound_once_for_every_dram_share(tmp_path, monkeypatch):
    """all-local and all-cxl give their nodes room for every page, so the DRAM share
    cannot change their run: the sweep runs each once and copies the row."""
    from cxlsim.experiments import sweep
    from test_trace_memory import BASE

    ran = []
    real = sweep._run_point
    monkeypatch.setattr(sweep, "_run_point", lambda spec, i: ran.append(i) or real(spec, i))
    path = tmp_path / "tm.yaml"
    path.write_text(BASE % ("uniform", 40_000, "64MiB", "", 20_000) + (
        "sweep:\n  grid:\n    policy: [all-local, static, all-cxl]\n"
        "    topology.nodes[dram0].capacity: [60 %, 20 %]\n"))
    table = sweep.run_file(path, jobs=1, out=tmp_path / "run").tables["points"]
    assert ran == [0, 2, 3, 4]  # static at both shares; each bound once
    metrics = [c for c in table.columns if c not in ("point", "policy")
               and not c.startswith("topology.")]
    for bound in ("all-local", "all-cxl"):
        rows = table[table.policy == bound][metrics]
        assert len(rows) == 2 and rows.iloc[0].equals(rows.iloc[1])
    alone = load_experiment(path, ["policy=all-cxl", "topology.nodes[dram0].capacity=20 %",
                                   "sweep=null"]).run().metrics
    assert table[table.policy == "all-cxl"].iloc[1]["app_time_s"] == alone["app_time_s"]
    saved = sorted(p.name for p in (tmp_path / "run" / "points").glob("point-*"))
    assert saved == [f"point-{i:05d}.parquet" for i in range(6)]  # a copy is saved too
