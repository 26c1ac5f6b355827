"""Expand ``preset: NAME`` references into the data of ``models/NAME.yaml``.

Any mapping in a topology, experiment or preset file may name a preset; the preset's
fields come first and the fields written beside ``preset:`` override them (nested
mappings merge key by key, lists are replaced whole). Presets may themselves name a
preset. ``NAME`` is a path under a ``models/`` folder, without extension, looked up in
the folders above the referencing file first and then in the models shipped with cxlsim
(:func:`cxlsim.resources.bundled`), so a file in any folder can use them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cxlsim.config.source import (MAX_DEPTH, TOML_SUFFIXES, YAML_SUFFIXES, Document,
                                  KeyPath, format_path, load_file)
from cxlsim.errors import InputError, did_you_mean, shown, unknown
from cxlsim.resources import bundled

PRESET_KEY = "preset"

# Folders and a file name under models/: no absolute paths, no '..', nothing too long.
_PRESET_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def find_preset(name: str, near: str) -> Path:
    """The file of preset ``name``, searching ``models/`` above ``near``, then cxlsim's."""
    near_path = Path(near).resolve()
    bases = list(near_path.parents) if near_path.exists() else []
    tried: list[str] = []
    for models in dict.fromkeys([*(base / "models" for base in bases), bundled("models")]):
        if not models.is_dir():
            continue
        for suffix in YAML_SUFFIXES + TOML_SUFFIXES:
            candidate = models / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
        tried.append(str(models))
    raise KeyError(tried)


def preset_files(models: Path, folder: str = "") -> dict[str, Path]:
    """The preset files under ``models/FOLDER`` (every one for ``""``) by the name a file
    gives them (``cpus/xeon6``), sorted."""
    base = models / folder
    found = {p.relative_to(models).with_suffix("").as_posix(): p for p in base.rglob("*")
             if p.suffix in YAML_SUFFIXES + TOML_SUFFIXES and p.is_file()} \
        if base.is_dir() else {}
    return dict(sorted(found.items()))


def _unknown_preset(name: str, searched: list[Path]) -> str:
    """Why preset ``name`` was not found in the ``models/`` folders ``searched``: the
    presets of its folder, or the folders there are, and the closest name."""
    folder = name.rpartition("/")[0]
    where = f"looked for models/{name}.yaml in: {', '.join(map(str, searched))}" \
        if searched else "no models/ folder found"
    every = sorted({n for models in searched for n in preset_files(models)})
    beside = [n for n in every if n.rpartition("/")[0] == folder]
    if beside:
        return f"{unknown('preset', name, beside)} ({where})"
    folders = sorted({n.rpartition("/")[0] for n in every} - {""})
    has = f"no folder {folder}/" if folder else "no presets outside its folders"
    return (f"unknown preset {name!r}: models/ has {has} (its folders: "
            f"{', '.join(folders) or 'none'}){did_you_mean(name, every)} ({where})")


def expand_presets(doc: Document, chain: tuple[str, ...] = (), depth: int = 0) -> Document:
    """Return a new document with every ``preset:`` reference merged in.

    ``chain`` holds the preset files being expanded above this one, to catch cycles;
    ``depth`` is how deep in the referencing files they are (each preset counting as a
    level), so that presets naming presets cannot nest without bound.
    """
    locations = dict(doc.locations)
    data = _expand(doc.data, (), doc, locations, chain, depth)
    return Document(data, doc.source, locations)


def _expand(value: Any, path: KeyPath, doc: Document, locations: dict,
            chain: tuple[str, ...], depth: int) -> Any:
    if not isinstance(value, (dict, list)):
        return value
    if depth + len(path) >= MAX_DEPTH:
        raise InputError(f"nested too deeply (at most {MAX_DEPTH} levels, counting the "
                         "presets named on the way)", location=doc.locate(path),
                         key=format_path(path) or None)
    if isinstance(value, list):
        return [_expand(item, path + (i,), doc, locations, chain, depth)
                for i, item in enumerate(value)]
    local = {k: _expand(v, path + (k,), doc, locations, chain, depth)
             for k, v in value.items() if k != PRESET_KEY}
    if PRESET_KEY not in value:
        return local
    name = value[PRESET_KEY]
    where = doc.locate(path + (PRESET_KEY,))
    key = format_path(path + (PRESET_KEY,))
    if not isinstance(name, str) or not _PRESET_NAME.fullmatch(name) or len(name) > 100:
        raise InputError("expected a preset name such as 'links/pcie-gen3-x16' (a path under "
                         f"models/ without extension); found {shown(name)}",
                         location=where, key=key)
    try:
        preset_file = find_preset(name, doc.source)
    except KeyError as exc:
        raise InputError(_unknown_preset(name, [Path(p) for p in exc.args[0]]),
                         location=where, key=key) from None
    if str(preset_file) in chain:
        raise InputError(f"preset {name!r} refers back to itself", location=where, key=key)
    preset_doc = expand_presets(load_file(preset_file), chain + (str(preset_file),),
                                depth + len(path) + 1)
    if not isinstance(preset_doc.data, dict):
        raise InputError("a preset file must hold a mapping of fields",
                         location=preset_doc.locate(()))
    for sub, loc in preset_doc.locations.items():  # fields written locally keep their own
        locations.setdefault(path + sub, loc)
    return _merge(preset_doc.data, local)


def _merge(base: dict, override: dict) -> dict:
    """Deep-merge two mappings: ``override`` wins; nested mappings merge; lists are replaced."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out
