"""Experiment kinds, one module each; importing this package registers them all."""

from cxlsim.experiments.kinds import (app_tiering, bias, deceval, epyc_latency, hmalloc,
                                      interleave, link_loaded, mlc, ornl_transfer, routes)

__all__ = ["app_tiering", "bias", "deceval", "epyc_latency", "hmalloc", "interleave",
           "link_loaded", "mlc", "ornl_transfer", "routes"]
