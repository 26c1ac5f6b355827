"""Generated traces shared by the runs of one process (cxlsim.experiments.trace_cache)."""

from __future__ import annotations

import multiprocessing
import os

from cxlsim.experiments import trace_cache
from cxlsim.experiments.kinds import trace_memory
from cxlsim.tiered.run import survey as real_survey
from test_trace_memory import _spec


def _files(folder):
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


def test_runs_of_one_trace_share_its_file_and_survey_with_the_same_results(tmp_path,
                                                                          monkeypatch):
    surveys = []
    monkeypatch.setattr(trace_memory, "survey",
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
    assert len(list(own.iterdir())) == trace_cache.CACHED_TRACES  # the oldest two gone
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
    assert len(list(own.iterdir())) == 1 and made[-1].exists()
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
