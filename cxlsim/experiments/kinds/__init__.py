"""Experiment kinds, one module each; importing this package registers them all."""

from cxlsim.experiments.kinds import deceval, link_loaded, ornl_transfer, routes

__all__ = ["deceval", "link_loaded", "ornl_transfer", "routes"]
