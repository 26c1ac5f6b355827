"""Scale invariance of the similarity law (issue 26 item 2): one workload run at scale S,
S/2 and S/4 (the footprint, the records and the epoch doubled each time, everything else
by the law from one real system's values) agrees on the loss against all-local (within
1.5 points), the DRAM traffic share (2 points) and the pages promoted per page of the
footprint (15 %).

The real system: a 512 MiB footprint, one thread, on a Xeon 6 (its 192 MiB L3 3/8 of
the footprint, a ratio the scaled caches keep), DRAM 34 % of the footprint, CXL twice
it; a hot set of 10 % of the pages takes 99 % of the accesses and moves to fresh pages
at each of 4 phases. Its clocks are short (a NUMA scan pass every 32-64 ms, a DAMON
aggregation every 20 ms, ...; the kernel's 1 s passes would need minutes of it), so that
the run covers at least 20 of each policy's periods: NUMA-scan passes and DAMON
aggregations as the run counts them, MEMTIS's periods from the real time the run stands
for. Each run is checked to have done so and to have acted (migrated pages; numa-balancing,
which finds DRAM full, hint faults; default-linux, which has nothing to do but spill to
CXL, CXL traffic), so that nothing passes vacuously. The epoch (the run's resolution and
Colloid's round) is 1/1024 of the run at every S, as the law keeps every other period.
"""
from __future__ import annotations

import functools
import tempfile
import warnings
from pathlib import Path

import pytest

from conftest import REPO
from cxlsim.experiments import load_experiment

#: The largest scale: a Xeon 6's L1 DTLB has 16 sets.
S = 16
#: Footprint (MiB) and records at S (S / scale times those at a scale): the default run's
#: (a 512 MiB real system) and the slow run's (1 GiB, twice as long).
SIZES = {"quick": (32, 2**21), "full": (64, 2**21)}
EPOCHS = 1024
SCAN_PERIOD = 32e6  # ns, of the real system
#: The folder of the runs' experiment files: pytest's, made when a test first runs (not
#: when the module is collected) and cleaned up as pytest cleans its own.
_FILES: list[Path] = []


@pytest.fixture(autouse=True)
def _files(tmp_path_factory):
    if not _FILES:
        _FILES.append(tmp_path_factory.mktemp("invariance"))

BASE = """
name: invariance
kind: trace-memory
topology: {root}/topologies/single-expander.yaml
cpu: {{preset: cpus/xeon6}}
nodes: {{dram: [dram0], cxl: [cxl0]}}
trace: {{generate: phases, n: {n}, seed: 1, params: {{footprint: {mib} MiB, threads: 1,
         hot_fraction: 0.1, hot_ops: 0.99, phases: 4}}}}
epoch: {epoch}
scale: {scale}
numa_balancing: {{scan_delay: 4 ms, scan_period: 32 ms, scan_period_max: 64 ms,
                  scan_size: 64 MiB, max_scan_rate: 256 GB/s}}
"""

#: Each policy as the real system runs it, and the period (real ns) of which the run
#: must cover 20.
POLICIES = {
    "tpp": ("tpp", SCAN_PERIOD),
    "numab-tiering": ("{name: numab-tiering, hot_threshold: 32 ms}", SCAN_PERIOD),
    "autotiering": ("autotiering", SCAN_PERIOD),
    "numa-balancing": ("numa-balancing", SCAN_PERIOD),
    "memtis": ("{name: memtis, migration_period: 10 ms, adaptation_period: 4000, "
               "cooling_period: 40000}", 10e6),
    "damon": ("{name: damon, min_regions: 10, max_regions: 1000, sample: 2 ms, "
              "aggregate: 20 ms, migrate_cold: {min_age: 80 ms, quota_ms: 2 ms, "
              "quota_reset: 40 ms}, migrate_hot: {quota_ms: 4 ms, quota_reset: 40 ms}}", 20e6),
    "colloid": ("colloid", None),  # its round is the epoch: EPOCHS of them
    "default-linux": ("default-linux", None),  # no clock but kswapd's
}
#: Cheap enough for the default run at the quick size (with the all-local baselines:
#: ~20 s on an idle core); the slow run has every policy at the full size.
QUICK = ("tpp", "memtis")

