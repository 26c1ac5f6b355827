"""Experiment files that name the wrong thing get one clear line, never a traceback."""

from __future__ import annotations

import pytest

from conftest import REPO, line_of, refused

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
    ("trace-memory.yaml", ["nodes.cxl=[cxl0, dram0]"],
     "--set nodes.cxl=[cxl0, dram0]: nodes.cxl[1]: memory target 'dram0' is listed in NUMA "
     "nodes 'dram' and 'cxl'; expected each target in one node, once"),
    ("mlc-loaded-latency.yaml", ["nodes.cxl=[cxl0, cxl0]"],
     "nodes.cxl[1]: memory target 'cxl0' is listed twice in NUMA node 'cxl'; expected each "
     "target in one node, once"),
    ("tpp-2to1.yaml", ["numa_balancing.scan_period_max=50 us"],
     "--set numa_balancing.scan_period_max=50 us: numa_balancing.scan_period_max: 50 us is "
     "below scan_period (1 s); expected at least that"),
    ("trace-memory.yaml", ["trace.generate=zipfain"],
     "trace.generate: unknown generator 'zipfain'; expected one of uniform, zipfian, hotspot, "
     "phases, sequential, stream, gups, pointer-chase, kv, redis, alloc-bursts, "
     "anon-file-mix, file-warmup, web1, cache1, cache2, warehouse; did you mean 'zipfian'?"),
    ("tpp-2to1.yaml", ["policy_params.demote_scale=100"],
     "--set policy_params.demote_scale=100: policy_params.demote_scale: unknown tunable "
     "'demote_scale'; did you mean 'demote_scale_factor'?"),
    ("tpp-2to1.yaml", ["policy_params.speed=1"],
     "policy_params.speed: unknown tunable 'speed'; expected one of: active_lru_gate, "
     "decoupled_watermarks, demote_scale_factor, page_type_aware"),
])
def test_wrong_names_and_ranges_exit_2_with_one_line(capsys, tmp_path, experiment, overrides,
                                                      message):
    argv = ["run", str(EXPERIMENTS / experiment), "--out", str(tmp_path / "r")]
    for o in overrides:
        argv += ["--set", o]
    refused(capsys, argv, message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("old, new, where, message", [
    ("nodes: {dram: [dram0], cxl: [cxl0, cxl1]}",
     "nodes: {dram: [dram0, cxl1], cxl: [cxl0, cxl1]}", "nodes.cxl[1]",
     "memory target 'cxl1' is listed in NUMA nodes 'dram' and 'cxl'; expected each target "
     "in one node, once"),
    ("trace: {generate: zipfian,", "trace: {generate: zipfain,", "trace.generate",
     "unknown generator 'zipfain'; expected one of uniform,"),
    ("policy: tpp", "policy: {name: tpp, demote_scale_factr: 300}",
     "policy.demote_scale_factr", "unknown tunable 'demote_scale_factr'; did you mean "
     "'demote_scale_factor'?"),
    ("policy: tpp", "policy: numa-balancing\nnuma_balancing: {scan_period: 2 s, "
     "scan_period_max: 1 s}", "numa_balancing.scan_period_max",
     "1 s is below scan_period (2 s); expected at least that"),
    ("footprint: 1 GiB", "footprint: 1 parsec", "trace.params.footprint",
     "expected a size such as '64 B', '8 GiB' or '8 GB'; found '1 parsec' (unknown unit "
     "'parsec')"),
])
def test_a_mistake_is_named_at_its_line(tmp_path, capsys, old, new, where, message):
    """The line and column of the value at fault, not of the mapping around it; one
    problem, not a line about another member of a union first."""
    text = (EXPERIMENTS / "trace-memory.yaml").read_text()
    assert old in text
    path = tmp_path / "e.yaml"
    path.write_text(text.replace(old, new).replace("../topologies/", f"{REPO}/topologies/"))
    line = line_of(path, new.splitlines()[-1])
    refused(capsys, ["resolve", str(path)], f"cxlsim: error: {path}:{line}:")
    refused(capsys, ["resolve", str(path)], f": {where}: {message}")
