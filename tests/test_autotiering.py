"""``autotiering`` (cxlsim.tiered.policies.autotiering): access histories from hint
faults, LAP lists, CPM and OPM, with hand-built cases."""

from __future__ import annotations

import numpy as np
import pytest

from cxlsim.errors import InputError
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.numa import Numa
from cxlsim.mm.watermarks import WMARK_HIGH
from cxlsim.tiered.policies import EpochView
from cxlsim.tiered.policies.autotiering import AutoTiering, AutoTieringParams

import test_trace_memory as tm


def _full_dram(**params):
    """DRAM filled to its high watermark (no room to promote into), pages 0..k-1 on it
    at level 3 except page 0 at level 1; pages k (level 5) and k+1 (level 0) on CXL."""
    numa = Numa({"nodes": [{"cpus": 4, "memory": "16 MiB"}, {"cpus": 0, "memory": "16 MiB"}]})
    kernel = KernelMemory(numa, 8192)
    k = int(kernel.nr_free[0] - kernel.wmark[0, WMARK_HIGH]) - 1
    kernel.alloc(np.arange(k), 0)
    kernel.alloc(np.array([k, k + 1]), 1)
    policy = AutoTiering(numa, 8192, params=AutoTieringParams(**params))
    policy.history[:k] = 0b111
    policy.history[0] = 0b1000
    policy.history[k] = 0b11111
    return kernel, policy, k


def _fault(kernel, policy, pages, scanned=()):
    view = EpochView(np.asarray(pages), kernel, {}, np.asarray(pages, np.int64),
                     np.zeros(len(pages)), [], 0.0,
                     scanned=np.asarray(scanned, np.int64))
    return view, policy.moves(view)


def test_opm_exchanges_a_hot_cxl_page_with_the_least_accessed_dram_page():
    kernel, policy, k = _full_dram()
    view, (pages, dest) = _fault(kernel, policy, [k, k + 1])
    # page k (level 5) beats page 0 (level 1, the lowest LAP level): 0 down, k up; page
    # k+1 (level 0) is not above the next victim's level (3): a low-frequency failure
    assert pages.tolist() == [0, k] and dest.tolist() == [1, 0]
    assert view.stats["pgpromote_low_freq_fail"] == 1
    for node in dict.fromkeys(dest.tolist()):
        moved, failed = kernel.migrate(pages[dest == node], node)
        assert failed.size == 0
    assert kernel.node[[0, k, k + 1]].tolist() == [1, 0, 1]


def test_cpm_promotes_only_into_free_room():
    kernel, policy, k = _full_dram(mode="cpm")
    _, (pages, _) = _fault(kernel, policy, [k])
    assert pages.size == 0
    kernel.migrate(np.arange(5), 1)                        # five pages of room
    _, (pages, dest) = _fault(kernel, policy, [k, k + 1])
    assert pages.tolist() == [k, k + 1] and dest.tolist() == [0, 0]


def test_background_demotion_keeps_a_reserve_of_free_pages_per_cpu():
    kernel, policy, k = _full_dram(mode="cpm", background_demotion=True)
    _, (pages, dest) = _fault(kernel, policy, [])
    # 16 pages per CPU, 4 CPUs: the 64 least-accessed DRAM pages go, page 0 first
    assert pages.size == 64 and (dest == 1).all() and pages[0] == 0
    assert policy.level(pages[1:]).tolist() == [3] * 63


def test_a_mark_shifts_in_whether_the_page_faulted_since_the_last():
    kernel, policy, k = _full_dram(history_bits=4)
    _fault(kernel, policy, [k + 1], scanned=[k + 1, 1])
    assert policy.history[k + 1] == 0b1 and policy.history[1] == 0b1110
    _fault(kernel, policy, [], scanned=[k + 1, 1])
    assert policy.history[k + 1] == 0b10 and policy.history[1] == 0b1100  # 4 bits kept
    assert policy.level(np.array([k + 1, 1])).tolist() == [1, 2]


def test_the_policy_implies_normal_numa_balancing_without_reclaim_demotion(tmp_path):
    spec = tm._spec(tmp_path, overrides=["policy={name: autotiering, mode: cpm}"])
    assert spec.numa_balancing.enabled
    assert not spec.kernel.numa_balancing_tiering and not spec.kernel.demotion_enabled


@pytest.mark.parametrize("override, message", [
    ("policy: {name: autotiering, history_bits: 9}",
     "policy.history_bits: expected less than or equal to 8; found 9"),
    ("policy: {name: autotiering, mode: exchange}",
     "policy.mode: expected 'cpm' or 'opm'; found 'exchange'"),
    ("policy: {name: autotiering, reserve: 4}",
     "policy.reserve: unknown tunable 'reserve'; did you mean 'reserve_pages'?"),
    ("policy: autotiering\nkernel: {demotion_enabled: true}", "kernel.demotion_enabled: "
     "policy autotiering needs false (it sets kernel.demotion_enabled from its own "
     "tunables); the file sets true"),
])
def test_bad_tunables_are_one_line_naming_the_key(tmp_path, override, message):
    with pytest.raises(InputError) as info:
        path = tmp_path / "at.yaml"
        path.write_text(tm.BASE % ("uniform", 1000, "1MiB", "", 100) + override + "\n")
        tm.load_experiment(path)
    assert message in str(info.value) and "\n" not in str(info.value)
