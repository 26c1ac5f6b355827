"""Progress bars: on stderr when asked (``progress=True``, ``--progress``, stderr a
terminal), never otherwise, at a run's own steps, with the same numbers either way."""

from __future__ import annotations

import pytest

import cxlsim
from cxlsim.cli import main

SMALL_BIAS = ["sizes=[4 KiB, 8 KiB]", "reuse=[1]", "check_size=4 KiB"]
#: 3 epochs of 4096 records: the bar's steps
SMALL_TRACE = ["trace.n=12288", "epoch=4096", "trace.params.footprint=4MiB"]


def _bar(err: str, desc: str) -> str:
    """The bar's last state as tqdm drew it (redraws are separated by carriage returns)."""
    lines = [part for part in err.replace("\n", "\r").split("\r") if part.startswith(desc)]
    assert lines, err
    return lines[-1]


def test_a_run_asked_for_progress_draws_a_bar_with_the_same_numbers(capsys):
    quiet = cxlsim.run("bias", SMALL_BIAS)
    assert capsys.readouterr().err == ""  # not asked, and stderr is no terminal
    shown = cxlsim.run("bias", SMALL_BIAS, progress=True)
    bar = _bar(capsys.readouterr().err, "bias: 100%")
    assert "81.9k/81.9k" in bar  # 5 ops over 4 + 8 KiB, and the 4 KiB line-by-line check
    assert shown.metrics == quiet.metrics
    for name, table in quiet.tables.items():
        assert table.equals(shown.tables[name]), name


def test_a_trace_run_advances_per_epoch(capsys):
    cxlsim.run("trace-memory", SMALL_TRACE, progress=True)
    assert "3/3" in _bar(capsys.readouterr().err, "trace-memory: 100%")


@pytest.mark.parametrize("flag, drawn", [([], False), (["--progress"], True),
                                         (["--no-progress"], False)])
def test_the_cli_draws_a_bar_when_asked(capsys, tmp_path, flag, drawn):
    sets = [arg for kv in SMALL_BIAS for arg in ("--set", kv)]
    assert main(["run", "bias", *sets, "--out", str(tmp_path / "run"), *flag]) == 0
    err = capsys.readouterr().err
    assert ("bias: 100%" in err) == drawn
    assert err.endswith(f"run folder: {tmp_path / 'run'}\n")


def test_the_cli_draws_a_bar_on_a_terminal(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    sets = [arg for kv in SMALL_BIAS for arg in ("--set", kv)]
    assert main(["run", "bias", *sets, "--out", str(tmp_path / "run")]) == 0
    assert "bias: 100%" in capsys.readouterr().err


def test_the_bar_is_tqdms_text_bar_in_a_notebook_too():
    """tqdm.auto would draw a widget in a notebook, which needs ipywidgets (else it warns
    "IProgress not found"); the text bar needs nothing more."""
    import tqdm.std

    from cxlsim.experiments.progress import progress_bar

    with progress_bar(False, 1, "x", "step") as bar:
        assert type(bar) is tqdm.std.tqdm
