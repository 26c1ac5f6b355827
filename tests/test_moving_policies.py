"""Properties of the moving policies (numab-tiering, autotiering) in detail, on small
random traces: pages are never lost or duplicated across nodes (epoch by epoch), and a
seed fixes every counter."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.experiments import load_experiment

SPEC = """name: pp
kind: trace-memory
topology: single-expander
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0]}
trace: {generate: %s, n: %d, seed: %d, params: {footprint: %s, threads: 2}}
epoch: 500
policy: %s
numa_balancing: {scan_delay: 2 us, scan_period: 2 us, scan_size: 1 MiB,
                 max_scan_rate: 1000 TB/s}
"""

MOVERS = ["numab-tiering", "{name: numab-tiering, enough_free: 0}", "autotiering",
          "{name: autotiering, background_demotion: true}"]


def _run(tmp_path, kind, n, seed, footprint, dram, policy):
    path = tmp_path / "pp.yaml"
    path.write_text(SPEC % (kind, n, seed, footprint, policy))
    return load_experiment(path, [f"topology.nodes[1].capacity={dram} MiB"]).run()


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["uniform", "zipfian"]), n=st.integers(2000, 6000),
       seed=st.integers(0, 1000), footprint=st.sampled_from(["2MiB", "4MiB", "8MiB"]),
       dram=st.sampled_from([1, 2, 4]), policy=st.sampled_from(MOVERS))
def test_pages_are_never_lost_or_duplicated(tmp_path_factory, kind, n, seed, footprint,
                                            dram, policy):
    result = _run(tmp_path_factory.mktemp("pp"), kind, n, seed, footprint, dram, policy)
    epochs, nodes = result.tables["epochs"], result.tables["nodes"]
    # every epoch: the pages on the nodes are the pages allocated so far (no frees: anon,
    # no swap), however many moved
    on_nodes = epochs["pages_dram"] + epochs["pages_cxl"]
    assert (on_nodes == epochs["pgalloc"].cumsum()).all()
    assert nodes["resident_pages"].sum() == result.metrics["footprint_pages"]
    assert result.metrics["pgmigrate_success"] >= result.metrics["pgpromote_success"]


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 1000), policy=st.sampled_from(MOVERS))
def test_the_same_seed_gives_identical_counters(tmp_path_factory, seed, policy):
    runs = [_run(tmp_path_factory.mktemp("pp"), "zipfian", 4000, seed, "4MiB", 1, policy)
            for _ in range(2)]
    assert runs[0].metrics == runs[1].metrics
    pd.testing.assert_frame_equal(runs[0].tables["epochs"], runs[1].tables["epochs"])
    assert runs[0].metrics["numa_hint_faults"] > 0
    assert np.isfinite(runs[0].metrics["app_time_s"])
