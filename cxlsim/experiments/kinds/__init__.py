"""Experiment kinds, one module each; importing this package registers them all."""

from cxlsim.experiments.kinds import link_loaded, ornl_transfer, routes

__all__ = ["link_loaded", "ornl_transfer", "routes"]
