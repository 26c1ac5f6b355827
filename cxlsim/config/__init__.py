"""Configuration files: YAML/TOML loading, presets, ``--set`` overrides, strict schemas.

Typical use::

    doc = load_document("topologies/switch-pool.yaml", overrides=["links[0].width=8"])
    topo = validate_document(TopologySpec, doc)
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel

from cxlsim.config.base import StrictModel
from cxlsim.config.overrides import apply_overrides, parse_assignment
from cxlsim.config.presets import expand_presets, find_preset
from cxlsim.config.source import Document, format_path, load_file, parse_yaml
from cxlsim.config.validate import validate_document

__all__ = [
    "Document", "StrictModel", "apply_overrides", "dump_yaml", "expand_presets",
    "find_preset", "format_path", "load_document", "load_file", "parse_assignment",
    "parse_yaml", "validate_document",
]


def load_document(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Document:
    """Read a file, merge its presets and apply ``--set`` overrides (not yet validated)."""
    return apply_overrides(expand_presets(load_file(path)), overrides)


def dump_yaml(model: BaseModel) -> str:
    """The resolved form of a validated model as YAML, with units written out."""
    data = model.model_dump(mode="json", by_alias=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
