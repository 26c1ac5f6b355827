"""Closed forms: Neugebauer b_n, the ORNL CXL model (Cabrera, Young, Vetter, ExHET'22 slides), queueing formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cxlsim.analytic import (
    crossover, effective_bandwidth, latency_only_ratio, lindley, littles_law_L,
    md1_mean_wait, mm1_mean_wait, speedup, t_cxl, t_pcie,
)
from cxlsim.link.tlp import PcieConfig, tlp_bandwidth

KIB = 1024
OPS = ("write", "read", "read_write")


def sig4(x: float) -> str:
    return f"{x:.4g}"


def gbit(x: float) -> str:
    return f"{x * 8 / 1e9:.2f}"


@pytest.mark.parametrize("n, write, read, read_write", [
    (64, "82.69", "86.63", "64.97"),
    (128, "95.75", "98.34", "82.69"),
    (512, "103.95", "105.46", "99.68"),
    (4096, "103.95", "105.46", "99.68"),
])
def test_neugebauer_table_gbit(n, write, read, read_write):
    """The SIGCOMM'18 model's table (pcie-bench/pcie-model), gen3 x16 MPS 256, in Gb/s."""
    got = [gbit(effective_bandwidth(n, op)) for op in OPS]
    assert got == [write, read, read_write]


def test_neugebauer_table_gbyte():
    assert sig4(effective_bandwidth(64, "read_write") / 1e9) == "8.121"
    assert sig4(effective_bandwidth(64, "read") / 1e9) == "10.83"
    assert sig4(effective_bandwidth(64, "write") / 1e9) == "10.34"
    assert f"{effective_bandwidth(512) / 1e9:.3f}" == "12.460"


def test_zero_bytes_rejected():
    with pytest.raises(ValueError, match="at least 1 byte"):
        effective_bandwidth(0)


@given(st.sampled_from(OPS), st.integers(0, 12), st.sampled_from([128, 256, 512]),
       st.sampled_from([128, 256, 512, 1024]))
def test_bandwidth_monotone_over_powers_of_two(op, k, mps, mrrs):
    """b_n over 64 B multiples is a sawtooth (b_320 < b_256: a second MWr TLP), so the
    monotone statement is over power-of-two sizes; these never exceed the asymptote,
    reached at multiples of max(MPS, MRRS)."""
    cfg = PcieConfig(mps=mps, mrrs=mrrs)
    n = 64 * 2**k
    assert effective_bandwidth(n, op, cfg) <= effective_bandwidth(2 * n, op, cfg)
    top = effective_bandwidth(max(mps, mrrs), op, cfg)
    assert effective_bandwidth(n, op, cfg) <= top * (1 + 1e-12)
    assert effective_bandwidth(7 * max(mps, mrrs), op, cfg) == pytest.approx(top)


def test_bandwidth_sawtooth_exists():
    assert effective_bandwidth(320, "write") < effective_bandwidth(256, "write")


@given(st.sampled_from(OPS), st.integers(1, 100_000))
def test_transfer_time_never_decreases(op, n):
    """n / b_n is wire bytes over TLP bandwidth: what makes the crossover search exact."""
    assert n / effective_bandwidth(n, op) <= (n + 1) / effective_bandwidth(n + 1, op)


def test_ornl_speedups():
    """Read+write b_n gives S(64) = 14.05 (published 14.0x, T1.1) and 15.31."""
    assert f"{speedup(64, 0.6):.2f}" == "14.05"
    assert f"{speedup(64, 0.9):.2f}" == "15.31"
    assert speedup(64, 0.6) == pytest.approx(14.0, rel=0.01)
    assert f"{t_pcie(64):.2f}" == "746.65"
    assert f"{t_cxl(64, 0.6):.2f}" == "53.13"


def test_ornl_crossovers():
    """T1.2 / T1.3: 12.7 and 76.5 KiB published; 13,049 B and 78,337 B exactly."""
    assert crossover(0.6) == 13_049
    assert crossover(0.9) == 78_337
    assert f"{crossover(0.7) / KIB:.2f}" == "19.82"
    assert f"{crossover(0.8) / KIB:.2f}" == "34.00"
    assert crossover(0.6) / KIB == pytest.approx(12.7, rel=0.01)
    assert crossover(0.9) / KIB == pytest.approx(76.5, rel=0.01)


def test_latency_only_ratio():
    """T1.4: the published 18.7x is t_pcie(64) / 40 ns, not reachable at p = 0.9."""
    assert f"{latency_only_ratio():.2f}" == "18.67"
    assert speedup(64, 0.9) < 18.0


@pytest.mark.parametrize("op, mps, s6, s9, x6, x9", [
    ("read", 256, "14.94", "15.99", "13.49", "80.96"),
    ("write", 256, "14.80", "15.89", "13.28", "79.79"),
    ("read", 128, "14.89", "15.95", "12.36", "74.15"),
])
def test_ornl_variants(op, mps, s6, s9, x6, x9):
    """Other b_n variants of the SIGCOMM'18 model miss the published numbers."""
    cfg = PcieConfig(mps=mps)
    got = [f"{speedup(64, p, cfg, op=op):.2f}" for p in (0.6, 0.9)]
    got += [f"{crossover(p, cfg, op=op) / KIB:.2f}" for p in (0.6, 0.9)]
    assert got == [s6, s9, x6, x9]


