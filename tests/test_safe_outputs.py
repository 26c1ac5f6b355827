"""Run folders and output paths: cxlsim never deletes or overwrites what it did not write,
and a bad output path is one line on stderr with exit status 2, before any work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import SWITCH_POOL, SWITCH_POOL_ROUTES
from cxlsim.cli import main
from cxlsim.experiments.output import MARKER


def _experiment(tmp_path: Path, name: str, grid: str = "") -> Path:
    path = tmp_path / "e.yaml"
    path.write_text(f"name: {name!r}\nkind: routes\ntopology: {SWITCH_POOL}\n{grid}",
                    encoding="utf-8")
    return path


def _fails(capsys, argv: list[str], fragment: str) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("cxlsim: error: ") and err.count("\n") == 1, err
    assert fragment in err


def test_out_on_a_users_folder_is_refused_and_untouched(capsys, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    _fails(capsys, ["run", str(SWITCH_POOL_ROUTES), "--out", str(mine)],
           f"--out: '{mine}' is a folder cxlsim did not write (no .cxlsim-run marker)")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert (mine / "notes.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_out_on_a_file_or_under_a_file_is_refused(capsys, tmp_path):
    afile = tmp_path / "results.csv"
    afile.write_text("a,b\n")
    _fails(capsys, ["run", str(SWITCH_POOL_ROUTES), "--out", str(afile)],
           f"--out: '{afile}' exists and is not a folder; cxlsim will not replace it")
    _fails(capsys, ["run", str(SWITCH_POOL_ROUTES), "--out", str(afile / "run")],
           f"cannot make '{afile / 'run'}': '{afile}' is a file")
    assert afile.read_text() == "a,b\n"


@pytest.mark.parametrize("out", [".", "..", "./"])
def test_out_on_the_current_folder_is_refused(capsys, tmp_path, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("x")
    _fails(capsys, ["run", str(SWITCH_POOL_ROUTES), "--out", out],
           "is the current folder or above it")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]  # no ..old.* left


def test_out_in_a_folder_we_cannot_write(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    _fails(capsys, ["run", str(SWITCH_POOL_ROUTES), "--out", str(tmp_path / "r")],
           f"cannot make '{tmp_path / 'r'}': no permission to write in '{tmp_path}'")


def test_an_os_error_while_writing_is_one_line(capsys, tmp_path, monkeypatch):
    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "r"))

    monkeypatch.setattr("cxlsim.experiments.sweep.write_run_folder", full)
    _fails(capsys, ["run", str(SWITCH_POOL_ROUTES), "--out", str(tmp_path / "r")],
           f"cxlsim: error: {tmp_path / 'r'}: No space left on device")


@pytest.mark.parametrize("name", ["/some/folder", "../../../x", "a/b", "..", ".hidden", ""])
def test_experiment_name_must_be_a_plain_name(capsys, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    path = _experiment(tmp_path, name)
    _fails(capsys, ["run", str(path)], "e.yaml:1:7: name: expected a plain name (letters, "
                                       "digits, '_', '.', '-'; no '/'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml"]


def test_rerun_makes_a_new_folder_and_keeps_the_first(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _experiment(tmp_path, "pool")
    assert main(["run", str(path)]) == 0
    first = (tmp_path / "runs" / "pool" / "metrics.json").read_text()
    assert main(["run", str(path), "--set", "seed=3"]) == 0
    assert main(["run", str(path), "--set", "seed=4"]) == 0
    err = capsys.readouterr().err
    assert "run folder: runs/pool-2" in err and "run folder: runs/pool-3" in err
    assert (tmp_path / "runs" / "pool" / "metrics.json").read_text() == first
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["pool", "pool-2", "pool-3"]


def test_explicit_out_replaces_a_previous_run_and_says_so(capsys, tmp_path):
    out = tmp_path / "r"
    assert main(["run", str(SWITCH_POOL_ROUTES), "--out", str(out)]) == 0
    assert (out / MARKER).is_file()
    capsys.readouterr()
    assert main(["run", str(SWITCH_POOL_ROUTES), "--out", str(out), "--set", "seed=5"]) == 0
    assert f"replacing the previous run folder {out}" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_an_empty_folder_may_be_the_run_folder(tmp_path):
    (tmp_path / "r").mkdir()
    assert main(["run", str(SWITCH_POOL_ROUTES), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "metrics.json").is_file()


def test_a_users_folder_named_like_sweep_staging_is_refused(capsys, tmp_path):
    path = _experiment(tmp_path, "s", "sweep: {grid: {seed: [1, 2]}}\n")
    staging = tmp_path / "r.points"
    staging.mkdir()
    (staging / "point-00000.parquet").write_text("mine")
    _fails(capsys, ["run", str(path), "--jobs", "1", "--out", str(tmp_path / "r")],
           f"--out: '{staging}' exists and was not made by cxlsim (no .cxlsim-points marker)")
    assert (staging / "point-00000.parquet").read_text() == "mine"
    assert not (tmp_path / "r").exists()


def test_interrupted_default_sweep_resumes_in_its_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _experiment(tmp_path, "s", "sweep: {grid: {seed: [1, 2]}}\n")
    assert main(["run", str(path), "--jobs", "1"]) == 0
    (tmp_path / "runs" / "s").rename(tmp_path / "runs" / "s.points-done")
    staged = tmp_path / "runs" / "s.points"
    (tmp_path / "runs" / "s.points-done" / "points").rename(staged)
    assert main(["run", str(path), "--jobs", "1"]) == 0  # staged points: resume runs/s
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["s", "s.points-done"]


def test_topology_html_into_a_missing_folder_fails_before_printing(capsys, tmp_path):
    _fails(capsys, ["topology", "show", str(SWITCH_POOL), "--html",
                    str(tmp_path / "missing" / "x.html")],
           f"--html: cannot write '{tmp_path / 'missing' / 'x.html'}': folder "
           f"'{tmp_path / 'missing'}' does not exist")
