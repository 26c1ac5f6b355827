"""TPP and plain Linux on the trace engine: each TPP mechanism against a hand-computed
case, conservation of pages, determinism, and bad tunables named."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from cxlsim.cli import main
from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.lru import ACTIVE, INACTIVE
from cxlsim.mm.numa import Numa
from cxlsim.mm.placement import FILE, Placement
from cxlsim.mm.watermarks import WMARK_HIGH
from cxlsim.tiered.policies import POLICIES, EpochView
from cxlsim.tiered.policies.tpp import Tpp, TppParams

TPP_2TO1 = REPO / "experiments" / "tpp-2to1.yaml"


def _numa(dram="1 GiB", cxl="1 GiB"):
    return Numa({"nodes": [{"cpus": 4, "memory": dram}, {"cpus": 0, "memory": cxl}]})


def _tpp_kernel(pages, **params):
    settings_ = TppParams(**params)
    return KernelMemory(_numa("64 MiB", "64 MiB"), pages,
                        Tpp.switches(settings_).kernel), Tpp(_numa("64 MiB", "64 MiB"),
                                                             pages, params=settings_)


def _fault(kernel, policy, pages):
    """One epoch whose hint faults are ``pages``: the policy's moves, applied."""
    view = EpochView(np.asarray(pages), kernel, {}, np.asarray(pages),
                     np.zeros(len(pages)), [])
    move, dest = policy.moves(view)
    for node in np.unique(dest):
        kernel.migrate(move[dest == node], int(node))
    return move


# --- decoupled allocation and demotion watermarks ----------------------------------------

def test_wmark_demote_is_2_percent_of_the_top_tier_node_clamped_to_twice_high():
    kernel = KernelMemory(_numa(), 2 * 262144, {"demotion_enabled": True,
                                                "demote_scale_factor": 200})
    # 1 GiB = 262144 pages; 2 % = 5242; high = 724 + 2 * 262 = 1248 (min_free_kbytes
    # int_sqrt(16 * 2 GiB in kB) = 5792 kB shared by size; step 0.1 % = 262)
    assert kernel.wmark[0, WMARK_HIGH] == 1248
    assert kernel.wmark_demote.tolist() == [5242, 0]   # only the top tier demotes
    tiny = KernelMemory(_numa(), 2 * 262144, {"demotion_enabled": True,
                                              "demote_scale_factor": 1})
    assert tiny.wmark_demote[0] == 2 * 1248            # 26 pages, raised to 2 x high
    off = KernelMemory(_numa(), 2 * 262144, {"demote_scale_factor": 200})
    assert not off.wmark_demote.any()                  # nothing to demote to: no mark


def test_kswapd_wakes_below_wmark_demote_and_keeps_2_percent_free():
    def fill(params, pages):
        kernel = KernelMemory(_numa(), 2 * 262144, params)
        kernel.alloc(np.arange(pages), 0)
        return kernel

    decoupled = {"demotion_enabled": True, "demote_scale_factor": 200}
    at_mark = fill(decoupled, 262144 - 5242)           # free == WMARK_DEMOTE: balanced
    assert not at_mark.kswapd_woken[0]
    kernel = fill(decoupled, 262144 - 5242 + 1)        # one page below it: woken
    assert kernel.kswapd_woken[0] and kernel.nr_free[0] == 5241
    kernel.kswapd()
    # reclaim until free pages exceed WMARK_DEMOTE: the inactive tail demoted to CXL
    assert kernel.nr_free[0] == 5243
    assert kernel.vmstat()["pgdemote_kswapd"] == 2 == kernel.placement.counts()[1]
    # the kernel's own watermarks: the same allocation leaves kswapd asleep
    coupled = fill({"demotion_enabled": True}, 262144 - 5242 + 1)
    assert not coupled.kswapd_woken.any()


def test_allocations_still_need_only_the_low_watermark():
    kernel = KernelMemory(_numa(), 2 * 262144, {"demotion_enabled": True,
                                                "demote_scale_factor": 200})
    kernel.alloc(np.arange(262144 - 2000), 0)          # far below WMARK_DEMOTE, above low
    assert kernel.placement.counts().tolist() == [262144 - 2000]


# --- the active-LRU gate -----------------------------------------------------------------

def test_a_fault_on_an_inactive_cxl_page_only_marks_it_accessed():
    kernel, policy = _tpp_kernel(8)
    kernel.alloc(np.arange(4), 1)                      # four CXL pages, inactive
    # mark_page_accessed: inactive -> referenced -> active; a fault on an active page
    # promotes. Page 0 faults three times, page 1 twice, page 2 once, page 3 never.
    assert _fault(kernel, policy, [0, 1, 2]).size == 0
    assert kernel.referenced[[0, 1, 2]].all() and (kernel.lru[:4] == INACTIVE).all()
    assert _fault(kernel, policy, [0, 1]).size == 0
    assert kernel.lru[:4].tolist() == [ACTIVE, ACTIVE, INACTIVE, INACTIVE]
    assert _fault(kernel, policy, [0]).tolist() == [0]
    assert kernel.node[:4].tolist() == [0, 1, 1, 1]
    assert kernel.vmstat()["pgpromote_success"] == 1


