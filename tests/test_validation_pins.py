"""Every row of ``cxlsim validate`` (quick mode) is pinned: its status exactly and every
number of its simulated value within 1 % (or 0.05), against ``validation_pins.yaml``; the
rows of ``cxlsim validate --full`` likewise against ``validation_pins_full.yaml``: CI runs
the full validation before the tests and hands its rows over (``CXLSIM_FULL_ROWS``), and
``pytest -m slow`` runs it here. A model change that moves a row fails here until the pins are
re-recorded on purpose:

    python tests/test_validation_pins.py --record [--full]

``--full`` also rewrites ``docs/fidelity.md`` from the rows it records
(:mod:`cxlsim.validation.fidelity`); after editing only ``cxlsim/validation/fidelity.yaml``,
``python tests/test_validation_pins.py --page`` rewrites it from the full-mode pins as
they are, without a run.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

PINS = Path(__file__).with_name("validation_pins.yaml")
PINS_FULL = Path(__file__).with_name("validation_pins_full.yaml")
#: The fidelity page, rewritten from the rows ``--record --full`` records.
PAGE = Path(__file__).resolve().parents[1] / "docs" / "fidelity.md"
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _numbers(text: str | None) -> list[float]:
    return [float(n) for n in _NUMBER.findall(text or "")]


def _pins(path: Path = PINS) -> dict[str, dict]:
    return {row["id"]: row for row in yaml.safe_load(path.read_text(encoding="utf-8"))}


def pinned_rows() -> list[dict]:
    """The full-mode rows as pinned, in the columns the fidelity page reads: the targets'
    published values with the pins' status and simulated value."""
    from cxlsim.validation import targets

    pins = _pins(PINS_FULL)
    return [{**target, **pins[target["id"]]} for target in targets()]


def _matches(row: dict, pin: dict) -> None:
    assert row["status"] == pin["status"]
    got, want = _numbers(row["simulated"]), _numbers(pin["simulated"])
    assert len(got) == len(want), (row["simulated"], pin["simulated"])
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=0.01, abs=0.05), (row["simulated"], pin["simulated"])


def test_every_target_is_pinned(quick_validation):
    assert [row["id"] for row in quick_validation] == list(_pins())


@pytest.mark.parametrize("target", list(_pins()))
def test_row_matches_its_pin(quick_validation, target):
    _matches(next(r for r in quick_validation if r["id"] == target), _pins()[target])


#: The rows of a full run CI made before the tests (``cxlsim validate --full --json``).
FULL_ROWS = os.environ.get("CXLSIM_FULL_ROWS")


def _full_rows_match_their_pins(rows: list[dict]) -> None:
    pins = _pins(PINS_FULL)
    assert [row["id"] for row in rows] == list(pins)
    for row in rows:
        _matches(row, pins[row["id"]])


@pytest.mark.skipif(FULL_ROWS is None, reason="no full run handed over (.ci/run makes one)")
def test_the_full_run_ci_made_matches_the_pins():
    """CI's full validation: every row's value and status as pinned."""
    _full_rows_match_their_pins(json.loads(Path(FULL_ROWS).read_text(encoding="utf-8")))


@pytest.mark.slow
def test_every_full_mode_row_matches_its_pin():
    """The same, running the full validation here (~30 min with two processes)."""
    from cxlsim.validation.run import validate

    _full_rows_match_their_pins(validate(quick=False, jobs=2))


def test_the_full_mode_pins_cover_the_same_targets():
    assert list(_pins(PINS_FULL)) == list(_pins())


def test_quick_mode_gives_every_row_the_full_modes_status():
    """Quick mode is the same study at a coarser scale: row by row, its pinned status is
    the full run's, but for a row quick mode does not judge (SMOKE, which says why)."""
    from cxlsim.validation import SMOKE

    full = _pins(PINS_FULL)
    differ = {id_: (pin["status"], full[id_]["status"]) for id_, pin in _pins().items()
              if pin["status"] not in (SMOKE, full[id_]["status"])}
    assert not differ, differ


def test_a_calibrated_row_that_drifts_out_of_its_tolerance_fails():
    from cxlsim.validation import CALIBRATED, FAIL, Outcome
    from cxlsim.validation.run import held

    seconds = {"id": "T2.1", "published": "10.58 s", "tolerance": "±1 %"}
    points = {"id": "T5.4", "published": "18.8 %", "tolerance": "±2 points"}
    assert held(seconds, Outcome("10.65 s", CALIBRATED)).status == CALIBRATED  # +0.66 %
    assert held(seconds, Outcome("10.70 s", CALIBRATED, "fitted")).status == FAIL  # +1.1 %
    assert held(points, Outcome("+20.7%", CALIBRATED)).status == CALIBRATED
    drifted = held(points, Outcome("+21.0%", CALIBRATED, "fitted"))
    assert drifted.status == FAIL and "+2.20 points" in drifted.note and "fitted" in drifted.note
    assert held(points, Outcome("+30%", "PASS")).status == "PASS"  # others untouched


def test_a_moved_row_is_caught():
    assert _numbers("14.04x at p=0.9, -2.8 %") == [14.04, 0.9, -2.8]
    assert 14.5 != pytest.approx(14.04, rel=0.01, abs=0.05)


if __name__ == "__main__" and sys.argv[1:] in (["--record"], ["--record", "--full"]):
    from cxlsim.validation.fidelity import check_page, write_page
    from cxlsim.validation.run import validate

    full = sys.argv[2:] == ["--full"]
    path = PINS_FULL if full else PINS
    if full:  # the full rows also rewrite the fidelity page: refused now, not after the run
        check_page(PAGE)
    header = "".join(line + "\n" for line in path.read_text().splitlines()
                     if line.startswith("#")) if path.exists() else ""
    rows = validate(quick=not full, jobs=2)
    pins = [{"id": r["id"], "status": r["status"], "simulated": r["simulated"]} for r in rows]
    path.write_text(header + yaml.safe_dump(pins, sort_keys=False, width=200,
                                            allow_unicode=True), encoding="utf-8")
    print(f"recorded {len(pins)} rows in {path}")
    if full:
        write_page(PAGE, rows)
        print(f"wrote {PAGE}")


if __name__ == "__main__" and sys.argv[1:] == ["--page"]:
    from cxlsim.validation.fidelity import write_page

    write_page(PAGE, pinned_rows())
    print(f"wrote {PAGE}")
