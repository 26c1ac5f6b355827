"""Experiment kinds, one module each; importing this package registers them all."""

from cxlsim.experiments.kinds import ornl_transfer, routes

__all__ = ["ornl_transfer", "routes"]
