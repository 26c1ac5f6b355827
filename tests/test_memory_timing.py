"""DRAM and CXL memory timing at the epoch level: mix effect, loaded latency, the
equilibrium solver, and the cross-check against the transaction level."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.analytic.queues import md1_mean_wait, mdc_mean_wait
from cxlsim.config import load_document, validate_document
from cxlsim.devices.requester import PoissonRequester
from cxlsim.engine import Simulation
from cxlsim.link.flits import saturated_efficiency
from cxlsim.memory import CoreMemory, CpuParams, PageTable
from cxlsim.memory._latency import md1_wait, mdc_wait, mg1_wait
from cxlsim.memory.dram import DramParams, DramTarget
from cxlsim.memory.epoch import Demand, EpochEngine, MemorySystem
from cxlsim.memory.expander import ExpanderTarget
from cxlsim.memory.loaded import MemoryNode
from cxlsim.mm.placement import policy_shares
from cxlsim.topology import Topology, load_topology
from cxlsim.topology.elaborate import System

SELECTEL = REPO / "topologies" / "selectel-xeon6-cxl.yaml"
HMSDK = REPO / "topologies" / "hmsdk-cmm.yaml"
SINGLE = REPO / "topologies" / "single-expander.yaml"


@pytest.fixture(scope="module")
def selectel() -> Topology:
    return load_topology(SELECTEL)


# --------------------------------------------------------------------------- DRAM

def test_ddr5_preset_peak_and_mix(ddr5):
    eight = ddr5.model_copy(update={"channels": 8})
    assert eight.peak_bandwidth == pytest.approx(8 * 4.8e9 * 8) == 307.2e9
    assert eight.line_time == pytest.approx(64 / 19.2)  # one 32-bit subchannel, ns
    effs = [ddr5.mix_efficiency(r) for r in (1.0, 0.75, 2 / 3, 0.5)]
    assert effs[0] == 1.0  # same-bank refresh leaves the bus, 4 lines an activation
    assert all(a > b for a, b in zip(effs, effs[1:])), "more writes, more turnarounds"


def test_ddr5_preset_derives_its_bus_losses_from_jedec_timings(ddr5):
    assert ddr5.refresh_share == 0.0  # REFsb: one bank of each group, the bus serving
    assert ddr5.refresh_stall == pytest.approx(130**2 / (2 * 3900))  # tRFCsb^2 / 2 tREFI
    # write to read: tWTR_S + CL (the read's row, tRCD + CL - CWL - burst, is shorter);
    # read to write: the first write's row, tRCD + CWL - CL - burst, over the 2 nCK gap
    assert ddr5.turnaround == pytest.approx(2.5 + 16.64 + (16.64 + 15.83 - 16.64 - 64 / 19.2))
    assert ddr5.write_drain == pytest.approx(64 * (0.85 - 0.5))  # the stated watermarks
    # a burst of 4 lines holds its bank: tRCD, 3 x tCCD_L, tRTP, tRP (above tRC 48.64)
    assert ddr5.bank_time == pytest.approx(16.64 + 3 * 5 + 7.5 + 16.64)
    assert ddr5.line_cost == ddr5.line_time  # an activation per 4 lines: under tRRD_S


def test_four_activate_window_binds_when_rows_open_often(ddr5):
    every_line = ddr5.model_copy(update={"burst_lines": 1.0, "tfaw": 2 * 13.33})
    assert every_line.line_cost == pytest.approx(26.66 / 4)  # four activates per tFAW
    assert every_line.mix_efficiency(1.0) == pytest.approx(every_line.line_time / 6.665)
    two_ranks = every_line.model_copy(update={"ranks": 2})  # they activate in turn
    assert two_ranks.line_cost == pytest.approx(max(every_line.line_time, 26.66 / 8))


def test_two_ranks_turn_the_bus_between_ranks(ddr5):
    """From writes on one rank to reads on the other takes tRTRS, not tWTR + CL."""
    two = ddr5.model_copy(update={"ranks": 2})
    assert two.turnaround < ddr5.turnaround
    assert two.mix_efficiency(0.5) > ddr5.mix_efficiency(0.5)


@given(r=st.floats(0, 1))
def test_mix_efficiency_is_symmetric_and_bounded(r):
    p = DramParams(trfc=780.0, trefi=3900.0, twtr=2.5, cl=16.64, trtw=0.83)
    assert p.mix_efficiency(r) == pytest.approx(p.mix_efficiency(1 - r))
    assert 0 < p.mix_efficiency(r) <= 0.8


@pytest.mark.parametrize("timings, message", [
    ({"trcd": "16 ns", "tras": "12 ns"}, "tRAS (12 ns) is shorter than tRCD (16 ns)"),
    ({"tras": "32 ns", "trp": "16 ns", "trc": "40 ns"},
     "tRC (40 ns) is shorter than tRAS + tRP (48 ns)"),
    ({"trfc": "4 us", "trefi": "3.9 us"}, "tRFC (4 us) is not shorter than tREFI (3.9 us)"),
    ({"drain_high": "50 %", "drain_low": "60 %"},
     "drain_low (60%) is not below drain_high (50%)"),
    ({"banks": 16, "bank_groups": 3},
     "16 banks do not split into 3 bank groups; expected banks a multiple of bank_groups"),
])
def test_timings_that_break_jedec_relations_are_refused(tmp_path, timings, message):
    from cxlsim.errors import InputError

    bad = tmp_path / "bad-dram.yaml"
    bad.write_text("".join(f"{k}: {v}\n" for k, v in timings.items()))
    with pytest.raises(InputError, match=re.escape(message)) as info:
        validate_document(DramParams, load_document(bad))
    assert "bad-dram.yaml" in str(info.value)


def test_mix_efficiency_rejects_bad_fraction():
    with pytest.raises(ValueError, match="read_fraction must be in"):
        DramParams().mix_efficiency(1.5)


def test_dram_spec_takes_the_preset(selectel):
    dram = next(n for n in selectel.spec.nodes if n.name == "dram0")
    assert isinstance(dram, DramParams)
    assert (dram.channels, dram.cl, dram.trfc, dram.latency) == (8, 16.64, 295.0, 110.0)
    assert (dram.banks, dram.bank_groups, dram.tccd_l) == (32, 8, 5.0)


@settings(deadline=None)
@given(load=st.floats(0, 0.999), r=st.sampled_from([1.0, 0.75, 2 / 3, 0.5]))
def test_dram_latency_at_least_idle_and_bandwidth_below_peak(ddr5, load, r):
    target = DramTarget(ddr5.model_copy(update={"channels": 8, "latency": 110.0}))
    cap = target.capacity(r)
    assert cap <= ddr5.peak_bandwidth * 8
    lat = target.read_latency(load * cap * r, load * cap * (1 - r))
    assert lat >= 110.0
    assert target.read_latency(min(load + 0.0005, 0.9999) * cap * r,
                               min(load + 0.0005, 0.9999) * cap * (1 - r)) >= lat


def test_dram_latency_flat_then_steep(ddr5):
    target = DramTarget(ddr5.model_copy(update={"channels": 8, "latency": 110.0}))
    cap = target.capacity(1.0)
    at = {u: target.read_latency(u * cap) for u in (0.1, 0.5, 0.9, 0.99, 1.0)}
    assert at[0.1] < 112 and at[0.5] < 130          # flat, then a gentle rise (banks)
    assert at[0.9] > 150 and at[0.99] > 800          # steep near saturation
    assert math.isinf(at[1.0])


def test_queue_primitives_match_the_closed_forms():
    for rho in (0.0, 0.3, 0.9):
        assert md1_wait(rho, 2.5) == pytest.approx(md1_mean_wait(rho, 2.5))
        assert mg1_wait(rho / 2.5, 2.5, 0.0, 1.0)[1] == pytest.approx(md1_mean_wait(rho, 2.5))
    # two message sizes: P-K with the mixture's second moment
    rho, wait = mg1_wait(0.1, 2.0, 0.1, 4.0)
    assert rho == pytest.approx(0.6)
    assert wait == pytest.approx((0.1 * 4 + 0.1 * 16) / (2 * 0.4))
    assert math.isinf(mg1_wait(1.0, 1.0, 0.0, 0.0)[1])
    for c, a in ((1, 0.5), (8, 6.0), (64, 60.0)):  # Allen-Cunneen: half of M/M/c
        assert mdc_wait(c, a, 3.0) == mdc_mean_wait(c, a, 3.0)


# --------------------------------------------------------------------------- expander

def test_expander_capacity_is_the_flit_packer_link(selectel):
    cxl = ExpanderTarget(selectel, "host0", "cxl0")
    raw = 32e9 * 8 * 128 / 130 / 8
    assert cxl.capacity(1.0) == pytest.approx(raw * saturated_efficiency("68B", "read"))
    assert cxl.capacity(0.0) == pytest.approx(raw * saturated_efficiency("68B", "write"))
    # full duplex: a 1:1 mix moves more than either direction alone
    assert cxl.capacity(0.5) > cxl.capacity(1.0) > cxl.capacity(0.0)


def test_cmm_binds_on_its_link_or_its_one_dram_channel():
    cmm = ExpanderTarget(load_topology(HMSDK), "host0", "cmm0")
    assert cmm.dram is not None
    limits = {r: cmm.limits(r) for r in (1.0, 2 / 3, 0.5)}
    assert min(limits[1.0], key=limits[1.0].get) == "rp0-cmm0"  # reads: the x8 link
    assert min(limits[0.5], key=limits[0.5].get) == "dram"      # 1:1: the half-duplex DRAM
    for r, bounds in limits.items():
        assert cmm.capacity(r) == min(bounds.values())
        assert bounds["dram"] == pytest.approx(cmm.dram.capacity(r))


def _des_read_latency(topo: Topology, device: str, gbps: float, requests: int,
                      seed: int = 3) -> float:
    """Mean CXL.mem read latency of Poisson reads at ``gbps`` on the transaction level."""
    rate = gbps * 1e9 / 64 / 1e9  # reads per ns
    warm = requests // 10
    sim = Simulation(seed, 0, warmup=warm / rate)
    system = System(sim, topo)
    path = system.mem_path("host0", device, credits=256)
    sources = [PoissonRequester(sim, f"r{k}", path, rate / 8, requests // 8, parent=system)
               for k in range(8)]
    sim.run()
    return float(np.concatenate([s.latency.values() for s in sources]).mean())


def test_expander_idle_latency_equals_mem_path(selectel):
    cxl = ExpanderTarget(selectel, "host0", "cxl0")
    sim = Simulation(1)
    path = System(sim, selectel).mem_path("host0", "cxl0")
    done = []
    path.read(done.append)
    sim.run()
    assert done[0].latency == pytest.approx(cxl.idle_latency, rel=1e-12)
    assert cxl.read_latency(0.0) == cxl.idle_latency


@pytest.mark.parametrize("topology", [SELECTEL, SINGLE, HMSDK])
def test_expander_idle_write_latency_equals_mem_path(topology):
    """A lone MemWr (M2S RwD down, S2M NDR up) on the transaction level takes the
    closed form's unloaded write latency."""
    topo = load_topology(topology)
    device = "cmm0" if topology == HMSDK else "cxl0"
    cxl = ExpanderTarget(topo, "host0", device)
    sim = Simulation(1)
    path = System(sim, topo).mem_path("host0", device)
    done = []
    path.write(done.append)
    sim.run()
    assert done[0].op == "write"
    assert done[0].latency == pytest.approx(cxl.idle_write_latency, rel=1e-12)
    assert cxl.write_latency(0.0, 0.0) == cxl.idle_write_latency


