"""Simulation engine: runs, components, statistics and seeded random streams."""

from cxlsim.engine.callbacks import call_later
from cxlsim.engine.component import Component
from cxlsim.engine.rng import make_rng
from cxlsim.engine.simulation import Simulation
from cxlsim.engine.stats import Counter, Level, StatsRegistry, Tally

__all__ = ["Component", "Counter", "Level", "Simulation", "StatsRegistry",
           "Tally", "call_later", "make_rng"]
