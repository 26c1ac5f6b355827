"""Read YAML and TOML files into plain data plus a map of where every value came from.

A :class:`Document` is the parsed data together with ``locations``: key path (a tuple of
mapping keys and list indices) -> :class:`~cxlsim.errors.Location`. Validation errors
use that map to name the file, the line and the column of the offending value.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from cxlsim.errors import InputError, Location

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

KeyPath = tuple[str | int, ...]


class ItemName(str):
    """A list item named in a key path (``nodes[dram0]``): the item whose ``name`` it is."""


YAML_SUFFIXES = (".yaml", ".yml")
TOML_SUFFIXES = (".toml",)

# Far above any real topology or experiment, far below what exhausts memory: a file
# nesting deeper, or expanding (through aliases) to more values, is refused.
MAX_DEPTH = 64
MAX_VALUES = 200_000
_TOO_DEEP = f"nested too deeply (at most {MAX_DEPTH} levels)"


@dataclass
class Document:
    """Parsed file data with the source location of each key path."""

    data: Any
    source: str
    locations: dict[KeyPath, Location] = field(default_factory=dict)

    def subdocument(self, prefix: KeyPath) -> Document:
        """The part of this document under ``prefix``, with its own key paths."""
        data: Any = self.data
        for part in prefix:
            data = data[part]
        n = len(prefix)
        locations = {p[n:]: loc for p, loc in self.locations.items() if p[:n] == prefix}
        return Document(data, self.source, locations)

    def graft(self, path: KeyPath, other: Document) -> Document:
        """A copy with ``other`` (e.g. an included file) in place of the value at
        ``path`` (a key path of mappings)."""
        data = root = dict(self.data)
        for key in path[:-1]:
            data[key] = dict(data[key])
            data = data[key]
        data[path[-1]] = other.data
        n = len(path)
        locations = {p: loc for p, loc in self.locations.items() if p[:n] != path}
        locations.update({path + p: loc for p, loc in other.locations.items()})
        return Document(root, self.source, locations)

    def locate(self, path: KeyPath) -> Location:
        """The location of ``path``, or of its nearest located ancestor, or the file."""
        for cut in range(len(path), -1, -1):
            loc = self.locations.get(tuple(path[:cut]))
            if loc is not None:
                return loc
        return Location(self.source)


def format_path(path: KeyPath) -> str:
    """Render a key path the way users write it in ``--set``: ``links[2].latency``,
    ``nodes[dram0].capacity``."""
    out = ""
    for part in path:
        if isinstance(part, (int, ItemName)):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def load_file(path: str | Path) -> Document:
    """Load a YAML or TOML file (chosen by extension) into a :class:`Document`; a file
    without keys (empty, only comments) is an :class:`InputError`."""
    path = Path(path)
    source = str(path)
    try:
        exists = path.is_file()
    except OSError as exc:  # e.g. a name longer than the system allows
        raise InputError(f"cannot read file: {exc.strerror}", location=source) from None
    if not exists:
        raise InputError(f"no such file (expected a {'/'.join(YAML_SUFFIXES + TOML_SUFFIXES)} "
                         "file)", location=source)
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", location=source) from None
    if suffix in YAML_SUFFIXES:
        doc = parse_yaml(text, source)
    elif suffix in TOML_SUFFIXES:
        doc = parse_toml(text, source)
    else:
        raise InputError(f"unknown file type {suffix!r}; expected .yaml, .yml or .toml",
                         location=source)
    if doc.data == {}:  # no experiment, topology or preset is nothing at all
        raise InputError("the file is empty: it holds no keys", location=source)
    return doc


def parse_toml(text: str, source: str) -> Document:
    """Parse TOML text; TOML gives no positions, so errors name file and key only."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", location=source) from None
    except RecursionError:
        raise InputError(_TOO_DEEP, location=source) from None
    _check_toml_depth(data, source)
    return Document(data, source, {(): Location(source)})