def test_without_the_gate_every_fault_on_a_cxl_page_promotes():
    kernel, policy = _tpp_kernel(8, active_lru_gate=False)
    kernel.alloc(np.arange(4), 1)
    assert _fault(kernel, policy, [0, 2]).tolist() == [0, 2]
    assert kernel.node[:4].tolist() == [0, 1, 0, 1]


def test_faults_on_local_or_free_pages_move_nothing():
    kernel, policy = _tpp_kernel(8, active_lru_gate=False)
    kernel.alloc(np.arange(2), 0)
    assert _fault(kernel, policy, [0, 1, 5]).size == 0


# --- page-type-aware allocation ------------------------------------------------------------

def test_page_type_aware_allocation_puts_file_pages_on_cxl_first():
    types = np.array([0, FILE, 0, FILE], np.int8)
    for aware, nodes in ((True, [0, 1, 0, 1]), (False, [0, 0, 0, 0])):
        kernel = KernelMemory(_numa("64 MiB", "64 MiB"), Placement(4, page_type=types),
                              {"file_on_lower_tier": aware})
        assert kernel.alloc(np.arange(4), 0).tolist() == nodes


# --- the policies' switches ---------------------------------------------------------------

def test_the_policies_turn_their_kernel_switches():
    linux, demotion = (POLICIES[n].switches(POLICIES[n].Params())
                       for n in ("default-linux", "demotion"))
    assert not linux.kernel["demotion_enabled"] and demotion.kernel["demotion_enabled"]
    tpp = Tpp.switches(TppParams())
    assert tpp.kernel == {"numa_balancing_tiering": True, "promo_watermark": False,
                          "demotion_enabled": True,
                          "demote_scale_factor": 200, "file_on_lower_tier": False}
    assert tpp.numa_balancing == {"enabled": True}
    assert Tpp.switches(TppParams(decoupled_watermarks=False)).kernel["demote_scale_factor"] \
        is None


# --- conservation and determinism -----------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 599), st.booleans()), min_size=1, max_size=60),
       st.booleans(), st.booleans(), st.integers(0, 2**31))
def test_no_page_is_lost_or_duplicated_under_tpp(steps, gate, aware, seed):
    """Random epochs of first touches and hint faults on a DRAM node too small for the
    footprint: every page allocated stays resident exactly once (anon: no swap), and the
    LRU counts agree with the placement on every node."""
    rng = np.random.default_rng(seed)
    numa = _numa("1 MiB", "4 MiB")  # 256 + 1024 pages for 600
    types = rng.integers(0, 2, 600).astype(np.int8)
    params = TppParams(active_lru_gate=gate, page_type_aware=aware)
    kernel = KernelMemory(numa, Placement(600, page_type=types), Tpp.switches(params).kernel)
    policy = Tpp(numa, 600, params=params)
    touched = np.zeros(600, bool)
    for page, fault in steps:
        pages = np.unique(rng.integers(0, 600, 20).tolist() + [page])
        fresh = pages[kernel.node[pages] < 0]
        target, _ = policy.preferred(fresh)
        if fresh.size:
            kernel.alloc(fresh, int(target[0]))
        touched[pages] = True
        kernel.touch(pages[kernel.node[pages] >= 0])
        if fault:
            _fault(kernel, policy, pages[kernel.node[pages] >= 0])
        kernel.kswapd()
        lost = touched & (kernel.node < 0) & (kernel.placement.page_type != FILE)
        assert not lost.any()
        per_node = kernel.placement.counts(n_nodes=2)
        assert per_node.tolist() == (kernel.capacity - kernel.nr_free).tolist()
        assert kernel.lru_sizes().sum(axis=(1, 2)).tolist() == per_node.tolist()


#: tpp-2to1.yaml as a small unscaled machine (the file's 2:1 at 100 MiB) whose scanner
#: and kswapd act within 120,000 records: a fast test of the mechanisms, not a study.
SMALL = ["trace.n=120000", "epoch=5000", "scale=1", "trace.params={threads: 2, span: 10 ms}",
         "topology.nodes[dram0].capacity=67 MiB", "topology.nodes[cxl0].capacity=33 MiB",
         "kswapd_interval=20 us", "numa_balancing={scan_delay: 100 us, scan_period: 100 us, "
         "scan_period_max: 6 ms, scan_size: 256 MiB, max_scan_rate: 25600 GB/s}"]


def _small(*overrides):
    return load_experiment(TPP_2TO1, [*SMALL, *overrides]).run()