#: What does not hold at the full size (numbers at S = 16, 8, 4: loss %, DRAM share %,
#: promoted / footprint).
BROKEN = {
    "numab-tiering": "DRAM share 78.13 / 79.94 / 80.62 % (2.49 points apart; loss 16.95 / "
                     "16.09 / 16.01 %, promoted 0.2780 / 0.2734 / 0.2811 agree)",
    "colloid": "promoted 0.0011 / 0.0001 / 0.0000 (about 18, 3, 0 pages: its moves are hot "
               "pages demoted to balance the tiers' latencies); loss 2.21 / 2.21 / 2.19 %, "
               "DRAM 50.90 / 50.82 / 51.35 % agree",
}


@functools.cache
def _metrics(policy: str, scale: int, size: str) -> dict:
    """The run's metrics at ``scale`` (the footprint, records and epoch S / scale times
    those of ``size`` at S)."""
    k = S // scale
    mib, records = (x * k for x in SIZES[size])
    path = Path(tempfile.mkdtemp(dir=_FILES[0])) / "e.yaml"
    path.write_text(BASE.format(root=REPO, n=records, mib=mib, epoch=records // EPOCHS,
                                scale=scale))
    exp = load_experiment(path, [f"policy={policy}",
                                 f"topology.nodes[dram0].capacity={mib * 11 // 32} MiB",
                                 f"topology.nodes[cxl0].capacity={2 * mib} MiB"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numa-balancing's "moved no page": checked below
        return exp.run().metrics


def _cases():
    yield from (pytest.param(name, "quick", id=f"{name}-quick") for name in QUICK)
    for name in POLICIES:
        marks = [pytest.mark.slow]
        if name in BROKEN:
            marks.append(pytest.mark.xfail(strict=True, reason=BROKEN[name]))
        yield pytest.param(name, "full", marks=marks, id=name)


def _rows(name: str, size: str) -> list[tuple[float, float, float]]:
    """Loss against all-local (%), DRAM traffic share (%) and pages promoted per page of
    the footprint at S, S/2, S/4; AssertionError if a run was too short or never acted."""
    policy, period = POLICIES[name]
    rows = []
    for scale in (S, S // 2, S // 4):
        m, base = _metrics(policy, scale, size), _metrics("all-local", scale, size)
        assert m["time_compression"] == scale
        real_ns = m["app_time_s"] * 1e9 * m["time_compression"]
        assert not period or real_ns >= 20 * period, f"{name} at S={scale}: too short a run"
        counted = {SCAN_PERIOD: "numa_scan_passes", 20e6: "damon_aggregations"}.get(period)
        assert not counted or m[counted] >= 20, f"{name} at S={scale}: {m[counted]} {counted}"
        acted = m["numa_hint_faults"] if name == "numa-balancing" else \
            m["traffic_share_cxl"] if name == "default-linux" else m["pgmigrate_success"]
        assert acted > 0, f"{name} at S={scale} never acted"
        rows.append((100 * (m["app_time_s"] / base["app_time_s"] - 1),
                     100 * m["traffic_share_dram"],
                     m["pgpromote_success"] / m["footprint_pages"]))
    return rows


@pytest.mark.parametrize("name, size", list(_cases()))
def test_a_policy_is_scale_invariant(name, size):
    rows = _rows(name, size)
    shown = "; ".join(f"S={S >> i}: loss {a:.2f} %, DRAM {b:.2f} %, promoted {c:.4f}"
                      for i, (a, b, c) in enumerate(rows))
    loss, dram, promoted = zip(*rows)
    assert max(loss) - min(loss) <= 1.5, shown
    assert max(dram) - min(dram) <= 2.0, shown
    assert max(promoted) <= 1.15 * min(promoted), shown