def _check_toml_depth(data: dict, source: str) -> None:
    """Refuse tables nested deeper than :data:`MAX_DEPTH` (``[a.a.a...]`` headers build
    them without recursion; everything reading the data afterwards recurses)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, key) for key, value in data.items()]
    while stack:
        value, depth, top = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise InputError(_TOO_DEEP, location=source, key=top)
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1, top) for item in items)


def parse_yaml(text: str, source: str) -> Document:
    """Parse one YAML document, recording the line and column of every key and item.

    The same text from the same source is parsed once (a sweep's points read the same
    topology and preset files again and again; the pure-Python parser is the slow part):
    each call gets its own copy of the data."""
    data, locations = _parsed_yaml(text, source)
    if data is None:
        return Document({}, source, {(): Location(source)})
    return Document(copy.deepcopy(data), source, dict(locations))


@lru_cache(maxsize=256)
def _parsed_yaml(text: str, source: str) -> tuple[Any, dict[KeyPath, Location]]:
    locations: dict[KeyPath, Location] = {}
    return _yaml_data(text, source, locations), locations


def yaml_value(text: str, source: str) -> Any:
    """One YAML value, such as a ``--set`` value, within the limits of a file (None if
    the text holds none)."""
    return _yaml_data(text, source, {})


def _yaml_data(text: str, source: str, locations: dict[KeyPath, Location]) -> Any:
    """The data of one YAML document (None if empty), its positions added to
    ``locations``; every problem is an :class:`InputError`."""
    loader = yaml.SafeLoader(text)
    try:
        _check_shape(text, source)
        node = loader.get_single_node()
        return None if node is None else _construct(loader, node, (), source, locations)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        problem = exc.problem or str(exc)
        raise InputError(f"invalid YAML: {problem}",
                         location=Location(source, line, col)) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", location=source) from None
    finally:
        loader.dispose()


@dataclass
class _Open:
    """A YAML collection being read by :func:`_check_shape`."""

    event: yaml.CollectionStartEvent
    before: int          # values read before this collection began
    height: int = 1      # levels of nesting in it, itself included
    items: int = 0       # nodes read directly in it (a mapping's keys and values alike)
    key: Any = None      # in a mapping: the key whose value is being read


def _check_shape(text: str, source: str) -> None:
    """Read the YAML events once, before anything is built, and refuse what would
    exhaust the stack or the memory: nesting deeper than :data:`MAX_DEPTH`, more than
    :data:`MAX_VALUES` values once aliases are expanded ("billion laughs"), and an
    alias inside the node it names. Aliases count as what they stand for."""
    stack: list[_Open] = []
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, height) of its node
    values = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise InputError(_TOO_DEEP, location=_event_mark(event, source))
            values += 1
            stack.append(_Open(event, values - 1))
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            done = stack.pop()
            size, height, anchor = values - done.before, done.height, done.event.anchor
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:  # undefined (the composer says so) or recursive
                _refuse_recursive(event, stack, source)
                continue
            size, height = anchors[event.anchor]
            anchor = None
            values += size
            _refuse_deep_alias(event, len(stack) + height, source)
        elif isinstance(event, yaml.ScalarEvent):
            values += 1
            size, height, anchor = 1, 0, event.anchor
        else:
            continue
        if values > MAX_VALUES:
            what = "aliases expand to" if isinstance(event, yaml.AliasEvent) else "the file holds"
            raise InputError(f"{what} more than {MAX_VALUES:,} values; refusing to build it",
                             location=_event_mark(event, source),
                             key=format_path(_open_path(stack)) or None)
        if anchor is not None:
            anchors[anchor] = (size, height)
        if stack:
            _add_item(stack[-1], event, height)


def _add_item(parent: _Open, event: yaml.Event, height: int) -> None:
    """Count a finished node in its parent; a scalar in a key position becomes the key."""
    parent.height = max(parent.height, height + 1)
    if isinstance(parent.event, yaml.MappingStartEvent) and parent.items % 2 == 0:
        parent.key = event.value if isinstance(event, yaml.ScalarEvent) else None
    parent.items += 1


def _open_path(stack: list[_Open]) -> KeyPath:
    """The key path of the node being read, as far as keys are plain scalars."""
    path: list[str | int] = []
    for frame in stack:
        if isinstance(frame.event, yaml.SequenceStartEvent):
            path.append(frame.items)
        elif frame.items % 2 == 1 and frame.key is not None:
            path.append(frame.key)
        else:
            break
    return tuple(path)


def _refuse_deep_alias(event: yaml.AliasEvent, depth: int, source: str) -> None:
    """An alias whose node, put in its place, nests deeper than :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise InputError(f"nested too deeply (at most {MAX_DEPTH} levels, counting what "
                         f"alias *{event.anchor} stands for)", location=_event_mark(event, source))


def _refuse_recursive(event: yaml.AliasEvent, stack: list[_Open], source: str) -> None:
    """An alias naming a collection still open around it would build an endless value."""
    if any(frame.event.anchor == event.anchor for frame in stack):
        raise InputError(f"recursive alias: *{event.anchor} stands for a node that contains "
                         "it", location=_event_mark(event, source),
                         key=format_path(_open_path(stack)) or None)


