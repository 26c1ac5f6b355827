"""Describe a schema for people: each field's type (with units), default and meaning.

Feeds ``cxlsim kinds`` and ``cxlsim schema``; the text comes from the pydantic models
themselves, so it cannot drift from what the validator accepts.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter


def describe_fields(model: type[BaseModel]) -> list[dict[str, str]]:
    """One row per field of ``model``: field, type, default ("required" if none), description."""
    props = model.model_json_schema()["properties"]
    rows = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        prop = props.get(key, {})
        rows.append({"field": key, "type": _type_text(prop),
                     "default": _default_text(field),
                     "description": field.description or ""})
    return rows


def _type_text(prop: dict[str, Any] | bool) -> str:
    if isinstance(prop, bool):  # JSON schema's "anything" (e.g. a dict's values of Any)
        return "any"
    if "examples" in prop and "anyOf" in prop:  # a quantity with a unit
        return f"quantity, e.g. {prop['examples'][0]!r}"
    if "$ref" in prop:
        return f"mapping ({prop['$ref'].rsplit('/', 1)[-1]})"
    if "enum" in prop:
        return "one of " + ", ".join(map(str, prop["enum"]))
    if "const" in prop:
        return repr(prop["const"])
    if "discriminator" in prop:
        return f"mapping, by {prop['discriminator']['propertyName']!r} (below)"
    if "anyOf" in prop or "oneOf" in prop:
        options = prop.get("anyOf") or prop["oneOf"]
        kinds = [_type_text(p) for p in options if p.get("type") != "null"]
        optional = any(p.get("type") == "null" for p in options)
        return " or ".join(kinds) + (" or null" if optional else "")
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(prop.get('items', {}))}"
    if kind == "object":
        return f"mapping of {_type_text(prop.get('additionalProperties', {}))}"
    bounds = [f"{op} {prop[k]}" for k, op in (("minimum", ">="), ("exclusiveMinimum", ">"),
                                               ("maximum", "<="), ("exclusiveMaximum", "<"))
              if k in prop]
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _default_text(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    adapter = TypeAdapter(Annotated[(field.annotation, *field.metadata)]) \
        if field.metadata else TypeAdapter(field.annotation)
    shown = adapter.dump_python(value, mode="json") if value is not None else None
    text = "null" if shown is None else str(shown)
    return text if len(text) <= 40 else text[:37] + "..."


def nested_models(model: type[BaseModel]) -> list[type[BaseModel]]:
    """The models ``model``'s fields hold (directly, optionally or in a list), depth first."""
    found: dict[type[BaseModel], None] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp not in found:
                found[tp] = None
                for field in tp.model_fields.values():
                    visit(field.annotation)
            return
        for arg in typing.get_args(tp):
            visit(arg)

    for field in model.model_fields.values():
        visit(field.annotation)
    return list(found)
