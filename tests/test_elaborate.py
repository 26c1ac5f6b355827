"""Topology elaboration: shared link directions, CXL.mem paths, DMA engines."""

import pytest

from conftest import REPO
from cxlsim.analytic import t_pcie
from cxlsim.engine import Simulation
from cxlsim.link.flits import wire_bytes_per_message
from cxlsim.topology import load_topology
from cxlsim.topology.elaborate import System


def _system(name, overrides=()):
    sim = Simulation()
    return sim, System(sim, load_topology(REPO / "topologies" / f"{name}.yaml", overrides))


def test_switch_pool_shares_one_upstream_link_between_four_paths():
    sim, system = _system("switch-pool")
    paths = [system.mem_path("host0", f"cxl{i}") for i in range(4)]
    up = system.links["sw0", "rp0"]
    assert up.users == 4 and not up.exclusive
    assert all(system.links["sw0", f"cxl{i}"].exclusive for i in range(4))
    assert len(paths) == 4


def test_unloaded_read_through_the_switch_is_the_sum_of_its_parts():
    sim, system = _system("switch-pool")
    path = system.mem_path("host0", "cxl0")
    out = []
    path.read(lambda t: out.append(t.latency))
    sim.run()
    x16, x8 = system.links["rp0", "sw0"], system.links["sw0", "cxl0"]
    serial = sum(wire_bytes_per_message("68B", k) * 1e9 / link.params.raw_bandwidth
                 for k in ("M2S_REQ", "S2M_DRS") for link in (x16, x8))
    expected = 2 * (64 + 90) + 2 * (x16.latency + x8.latency) + 30 + 50 + serial
    assert out == [pytest.approx(expected)]


def test_dma_engine_on_a_pcie_gen3_link_matches_the_closed_form():
    sim, system = _system("deceval", ["links[0].protocol=pcie", "links[0].cxl_penalty=null",
                                      "links[0].port_latency=10 ns", "links[0].latency=0"])
    dma = system.dma_engine("host0", "fpga0", setup_latency=738.77)
    out = []
    dma.transfer(1 << 20, "read_write", out.append)
    sim.run()
    # the link's two 10 ns ports and the TLP pipeline add well under 0.1 %
    assert out[0] == pytest.approx(t_pcie(1 << 20), rel=1e-3)


def test_a_cache_transfer_needs_a_cxl_link_and_gets_its_share_of_the_pcie_rate():
    overrides = ["links[1].protocol=pcie", "links[1].cxl_penalty=null"]
    with pytest.raises(ValueError, match="gpu0_dma: a CXL.cache transfer needs a CXL link"):
        _system("deceval", overrides)[1].dma_engine("host0", "gpu0", protocol="cache")
    sim, system = _system("deceval", overrides)
    cxl, pcie = [], []
    system.dma_engine("host0", "fpga0", protocol="cache").transfer(1 << 24, "write", cxl.append)
    system.dma_engine("host0", "gpu0").transfer(1 << 24, "write", pcie.append)
    sim.run()
    assert cxl[0] / pcie[0] == pytest.approx(1 / 0.75, rel=1e-3)  # cxl_penalty 0.75


def test_cxl_io_gets_the_phys_tlp_rate_on_a_cxl_link():
    sim, system = _system("deceval", ["links[1].protocol=pcie", "links[1].cxl_penalty=null"])
    out = {}
    for device in ("fpga0", "gpu0"):  # CXL and PCIe links of the same PHY, 10 ns each way
        system.dma_engine("host0", device).transfer(
            1 << 24, "write", lambda t, d=device: out.__setitem__(d, t))
    sim.run()
    out = [out["fpga0"], out["gpu0"]]
    # the same TLP time; only the CXL side's 68 B flit accumulation (4.3 ns) differs
    assert out[0] - out[1] == pytest.approx(68 / 15.753846 - 1 / 15.753846, abs=0.01)


