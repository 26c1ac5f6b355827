"""Base class for every parameter and file schema: strict, frozen, documented."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