#: Cross-check tolerance of the epoch level's loaded read latency against the
#: transaction level (same topology, Poisson reads): 2 %. The epoch level's expander
#: DRAM queues (buses and banks) are left out, as the transaction level's memory
#: back-end has none; the epoch level treats the upstream link as fed by Poisson arrivals.
CROSS_CHECK_TOLERANCE = 0.02


@pytest.mark.parametrize("load", [0.3, 0.5, 0.7])
def test_epoch_matches_transaction_level_under_load(selectel, load):
    cxl = ExpanderTarget(selectel, "host0", "cxl0")
    gbps = load * cxl.capacity(1.0) / 1e9
    des = _des_read_latency(selectel, "cxl0", gbps, 40_000)
    dram = {s.name for s in cxl.dram.servers(gbps * 1e9, 0.0)}
    epoch = cxl.idle_latency + sum(s.wait for s in cxl.servers(gbps * 1e9, 0.0)
                                   if s.name not in dram)
    assert epoch == pytest.approx(des, rel=CROSS_CHECK_TOLERANCE)
    assert epoch >= des - 0.5  # tandem queues: the epoch level errs on the high side


def test_epoch_matches_transaction_level_with_a_media_server():
    """Same servers on both levels (a device with media_bandwidth, no dram node): the
    waits agree closely even at 80 % of the media's bandwidth."""
    topo = load_topology(SINGLE, ["nodes[3].media_bandwidth=20 GB/s"])
    cxl = ExpanderTarget(topo, "host0", "cxl0")
    assert cxl.dram is None and cxl.capacity(1.0) == pytest.approx(20e9)
    for load in (0.5, 0.8):
        gbps = load * 20
        des = _des_read_latency(topo, "cxl0", gbps, 60_000)
        epoch = cxl.read_latency(gbps * 1e9)
        wait_des, wait_epoch = des - cxl.idle_latency, epoch - cxl.idle_latency
        assert epoch == pytest.approx(des, rel=0.01)
        assert wait_epoch == pytest.approx(wait_des, rel=0.15)


