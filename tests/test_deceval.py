"""DecEval: the four flows, the pipeline engine against its closed form, chunking."""

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.analytic import effective_bandwidth, move_pays, t_app
from cxlsim.apps import DecEval, DecEvalParams, run_pipeline
from cxlsim.config import load_document, validate_document
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.topology import load_topology
from cxlsim.link.tlp import PcieConfig

PARAMS = validate_document(DecEvalParams, load_document(REPO / "models/apps/deceval.yaml"))
FLOWS_FILE = REPO / "experiments" / "deceval-flows.yaml"
TOPOLOGY = load_topology(REPO / "topologies" / "deceval.yaml")


def _model(params=PARAMS, overrides=()) -> DecEval:
    """DecEval on topologies/deceval.yaml, ``overrides`` applied to both accelerator links."""
    topology = load_topology(REPO / "topologies" / "deceval.yaml", list(overrides)) \
        if overrides else TOPOLOGY
    return DecEval(params, topology, "host0", "fpga0", "gpu0")


@pytest.fixture(scope="module")
def times():
    model = _model()
    return {f: model.run(f) for f in ("baseline", "p2p", "cxl_cache", "cxl_pipelined")}


def test_flows_order_and_parts_add_up(times):
    totals = [times[f].total for f in ("baseline", "p2p", "cxl_cache", "cxl_pipelined")]
    assert totals == sorted(totals, reverse=True)
    for f in ("baseline", "p2p", "cxl_cache"):
        t = times[f]
        assert t.total == pytest.approx(t.fpga + t.transfers + t.gpu, rel=1e-9)


def test_fpga_time_is_the_measured_chunk_figures_times_the_chunks(times):
    per_chunk = (1.87 + 70.9 + 1.37) * 1e6
    assert times["baseline"].fpga == pytest.approx(104 * per_chunk)


def test_p2p_transfer_matches_the_pcie_write_bandwidth(times):
    expected = PARAMS.data / effective_bandwidth(PARAMS.data, "write", PcieConfig()) * 1e9
    assert times["p2p"].transfers == pytest.approx(expected, rel=0.01)


def test_pipelined_flow_is_bounded_by_its_bottleneck(times):
    model = _model()
    bottleneck = max(model.stage_times().values())
    assert times["cxl_pipelined"].total >= PARAMS.chunks * bottleneck
    assert times["cxl_pipelined"].total <= t_app(4, PARAMS.chunks, bottleneck) + 1e6


@settings(max_examples=40, deadline=None)
@given(stages=st.integers(1, 6), chunks=st.integers(1, 60),
       t=st.floats(0.5, 1e4, allow_nan=False), setup=st.floats(0, 1e3, allow_nan=False))
def test_balanced_des_pipeline_equals_the_closed_form(stages, chunks, t, setup):
    env = simpy.Environment()
    proc = run_pipeline(env, [(f"s{k}", lambda e, c: e.timeout(t)) for k in range(stages)],
                        chunks, start=setup)
    env.run()
    assert proc.value.end == pytest.approx(t_app(stages, chunks, t, setup), rel=1e-9)


def test_move_pays_rule():
    assert move_pays(10.0, 5.0, 2.0) and not move_pays(10.0, 5.0, 2.5)


def test_more_chunks_never_slow_the_pipeline_without_per_chunk_costs():
    times = [_model(PARAMS.model_copy(update={"chunks": n})).run("cxl_pipelined").total
             for n in (26, 52, 104, 208)]
    assert times == sorted(times, reverse=True)


def test_a_worse_cxl_link_never_speeds_the_coherent_flows():
    def run(key, value):
        overrides = [f"links[{i}].{key}={value}" for i in (0, 1)]
        return _model(overrides=overrides).run("cxl_cache").total
    times = [run("latency", lat) for lat in ("10 ns", "500 ns", "2500 ns")]
    assert times == sorted(times) and times[0] < times[-1]
    times = [run("cxl_penalty", p) for p in (0.9, 0.3, 0.1)]
    assert times == sorted(times) and times[0] < times[-1]


def test_flows_experiment_reports_speedups():
    m = load_experiment(FLOWS_FILE, ["flows=[baseline, cxl_cache]"]).run().metrics
    assert m["speedup_cxl_cache"] == pytest.approx(
        m["time_s_baseline"] / m["time_s_cxl_cache"])


def test_chunks_experiment_finds_a_best_chunk_size():
    spec = load_experiment(REPO / "experiments" / "deceval-chunks.yaml",
                           ["chunk_counts=[8, 64, 832]", "flows=[cxl_pipelined]"])
    m = spec.run().metrics
    assert m["best_chunk_MB_cxl_pipelined"] == pytest.approx(1.6e9 / 64 / 1e6)


def test_bad_app_values_name_the_key():
    with pytest.raises(InputError, match=r"--set app.chunks=0: app.chunks: .*greater than or equal to 1"):
        load_experiment(FLOWS_FILE, ["app.chunks=0"])
    with pytest.raises(InputError, match=r"topology.links\[0\].cxl_penalty: .*less than or "
                                         r"equal to 1"):
        load_experiment(FLOWS_FILE, ["topology.links[0].cxl_penalty=1.5"])
    with pytest.raises(InputError, match=r"the gpu's link must be a CXL link \(protocol: cxl\)"):
        load_experiment(FLOWS_FILE, ["topology.links[1].protocol=pcie",
                                     "topology.links[1].cxl_penalty=null"])
