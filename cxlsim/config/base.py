"""Base class for every parameter and file schema: strict, frozen, documented."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from cxlsim.config.source import KeyPath


class StrictModel(BaseModel):
    """A pydantic model that rejects unknown keys and cannot be mutated.

    Unknown keys are the commonest mistake in hand-written YAML (a misspelt key would
    otherwise be silently ignored and a default used), so every schema forbids them.
    It is also the base of every component's parameters (``Component.Params``).
    Numbers must be finite: a NaN or infinite parameter would only fail later, far from
    where it was written. Convention: every field is declared with
    ``Field(..., description="...")``, units included, so schemas document themselves
    (``cxlsim schema``) and in messages.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              allow_inf_nan=False)


class ProblemAt(ValueError):
    """A validator's complaint about a value below the one it checks, raised instead of a
    plain ValueError so that the message points at that value's line, not the checked
    one's: ``paths`` are key paths relative to the checked value, and the one the user's
    file holds deepest names the place (a policy's tunable may be written under
    ``policy_params`` or in the ``policy`` mapping)."""

    def __init__(self, message: str, *paths: KeyPath) -> None:
        super().__init__(message)
        self.paths = paths


#: A tunable's classes under the similarity law (:mod:`cxlsim.mm.similarity`).
SCALING = ("clock", "cost", "quota", "samples", "rate", "size", "fixed")


def scales(kind: str) -> dict[str, str]:
    """A field's class under the similarity law, for ``Field(...,
    json_schema_extra=scales(kind))``."""
    if kind not in SCALING:
        raise ValueError(f"unknown scaling class {kind!r}; expected one of {SCALING}")
    return {"scales": kind}
