"""The experiment file: what to run (``kind``), on which system, with which seed.

Each kind of experiment is a subclass of :class:`ExperimentSpec` with its own fields,
registered by name with :func:`register`; ``cxlsim run FILE`` reads ``kind`` and
validates the rest of the file against that subclass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from cxlsim.config.base import StrictModel
from cxlsim.topology.schema import TopologySpec

if TYPE_CHECKING:
    from cxlsim.experiments.result import RunResult

_KINDS: dict[str, type[ExperimentSpec]] = {}


class ExperimentSpec(StrictModel):
    """Fields every experiment has; subclasses add their own and implement :meth:`run`."""

    kind_name: ClassVar[str] = ""
    name: str = Field(description="experiment name, used for the run folder")
    kind: str = Field(description="what kind of experiment this is")
    description: str = Field("", description="what the experiment shows")
    seed: int = Field(1, ge=0, description="seed of the run's random generator")
    topology: TopologySpec | None = Field(
        None, description="the system: a topology file path (relative to this file) or inline")

    def run(self, progress: bool = False) -> RunResult:
        """Run the experiment and return its metrics, tables and figures."""
        raise NotImplementedError


def register(kind: str):
    """Class decorator: make an experiment subclass available as ``kind: NAME``."""

    def deco(cls: type[ExperimentSpec]) -> type[ExperimentSpec]:
        cls.kind_name = kind
        _KINDS[kind] = cls
        return cls

    return deco


def experiment_kinds() -> dict[str, type[ExperimentSpec]]:
    """All registered experiment kinds by name."""
    return dict(_KINDS)
