"""Experiment kinds, one module each; importing this package registers them all."""

from cxlsim.experiments.kinds import bias, deceval, link_loaded, ornl_transfer, routes

__all__ = ["bias", "deceval", "link_loaded", "ornl_transfer", "routes"]
