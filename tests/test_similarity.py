"""The similarity law (cxlsim.mm.similarity): every tunable classified, the factors, and
the experiment keys' bad input refused in one located line."""
from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from conftest import REPO
from cxlsim.cli import main
from cxlsim.config import load_document
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.experiments.kinds.trace_memory import DamonMonitor, NumaBalancing, \
    TraceMemoryExperiment
from cxlsim.memory import CpuParams
from cxlsim.mm.migrate import MigrationParams
from cxlsim.mm.params import KernelParams
from cxlsim.mm.similarity import Law, kind_of
from cxlsim.tiered.policies import POLICIES
from cxlsim.tiered.policies.numab import NumabParams

TUNABLES = [KernelParams, MigrationParams, NumaBalancing, DamonMonitor,
            *{p.Params for p in POLICIES.values()}]


def _numeric(annotation) -> bool:
    """int, float (Time, Size, ... too), optional or in a list; not bool."""
    if annotation is bool:
        return False
    if annotation in (int, float):
        return True
    return any(_numeric(a) for a in typing.get_args(annotation))


def _models(model: type[BaseModel]):
    yield model
    for field in model.model_fields.values():
        for a in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(a, type) and issubclass(a, BaseModel):
                yield from _models(a)


def test_every_numeric_tunable_is_classified():
    missing = [f"{m.__name__}.{name}" for t in TUNABLES for m in _models(t)
               for name, f in m.model_fields.items()
               if _numeric(f.annotation) and kind_of(m, name) is None]
    assert not missing, f"fields without a class under the law: {missing}"
    assert kind_of(TraceMemoryExperiment, "kswapd_interval") == "clock"


def test_the_law_scales_each_class():
    law = Law(scale=16, cores=2, threads=8)  # K = 4
    assert law.compression == 4
    nb = law.apply(NumaBalancing())
    assert nb.scan_period == 1e9 / 4 and nb.scan_size == 256 * 2**20 // 16
    assert nb.max_scan_rate == 2560 * 2**20 / 4 and nb.fault_cost == 1000.0
    numab = law.apply(NumabParams())
    assert numab.hot_threshold == 1e9 / 4 and numab.enough_free == 2**30 // 16
    assert law.apply(MigrationParams()).batch == 512
    assert Law().apply(NumabParams()) == NumabParams()


def test_min_free_kbytes_follows_the_real_node():
    law = Law(scale=64)
    # 16 GiB simulated stands for 1 TiB: int_sqrt(16 * 2^30 kB) = 2^17 kB, then / 64
    assert law.min_free_kbytes(None, 16 * 2**30) == 2**17 // 64
    assert Law().min_free_kbytes(None, 2**30) is None


BASE = """
name: t
kind: trace-memory
topology: {root}/topologies/selectel-xeon6-cxl.yaml
cpu: {{preset: cpus/xeon6}}
nodes: {{dram: [dram0], cxl: [cxl0, cxl1]}}
trace: {{generate: uniform, n: 20000, params: {{footprint: 8MiB, threads: 1}}}}
epoch: 2000
"""


def _load(tmp_path, *sets):
    from conftest import REPO
    path = tmp_path / "t.yaml"
    path.write_text(BASE.format(root=REPO))
    return load_experiment(path, list(sets))


@pytest.mark.parametrize("value, says", [
    ("0.5", "scale: expected greater than or equal to 1; found 0.5"),
    ("many", "scale: expected a number; found 'many'"),
    ("3", "scale 3 is not a power of two")])
