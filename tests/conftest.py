"""Shared fixtures: the repository root, the shipped files, and a file-writing helper."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

# Notebooks collected in the same run (testpaths: tests, notebooks) inherit this: the
# test command runs them in QUICK mode unless QUICK is set otherwise.
os.environ.setdefault("QUICK", "1")

REPO = Path(__file__).resolve().parents[1]
TOPOLOGIES = sorted((REPO / "topologies").glob("*.yaml"))
EXPERIMENTS = sorted((REPO / "experiments").glob("*.yaml"))
SWITCH_POOL = REPO / "topologies" / "switch-pool.yaml"
SWITCH_POOL_ROUTES = REPO / "experiments" / "switch-pool-routes.yaml"

#: Bandwidth of a PCIe Gen5 (32 GT/s, 128b/130b) lane per direction, in B/s.
GEN5_LANE = 32e9 * 128 / 130 / 8


def write_text(base: Path, name: str, text: str) -> Path:
    """Write dedented ``text`` to ``base/name`` (creating folders) and return the path."""
    path = base / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def repo() -> Path:
    """The root of the cxlsim checkout."""
    return REPO


@pytest.fixture
def write(tmp_path: Path):
    """``write(name, text) -> Path``: a dedented file under ``tmp_path``."""

    def _write(name: str, text: str) -> Path:
        return write_text(tmp_path, name, text)

    return _write


def key_paths(data, path=()):
    """Every key path in ``data`` (mapping keys and list indices), parents first."""
    yield path
    items = data.items() if isinstance(data, dict) else \
        enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from key_paths(value, path + (key,))


def line_of(path: Path, needle: str) -> int:
    """1-based number of the only line of ``path`` that contains ``needle``."""
    hits = [i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if needle in line]
    assert len(hits) == 1, f"{needle!r} found on lines {hits} of {path}"
    return hits[0]


@pytest.fixture(scope="module")
def ddr5():
    """The DDR5-4800 memory preset (``models/memory/ddr5-4800.yaml``), validated."""
    from cxlsim.config import load_document, validate_document
    from cxlsim.memory import DramParams

    return validate_document(DramParams, load_document(REPO / "models/memory/ddr5-4800.yaml"))


@pytest.fixture(scope="session")
def quick_validation() -> list[dict]:
    """The rows of ``cxlsim validate --quick``, run once per test session."""
    from cxlsim.validation.run import validate

    return validate(quick=True, jobs=2)  # the parallel path; its rows are the serial ones


@pytest.fixture
def calls(monkeypatch) -> list[int]:
    """Points of a ``routes`` sweep run in this process (jobs=1), in the order they ran."""
    from cxlsim.experiments.kinds.routes import RoutesExperiment

    seen: list[int] = []
    original = RoutesExperiment.run

    def counting(self, progress=False, point=0):
        seen.append(point)
        return original(self, progress, point)

    monkeypatch.setattr(RoutesExperiment, "run", counting)
    return seen


def refused(capsys, argv: list[str], message: str) -> None:
    """``cxlsim ARGV`` exits 2 with one line on stderr holding ``message``, nothing on stdout."""
    from cxlsim.cli import main

    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith("cxlsim: error: ") and message in err
