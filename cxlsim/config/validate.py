"""Validate a :class:`Document` against a schema and turn pydantic errors into one line.

The message names the file, the line and column (YAML), the key path as a user would
write it with ``--set``, what was expected and what was found; for an unknown key it
suggests the closest allowed one.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cxlsim.config.base import ProblemAt
from cxlsim.config.overrides import as_typed
from cxlsim.config.source import Document, KeyPath
from cxlsim.errors import InputError, did_you_mean, shown
from cxlsim.units import USER_INPUT

M = TypeVar("M", bound=BaseModel)


def validate_document(model: type[M], doc: Document) -> M:
    """Build ``model`` from ``doc``; raise :class:`InputError` naming every problem."""
    try:
        return model.model_validate(doc.data, context={USER_INPUT: True})
    except ValidationError as exc:
        raise error_from_validation(model, doc, exc) from None


def error_from_validation(model: type[BaseModel], doc: Document,
                          exc: ValidationError) -> InputError:
    """The :class:`InputError` for every error pydantic reports, most useful first.

    An unknown key comes before a wrong value, which comes before a missing key: a
    misspelt key shows up as all of unknown and missing, and the unknown key (with its
    "did you mean") is the one that says what to fix. A missing key explained that way
    by a misspelt sibling is not counted as another problem.
    """
    errors = exc.errors(include_url=False)
    missing: dict[tuple, list[str]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if err["type"] == "missing" and loc and isinstance(loc[-1], str):
            missing.setdefault(loc[:-1], []).append(loc[-1])
    explained: set[tuple] = set()
    hints: dict[int, str] = {}
    for i, err in enumerate(errors):
        loc = tuple(err["loc"])
        if err["type"] != "extra_forbidden" or not loc:
            continue
        close = difflib.get_close_matches(str(loc[-1]), missing.get(loc[:-1], []), n=1)
        if close:
            hints[i] = close[0]
            explained.add(loc[:-1] + (close[0],))
    remaining = [(i, err, _path(doc, err)) for i, err in enumerate(errors)
                 if not (err["type"] == "missing" and tuple(err["loc"]) in explained)]
    # a union member that took a mapping (or a list) and found fault inside it explains
    # the value; another member's "expected text; found a mapping" is noise beside it
    inside = {path[:cut] for *_, path in remaining for cut in range(len(path))}
    remaining = [item for item in remaining
                 if not (item[1]["type"].endswith(_SHAPE) and item[2] in inside)]
    remaining.sort(key=lambda item: (_RANK.get(item[1]["type"], 1), item[0]))
    problems = _join_alternatives([_problem(model, doc, err, path, hints.get(index))
                                   for index, err, path in remaining])
    return problems[0].with_also(problems[1:])


#: Suffixes of pydantic's error types for a value of the wrong type (a text, a mapping).
_SHAPE = ("_type", "_parsing")


def problem_in(model: type[BaseModel], exc: ValidationError, *prefixes: KeyPath,
               noun: str = "key") -> ProblemAt:
    """For a validator that validates part of its value with a model of its own choosing
    (a policy's tunables, found under one of ``prefixes``): the first problem of ``exc``
    in plain words, at its place, to raise as a field's own would be reported (an
    unknown key called a ``noun``)."""
    err = min(exc.errors(include_url=False), key=lambda e: _RANK.get(e["type"], 1))
    loc = tuple(err["loc"])
    below = err.get("ctx", {}).get("error")
    inner = below.paths if isinstance(below, ProblemAt) else ((),)
    return ProblemAt(_message(model, loc, loc, err, noun=noun),
                     *(prefix + loc + path for prefix in prefixes for path in inner))


def _join_alternatives(problems: list[InputError]) -> list[InputError]:
    """One problem per value: the members of a union each say what they expected of
    the same value (``expected a number``, ``expected a list``); say it once, with "or"."""
    out: list[InputError] = []
    seen: dict[tuple, int] = {}
    for problem in problems:
        expected, sep, found = problem.message.partition("; found ")
        where = (problem.location, problem.key, found)
        if not (sep and expected.startswith("expected ")):
            out.append(problem)
        elif where in seen:
            first = out[seen[where]]
            before = first.message.partition("; found ")[0]
            if expected not in before.split(" or "):
                out[seen[where]] = InputError(f"{before} or {expected[len('expected '):]}; "
                                              f"found {found}", location=first.location,
                                              key=first.key)
        else:
            seen[where] = len(out)
            out.append(problem)
    return out


def _problem(model: type[BaseModel], doc: Document, err: dict, path: KeyPath,
             meant: str | None) -> InputError:
    where = doc.locate(path)
    return InputError(_message(model, tuple(err["loc"]), path, err, meant),
                      location=where, key=as_typed(path, where) or None)


def _path(doc: Document, err: dict) -> KeyPath:
    """Where in the user's data an error is: pydantic's ``loc`` there, or below it."""
    path = _data_path(doc.data, tuple(err["loc"]), err["type"])
    if err["type"] == "union_tag_invalid":  # point at the unknown tag itself
        path += (str(err["ctx"]["discriminator"]).strip("'"),)
    below = err.get("ctx", {}).get("error")
    if isinstance(below, ProblemAt):  # the deepest of the places it may be
        path = max((_data_path(doc.data, path + p, "") for p in below.paths), key=len,
                   default=path)
    return path


# Which error to report first: unknown key, then a wrong value (1), then a missing key.
_RANK = {"extra_forbidden": 0, "missing": 2}


def _data_path(data: Any, loc: tuple, err_type: str) -> KeyPath:
    """Map pydantic's ``loc`` onto the user's data, dropping union tags and validator names."""
    path: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif i == len(loc) - 1 and err_type == "missing":
            pass
        else:
            continue
        path.append(part)
    return tuple(path)


# What a pydantic error type expected, in plain words; ``{name}`` is filled from its ctx.
_EXPECTED = {
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float"), "a whole number"),
    "int_parsing_size": "a whole number of at most 19 digits",
    **dict.fromkeys(("float_type", "float_parsing"), "a number"),
    "finite_number": "a finite number",
    **dict.fromkeys(("bool_type", "bool_parsing"), "true or false"),
    "string_type": "text",
    **dict.fromkeys(("list_type", "tuple_type", "set_type"), "a list"),
    **dict.fromkeys(("dict_type", "model_type", "model_attributes_type"),
                    "a mapping of keys to values"),
    "greater_than": "greater than {gt}",
    "greater_than_equal": "greater than or equal to {ge}",
    "less_than": "less than {lt}",
    "less_than_equal": "less than or equal to {le}",
    "multiple_of": "a multiple of {multiple_of}",
    "string_too_short": "text of at least {min_length} character(s)",
    "string_too_long": "text of at most {max_length} characters",
    "string_pattern_mismatch": "text matching the pattern {pattern}",
    "none_required": "nothing (null)",
    "literal_error": "{expected}",
    "enum": "one of {expected}",
}


def _message(model: type[BaseModel], loc: tuple, path: KeyPath, err: dict,
             meant: str | None = None, noun: str = "key") -> str:
    """One problem in plain words: what was expected and what was found."""
    kind = err["type"]
    found = err.get("input")
    ctx = err.get("ctx", {})
    if kind == "extra_forbidden":
        key = path[-1] if path else loc[-1]
        allowed = _allowed_keys(model, loc[:-1])
        hint = did_you_mean(key, [meant] if meant else allowed) or (
            f"; expected one of: {', '.join(sorted(allowed))}" if allowed else "")
        return f"unknown {noun} {key!r}{hint}"
    if kind == "missing":
        return "missing required key"
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        return _tag_message(model, loc, kind, ctx)
    if kind in ("too_short", "too_long"):
        return _length_message(kind, ctx, found)
    if kind in ("value_error", "assertion_error"):
        return err["msg"].split(", ", 1)[-1]  # "Value error, <our message>"
    if kind in _EXPECTED:
        expected = _EXPECTED[kind].format(**{k: _number(v) for k, v in ctx.items()})
        hint = did_you_mean(found, _quoted(ctx.get("expected", ""))) \
            if kind == "literal_error" and isinstance(found, str) else ""
        return f"expected {expected}; found {shown(found)}{hint}"
    msg = err["msg"]  # an error type no schema of ours produces yet: pydantic's words
    return f"{msg[0].lower()}{msg[1:]}; found {shown(found)}"


def _quoted(text: str) -> list[str]:
    """The quoted names in pydantic's ``'a', 'b' or 'c'``."""
    return re.findall(r"'([^']*)'", text)


