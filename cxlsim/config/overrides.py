"""``--set a.b[2].c=value`` overrides applied to loaded data before validation.

A list item is named by its index or, for a list of mappings with a ``name``, by that
name: ``topology.nodes[dram0].capacity=2 GiB``. ``KEY.preset=NAME`` makes the mapping at
``KEY`` preset NAME's, as ``preset: NAME`` there would in the file (fields written beside
the old preset are dropped; later ``--set`` options apply on top).

The value is read as a YAML scalar or flow collection, so ``0.75`` is a number,
``40 ns`` a string, ``[1, 2]`` a list and ``true`` a boolean.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from cxlsim.config.presets import PRESET_KEY, expand_presets
from cxlsim.config.source import (MAX_DEPTH, Document, ItemName, KeyPath, format_path,
                                  yaml_value)
from cxlsim.errors import InputError, Location

_ITEM = r"\d+|[A-Za-z_][\w.-]*"  # a list item's index or name
_PART = re.compile(rf"([A-Za-z_][\w-]*)((?:\[(?:{_ITEM})\])*)")
_INDEX = re.compile(rf"\[({_ITEM})\]")
#: What an override's :class:`~cxlsim.errors.Location` starts with, before its text.
SET = "--set "
_EXPECTED = ("expected KEY=VALUE, e.g. topology.links[0].cxl_penalty=0.75 or "
             "links[0].width=8")


def parse_assignment(text: str) -> tuple[KeyPath, Any]:
    """Split ``a.b[2].c=value`` into a key path and a parsed value."""
    where = Location(SET + text)
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise InputError(_EXPECTED, location=where)
    path = _key_path(key.strip(), where)
    try:
        value = yaml_value(raw, str(where)) if raw.strip() else ""
    except InputError as exc:  # the same limits as a file, without its line numbers
        raise InputError(f"cannot read value {raw!r} as YAML ({exc.message})",
                         location=where) from None
    return path, value


def _key_path(key: str, where: Location) -> KeyPath:
    """``a.b[2].c[name]`` as a key path: names, indices and :class:`ItemName` items."""
    path: list[str | int] = []
    for part in key.split("."):
        match = _PART.fullmatch(part)
        if match is None:
            raise InputError(f"malformed key {key!r}; {_EXPECTED}", location=where)
        path.append(match.group(1))
        path.extend(int(i) if i.isdigit() else ItemName(i)
                    for i in _INDEX.findall(match.group(2)))
    if len(path) > MAX_DEPTH:
        raise InputError(f"key nested too deeply (at most {MAX_DEPTH} levels)", location=where)
    return tuple(path)


def as_typed(path: KeyPath, where: Location | None) -> str:
    """``path`` (list items by index) as the user wrote it: where ``where`` is a
    ``--set`` that named list items (``nodes[dram0].capacity``), by those names. The
    path may be in a part of the document the ``--set`` was applied to (its topology):
    the key's tail that lines up with it is used."""
    if where is None or not where.source.startswith(SET):
        return format_path(path)
    typed = _key_path(where.source[len(SET):].partition("=")[0].strip(), where)
    typed = typed[:-1] if typed[-1] == PRESET_KEY else typed
    for cut in range(len(typed)):
        tail = typed[cut:]
        if len(tail) <= len(path) and all(
                t == p or (isinstance(t, ItemName) and isinstance(p, int))
                for t, p in zip(tail, path)):
            return format_path(tail + path[len(tail):])
    return format_path(path)


#: Turns a name set at a key path into the document it names (None: a plain value).
Include = Callable[[KeyPath, str, Location], "Document | None"]


def apply_overrides(doc: Document, assignments: list[str] | tuple[str, ...],
                    include: Include | None = None) -> Document:
    """Return a copy of ``doc`` with each ``KEY=VALUE`` assignment applied in order; a
    preset's name is expanded, and ``include`` may expand other names (the loader's
    ``topology: NAME``)."""
    data = copy.deepcopy(doc.data)
    locations = dict(doc.locations)
    for text in assignments:
        path, value = parse_assignment(text)
        where = Location(SET + text)
        if PRESET_KEY in path[1:-1] or path == (PRESET_KEY,):
            raise InputError("a preset's name is set as KEY.preset=NAME, for the mapping at "
                             "KEY", location=where)
        named = None
        if path[-1] == PRESET_KEY:
            nested: Any = {PRESET_KEY: value}
            for part in reversed(path[:-1]):  # nested as in the file: its errors' keys
                nested = {part: nested}
            named = expand_presets(Document(nested, doc.source, {path: where})
                                   ).subdocument(path[:-1])
            path = path[:-1]
        elif include is not None and isinstance(value, str):
            named = include(path, value, where)
        data, path = _assign(data, path, value if named is None else named.data, where)
        locations = {p: loc for p, loc in locations.items() if p[:len(path)] != path}
        locations[path] = where
        if named is not None:
            locations.update({path + p: loc for p, loc in named.locations.items() if p})
    return Document(data, doc.source, locations)


def _assign(data: Any, path: KeyPath, value: Any, where: Location) -> tuple[Any, KeyPath]:
    """Set ``value`` at ``path`` in ``data``; returns the data and the path with its
    item names as indices (errors name the path as typed)."""
    if not isinstance(data, dict):
        raise InputError("the file does not hold a mapping at its top level", location=where)
    node: Any = data
    typed, path = path, list(path)
    for depth, part in enumerate(path):
        if isinstance(part, ItemName):
            path[depth] = _named(node, part, where, typed[:depth])
        if depth == len(path) - 1:
            break
        nxt = path[depth + 1]
        node = _step(node, path[depth], create=list if isinstance(nxt, (int, ItemName))
                     else dict, where=where, so_far=typed[:depth + 1])
    path = tuple(path)
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or not -len(node) <= last < len(node):
            raise InputError(f"{format_path(typed)}: no list item {last} to set",
                             location=where)
    elif not isinstance(node, dict):
        raise InputError(f"{format_path(typed[:-1])} is not a mapping", location=where)
    node[last] = value
    return data, path


def _named(node: Any, name: str, where: Location, so_far: KeyPath) -> int:
    """The index of the item of list ``node`` whose ``name`` is ``name``."""
    if not isinstance(node, list):
        raise InputError(f"{format_path(so_far)} is not a list", location=where)
    names = [item.get("name") if isinstance(item, dict) else None for item in node]
    if name not in names:
        known = ", ".join(map(str, filter(None, names))) or "none: its items have no name"
        raise InputError(f"{format_path(so_far)}: no item named {name!r}; names: {known}",
                         location=where)
    return names.index(name)


def _step(node: Any, part: str | int, create: type, where: Location, so_far: KeyPath) -> Any:
    if isinstance(part, int):
        if not isinstance(node, list) or not -len(node) <= part < len(node):
            raise InputError(f"{format_path(so_far)}: no such list item", location=where)
        return node[part]
    if not isinstance(node, dict):
        raise InputError(f"{format_path(so_far[:-1])} is not a mapping", location=where)
    if node.get(part) is None:
        node[part] = create()
    return node[part]