@pytest.mark.parametrize("device", ["request_buffer=8", "request_time=4 ns"])
def test_epoch_matches_transaction_level_with_a_controller(device):
    """A controller's request buffer (M/D/c, held for the round trip) and its processing
    rate (M/D/1) on the epoch level against the transaction level's credits and FIFO."""
    topo = load_topology(SINGLE, ["nodes[3].media_bandwidth=40 GB/s", f"nodes[3].{device}"])
    cxl = ExpanderTarget(topo, "host0", "cxl0")
    cap = cxl.capacity(1.0)
    assert cap == pytest.approx(8 * 64 / cxl.idle_latency * 1e9 if "buffer" in device
                                else 16e9)
    for load in (0.5, 0.85):
        gbps = load * cap / 1e9
        des = _des_read_latency(topo, "cxl0", gbps, 40_000)
        assert cxl.read_latency(gbps * 1e9) == pytest.approx(des, rel=0.015)


def test_a_full_request_buffer_back_pressures_the_host():
    topo = load_topology(SINGLE, ["nodes[3].request_buffer=4"])
    sim = Simulation(1)
    path = System(sim, topo).mem_path("host0", "cxl0", credits=256)
    done = []
    for _ in range(64):
        path.read(done.append)
    sim.run()
    idle = ExpanderTarget(topo, "host0", "cxl0").idle_latency
    # 4 at a time: 16 rounds, each a little less than the read's latency (the credit is
    # back one upstream latency after the data leaves the device, not after it arrives)
    assert max(t.completed for t in done) > 15 * 0.9 * idle
    assert path.req_credits.stalls == 60 and path.req_credits is path.rwd_credits


