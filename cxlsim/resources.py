"""Where the shipped models, topologies and experiments are.

In a clone (or an editable install) they are the repository's top-level ``models/``,
``topologies/`` and ``experiments/`` folders, where people edit them. A wheel carries
copies of the same folders inside the package, as ``cxlsim/_data/NAME`` (mapped in
``pyproject.toml``), so ``pip install cxlsim`` works from any folder. The relative
layout is the same in both places: an experiment's ``../topologies/x.yaml`` and a
preset lookup in ``models/`` above a file resolve alike.
"""

from __future__ import annotations

from pathlib import Path

from cxlsim.errors import InputError, did_you_mean

FOLDERS = ("models", "topologies", "experiments")

#: The source's version, as pyproject.toml gives it (``cxlsim.__version__``).
VERSION = "0.1.0"

_PACKAGE = Path(__file__).resolve().parent


def bundled(folder: str) -> Path:
    """The shipped ``models``, ``topologies`` or ``experiments`` folder."""
    if folder not in FOLDERS:
        raise ValueError(f"expected one of {FOLDERS}; found {folder!r}")
    installed = _PACKAGE / "_data" / folder
    return installed if installed.is_dir() else _PACKAGE.parent / folder


def bundled_file(folder: str, name: str) -> Path | None:
    """``folder``'s shipped file ``name`` (``.yaml`` may be left off), if there is one."""
    base = bundled(folder)
    for candidate in (base / name, base / f"{name}.yaml"):
        if is_file(candidate) and candidate.resolve().is_relative_to(base.resolve()):
            return candidate
    return None


def file_or_shipped(folder: str, name: str | Path) -> Path:
    """The file ``name`` names: itself if it is a file, else ``folder``'s shipped file of
    that name, so that the CLI and Python take a shipped experiment or topology by name
    from any folder (an InputError lists the shipped names)."""
    path = Path(name)
    if is_file(path):
        return path
    found = bundled_file(folder, str(name))
    if found is None:
        names = shipped(folder)
        raise InputError(f"no such file, nor {_NOUNS[folder]} shipped with cxlsim"
                         f"{did_you_mean(name, names)} (shipped: {', '.join(names)})",
                         location=str(name))
    return found


#: What one shipped file of each folder is, for messages.
_NOUNS = {"models": "a model", "topologies": "a topology", "experiments": "an experiment"}


def shipped(folder: str) -> list[str]:
    """The names of ``folder``'s shipped files (``.yaml`` left off), sorted."""
    return sorted(p.stem for p in bundled(folder).glob("*.yaml"))


def is_file(path: Path) -> bool:
    """Whether ``path`` is a file; a name the system cannot look up (too long) is not."""
    try:
        return path.is_file()
    except OSError:
        return False


def version() -> str:
    """The installed distribution's version (its metadata), or the source's when
    cxlsim runs uninstalled, from a clone on the path."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("cxlsim")
    except PackageNotFoundError:
        return VERSION
