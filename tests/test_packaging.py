"""A wheel is a complete cxlsim: built from this tree, installed into a fresh environment,
it validates and runs from a folder that is not the clone (issue: data files were found
through the source tree only)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from pathlib import Path

import pytest
from setuptools import find_namespace_packages

from conftest import REPO
from cxlsim.resources import FOLDERS, bundled, bundled_file


def test_the_package_list_matches_the_source_tree():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    code = sorted(p for p in find_namespace_packages(str(REPO), include=["cxlsim*"])
                  if "__pycache__" not in p and not p.startswith("cxlsim._data"))
    data = {f"cxlsim._data.{folder}": folder for folder in FOLDERS}
    assert sorted(config["packages"]) == sorted(code + list(data))
    assert config["package-dir"] == data


def test_a_clone_uses_its_own_folders():
    for folder in FOLDERS:
        assert bundled(folder) == REPO / folder
    assert bundled_file("experiments", "ornl-transfer") == REPO / "experiments/ornl-transfer.yaml"
    assert bundled_file("topologies", "../pyproject.toml") is None


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A virtual environment holding only the wheel; the dependencies are this
    environment's (a path entry, so none of its .pth hooks, e.g. an editable cxlsim)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy, so the build writes nothing into the working tree
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q",
                    "-w", str(tmp / "dist")], check=True, timeout=600)
    (wheel,) = (tmp / "dist").glob("cxlsim-*.whl")
    env = tmp / "venv"
    venv.create(env, with_pip=False)
    py = env / "bin" / "python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, timeout=600)
    return env


def _python(env: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The venv's python, without this process's PYTHONPATH (it may point at a tree)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QUICK")}
    return subprocess.run([str(env / "bin" / "python"), *args], cwd=cwd,
                          capture_output=True, text=True, env=clean, timeout=900)


def _run(env: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return _python(env, "-m", "cxlsim.cli", *args, cwd=cwd)


def test_the_wheel_validates_and_runs_outside_the_clone(installed, tmp_path):
    where = _python(installed, "-c", "import cxlsim, cxlsim.resources as r; "
                    "print(cxlsim.__file__); print(r.bundled('models'))", cwd=tmp_path).stdout
    module, models = where.split()
    assert str(installed) in module and str(REPO) not in module
    assert models.endswith("cxlsim/_data/models") and str(installed) in models

    # families whose checks read every kind of shipped file (experiments, topologies and
    # the models' links, devices, memory, cpus, apps and curves); the whole table runs
    # from the tree in the suite's quick_validation fixture
    validate = _run(installed, "validate", "--quick", "--json", "--only", "T1,T2,T3,T8",
                    cwd=tmp_path)
    assert validate.returncode in (0, 1), validate.stderr  # 1: honest FAILs, not a crash
    rows = json.loads(validate.stdout)
    assert {r["id"].split(".")[0] for r in rows} == {"T1", "T2", "T3", "T8"}
    assert "NOT MODELLED" not in {r["status"] for r in rows} and "error" not in validate.stderr

    mine = tmp_path / "mine.yaml"  # a user's own file: shipped topology and presets by name
    mine.write_text("name: mine\nkind: routes\ntopology: switch-pool\n")
    run = _run(installed, "run", str(mine), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "latency_min_ns" in run.stdout and (tmp_path / "runs" / "mine" / ".cxlsim-run").is_file()
    shipped = _run(installed, "run", "switch-pool-routes", cwd=tmp_path)
    assert shipped.returncode == 0, shipped.stderr


def test_the_wheel_names_what_it_ships(installed, tmp_path):
    """``--version``, ``cxlsim list`` and a shipped topology by name, from the wheel's
    own data in a folder that is not the clone."""
    version = _run(installed, "--version", cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("cxlsim 0.1.0 from ") and str(installed) in version.stdout
    listed = _run(installed, "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = json.loads(listed.stdout)
    for folder in ("experiments", "topologies"):
        assert list(names[folder]) == sorted(p.stem for p in (REPO / folder).glob("*.yaml"))
    assert "cpus/xeon6" in names["presets"] and "tpp" in names["policies"]
    assert all(text for entries in names.values() for text in entries.values())
    show = _run(installed, "topology", "show", "switch-pool", cwd=tmp_path)
    assert show.returncode == 0, show.stderr
    assert "4 host->device routes" in show.stdout