def _tag_message(model: type[BaseModel], loc: tuple, kind: str, ctx: dict) -> str:
    """A tagged union (``type: host``) whose tag is missing or unknown."""
    key = str(ctx.get("discriminator", "type")).strip("'")
    tags = _tags(model, loc) or _quoted(ctx.get("expected_tags", ""))
    choices = f"expected one of {', '.join(map(repr, tags))}" if tags else ""
    if kind == "union_tag_not_found":
        return f"missing {key!r}" + (f"; {choices}" if choices else "")
    tag = ctx.get("tag")
    return f"unknown {key} {tag!r}" + (did_you_mean(tag, tags) or f"; {choices}")


def _length_message(kind: str, ctx: dict, found: Any) -> str:
    """Too few or too many items in a list or mapping."""
    count = len(found) if isinstance(found, (list, dict, str)) else None
    if kind == "too_short":
        least = ctx.get("min_length", 1)
        expected = f"at least {least} item{'s' if least != 1 else ''}"
    else:
        expected = f"at most {ctx.get('max_length')} items"
    return f"expected {expected}; found {'none' if count == 0 else count or shown(found)}"


def _number(value: Any) -> Any:
    """``1`` rather than ``1.0`` for a bound written as a whole number."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _tags(model: type[BaseModel], loc: tuple) -> list[str]:
    """The ``type`` values a tagged union at ``loc`` accepts, best effort."""
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            field = tp.model_fields.get(part)
            tp = field.annotation if field else None
        elif typing.get_origin(tp) in (list, tuple) and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif typing.get_origin(tp) is dict:
            tp = typing.get_args(tp)[1]
        else:
            return []
    tp = _unwrap(tp)
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return []
    return [t for t in (_tag_of(_unwrap(m)) for m in typing.get_args(tp)) if t is not None]


def _allowed_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """Field names (and aliases) of the sub-model at ``loc``, best effort."""
    target = _model_at(model, loc)
    if target is None:
        return []
    return [f.alias or name for name, f in target.model_fields.items()]


def _model_at(tp: Any, loc: tuple) -> type[BaseModel] | None:
    parts = list(loc)
    while True:
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if origin in (typing.Union, types.UnionType):
            member = _union_member(typing.get_args(tp), parts[0] if parts else None)
            if member is None:
                return None
            if parts and parts[0] == _tag_of(member):
                parts.pop(0)
            tp = member
            continue
        if not parts:
            return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None
        part = parts.pop(0)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                field = next((f for f in tp.model_fields.values() if f.alias == part), None)
            if field is None:
                return None
            tp = field.annotation
        elif origin in (list, tuple) and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif origin is dict:
            tp = typing.get_args(tp)[1]
        else:
            return None


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _union_member(members: tuple, tag: Any) -> Any:
    models = [m for m in (_unwrap(a) for a in members) if m is not type(None)]
    for member in models:
        if _tag_of(member) == tag:
            return member
    return models[0] if len(models) == 1 else None


def _tag_of(member: Any) -> Any:
    """The literal default of a model's discriminator-like ``type``/``kind`` field."""
    if isinstance(member, type) and issubclass(member, BaseModel):
        for name in ("type", "kind"):
            field = member.model_fields.get(name)
            if field is not None and isinstance(field.default, str):
                return field.default
    return None
