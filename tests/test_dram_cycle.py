"""The epoch level's DRAM formulas against the cycle-level reference they stand for.

``cxlsim.memory.dram_cycle`` runs one data bus clock by clock -- FR-FCFS, the JEDEC
timings, the write queue's watermarks, refresh -- on Poisson bursts of lines; the closed
formulas of ``cxlsim.memory.dram`` must give the same sustained bandwidth and the same
rise of the mean read latency on the same streams (random: a row per line; streaming:
four lines a row), all reads and 64 % reads, on the three memory presets.

Stated tolerances: sustained bandwidth within 5 % for streams, 8 % for random traffic
(at one activation a line DDR5 sits exactly at its tRRD_S / tFAW limit, where the
reference's scheduling loses 3-7 % the formula does not); the read latency's rise over
its no-load value within 25 % or 8 ns at 30 % and 50 % of the sustained bandwidth, and
at 70 % for all reads. (With writes at 70 % and above the formula, an M/G/1 mean, rises
faster than the reference: up to 1.5x at 70 %.)
"""

from __future__ import annotations

import math

import pytest

from conftest import REPO
from cxlsim.config import load_document, validate_document
from cxlsim.memory import dram_cycle
from cxlsim.memory.dram import DramParams, DramTarget

#: The presets, on one bus each, as the measured platforms use them: DDR5 (Graviton3's:
#: one rank), HBM2 with A64FX's 256 B requests, DDR4 with Power9's two ranks and 128 B
#: requests.
PRESETS = {"ddr5-4800": {}, "hbm2": {"request_lines": 4},
           "ddr4-2666": {"ranks": 2, "request_lines": 2}}
REQUESTS = 25_000


def bus(preset: str, burst: int) -> DramParams:
    """One data bus of a memory preset, ``burst`` lines a row activation."""
    spec = load_document(REPO / "models" / "memory" / f"{preset}.yaml")
    params = validate_document(DramParams, spec)
    return params.model_copy(update={**PRESETS[preset], "channels": 1, "burst_lines": burst})


def reference(params: DramParams, load: float, r: float, burst: int) -> dram_cycle.Served:
    """The cycle-level bus on Poisson bursts at ``load`` (a fraction of the peak)."""
    return dram_cycle.serve(params, dram_cycle.poisson(REQUESTS, load, params, r, burst,
                                                       seed=2))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("burst", [1, 4])
@pytest.mark.parametrize("r", [1.0, 0.64])
def test_formulas_agree_with_the_cycle_level_reference(preset, burst, r):
    params = bus(preset, burst)
    model = DramTarget(params, idle=0.0)
    saturated = reference(params, 3.0, r, burst).throughput() * params.line_time
    formula = model.capacity(r) / params.peak_bandwidth
    assert formula == pytest.approx(saturated, rel=0.05 if burst > 1 else 0.08)

    def rise(load: float) -> tuple[float, float]:
        """(reference, formula) mean read latency at ``load`` over their no-load value."""
        bps = load * params.peak_bandwidth
        return (reference(params, load, r, burst).read_latency() - idle,
                model.read_latency(bps * r, bps * (1 - r)))

    idle = reference(params, 0.01, r, burst).read_latency()
    for share in (0.3, 0.5, 0.7) if r == 1.0 else (0.3, 0.5):
        cycle, closed = rise(share * saturated)
        assert closed == pytest.approx(cycle, abs=max(8.0, 0.25 * cycle)), share


def test_a_lone_read_takes_its_activate_cas_latency_and_burst():
    params = bus("ddr5-4800", 1)
    tck, t = dram_cycle.clocks(params)
    one = dram_cycle.Requests(*(x[:1] for x in dram_cycle.poisson(1, 0.1, params, 1.0, 1)
                                .__dict__.values()))
    served = dram_cycle.serve(params, one)
    lone = (t[dram_cycle.RCD] + t[dram_cycle.CL] + t[dram_cycle.BL]) * tck
    assert served.done[0] - one.arrival[0] == pytest.approx(lone, abs=tck)
    assert lone == pytest.approx(params.trcd + params.cl + params.line_time, abs=3 * tck)


def test_refresh_takes_the_bus_only_when_it_holds_the_rank():
    """All-bank refresh idles the bus every tREFI for tRFC and the rows around it: the
    banks' precharge before (tRP), an activation and CAS latency after (tRCD + CL) --
    the reference loses that much (1 - tRFC/tREFI alone would be 1.3 % too high);
    same-bank refresh leaves the bus."""
    same = bus("ddr5-4800", 4)
    every = same.model_copy(update={"trfc_sb": 0.0})
    held = every.trp + every.trfc + every.trcd + every.cl
    for params, share in ((every, 1 - held / every.trefi), (same, 1.0)):
        busy = reference(params, 3.0, 1.0, 4).throughput() * params.line_time
        assert busy == pytest.approx(share, rel=0.005)
        assert DramTarget(params).capacity() / params.peak_bandwidth == pytest.approx(share)
    assert math.isclose(same.refresh_share, 0.0)