def test_dma_engine_needs_a_device_on_its_own_link():
    _, system = _system("switch-pool")
    with pytest.raises(ValueError, match="'cxl0' is 2 links from 'host0'"):
        system.dma_engine("host0", "cxl0")


def test_cache_path_needs_host_memory_and_mem_path_a_memory_device():
    _, system = _system("switch-pool")
    with pytest.raises(ValueError, match="host 'host0' has no dram node attached"):
        system.cache_path("host0", "cxl0")
    _, deceval = _system("deceval")
    with pytest.raises(ValueError, match="'fpga0' is not a CXL device with memory"):
        deceval.mem_path("host0", "fpga0")


def test_a_cxl_penalty_stretches_cxl_mem_messages_only():
    from cxlsim.link import LinkDirection, LinkParams, saturated_efficiency
    from cxlsim.link.direction import CACHEMEM, IO
    from cxlsim.link.tlp import PcieConfig, cachemem_scale, tlp_bandwidth

    link = LinkParams(protocol="cxl", generation=3, width=16, cxl_penalty=0.3,
                      retry_buffer=0)
    sim = Simulation()
    io, mem = LinkDirection(sim, "io", link), LinkDirection(sim, "mem", link)
    t_io = io.reserve(68_000, 0.0, IO) - io.latency
    t_mem = mem.reserve(68_000, 0.0, CACHEMEM) - mem.latency
    # TLPs at the PHY's TLP rate, flits at the raw rate stretched by the penalty
    assert t_io == pytest.approx(68_000 / tlp_bandwidth(PcieConfig(3, 16)) * 1e9)
    assert t_mem == pytest.approx(68_000 / link.raw_bandwidth * 1e9 * cachemem_scale(link))
    # a saturated read stream then delivers 0.3 of the PHY's PCIe effective bandwidth
    data = 68_000 * saturated_efficiency("68B", "read") / t_mem * 1e9
    assert data == pytest.approx(0.3 * tlp_bandwidth(PcieConfig(3, 16)))

    def dma_time(penalty):  # DMA is CXL.io: the penalty does not touch it
        sim, system = _system("deceval", [f"links[0].cxl_penalty={penalty}"])
        out = []
        system.dma_engine("host0", "fpga0").transfer(1 << 20, "write", out.append)
        sim.run()
        return out[0]
    assert dma_time(0.3) == dma_time(0.9)


def test_dma_pays_the_root_port_each_way_like_the_cxl_paths():
    def t(op, rp):
        sim, system = _system("deceval", [f"nodes[2].latency={rp} ns"])
        out = []
        system.dma_engine("host0", "fpga0").transfer(64, op, out.append)
        sim.run()
        return out[0]
    assert t("write", 64) - t("write", 0) == pytest.approx(64)
    assert t("read", 64) - t("read", 0) == pytest.approx(128)


@pytest.mark.parametrize("mps, mrrs", [(128, 512), (256, 512), (512, 1024), (1024, 4096)])
def test_dma_follows_the_links_mps_and_mrrs(mps, mrrs):
    from cxlsim.link.tlp import PcieConfig
    overrides = ["links[0].protocol=pcie", "links[0].cxl_penalty=null", "links[0].width=8",
                 "links[0].latency=0", f"links[0].mps={mps}", f"links[0].mrrs={mrrs}"]
    sim, system = _system("deceval", overrides)
    out = []
    system.dma_engine("host0", "fpga0", setup_latency=0).transfer(1 << 24, "write", out.append)
    sim.run()
    cfg = PcieConfig(3, 8, mps, mrrs)
    assert out[0] == pytest.approx(t_pcie(1 << 24, cfg, 0.0, "write"), rel=2e-4)


def test_link_mps_is_checked_with_its_key():
    from cxlsim.errors import InputError
    with pytest.raises(InputError) as info:
        _system("deceval", ["links[0].mps=300"])
    assert "links[0].mps: expected 128, 256, 512, 1024, 2048 or 4096; found 300" in str(info.value)
