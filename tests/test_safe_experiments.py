"""Experiment files that name the wrong thing get one clear line, never a traceback."""

from __future__ import annotations

import pytest

from conftest import REPO, refused

EXPERIMENTS = REPO / "experiments"


@pytest.mark.parametrize("experiment, overrides, message", [
    ("link-loaded.yaml", ["device=cxl9"],
     "device: 'cxl9' is not a node of the topology; expected a CXL device with memory "
     "(Type 2 or 3): 'cxl0'"),
    ("link-loaded.yaml", ["device=dram0"],
     "device: 'dram0' is not a CXL device with memory (Type 2 or 3); expected a CXL device "
     "with memory (Type 2 or 3): 'cxl0'"),
    ("link-loaded.yaml", ["host=rp0"], "host: 'rp0' is not a host; expected a host: 'host0'"),
    ("link-loaded.yaml", ["loads=[0.5, 1.2]"],
     "loads[1]: expected less than or equal to 1; found 1.2"),
    ("link-loaded.yaml", ["loads=[0, 0.5]"], "loads[0]: expected greater than 0; found 0"),
    ("link-loaded.yaml", ["read_fractions=[0.5, 1.5]"],
     "read_fractions[1]: expected less than or equal to 1; found 1.5"),
    ("link-loaded.yaml", ["read_fractions=[-0.1]"],
     "read_fractions[0]: expected greater than or equal to 0; found -0.1"),
    ("link-loaded.yaml", ["read_fractions=[]"],
     "read_fractions: expected at least 1 item; found none"),
    ("bias.yaml", ["device=host0"],
     "device: 'host0' is not a CXL Type 2 device with memory; expected a CXL Type 2 device "
     "with memory: 'acc0'"),
    ("epyc7452-latency.yaml", ["cpu.cores=10"],
     "epyc7452-latency.yaml:11:3: cpu: cores: 10 is not a multiple of cores_per_complex (4, "
     "the cores sharing one L3); expected a multiple of 4, or set cores_per_complex too"),
    ("mlc-loaded-latency.yaml", ["cpu.cores=16", "cpu.cores_per_complex=32"],
     "mlc-loaded-latency.yaml:12:3: cpu: cores: 16 is not a multiple of cores_per_complex "
     "(32, the cores sharing one L3); expected a multiple of 32, or set cores_per_complex too"),
    ("epyc7452-latency.yaml", ["cpu.caches[2].shared_by=4"],
     "cpu: cores_per_complex (4) is set but no cache level has shared_by: complex; expected "
     "shared_by: complex on the level the complex shares (e.g. the L3), or "
     "cores_per_complex: null"),
    ("epyc7452-latency.yaml", ["cpu.caches[2].shared_by=all"],
     "cpu.caches[2].shared_by: expected a whole number or 'complex'; found 'all'"),
    ("mlc-loaded-latency.yaml", ["host=nobody"],
     "host: 'nobody' is not a node of the topology; expected a host: 'host0'"),
    ("deceval-flows.yaml", ["topology.nodes[4].kind=gpu"],
     "topology: DecEval needs an accelerator node of kind 'fpga' with a link (its PHY "
     "carries the DMAs)"),
    ("ornl-transfer.yaml", ["sizes={start: 1 GiB, stop: 64 B}"],
     "sizes: stop (64 B) must not be below start (1,073,741,824 B)"),
])
def test_wrong_names_and_ranges_exit_2_with_one_line(capsys, tmp_path, experiment, overrides,
                                                      message):
    argv = ["run", str(EXPERIMENTS / experiment), "--out", str(tmp_path / "r")]
    for o in overrides:
        argv += ["--set", o]
    refused(capsys, argv, message)
    assert list(tmp_path.iterdir()) == []