def test_asic_and_fpga_controllers_differ_in_bandwidth_not_only_latency(tmp_path):
    text = SINGLE.read_text()
    targets = {}
    for kind in ("asic", "fpga"):
        path = tmp_path / f"{kind}.yaml"
        path.write_text(text.replace("devices/cxl-type3-expander", f"devices/cxl-{kind}"))
        targets[kind] = ExpanderTarget(load_topology(path), "host0", "cxl0")
    asic, fpga = targets["asic"], targets["fpga"]
    assert fpga.idle_latency - asic.idle_latency == pytest.approx(45)  # 60 - 15 ns protocol
    for t, entries in ((asic, 52), (fpga, 48)):  # CXL-DMSim's FIFO depths
        assert t.capacity(1.0) == pytest.approx(entries * 64 / t.idle_latency * 1e9)
    assert fpga.capacity(1.0) < 0.8 * asic.capacity(1.0)


# --------------------------------------------------------------------------- nodes, solver

def test_node_interleaves_targets_equally():
    topo = load_topology(HMSDK)
    cmms = [ExpanderTarget(topo, "host0", f"cmm{k}") for k in range(4)]
    node = MemoryNode("cxl", cmms)
    assert node.capacity(0.5) == pytest.approx(4 * cmms[0].capacity(0.5))
    assert node.read_latency(40e9) == pytest.approx(cmms[0].read_latency(10e9))


