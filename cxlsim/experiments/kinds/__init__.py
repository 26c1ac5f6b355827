"""Experiment kinds, one module each; importing this package registers them all."""

from cxlsim.experiments.kinds import (bias, deceval, epyc_latency, hmalloc, link_loaded,
                                      ornl_transfer, routes)

__all__ = ["bias", "deceval", "epyc_latency", "hmalloc", "link_loaded", "ornl_transfer",
           "routes"]
