"""Simulated components: named, parameterised nodes of a tree.

A component's dotted ``path`` (``host0.link``) names its statistics in the run's
:class:`~cxlsim.engine.stats.StatsRegistry`, so results can be traced back to the
part of the topology that produced them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Protocol

from cxlsim.config.base import StrictModel
from cxlsim.engine.stats import Counter, Level, StatsRegistry, Tally


class Simulation(Protocol):
    """What a component needs of its simulation (:class:`cxlsim.engine.Simulation`):
    the SimPy environment, the top-level components and the statistics registry."""

    env: Any
    components: list[Component]
    stats: StatsRegistry


class Component:
    """Base class of everything simulated.

    Subclasses set the class attribute ``Params`` to their parameter model. ``params``
    may be an instance of it, a mapping (validated by pydantic, so an unknown key
    raises ``ValidationError``) or None for all defaults. A component registers
    itself with its ``parent``, or with ``sim.components`` if it has none; sibling
    names must be unique so that stat paths are.
    """

    Params: ClassVar[type[StrictModel]] = StrictModel
    #: End of the traffic computed at once through this component
    #: (:mod:`cxlsim.protocol.stream`): its state is already that time's.
    streamed_until: float = -1.0

    def __init__(self, sim: Simulation, name: str,
                 params: StrictModel | Mapping[str, Any] | None = None,
                 parent: Component | None = None) -> None:
        if not name or "." in name:
            raise ValueError(f"component name must be non-empty and without '.', got {name!r}")
        cls = type(self).Params
        if params is None:
            params = cls()
        elif isinstance(params, Mapping):
            params = cls.model_validate(params)
        elif not isinstance(params, cls):
            raise TypeError(f"{type(self).__name__} params must be a {cls.__name__}, "
                            f"a mapping or None, got {type(params).__name__}")
        if parent is not None and parent.sim is not sim:
            raise ValueError(f"parent {parent.path!r} belongs to another simulation")
        siblings = sim.components if parent is None else parent.children
        if any(c.name == name for c in siblings):
            raise ValueError(f"duplicate component name {name!r} under "
                             f"{parent.path if parent else 'the simulation'}")
        self.sim = sim
        self.env = sim.env
        self.params = params
        self.name = name
        self.parent = parent
        self.path = name if parent is None else f"{parent.path}.{name}"
        self.children: list[Component] = []
        siblings.append(self)

    def check_joinable(self) -> None:
        """Refuse a new sender while traffic computed at once holds this component: its
        state is already at the end of that traffic, so the sender could not queue in
        among it."""
        if self.env.now < self.streamed_until:
            raise RuntimeError(
                f"{self.path}: its traffic was computed at once up to "
                f"t={self.streamed_until:g} ns, so a sender joining at t={self.env.now:g} "
                "cannot queue among it; build the Simulation with streaming=False")

    def counter(self, stat: str) -> Counter:
        """This component's counter ``<path>.<stat>``."""
        return self.sim.stats.counter(f"{self.path}.{stat}")

    def tally(self, stat: str) -> Tally:
        """This component's tally ``<path>.<stat>``."""
        return self.sim.stats.tally(f"{self.path}.{stat}")

    def level(self, stat: str) -> Level:
        """This component's level ``<path>.<stat>``."""
        return self.sim.stats.level(f"{self.path}.{stat}")

    def walk(self) -> Iterator[Component]:
        """This component and all its descendants, depth first, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path}>"
