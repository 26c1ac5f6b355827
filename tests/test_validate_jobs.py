"""``cxlsim validate --jobs N`` runs the checks side by side with the same rows as one."""

from __future__ import annotations

import pytest

from cxlsim.cli import main
from cxlsim.validation import run as validation_run
from cxlsim.validation import registered_checks


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