def test_system_from_topology_names_and_errors(selectel):
    ms = MemorySystem.from_topology(selectel)
    assert sorted(ms.nodes) == ["cxl0", "cxl1", "dram0"]
    with pytest.raises(ValueError, match="unknown memory target"):
        MemorySystem.from_topology(selectel, nodes={"x": ["nope"]})
    with pytest.raises(ValueError, match="unknown node"):
        ms.solve([Demand(1, 1, {"nope": 1.0})])


@settings(deadline=None, max_examples=30)
@given(threads=st.integers(1, 64), mlp=st.floats(1, 32), gap=st.floats(0, 2000),
       ram=st.integers(0, 4), cxl=st.integers(0, 4), r=st.sampled_from([1.0, 2 / 3, 0.5]))
def test_equilibrium_invariants(selectel, threads, mlp, gap, ram, cxl, r):
    if ram + cxl == 0:
        ram = 1
    ms = MemorySystem.from_topology(selectel, nodes={"ram": ["dram0"], "cxl": ["cxl0", "cxl1"]})
    d = Demand(threads, mlp, policy_shares({"ram": ram, "cxl": cxl}), gap, r)
    eq = ms.solve([d])
    x, lat = eq.rates[0], eq.latencies[0]
    # Little's law: accesses in flight per thread = rate x latency <= mlp
    assert x * lat <= mlp * (1 + 1e-9)
    if gap == 0:
        assert x * lat == pytest.approx(mlp)
    for n, node in ms.nodes.items():
        assert eq.latency[n] >= node.idle_latency
        bw = eq.node_bandwidth(n)
        assert bw <= node.capacity(r) * (1 + 1e-9)
        assert eq.utilisation[n] < 1
        assert eq.latency[n] == pytest.approx(node.read_latency(eq.read_bps[n], eq.write_bps[n]),
                                              rel=1e-6)


def test_more_delay_less_bandwidth(selectel):
    ms = MemorySystem.from_topology(selectel, nodes={"ram": ["dram0"], "cxl": ["cxl0", "cxl1"]})
    bws = [ms.solve([Demand(47, 16, {"cxl": 1.0}, g)]).bandwidth for g in (0, 10, 50, 200)]
    assert all(a > b for a, b in zip(bws, bws[1:]))


def test_two_classes_share_a_node(selectel):
    """Cores contend: a second group on RAM slows the first group's RAM accesses."""
    ms = MemorySystem.from_topology(selectel, nodes={"ram": ["dram0"], "cxl": ["cxl0", "cxl1"]})
    alone = ms.solve([Demand(24, 16, {"ram": 0.5, "cxl": 0.5})])
    shared = ms.solve([Demand(24, 16, {"ram": 0.5, "cxl": 0.5}), Demand(23, 16, {"ram": 1.0})])
    assert shared.latency["ram"] > alone.latency["ram"]
    assert shared.rates[0] < alone.rates[0]


# --------------------------------------------------------------------------- epoch engine

def test_epoch_engine_step_is_the_equilibrium(selectel):
    ms = MemorySystem.from_topology(selectel, nodes={"ram": ["dram0"], "cxl": ["cxl0", "cxl1"]})
    engine = EpochEngine(ms, mlp=16)
    refs = np.array([[1000.0, 1000.0]] * 8)
    busy = np.full(8, 2000 * 50.0)
    times = engine.step(refs, busy)
    eq = ms.solve([Demand(8, 16, {"ram": 0.5, "cxl": 0.5}, 50.0)])
    assert times == pytest.approx(np.full(8, 2000 / eq.rates[0]))
    assert engine.time == pytest.approx(times)


def test_a_core_standing_for_threads_loads_the_nodes_as_they_do(selectel):
    """The similarity law's n_t / c: a core standing for 4 threads loads the nodes as 4
    cores do, its own time that of one of them."""
    ms = MemorySystem.from_topology(selectel, nodes={"ram": ["dram0"], "cxl": ["cxl0", "cxl1"]})
    refs, busy = np.array([[1000.0, 1000.0]]), np.array([2000 * 20.0])
    one = EpochEngine(ms, mlp=16, stands_for=4)
    four = EpochEngine(ms, mlp=16)
    assert one.step(refs, busy) == pytest.approx(four.step(np.repeat(refs, 4, 0),
                                                           np.repeat(busy, 4))[:1])
    assert one.history[-1].read_bps == pytest.approx(four.history[-1].read_bps)
    alone = EpochEngine(ms, mlp=16)
    alone.step(refs, busy)
    assert alone.history[-1].latency["cxl"] < one.history[-1].latency["cxl"]


