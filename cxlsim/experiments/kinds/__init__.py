"""Experiment kinds, one module each; importing this package registers them all."""

from cxlsim.experiments.kinds import routes

__all__ = ["routes"]
