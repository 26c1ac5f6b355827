"""Base class for every parameter and file schema: strict, frozen, documented."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A pydantic model that rejects unknown keys and cannot be mutated.

    Unknown keys are the commonest mistake in hand-written YAML (a misspelt key would
    otherwise be silently ignored and a default used), so every schema forbids them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