def test_xeon6_preset_drives_the_epoch_engine(selectel):
    cpu = validate_document(CpuParams, load_document(REPO / "models/cpus/xeon6.yaml"))
    assert cpu.cores == 48 and cpu.mlp == 16
    ms = MemorySystem.from_topology(selectel, nodes={"ram": ["dram0"], "cxl": ["cxl0", "cxl1"]})
    pt = PageTable(page_size=2**21, va_base=2**30, va_size=2**30)
    pt.map(2**30, 2**29, node=0)             # first half on RAM
    pt.map(2**30 + 2**29, 2**29, node=1)     # second half on CXL
    core = CoreMemory(cpu, pt, memory_ns=[110.0, 256.0])
    rng = np.random.default_rng(5)
    chunks = [[2**30 + rng.integers(0, 2**30, 20_000) // 64 * 64] for _ in range(3)]
    engine = EpochEngine(ms, mlp=cpu.mlp)
    total = engine.run_chunks([core], chunks)
    eq = engine.history[-1]
    assert eq.read_bps["ram"] == pytest.approx(eq.read_bps["cxl"], rel=0.1)  # half each
    assert total[0] > 0 and len(engine.history) == 3


def test_media_bandwidth_caps_a_device_with_dram():
    """media_bandwidth is the device's own FIFO server (a controller limit), on both
    levels; with a DRAM node as well, the lower of the two bounds the device."""
    topo = load_topology(HMSDK, ["nodes[6].media_bandwidth=15 GB/s"])
    cmm = ExpanderTarget(topo, "host0", "cmm0")
    assert cmm.dram is not None
    assert cmm.capacity(2 / 3) == pytest.approx(15e9)
    plain = ExpanderTarget(load_topology(HMSDK), "host0", "cmm0")
    assert cmm.idle_latency == pytest.approx(plain.idle_latency + 64 / 15)
    assert {s.name for s in cmm.servers(1e9, 0)} >= {"cmm0.dram", "cmm0.media"}


def test_banks_give_the_curve_its_linear_middle():
    """Hundreds of banks held for a row cycle: their wait grows early and about linearly,
    where the data buses' wait is still near zero (flat, linear, steep)."""
    ddr5 = validate_document(DramParams, load_document(REPO / "models/memory/ddr5-4800.yaml"))
    with_banks = DramTarget(ddr5.model_copy(update={"channels": 8}))
    buses_only = DramTarget(ddr5.model_copy(update={"channels": 8, "tras": 0.0, "trp": 0.0}))
    assert buses_only.params.bank_time == 0.0
    cap = with_banks.capacity(1.0)
    assert cap == buses_only.capacity(1.0)  # 512 banks at tRC never bind before the buses
    loads = np.array([0.2, 0.35, 0.5, 0.65])
    extra = np.array([with_banks.read_latency(x * cap) - buses_only.read_latency(x * cap)
                      for x in loads])
    assert np.all(np.diff(extra) > 0) and extra[-1] < 20
    slopes = np.diff(extra) / np.diff(loads)
    assert slopes.max() / slopes.min() < 2.5  # about linear in this range
    assert with_banks.servers(0.5 * cap, 0)[1].name == "dram.banks"


def test_an_expanders_limits_name_what_binds():
    module = ExpanderTarget(load_topology(REPO / "topologies" / "one-channel-expander.yaml"),
                            "host0", "cxl0")
    limits = module.limits(1.0)
    assert set(limits) == {"rp0-cxl0", "dram", "request buffer"}
    assert module.capacity(1.0) == min(limits.values()) == limits["request buffer"]
    # the one CXL device model: 70 requests for its one DDR5 channel
    assert limits["request buffer"] == pytest.approx(70 * 64 / module.idle_latency * 1e9)