@pytest.mark.parametrize("n, b, tp, tc6, tc9, s6, s9", [
    (256, 11.968, 760.2, 75.7, 63.8, 10.05, 11.92),
    (4 * KIB, 12.460, 1067.5, 587.9, 405.3, 1.82, 2.63),
    (64 * KIB, 12.460, 5998.4, 8806.0, 5884.0, 0.68, 1.02),
])
def test_ornl_curve_points(n, b, tp, tc6, tc9, s6, s9):
    """Curve points of the ORNL model, times rounded to 0.1 ns from rounded inputs."""
    assert effective_bandwidth(n) / 1e9 == pytest.approx(b, abs=5e-4)
    assert t_pcie(n) == pytest.approx(tp, abs=0.06)
    assert (t_cxl(n, 0.6), t_cxl(n, 0.9)) == pytest.approx((tc6, tc9), abs=0.06)
    assert (speedup(n, 0.6), speedup(n, 0.9)) == pytest.approx((s6, s9), abs=0.005)


@given(st.floats(0.05, 0.97), st.floats(0.0, 2000.0), st.floats(0.0, 200.0),
       st.sampled_from(OPS), st.sampled_from([128, 256, 1024]))
def test_crossover_is_exact(p, t_s_pcie, t_s_cxl, op, mps):
    cfg = PcieConfig(mps=mps)
    n = crossover(p, cfg, t_s_pcie, t_s_cxl, op)
    assert t_cxl(n, p, cfg, t_s_cxl, op) >= t_pcie(n, cfg, t_s_pcie, op)
    if n > 1:
        assert t_cxl(n - 1, p, cfg, t_s_cxl, op) < t_pcie(n - 1, cfg, t_s_pcie, op)


def test_crossover_needs_penalty_below_one():
    with pytest.raises(ValueError, match="0 < cxl_penalty < 1, not 1.0"):
        crossover(1.0)
    with pytest.raises(ValueError, match="cxl_penalty is a bandwidth fraction > 0, not 0"):
        t_cxl(64, 0)


@given(st.integers(1, 10**7), st.floats(0.05, 1.0), st.floats(0.05, 1.0))
def test_higher_penalty_never_slows_cxl(n, p1, p2):
    lo, hi = sorted((p1, p2))
    assert t_cxl(n, hi) <= t_cxl(n, lo)


def test_ornl_uses_the_link():
    """A faster link moves the crossover out in proportion to its TLP bandwidth."""
    gen4 = PcieConfig(generation=4)
    ratio = tlp_bandwidth(gen4) / tlp_bandwidth(PcieConfig())
    assert crossover(0.6, gen4) / crossover(0.6) == pytest.approx(ratio, rel=1e-3)


def lindley_loop(arrivals, services):
    out, last = [], float("-inf")
    for a, s in zip(arrivals, services):
        last = max(a, last) + s
        out.append(last)
    return out


@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 50)), max_size=200))
def test_lindley_matches_loop(pairs):
    gaps, services = (list(x) for x in zip(*pairs)) if pairs else ([], [])
    arrivals = np.cumsum(gaps)
    got = lindley(arrivals, services)
    scale = 1 + float(np.sum(gaps)) + float(np.sum(services))
    np.testing.assert_allclose(got, lindley_loop(arrivals, services), rtol=0, atol=1e-9 * scale)


def test_lindley_rejects():
    with pytest.raises(ValueError, match="equal length"):
        lindley([0.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="arrivals must be in order"):
        lindley([1.0, 0.0], [1.0, 1.0])


@pytest.mark.parametrize("rho", [0.3, 0.5, 0.7])
@pytest.mark.parametrize("dist, formula", [("det", md1_mean_wait), ("exp", mm1_mean_wait)])
def test_mean_wait_vs_simulation(rho, dist, formula):
    """Poisson arrivals through the vectorised Lindley recursion, 2e6 customers, seeded."""
    rng = np.random.default_rng(20240)
    n, service = 2_000_000, 10.0
    arrivals = np.cumsum(rng.exponential(service / rho, n))
    services = np.full(n, service) if dist == "det" else rng.exponential(service, n)
    waits = (lindley(arrivals, services) - services - arrivals)[n // 100:]
    assert waits.mean() == pytest.approx(formula(rho, service), rel=0.02)


def test_queue_formulas():
    assert md1_mean_wait(0.5, 10.0) == 5.0
    assert mm1_mean_wait(0.5, 10.0) == 10.0
    assert littles_law_L(0.1, 25.0) == 2.5
    with pytest.raises(ValueError, match=r"rho must be in \[0, 1\)"):
        md1_mean_wait(1.0, 10.0)


def test_erlang_c_and_the_multi_server_waits():
    from cxlsim.analytic.queues import erlang_c, mdc_mean_wait, mmc_mean_wait
    assert erlang_c(1, 0.6) == pytest.approx(0.6)           # M/M/1: P(wait) = rho
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)         # textbook value
    assert mmc_mean_wait(1, 0.6, 10.0) == pytest.approx(mm1_mean_wait(0.6, 10.0))
    assert mdc_mean_wait(1, 0.6, 10.0) == pytest.approx(md1_mean_wait(0.6, 10.0))
    assert erlang_c(500, 400.0) < 1e-6 < erlang_c(500, 495.0)  # flat, then steep
    with pytest.raises(ValueError, match="offered load 0 <= a < c"):
        erlang_c(4, 4.0)
