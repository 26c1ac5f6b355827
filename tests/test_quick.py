"""Quick forms (cxlsim.experiments.quick): the same study at a coarser scale by the
similarity law, what they change, and the experiments they leave as they are."""
from __future__ import annotations

import pytest

from conftest import REPO
from cxlsim.cli import main
from cxlsim.experiments import load_experiment, quick
from cxlsim.experiments.quick import factor_for, quick_form, quick_overrides, shrink
from cxlsim.experiments.trace_input import generator_params, key
from cxlsim.experiments.sweep import run_file

SMALL = """
name: small
kind: trace-memory
topology: {root}/topologies/single-expander.yaml
cpu: {{preset: cpus/xeon6}}
nodes: {{dram: [dram0], cxl: [cxl0]}}
trace: {{generate: hotspot, n: 400000, seed: 1,
         params: {{footprint: 16 MiB, threads: 1, hot_fraction: 0.1, hot_ops: 0.9}}}}
scale: 4
epoch: 4000
warmup: 40000
policy: static
"""


def _small(tmp_path, text: str = SMALL):
    path = tmp_path / "small.yaml"
    path.write_text(text.format(root=REPO))
    return path


@pytest.mark.parametrize("records, factor", [
    (1, 1), (quick.QUICK_RECORDS, 1), (quick.QUICK_RECORDS + 1, 2), (250_000_000, 16)])
def test_the_factor_is_the_smallest_power_of_two_that_fits(records, factor):
    assert factor_for(records) == factor


@pytest.mark.parametrize("rule, value, out", [
    ("size", "1 GiB", "64 MiB"), ("size", "21 %", "21 %"), ("count", 250_000_000, 15625000),
    ("count", 0, 0), ("count", 3, 1), ("scale", "16", "256")])
def test_each_rule_takes_its_value(rule, value, out):
    assert shrink(rule, value, 16) == out


def test_policy_compare_runs_16_times_smaller_standing_for_the_same_system():
    spec = load_experiment("policy-compare")
    form = quick_form(spec)
    assert form.factor == 16
    assert form.overrides() == [
        "scale=1024", "trace.n=15625000", "trace.params.footprint=16 MiB", "epoch=4096",
        "topology.nodes[dram0].capacity=16 GiB", "topology.nodes[cxl0].capacity=16 GiB"]
    assert any(n.startswith("L1 DTLB at scale 1024: 16 sets of 6 ways -> one set of 1")
               for n in form.notes)
    small = load_experiment("policy-compare", form.overrides())
    # the same real system: S x footprint, and tunables at their kernel values
    assert small.scale * 16 == spec.scale * 256 and small.real_threads == spec.real_threads
    assert small.numa_balancing == spec.numa_balancing and small.kernel == spec.kernel
    assert small.sweep.grid == spec.sweep.grid  # shares of the footprint stay


def test_a_grid_of_changed_keys_is_taken_the_same_way(tmp_path):
    path = _small(tmp_path, SMALL + "sweep: {{grid: {{trace.n: [400000, 200000]}}}}\n")
    monkey = pytest.MonkeyPatch()
    monkey.setattr(quick, "QUICK_RECORDS", 100_000)
    try:
        form = quick_form(load_experiment(path))
    finally:
        monkey.undo()
    assert form.factor == 4
    assert "sweep.grid.trace.n=[100000, 50000]" in form.overrides()
    assert "warmup=10000" in form.overrides() and "epoch=1000" in form.overrides()


@pytest.mark.parametrize("name, says", [
    ("ornl-transfer", "ornl-transfer runs as is: an experiment of kind ornl-transfer is "
                      "not scaled by the similarity law, so it has no coarser form"),
    ("mess-graviton3", "runs as is: an experiment of kind curve-check is not scaled"),
    ("server-db-trace", "runs as is: its trace of 1,000,000 records is already at most "
                        "16,777,216")])
def test_an_experiment_the_law_cannot_shrink_runs_as_is_and_says_so(name, says, capsys):
    assert quick_overrides(load_experiment(name)) == []
    assert says in capsys.readouterr().err


