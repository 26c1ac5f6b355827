"""Closed-form models that the discrete-event runs are checked against.

``pcie``: Neugebauer et al. (SIGCOMM'18) effective PCIe bandwidth; ``ornl``: the ORNL
CXL-vs-PCIe transfer model (ExHET'22); ``queues``: M/D/1, M/M/1, Lindley, Little; ``pipeline``: the ORNL pipelined
application model.
"""

from cxlsim.analytic.ornl import (
    T_S_CXL, T_S_PCIE, crossover, latency_only_ratio, speedup, t_cxl, t_pcie,
)
from cxlsim.analytic.pcie import effective_bandwidth
from cxlsim.analytic.pipeline import move_pays, t_app
from cxlsim.analytic.queues import littles_law_L, lindley, md1_mean_wait, mm1_mean_wait

__all__ = [
    "effective_bandwidth",
    "T_S_PCIE", "T_S_CXL", "t_pcie", "t_cxl", "speedup", "crossover", "latency_only_ratio",
    "md1_mean_wait", "mm1_mean_wait", "lindley", "littles_law_L", "t_app", "move_pays",
]
