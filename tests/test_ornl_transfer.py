"""The ornl-transfer experiment on topologies/ornl-gen3-x16.yaml: DES vs closed form at
every size, the T1 numbers, a single device, refusals."""

import pytest

from conftest import REPO
from cxlsim.analytic import ornl
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.topology import Topology

ORNL = REPO / "experiments" / "ornl-transfer.yaml"


@pytest.fixture(scope="module")
def result():
    return load_experiment(ORNL, ["sizes.per_octave=1", "chunks.stop=16 MiB"]).run()


def test_pcie_des_is_the_closed_form_and_cxl_des_at_most_one_percent_below_it(result):
    transfer = result.tables["transfer"]
    assert transfer["size_B"].min() == 64 and transfer["size_B"].max() == 2**30
    pcie = transfer[transfer["config"] == "PCIe"]
    assert pcie["rel_err"].abs().max() < 1e-3
    # on the link the writes stream during the read's round trip; the closed form adds
    # the whole t_s after them: the DES is faster, most at small sizes, never slower
    cxl = transfer[transfer["config"] != "PCIe"]
    assert cxl["rel_err"].max() <= 1e-6
    assert -0.011 < cxl["rel_err"].min() < -0.005
    large = cxl[cxl["size_B"] == 2**30]
    assert large["rel_err"].abs().max() < 1e-4


def test_the_cxl_fixed_cost_is_the_links_round_trip(result):
    penalties = result.tables["penalties"]
    assert list(penalties["cxl_penalty"]) == [0.6, 0.7, 0.8, 0.9]
    # 2 x (15.684 ns + a 68 B flit at 15.75 GB/s)
    assert penalties["cxl_fixed_ns"].tolist() == pytest.approx([2 * (15.684 + 68 / 15.753846)] * 4)


def test_t1_numbers_come_out_of_the_simulation(result):
    by = result.tables["penalties"].set_index("cxl_penalty")
    assert by.loc[0.6, "speedup_first_size"] == pytest.approx(14.18, abs=0.01)
    assert by.loc[0.6, "crossover_KiB"] == pytest.approx(12.7, rel=0.01)
    assert by.loc[0.9, "crossover_KiB"] == pytest.approx(76.5, rel=0.01)
    assert by.loc[0.9, "speedup_first_size"] < 18.7 * 0.9  # T1.4 is not reachable at p = 0.9
    assert result.metrics["latency_only_ratio"] == pytest.approx(18.66, rel=1e-3)
    # metric names never depend on the config: per-device numbers live in the table
    assert set(result.metrics) == {"max_rel_err_des_vs_analytic", "latency_only_ratio"}


def test_des_crossover_is_within_half_a_percent_of_the_closed_form(result):
    for row in result.tables["penalties"].itertuples():
        assert row.crossover_B == pytest.approx(row.crossover_analytic_B, rel=0.005)
        assert row.crossover_B >= row.crossover_analytic_B


def test_figures_2_3_and_5_are_drawn(result):
    assert {"Figure 2: transfer time", "Figure 3: relative transfer time",
            "Figure 5: total transfer time vs chunk size"} <= set(result.figures)


def test_one_compared_device_gives_plain_metric_names_and_follows_its_link():
    def metrics(*overrides):
        return load_experiment(ORNL, ["compare=[cxl70]", "sizes.stop=64 B", "chunks=null",
                                      *overrides]).run().metrics

    m = metrics()
    assert m["speedup_first_size"] == pytest.approx(ornl.speedup(64, 0.7), rel=0.02)
    assert m["crossover_KiB"] * 1024 == pytest.approx(ornl.crossover(0.7), rel=0.005)
    slower = metrics("topology.links[2].cxl_penalty=0.5")
    assert slower["crossover_KiB"] < m["crossover_KiB"]
    farther = metrics("topology.links[2].latency=100 ns")
    assert farther["speedup_first_size"] < m["speedup_first_size"] / 2


def test_the_cache_transfer_gets_the_links_share_of_the_pcie_rate():
    spec = load_experiment(ORNL)
    from cxlsim.experiments.kinds.ornl_transfer import devices
    pcie, cxls = devices(Topology.from_spec(spec.topology))
    n = 2**30
    for dev in cxls:
        ratio = (dev.transfer(n) - dev.fixed) / (pcie.transfer(n) - pcie.fixed)
        assert ratio == pytest.approx(1 / dev.penalty, rel=1e-4)


@pytest.mark.parametrize("overrides, message", [
    (["sizes={start: 1 GiB, stop: 64 B}"],
     "sizes: stop (64 B) must not be below start (1,073,741,824 B)"),
    (["chunks={total: 1 GB, start: 1 MiB, stop: 4 KiB}"],
     "chunks: stop (4,096 B) must not be below start (1,048,576 B)"),
    (["topology.links[1].cxl_penalty=1.5"],
     "topology.links[1].cxl_penalty: expected less than or equal to 1; found 1.5"),
    (["compare=[nic0]"],
     "compare: not a device on a CXL link: 'nic0'; expected some of 'cxl60', 'cxl70', "
     "'cxl80', 'cxl90'"),
    (["topology.links[0].protocol=cxl"],
     "topology: ornl-transfer compares one device on a PCIe link with devices on CXL links "
     "(accelerator or pcie_device nodes, each the 'to' end of its root port's link); found 0 "
     "on PCIe [] and 5 on CXL ['nic0', 'cxl60', 'cxl70', 'cxl80', 'cxl90']"),
])
def test_inconsistent_fields_are_refused(overrides, message):
    with pytest.raises(InputError) as err:
        load_experiment(ORNL, overrides)
    assert message in str(err.value)