def test_the_same_seed_gives_the_same_counters():
    a, b = _small(), _small("figures=false")
    assert a.figures and not b.figures  # figures: false skips only the figures
    counters = ("pgdemote_kswapd", "pgpromote_success", "pgmigrate_fail", "numa_hint_faults",
                "kswapd_wakeup", "pgalloc", "numa_miss")
    assert {k: a.metrics[k] for k in counters} == {k: b.metrics[k] for k in counters}
    assert a.metrics["pgpromote_success"] > 0 and a.metrics["pgdemote_kswapd"] > 0


def test_tpp_serves_more_of_web1_from_dram_than_default_linux():
    share = {p: _small(f"policy={p}").tables["nodes"].set_index("node")
             .loc["dram", "traffic_share"] for p in ("default-linux", "demotion", "tpp")}
    # default Linux: the file cache read at start fills DRAM, anon spills to CXL and stays
    assert share["default-linux"] == share["demotion"] < share["tpp"]


# --- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("override, message", [
    ("policy={name: tpp, demote_scale: 200}",
     r"policy\.demote_scale: unknown tunable 'demote_scale'; did you mean "
     r"'demote_scale_factor'\?"),
    ("policy={name: tpp, promote: 200}",
     r"policy\.promote: unknown tunable 'promote'; expected one of: active_lru_gate, "
     r"decoupled_watermarks, demote_scale_factor, page_type_aware"),
    ("policy={name: tpp, demote_scale_factor: 0}",
     r"policy\.demote_scale_factor: expected greater than or equal to 1; found 0"),
    ("policy={name: tpp, demote_scale_factor: 10001}",
     r"policy\.demote_scale_factor: expected less than or equal to 10000; found 10001"),
])
def test_bad_tpp_tunables_are_named(override, message):
    with pytest.raises(InputError, match=message):
        load_experiment(TPP_2TO1, [override])


def test_a_bad_tunable_exits_2_with_one_line(capsys, tmp_path):
    argv = ["run", str(TPP_2TO1), "--out", str(tmp_path / "r"), "--set",
            "policy={name: tpp, demote_scale_factor: 10001}"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "demote_scale_factor" in err


# --- the workload models ----------------------------------------------------------------------

@pytest.mark.parametrize("kind, anon_first", [("web1", False), ("cache1", True)])
def test_a_service_touches_every_page_once_in_its_order_then_only_hot_pages(tmp_path, kind,
                                                                             anon_first):
    from cxlsim.traces import generate, open_trace
    from cxlsim.traces.generators import KINDS

    spec = {k: p.parse(p.default) for k, p in KINDS[kind].params.items()}
    total = spec["footprint"] // 4096                       # 24576 pages of 4 KiB
    n_file = round(total * spec["file_share"])
    cols = open_trace(generate(kind, total + 200_000, 3, tmp_path / "t.arrow",
                             ["reaccess=0"])).read()  # no warm pages
    page, kinds = cols["addr"] >> 12, cols["page_type"]
    start, steady = slice(0, total), slice(total, None)
    assert np.unique(page[start]).size == total             # every page once at the start
    first = FILE if not anon_first else 0
    n_first = n_file if first == FILE else total - n_file
    assert (kinds[:n_first] == first).all() and (kinds[n_first:total] != first).all()
    hot_anon = round((total - n_file) * spec["anon_hot"])
    hot_file = round(n_file * spec["file_hot"])
    for code, hot in ((0, hot_anon), (FILE, hot_file)):
        assert np.unique(page[steady][kinds[steady] == code]).size == hot
    # each type takes its share of the hot pages' share of the hot records
    share = (kinds[steady] == FILE).mean()
    assert share == pytest.approx(hot_file / (hot_anon + hot_file), abs=0.01)


def test_promotions_and_the_scheduler_tick_wake_kswapd_below_wmark_demote():
    kernel = KernelMemory(_numa(), 2 * 262144, {"demotion_enabled": True,
                                                "demote_scale_factor": 200})
    kernel.alloc(np.arange(262144 - 5242), 0)          # at WMARK_DEMOTE: asleep
    kernel.alloc(np.arange(262144, 262154), 1)
    kernel.migrate(np.arange(262144, 262146), 0)       # a promotion takes a page below it
    assert kernel.kswapd_woken[0]
    kernel.kswapd()
    assert kernel.nr_free[0] == 5243 and not kernel.kswapd_woken[0]
    kernel.check_toptier_balanced()                    # balanced: the tick wakes none
    assert not kernel.kswapd_woken.any()
    kernel.alloc(np.arange(262200, 262204), 0)         # below it again (and woken by the
    kernel.kswapd_woken[:] = False                     # allocation: undone here, so that
    kernel.check_toptier_balanced()                    # the tick is what wakes it)
    assert kernel.nr_free[0] == 5239 and kernel.kswapd_woken[0]
