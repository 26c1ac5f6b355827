"""``docs/fidelity.md`` is the fidelity page of the pinned full-mode rows, byte for byte;
``fidelity.yaml`` covers exactly the targets; ``--page`` never overwrites a file cxlsim
did not write. Nothing here runs the validation: rows come from the pins or are canned."""

from __future__ import annotations

import pytest
import yaml

from cxlsim.cli import main
from cxlsim.errors import InputError
from cxlsim.validation import targets
from cxlsim.validation.fidelity import MARKER, check_page, error, metadata, page, write_page
from conftest import REPO, refused
from test_validation_pins import PAGE, pinned_rows

FIDELITY = REPO / "cxlsim" / "validation" / "fidelity.yaml"


def test_the_page_is_current():
    assert PAGE.read_text(encoding="utf-8") == page(pinned_rows()), (
        "docs/fidelity.md is not the page of tests/validation_pins_full.yaml and "
        "cxlsim/validation/fidelity.yaml: regenerate it with `python "
        "tests/test_validation_pins.py --page` (from the pins as they are) or `python "
        "tests/test_validation_pins.py --record --full` (reruns the validation)")


def test_every_row_has_a_platform_and_classified_inputs():
    entries = metadata()
    assert list(entries) == [t["id"] for t in targets()]
    for entry in entries.values():
        assert entry.platform and entry.inputs
        assert {i.kind for i in entry.inputs} <= {"sourced", "assumed", "calibrated"}
    for row in pinned_rows():  # a CALIBRATED row, or one whose status says "(idle
        # calibrated)", rests on an input fitted to it
        if row["status"] == "CALIBRATED" or row["status"].endswith(" calibrated)"):
            assert any(row["id"] in i.basis for i in entries[row["id"]].inputs
                       if i.kind == "calibrated"), row["id"]


def test_the_error_is_relative_in_points_or_the_status():
    assert error("14.0x", "14.18x", "FAIL") == "+1.3 %"
    assert error("1.45x", "1.434x (7.380 s)", "PASS") == "-1.1 %"
    assert error("-7 %", "-4.4% (memory latency 260 vs 112 ns)", "FAIL") == "+2.6 points"
    assert error("10.58 s", "10.580 s", "CALIBRATED") == "+0.0 %"
    assert error("8 MB", "8 MiB (first of 2 knees)", "PASS") == "PASS"  # units differ
    assert error("16.5 % / 22 %", "7.7 % (local traffic 48.2 %)", "FAIL") == "FAIL"
    assert error("qualitative", "ram > cxl", "PASS") == "PASS"
    assert error("36 GB/s", None, "NOT MODELLED") == "NOT MODELLED"


def _edited(tmp_path, edit) -> str:
    """The message of the error ``metadata`` raises for fidelity.yaml changed by ``edit``."""
    data = yaml.safe_load(FIDELITY.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / "fidelity.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        metadata(path)
    assert str(caught.value).startswith(f"{path}: ")
    return str(caught.value)


def test_a_target_without_an_entry_is_an_error(tmp_path):
    message = _edited(tmp_path, lambda d: d["rows"].pop("T8.6"))
    assert message.endswith("T8.6: a target of targets.yaml with no entry")


def test_an_entry_that_is_no_target_is_an_error(tmp_path):
    message = _edited(tmp_path, lambda d: d["rows"].update({"T9.1": d["rows"]["T8.6"]}))
    assert message.endswith("T9.1: not a target of targets.yaml")


def test_an_unknown_unused_or_unclassified_input_is_an_error(tmp_path):
    assert _edited(tmp_path, lambda d: d["rows"]["T1.1"]["inputs"].append("pcie9")).endswith(
        "T1.1: unknown input 'pcie9'")
    assert _edited(tmp_path, lambda d: d["inputs"].update(
        {"spare": {"value": "1 ns", "assumed": "any"}})).endswith("input spare: used by no row")
    two_kinds = {"value": "1 ns", "assumed": "any", "sourced": "a paper"}
    assert "input port-latency: expected 'value' and one of sourced, assumed, calibrated" in \
        _edited(tmp_path, lambda d: d["inputs"].update({"port-latency": two_kinds}))
    assert "T7.1: expected 'platform'" in _edited(
        tmp_path, lambda d: d["rows"]["T7.1"].pop("platform"))


CANNED = [{"id": t["id"], "quantity": t["quantity"], "published": t["published"],
           "simulated": "1.0x", "tolerance": t["tolerance"], "status": "PASS", "note": ""}
          for t in targets()]


@pytest.fixture
def canned(monkeypatch):
    """``cxlsim validate`` answering with :data:`CANNED` rows, the checks never run."""
    monkeypatch.setattr("cxlsim.validation.run.validate",
                        lambda quick, progress, jobs, only, on_row=None: [
                            dict(row) for row in CANNED])


def test_validate_writes_the_page(canned, tmp_path, capsys):
    out = tmp_path / "fidelity.md"
    assert main(["validate", "--quick", "--json", "--page", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == page(CANNED, quick=True)
    assert capsys.readouterr().err == f"wrote {out}\n"
    assert main(["validate", "--quick", "--page", str(out)]) == 0  # its own page: replaced
    assert [p.name for p in tmp_path.iterdir()] == ["fidelity.md"]  # no temporary left


def test_validate_refuses_a_file_it_did_not_write_before_running(tmp_path, capsys,
                                                                  monkeypatch):
    def run(**kwargs):
        raise AssertionError("the validation ran")

    monkeypatch.setattr("cxlsim.validation.run.validate", run)
    mine = tmp_path / "notes.md"
    mine.write_text("# My notes\n", encoding="utf-8")
    refused(capsys, ["validate", "--quick", "--page", str(mine)],
            "not a page cxlsim generated")
    assert mine.read_text(encoding="utf-8") == "# My notes\n"
    refused(capsys, ["validate", "--page", str(tmp_path)], "is a folder")
    refused(capsys, ["validate", "--page", str(tmp_path / "no" / "page.md")],
            "the folder does not exist")


def test_write_page_checks_again_at_the_end(tmp_path):
    """A file made while the validation ran is not overwritten either."""
    out = tmp_path / "fidelity.md"
    check_page(out)  # absent: fine
    out.write_text("mine\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a page cxlsim generated"):
        write_page(out, CANNED)
    assert out.read_text(encoding="utf-8") == "mine\n"
    out.write_text(MARKER + " by an older cxlsim -->\n", encoding="utf-8")
    write_page(out, CANNED)
    assert out.read_text(encoding="utf-8") == page(CANNED)
