"""``cxlsim clean``: the older run folders of an experiment go, the newest stays, and
nothing cxlsim did not write is touched."""

from __future__ import annotations

import os

import pytest

from conftest import SWITCH_POOL_ROUTES, refused
from cxlsim.cli import main
from cxlsim.experiments.output import MARKER


#: The run folders the fixture writes, oldest first.
WRITTEN = ["switch-pool-routes", "switch-pool-routes-2", "switch-pool-routes-3", "other",
           "switch-pool-routes-quick", "switch-pool-routes-quick-2", "mine-2"]


@pytest.fixture
def runs(tmp_path, monkeypatch, capsys):
    """runs/ after three runs of switch-pool-routes, one of a renamed copy, two quick
    forms and one into a folder named by --out (oldest first), beside a folder of the
    user's, a run folder's look-alike without the marker, a link to a run folder and a
    file."""
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other.yaml"
    other.write_text(SWITCH_POOL_ROUTES.read_text().replace(
        "name: switch-pool-routes", "name: other", 1), encoding="utf-8")
    for argv in [[SWITCH_POOL_ROUTES]] * 3 + [[other]] + [[SWITCH_POOL_ROUTES, "--quick"]] * 2 \
            + [[SWITCH_POOL_ROUTES, "--out", "runs/mine-2"]]:
        assert main(["run", *map(str, argv)]) == 0
    folder = tmp_path / "runs"
    for i, name in enumerate(WRITTEN):
        os.utime(folder / name / MARKER, (1e9 + i, 1e9 + i))
    (folder / "mine").mkdir()
    (folder / "mine" / "notes.txt").write_text("keep me")
    (folder / "switch-pool-routes-4").mkdir()
    (folder / "link").symlink_to(folder / "switch-pool-routes")
    (folder / "file.txt").write_text("keep me")
    capsys.readouterr()
    return folder


def _left(folder):
    return sorted(p.name for p in folder.iterdir())


def test_clean_keeps_the_newest_run_of_each_experiment_and_lists_what_it_removes(
        runs, capsys):
    assert main(["clean"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out[:3]] == [
        "removed runs/switch-pool-routes", "removed runs/switch-pool-routes-2",
        "removed runs/switch-pool-routes-quick"]  # a quick form is a series of its own
    assert out[3:7] == ["kept runs/switch-pool-routes-3", "kept runs/other",
                        "kept runs/switch-pool-routes-quick-2", "kept runs/mine-2"]
    assert out[7].startswith("removed 3 run folders, ") and out[7].endswith(" KB")
    assert _left(runs) == ["file.txt", "link", "mine", "mine-2", "other",
                           "switch-pool-routes-3", "switch-pool-routes-4",
                           "switch-pool-routes-quick-2"]
    assert (runs / "mine" / "notes.txt").read_text() == "keep me"


def test_a_dry_run_removes_nothing(runs, capsys):
    before = _left(runs)
    assert main(["clean", "--dry-run", "--keep", "0", "other"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("would remove runs/other (")
    assert _left(runs) == before


def test_keep_none_of_one_experiment(runs, capsys):
    assert main(["clean", "switch-pool-routes", "mine-2", "--keep", "0"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("removed 4 run folders")
    assert _left(runs) == ["file.txt", "link", "mine", "other", "switch-pool-routes-4",
                           "switch-pool-routes-quick", "switch-pool-routes-quick-2"]


@pytest.mark.parametrize("argv, message", [
    (["clean", "switch-pool"], "NAME: no run folder of 'switch-pool' in 'runs'; the runs "
                               "there: mine-2, other, switch-pool-routes, "
                               "switch-pool-routes-quick; did you mean 'switch-pool-routes'?"),
    (["clean", "--keep", "-1"], "--keep: expected --keep of 0 or more; found -1"),
    (["clean", "--runs", "nowhere"], "--runs: no folder 'nowhere'; cxlsim run writes its "
                                     "run folders in runs/"),
])
def test_bad_clean_requests_remove_nothing(runs, capsys, argv, message):
    before = _left(runs)
    refused(capsys, argv, message)
    assert _left(runs) == before
