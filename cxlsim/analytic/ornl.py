"""ORNL "CXL Performance Model" (ExHET'22): PCIe vs CXL transfer time of n bytes.

    t_pcie(n) = n / b_n + t_s_pcie                 (t_s_pcie = 738.77 ns)
    t_cxl(n)  = n / (b_n * cxl_penalty) + t_s_cxl  (t_s_cxl = 40 ns)

with b_n the Neugebauer read+write bandwidth of a PCIe 3.0 x16 link (MPS 256,
MRRS 512), the b_n that reproduces the published 14.0x, 12.7 KiB and 76.5 KiB
(Cabrera, Young, Vetter, ExHET'22 slides; transfer bandwidth from Neugebauer et al., SIGCOMM'18, model pcie-bench/pcie-model). Latencies, the penalty and the link are arguments.
"""

from __future__ import annotations

from cxlsim.analytic.pcie import effective_bandwidth
from cxlsim.analytic.search import least_true
from cxlsim.link.tlp import DmaOp, PcieConfig

T_S_PCIE = 738.77  # ns, ORNL slides
T_S_CXL = 40.0     # ns, ORNL slides
_CFG = PcieConfig()  # gen3 x16, MPS 256, MRRS 512, RCB 64, 64-bit addresses, no ECRC


def _transfer(n: int, cfg: PcieConfig, op: DmaOp) -> float:
    """n / b_n in ns."""
    return n / effective_bandwidth(n, op, cfg) * 1e9


def _penalty(cxl_penalty: float) -> float:
    if not cxl_penalty > 0:
        raise ValueError(f"cxl_penalty is a bandwidth fraction > 0, not {cxl_penalty!r}")
    return cxl_penalty


def t_pcie(n: int, cfg: PcieConfig = _CFG, t_s: float = T_S_PCIE,
           op: DmaOp = "read_write") -> float:
    """ns to move n bytes over PCIe."""
    return _transfer(n, cfg, op) + t_s


def t_cxl(n: int, cxl_penalty: float, cfg: PcieConfig = _CFG, t_s: float = T_S_CXL,
          op: DmaOp = "read_write") -> float:
    """ns to move n bytes over CXL, whose bandwidth is ``cxl_penalty`` times b_n."""
    return _transfer(n, cfg, op) / _penalty(cxl_penalty) + t_s


def speedup(n: int, cxl_penalty: float, cfg: PcieConfig = _CFG,
            t_s_pcie: float = T_S_PCIE, t_s_cxl: float = T_S_CXL,
            op: DmaOp = "read_write") -> float:
    """t_pcie(n) / t_cxl(n)."""
    return t_pcie(n, cfg, t_s_pcie, op) / t_cxl(n, cxl_penalty, cfg, t_s_cxl, op)


def crossover(cxl_penalty: float, cfg: PcieConfig = _CFG, t_s_pcie: float = T_S_PCIE,
              t_s_cxl: float = T_S_CXL, op: DmaOp = "read_write") -> int:
    """Smallest n (bytes, >= 1) with t_cxl(n) >= t_pcie(n), exact on the stepwise b_n.

    b_n itself is a sawtooth (b_257 < b_256), but n / b_n = max(tx, rx) / B is wire
    bytes over TLP bandwidth, and wire bytes never decrease as n grows. So
    t_cxl - t_pcie = (n / b_n)(1/p - 1) - (t_s_pcie - t_s_cxl) is non-decreasing in n
    for every n >= 1 when p < 1: the predicate is monotone everywhere, and doubling
    followed by bisection on integers returns the least n, no local scan needed.
    """
    if not 0 < cxl_penalty < 1:
        raise ValueError(f"a crossover needs 0 < cxl_penalty < 1, not {cxl_penalty!r} "
                         "(at >= 1 CXL is never slower per byte)")

    def cxl_behind(n: int) -> bool:
        return t_cxl(n, cxl_penalty, cfg, t_s_cxl, op) >= t_pcie(n, cfg, t_s_pcie, op)

    return least_true(cxl_behind)


def latency_only_ratio(cfg: PcieConfig = _CFG, t_s_pcie: float = T_S_PCIE,
                       t_s_cxl: float = T_S_CXL, n: int = 64,
                       op: DmaOp = "read_write") -> float:
    """t_pcie(n) / t_s_cxl: the speedup if CXL's transfer term is dropped.

    This is the published upper end "18.7x" (Cabrera, Young, Vetter, ExHET'22 slides); the formulas cannot
    give it at any cxl_penalty <= 1 (0.9 gives about 15.3x).
    """
    return t_pcie(n, cfg, t_s_pcie, op) / t_s_cxl
