"""``cxlsim validate --jobs N`` runs the checks side by side with the same rows as one."""

from __future__ import annotations

import functools
import json
import warnings

import pytest

from conftest import refused
from cxlsim.cli import main
from cxlsim.errors import RunWarning
from cxlsim.validation import PASS, Outcome, registered_checks
from cxlsim.validation import run as validation_run


@pytest.fixture
def cheap_checks(monkeypatch):
    """Three of the fast checks (flit efficiency, hmalloc page counts, Little's law)."""
    keep = [(ids, fn) for ids, fn in registered_checks() if ids[0] in ("T7.1", "T5.7", "T7.3")]
    assert len(keep) == 3
    monkeypatch.setattr(validation_run, "registered_checks", lambda: keep)


def test_parallel_checks_give_the_serial_rows(cheap_checks):
    serial = validation_run.validate(quick=True, jobs=1)
    parallel = validation_run.validate(quick=True, jobs=2)
    assert parallel == serial
    assert {r["id"] for r in serial if r["status"] != "NOT MODELLED"} == {"T7.1", "T5.7", "T7.3"}


def test_jobs_below_one_is_refused(capsys):
    assert main(["validate", "--quick", "--jobs", "0"]) == 2
    assert "expected --jobs of 1 or more; found 0" in capsys.readouterr().err


def test_only_runs_the_checks_behind_the_named_targets(monkeypatch, capsys):
    ran = []
    checks = registered_checks()
    monkeypatch.setattr(validation_run, "registered_checks", lambda: [
        (ids, lambda quick, fn=fn: ran.append(fn.__name__) or fn(quick)) for ids, fn in checks])
    rows = validation_run.validate(quick=True, only=["T7.1", "T5.7"])
    assert [r["id"] for r in rows] == ["T5.7", "T7.1"]  # in the targets' order
    assert len(ran) == 2
    assert main(["validate", "--quick", "--json", "--jobs", "1", "--only", "T7"]) in (0, 1)
    ids = [r["id"] for r in json.loads(capsys.readouterr().out)]
    assert ids == ["T7.1", "T7.2", "T7.3", "T7.4"]  # a family: T7.*, not T7.1 alone


@pytest.mark.parametrize("argv, message", [
    (["--only", "T9"], "--only: 'T9' names no target; expected an id such as T8.5 or a "
                       "family: T1, T2, T3, T4, T5, T6, T7, T8"),
    (["--only", "T8.1,T8.11"], "'T8.11' names no target"),
    (["--only", "T8", "--page", "page.md"], "the fidelity page holds every row; drop --only"),
])
def test_only_refuses_names_without_targets(capsys, argv, message):
    refused(capsys, ["validate", "--quick", *argv], message)


def _idle_check(quick: bool, target: str) -> dict[str, Outcome]:
    """A check whose run warns, as a TPP run whose policy never acted."""
    warnings.warn(RunWarning("policy tpp never acted", "tpp-2to1"))
    return {target: Outcome("1", PASS, "")}


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_checks_run_warnings_are_shown_once_with_their_count(monkeypatch, jobs):
    """In this process or in workers: one warning after the run, not one per check."""
    checks = [((t,), functools.partial(_idle_check, target=t)) for t in ("T7.1", "T7.2", "T7.3")]
    monkeypatch.setattr(validation_run, "registered_checks", lambda: checks)
    with pytest.warns(RunWarning) as caught:
        validation_run.validate(quick=True, jobs=jobs, only=["T7.1", "T7.2", "T7.3"])
    assert [str(w.message) for w in caught] == ["tpp-2to1: policy tpp never acted (3 times)"]