def test_bad_scale_is_refused_in_one_line(tmp_path, value, says):
    with pytest.raises(InputError) as err:
        _load(tmp_path, f"scale={value}")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_structure_with_fewer_sets_than_the_scale_becomes_one_set(tmp_path):
    """Beyond its sets a structure keeps its reach (1/S of its entries, rounded half up,
    at least one; a cache at least one access's lines: a 4-level walk and the data),
    fully associative; a fully associative one stays exactly itself."""
    cpu = _load(tmp_path, "scale=64").cpu
    xeon = Law(scale=64).cpu(cpu)
    dtlb = next(a for a in xeon.tlbs[0].arrays if a.page_size == 4096)
    assert (dtlb.entries, dtlb.ways) == (2, 2)  # 96 / 64 = 1.5 -> 2
    assert (xeon.caches[0].sets, xeon.caches[0].ways) == (1, 12)  # L1D: 64 sets, kept ways
    assert (Law(scale=128).cpu(cpu).caches[0].ways) == 6  # 768 lines / 128
    l1d = Law(scale=256).cpu(cpu).caches[0]
    assert (l1d.sets, l1d.ways) == (1, 5)  # 768 lines / 256 = 3: one access takes 5
    one = Law(scale=1024).cpu(cpu).tlbs[0].arrays[0]
    assert (one.entries, one.ways) == (1, 1)  # never none
    epyc = load_document(REPO / "models" / "cpus" / "epyc-7452.yaml").data
    full = next(a for a in Law(scale=16).cpu(CpuParams.model_validate(epyc)).tlbs[0].arrays
                if a.page_size == 4096)
    assert (full.entries, full.ways) == (4, 4)  # 64 fully associative -> 4, still so


def test_a_cpu_swapped_on_a_shipped_study_runs_at_its_scale():
    """The EPYC 7452's L1 DTLB is one fully associative set of 64 entries: at scale 16
    it is one set of 4, as exact as at scale 1."""
    assert main(["resolve", "policy-compare", "--set", "cpu.preset=cpus/epyc-7452"]) == 0


def test_the_way_out_of_a_scale_counts_the_sample(tmp_path):
    with pytest.raises(InputError, match=r"to run on this CPU with sample 8: --set scale=4 "
                                         r"\(and a trace footprint 8 times larger"):
        _load(tmp_path, "scale=32", "sample=8")


def test_time_scale_beside_scale_is_refused(tmp_path):
    with pytest.raises(InputError, match="time_scale 0.01 scales the policy's clocks by "
                                         "hand.*drop time_scale"):
        _load(tmp_path, "policy={name: memtis, time_scale: 0.01}", "scale=4")
    _load(tmp_path, "policy={name: memtis, time_scale: 0.01}")  # still fine alone


def test_a_clock_shorter_than_the_epoch_is_named(tmp_path):
    with pytest.raises(InputError, match=r"policy.migration_period scales to .* shorter "
                                         r"than the run's mean epoch"):
        _load(tmp_path, "policy={name: memtis, migration_period: 1000}", "scale=16",
              "real_threads=1").run()


def test_scale_one_changes_nothing_and_a_scaled_run_records_its_law(tmp_path):
    plain = _load(tmp_path, "policy=tpp").run()
    assert plain.metrics["scale"] == 1 and plain.metrics["time_compression"] == 1
    scaled = _load(tmp_path, "policy=tpp", "scale=4").run()
    assert scaled.metrics["time_compression"] == 4
    assert scaled.metrics["clock_numa_balancing_scan_period_ns"] == 1e9 / 4
    text = _load(tmp_path, "policy=tpp", "scale=4").scaled_text()
    assert "numa_balancing.scan_period: 1000 ms -> 250 ms" in text


def test_real_threads_load_the_memory_as_many_cores(tmp_path):
    """Twice the real threads on the same cores: each core's traffic counts twice in the
    nodes' loaded latency (the law's n_t / c), the accesses stay the run's."""
    runs = [_load(tmp_path, "policy=all-cxl", "trace.params.threads=2",
                  f"real_threads={n}").run() for n in (2, 4)]
    assert runs[0].metrics["accesses"] == runs[1].metrics["accesses"]
    assert runs[1].metrics["mean_memory_latency_ns"] > runs[0].metrics["mean_memory_latency_ns"]


def test_resolve_and_the_run_take_k_from_the_same_cores(tmp_path):
    """real_threads set, threads not: the cores are the trace's threads in both."""
    sets = ("trace.params.threads=4", "real_threads=8", "scale=4")
    text = _load(tmp_path, *sets).scaled_text()
    assert "S 4, K 2 " in text  # 4 x 4 cores / 8 threads
    assert _load(tmp_path, *sets).run().metrics["time_compression"] == 2