def test_a_trace_file_runs_as_is_and_says_so(tmp_path, capsys):
    from cxlsim.traces import generate

    generate("uniform", 1000, 1, tmp_path / "t.arrow", ["footprint=1 MiB"])
    text = SMALL.replace("trace: {{generate: hotspot, n: 400000, seed: 1,\n         params: "
                         "{{footprint: 16 MiB, threads: 1, hot_fraction: 0.1, hot_ops: 0.9}}}}",
                         "trace: t.arrow").replace("epoch: 4000\nwarmup: 40000", "epoch: 100")
    assert quick_overrides(load_experiment(_small(tmp_path, text))) == []
    assert "its trace is a file; only a generated trace can be made smaller" in \
        capsys.readouterr().err


def test_the_quick_run_is_the_coarser_study(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(quick, "QUICK_RECORDS", 100_000)
    path = _small(tmp_path)
    full = run_file(path)
    fast = run_file(path, quick=True)
    assert "small at a 4x coarser scale" in capsys.readouterr().err
    assert fast.metrics["scale"] == 4 * full.metrics["scale"] == 16
    assert fast.metrics["accesses"] == full.metrics["accesses"] // 4
    assert fast.metrics["footprint_pages"] == full.metrics["footprint_pages"] // 4
    # it stands for the same real time (records / 4, compression x 4)
    assert fast.metrics["real_time_s"] == pytest.approx(full.metrics["real_time_s"], rel=0.1)


def test_run_quick_writes_its_own_folder_and_says_what_it_changed(tmp_path, monkeypatch,
                                                                  capsys):
    monkeypatch.setattr(quick, "QUICK_RECORDS", 100_000)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(_small(tmp_path)), "--quick"]) == 0
    err = capsys.readouterr().err
    assert "  trace.n: 400000 -> 100000" in err and "  scale: 4 -> 16" in err
    assert (tmp_path / "runs" / "small-quick" / "metrics.json").is_file()


def test_resolve_quick_prints_the_quick_form(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(quick, "QUICK_RECORDS", 100_000)
    assert main(["resolve", str(_small(tmp_path)), "--quick"]) == 0
    out = capsys.readouterr().out
    assert "scale: 16.0" in out and "n: 100000" in out


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_sweep_shows_the_steps_inside_its_points(tmp_path, capsys, jobs):
    path = _small(tmp_path, SMALL + "sweep: {{grid: {{policy: [static, all-cxl]}}}}\n")
    run_file(path, progress=True, jobs=jobs)
    # two points of 400,000 records in epochs of 4,000
    assert "200 epochs inside points" in capsys.readouterr().err


def test_a_run_with_progress_shows_its_trace_being_generated(tmp_path, capsys):
    # a seed of its own: a trace another test generated would come from the cache
    run_file(_small(tmp_path, SMALL.replace("seed: 1,", "seed: 137,")), progress=True)
    err = capsys.readouterr().err
    assert "small: generating hotspot" in err and "400k/400k" in err


def test_a_quick_form_generates_the_same_real_services_page_heat():
    """A TPP service's trace is told the real footprint its run stands for (S x the
    footprint: its pages' heat is that service's); the quick form keeps it, and a file
    that sets it keeps its own."""
    spec = load_experiment("tpp-1to4")
    small = load_experiment("tpp-1to4", quick_form(spec).overrides())
    assert [generator_params(e)["real_footprint"] for e in (spec, small)] == ["16 GiB"] * 2
    assert "real_footprint=16 GiB" in key(small)[3]
    scaled = load_experiment("tpp-1to4", ["scale=4", "trace.params.footprint=16 MiB"])
    assert generator_params(scaled)["real_footprint"] == "64 MiB"
    given = load_experiment("tpp-1to4", ["trace.params.real_footprint=1 GiB"])
    assert generator_params(given)["real_footprint"] == "1 GiB"
    assert "real_footprint" not in generator_params(load_experiment("policy-stress"))