def _event_mark(event: yaml.Event, source: str) -> Location:
    return Location(source, event.start_mark.line + 1, event.start_mark.column + 1)


def _mark(node: yaml.Node, source: str) -> Location:
    return Location(source, node.start_mark.line + 1, node.start_mark.column + 1)


MERGE_TAG = "tag:yaml.org,2002:merge"
VALUE_TAG = "tag:yaml.org,2002:value"


def _construct(loader: yaml.SafeLoader, node: yaml.Node, path: KeyPath, source: str,
               locations: dict[KeyPath, Location]) -> Any:
    """Build plain data from a YAML node (whose size and depth :func:`_check_shape`
    has bounded).

    Rejects duplicate keys (YAML keeps the last) and keys that are not text. Keys
    merged in with ``<<`` may be overridden by keys written in the mapping itself, as
    YAML specifies.
    """
    locations.setdefault(path, _mark(node, source))
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        local_keys: set[str] = set()
        for key_node, value_node, local in _flatten(node, path, source):
            key = _key(loader, key_node, path, source)
            if key in out:
                if local and key in local_keys:
                    raise InputError(f"duplicate key {key!r}", location=_mark(key_node, source),
                                     key=format_path(path + (key,)))
                _forget(locations, path + (key,))
            if local:
                local_keys.add(key)
            locations[path + (key,)] = _mark(value_node, source)
            out[key] = _construct(loader, value_node, path + (key,), source, locations)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(loader, item, path + (i,), source, locations)
                for i, item in enumerate(node.value)]
    return _scalar(loader, node, path, source)


def _scalar(loader: yaml.SafeLoader, node: yaml.Node, path: KeyPath, source: str) -> Any:
    """A scalar's value; an explicit tag it cannot have (``!!int abc``) is an error."""
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, TypeError, IndexError, OverflowError):
        tag = node.tag.rsplit(":", 1)[-1]
        raise InputError(f"invalid YAML: {node.value!r} cannot be read as !!{tag}",
                         location=_mark(node, source), key=format_path(path) or None) from None


def _flatten(node: yaml.MappingNode, path: KeyPath, source: str
             ) -> list[tuple[yaml.Node, yaml.Node, bool]]:
    """The key/value pairs of a mapping with ``<<`` merges resolved, without changing it.

    Merged pairs come first (flag ``False``), in an order where a later pair wins: the
    first mapping of a merge list takes precedence, as YAML specifies. The mapping's
    own pairs follow (flag ``True``).
    """
    merged: list[tuple[yaml.Node, yaml.Node, bool]] = []
    own: list[tuple[yaml.Node, yaml.Node, bool]] = []
    for key_node, value_node in node.value:
        if key_node.tag != MERGE_TAG:
            own.append((key_node, value_node, True))
            continue
        if isinstance(value_node, yaml.MappingNode):
            subs = [value_node]
        elif isinstance(value_node, yaml.SequenceNode) and all(
                isinstance(sub, yaml.MappingNode) for sub in value_node.value):
            subs = list(value_node.value)
        else:
            raise InputError("invalid YAML: a merge (<<) needs a mapping or a list of mappings",
                             location=_mark(value_node, source), key=format_path(path) or None)
        for sub in reversed(subs):
            merged.extend((k, v, False) for k, v, _ in _flatten(sub, path, source))
    return merged + own


def _key(loader: yaml.SafeLoader, key_node: yaml.Node, path: KeyPath, source: str) -> str:
    """The text of a mapping key; keys that YAML reads as anything else are an error."""
    if isinstance(key_node, yaml.ScalarNode) and key_node.tag == VALUE_TAG:
        return str(key_node.value)
    key = (_scalar(loader, key_node, path, source)
           if isinstance(key_node, yaml.ScalarNode) else None)
    if isinstance(key, str):
        return key
    found = repr(key) if isinstance(key_node, yaml.ScalarNode) else "a " + (
        "mapping" if isinstance(key_node, yaml.MappingNode) else "list")
    raise InputError(f"keys must be text; found {found} (put the key in quotes)",
                     location=_mark(key_node, source), key=format_path(path) or None)


def _forget(locations: dict[KeyPath, Location], prefix: KeyPath) -> None:
    """Drop the recorded locations at and under ``prefix`` (a value being overridden)."""
    n = len(prefix)
    for p in [p for p in locations if p[:n] == prefix]:
        del locations[p]
