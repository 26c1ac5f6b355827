"""The experiment file: what to run (``kind``), on which system, with which seed.

Each kind of experiment is a subclass of :class:`ExperimentSpec` with its own fields,
registered by name with :func:`register`; ``cxlsim run FILE`` reads ``kind`` and
validates the rest of the file against that subclass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from cxlsim.config.base import StrictModel
from cxlsim.topology.schema import TopologySpec

if TYPE_CHECKING:
    from cxlsim.experiments.quick import QuickForm
    from cxlsim.experiments.result import RunResult

_KINDS: dict[str, type[ExperimentSpec]] = {}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class Baseline(StrictModel):
    """A sweep's baseline: per point, each of ``metrics`` compared with the point that
    differs only in ``key``, which holds ``value`` there."""

    key: str = Field(description="a grid key")
    value: Any = Field(description="one of its values: the baseline's")
    metrics: list[str] = Field(min_length=1, description=(
        "metrics compared: each adds METRIC_loss, positive when the point does worse: "
        "1 - point / baseline (the fraction of the baseline's value lost), or for a time "
        "(a metric ending in _s, _ms, _us or _ns, not _per_s) point / baseline - 1 (the "
        "fraction slower); negative: gained"))

    def columns(self) -> list[str]:
        """The columns the comparison adds."""
        return [f"{m}_loss" for m in self.metrics]

    @staticmethod
    def loss(metric: str, point: Any, base: Any) -> Any:
        """``metric``'s loss at ``point`` against ``base``: positive when worse (slower
        for a time, lower for anything else)."""
        if _TIME.search(metric) and not metric.endswith("_per_s"):
            return point / base - 1.0
        return 1.0 - point / base


#: A metric that is a time (lower is better) by its unit: app_time_s, latency_min_ns.
_TIME = re.compile(r"_(s|ms|us|ns)$")


class SweepSpec(StrictModel):
    """A grid of overrides: every combination of the listed values is one sweep point."""

    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(
        min_length=1, description="key path (as for --set) -> values to sweep")
    jobs: int | None = Field(None, ge=1, description="worker processes (default: CPU count)")
    heatmaps: list[str] = Field(
        default_factory=list, description="metrics drawn as heat maps over the first two keys")
    baseline: Baseline | None = Field(None, description=(
        "the point each other is compared with: the same values of the other keys and "
        "this key's given value"))

    @model_validator(mode="after")
    def _baseline_in_grid(self) -> "SweepSpec":
        b = self.baseline
        if b is not None and b.key not in self.grid:
            raise ValueError(f"baseline.key: {b.key!r} is not a key of the grid "
                             f"({', '.join(self.grid)})")
        if b is not None and b.value not in self.grid[b.key]:
            values = ", ".join(map(str, self.grid[b.key]))
            raise ValueError(f"baseline.value: {b.value!r} is not one of the grid's values of "
                             f"{b.key} ({values}): every point is compared with its "
                             f"baseline point ({b.key} = {b.value}), so the grid must hold "
                             f"it; add {b.value} to sweep.grid.{b.key}, or drop the "
                             f"comparison (--set sweep.baseline=null)")
        return self


class ExperimentSpec(StrictModel):
    """Fields every experiment has; subclasses add their own and implement :meth:`run`."""

    kind_name: ClassVar[str] = ""
    #: What a run's progress bar counts (a sweep shows them beside its points).
    step_unit: ClassVar[str] = "step"
    name: str = Field(description="experiment name, used for the run folder")
    kind: str = Field(description="what kind of experiment this is")
    description: str = Field("", description="what the experiment shows")
    seed: int = Field(1, ge=0, description="seed of the run's random generator")
    topology: TopologySpec | None = Field(
        None, description="the system: a topology file path (relative to this file) or inline")
    sweep: SweepSpec | None = Field(None, description="a grid of points to run instead of one")
    figures: bool = Field(True, description=(
        "draw the figures (false: metrics and tables only, for runs read by code; a "
        "sweep's points, which keep their metrics only, run without them)"))

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        """The name becomes ``runs/NAME``: no folders, no path tricks."""
        if not _PLAIN_NAME.fullmatch(name) or len(name) > 100:
            raise ValueError("expected a plain name (letters, digits, '_', '.', '-'; no "
                             f"'/', at most 100 characters), used as the run folder's name; "
                             f"found {name!r}")
        return name

    def run(self, progress: bool = False, point: int = 0) -> RunResult:
        """Run one point of the experiment; ``point`` selects the sweep point's RNG stream.
        A kind whose run takes seconds draws a bar on stderr when ``progress``
        (:mod:`cxlsim.experiments.progress`)."""
        raise NotImplementedError

    def shared_input(self) -> Hashable | None:
        """A key naming what this run makes before it starts and other runs with the same
        key reuse (a generated trace), or None when it makes nothing worth sharing."""
        return None

    def run_key(self) -> Hashable | None:
        """A key equal for runs that must give the same metrics although their configs
        differ (a sweep runs one of them and copies its row), or None when only this
        config gives this run's metrics."""
        return None

    def prepare(self, progress: bool = False) -> None:
        """Make the :meth:`shared_input` now, so that workers forked afterwards inherit it
        instead of each making it again (a sweep calls this once before forking);
        ``progress``: a bar of its making."""

    def coarser(self) -> QuickForm:
        """This study's quick form (:mod:`..quick`); by default it has none (it runs as
        is), saying why."""
        from cxlsim.experiments.quick import QuickForm

        return QuickForm(1, why_not=f"an experiment of kind {self.kind} is not scaled by the "
                                    f"similarity law, so it has no coarser form")

    def draw(self, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The figures ``make()`` draws (in cxlsim's style, :mod:`cxlsim.plot.style`), or
        none (and nothing drawn) when ``figures`` is false."""
        if not self.figures:
            return {}
        from cxlsim.plot.style import styled

        with styled():
            return make()


def _topology_node(topology: TopologySpec | None, name: str, what: str,
                  accept: Callable[[Any], bool]) -> str:
    """For field validators: ``name`` if it is a node of ``topology`` that ``accept``s,
    else a ValueError naming ``what`` was expected and the nodes that would do."""
    if topology is None:  # the topology itself failed validation; that error is reported
        return name
    fits = [n.name for n in topology.nodes if accept(n)]
    if name not in fits:
        known = "is not a node of the topology" if name not in {
            n.name for n in topology.nodes} else "is not " + what
        raise ValueError(f"{name!r} {known}; expected {what}: "
                         f"{', '.join(map(repr, fits)) or 'the topology has none'}")
    return name


def _node_validator(what: str, accept: Callable[[Any], bool]) -> AfterValidator:
    def check(name: str, info: ValidationInfo) -> str:
        return _topology_node(info.data.get("topology"), name, what, accept)
    return AfterValidator(check)


#: Field types naming a node of the experiment's ``topology`` (declared before them);
#: give the field ``validate_default=True`` so a default name is checked too.
HostName = Annotated[str, _node_validator("a host", lambda n: n.type == "host")]
MemoryDeviceName = Annotated[str, _node_validator(
    "a CXL device with memory (Type 2 or 3)",
    lambda n: n.type == "cxl_device" and n.cxl_type in (2, 3))]
Type2DeviceName = Annotated[str, _node_validator(
    "a CXL Type 2 device with memory", lambda n: n.type == "cxl_device" and n.cxl_type == 2)]


def register(kind: str):
    """Class decorator: make an experiment subclass available as ``kind: NAME``."""

    def deco(cls: type[ExperimentSpec]) -> type[ExperimentSpec]:
        cls.kind_name = kind
        _KINDS[kind] = cls
        return cls

    return deco


def experiment_kinds() -> dict[str, type[ExperimentSpec]]:
    """All experiment kinds by name (imports every kind's module)."""
    from cxlsim.experiments.kinds import import_all

    import_all()
    return dict(_KINDS)


def experiment_kind(name: str) -> type[ExperimentSpec] | None:
    """The kind ``name`` (importing only its module), or None if there is none."""
    from cxlsim.experiments.kinds import import_kind

    import_kind(name)
    return _KINDS.get(name)
