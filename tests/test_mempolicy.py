"""Memory policies and first-touch placement: exact interleave counts, fallback, OOM,
per-region (hmalloc/hmctl) policies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.mm.mempolicy import MemPolicy, OutOfMemoryError, PagePlacement, parse_numactl
from cxlsim.mm.numa import Numa
from cxlsim.validation import PASS
from cxlsim.validation.checks import hmalloc_regions

from conftest import EXPERIMENTS

SLIT = [[10, 21, 14, 24], [21, 10, 24, 14], [14, 24, 10, 26], [24, 14, 26, 10]]
HMALLOC = next(p for p in EXPERIMENTS if p.name == "hmalloc.yaml")


def machine(pages=(1000, 1000, 1000, 1000), weights=None) -> Numa:
    """Sockets 0 and 1, CXL nodes 2 (near 0) and 3 (near 1); capacities in pages."""
    nodes = [{"cpus": 8 if i < 2 else 0, "memory": p * 4096} for i, p in enumerate(pages)]
    return Numa({"nodes": nodes, "distances": SLIT, "interleave_weights": weights})


# --- policies as numactl text --------------------------------------------------------

@pytest.mark.parametrize("text, mode, nodes", [
    ("", "default", []), ("-m 2", "bind", [2]), ("-m2", "bind", [2]),
    ("--membind=1,3", "bind", [1, 3]), ("--preferred 1", "preferred", [1]),
    ("-i 0-2", "interleave", [0, 1, 2]), ("--interleave=3,0,0", "interleave", [0, 3]),
    ("-w 0,2", "weighted-interleave", [0, 2]),
])
def test_numactl_text(text, mode, nodes):
    policy = MemPolicy.model_validate(text)
    assert (policy.mode, policy.nodes) == (mode, nodes)
    assert MemPolicy.model_validate(str(policy) if nodes else "") == policy


@pytest.mark.parametrize("data, message", [
    ("-x 1", r"expected one numactl policy option \('', '-m 2', '-p 1', '-i 0,1', '-w 0,2'\), "
             "got '-x 1'"),
    ("-m 1 -p 2", "expected one numactl policy option"),
    ("-i 3-1", "expected a node list such as 0,2-3, got '3-1'"),
    ("-p 1,2", r"the preferred policy takes one node, got \[1, 2\]"),
    ({"mode": "default", "nodes": [1]}, r"the default policy takes no nodes, got \[1\]"),
    ({"mode": "bind"}, "the bind policy needs at least one node"),
    ({"mode": "interleave", "nodes": [0, 1], "weights": {0: 2, 1: 1}},
     "weights are for the weighted-interleave policy only"),
    ({"mode": "weighted-interleave", "nodes": [0, 1], "weights": {0: 2}},
     r"weights must give one weight for each of the nodes \[0, 1\], got \{0: 2\}"),
    ({"mode": "weighted-interleave", "nodes": [0], "weights": {0: 256}},
     "less than or equal to 255"),
])
def test_bad_policies(data, message):
    with pytest.raises(ValidationError, match=message):
        MemPolicy.model_validate(data)


def test_parse_numactl_returns_plain_fields():
    assert parse_numactl(" --weighted-interleave=0,2 ") == {"mode": "weighted-interleave",
                                                            "nodes": [0, 2]}


@pytest.mark.parametrize("policy, cpu_node, message", [
    ("-m 4", 0, r"node 4 does not exist \(nodes 0-3\)"),
    ("", 2, "node 2 has no CPUs"),
])
def test_policies_must_fit_the_machine(policy, cpu_node, message):
    with pytest.raises(ValueError, match=message):
        PagePlacement(machine(), policy, cpu_node)


def test_policy_nodes_need_memory():
    with pytest.raises(ValueError, match="node 3 has no memory"):
        PagePlacement(machine(pages=(10, 10, 10, 0)), "-i 2,3")


# --- single policies ----------------------------------------------------------------

def test_default_is_local_first():
    for cpu in (0, 1):
        proc = PagePlacement(machine(), cpu_node=cpu)
        proc.touch(proc.mmap(500))
        assert proc.counts().tolist() == [500 * (cpu == 0), 500 * (cpu == 1), 0, 0]


def test_default_falls_back_by_distance_when_full():
    numa = machine(pages=(100, 50, 30, 1000))
    proc = PagePlacement(numa, cpu_node=0)
    nodes = proc.touch(proc.mmap(400))
    # node 0's order: 0 (10), 2 (14), 1 (21), 3 (24)
    assert nodes[:100].tolist() == [0] * 100 and nodes[100:130].tolist() == [2] * 30
    assert nodes[130:180].tolist() == [1] * 50 and (nodes[180:] == 3).all()
    assert numa.free.tolist() == [0, 0, 0, 780]


def test_preferred_falls_back_from_the_preferred_node():
    numa = machine(pages=(1000, 1000, 10, 1000))
    proc = PagePlacement(numa, "-p 2", cpu_node=1)
    proc.touch(proc.mmap(30))
    assert proc.counts().tolist() == [20, 0, 10, 0]  # node 2's nearest is 0, not local 1


def test_bind_takes_the_bound_node_nearest_the_cpu_first():
    proc = PagePlacement(machine(pages=(1000, 1000, 1000, 5)), "-m 2,3", cpu_node=1)
    proc.touch(proc.mmap(20))
    assert proc.counts().tolist() == [0, 0, 15, 5]  # node 1's order: 1, 3, 0, 2


def test_bind_out_of_memory_is_a_clear_error():
    numa = machine(pages=(1000, 1000, 100, 1000))
    proc = PagePlacement(numa)
    heap = proc.mmap(10, name="malloc")
    area = proc.mmap(150, "-m 2", name="hmalloc")
    proc.touch(heap)
    with pytest.raises(OutOfMemoryError, match=r"^out of memory at virtual page 110 \(region "
                                               r"'hmalloc', policy --membind=2\): node 2 is "
                                               r"full$"):
        proc.touch(area)
    assert isinstance(OutOfMemoryError("x"), InputError)  # the CLI prints it on one line
    assert proc.counts(area).tolist() == [0, 0, 100, 0]  # the pages before it stay
    assert (proc.node_of(range(110, 160)) == -1).all()


def test_out_of_memory_everywhere():
    proc = PagePlacement(machine(pages=(3, 2, 2, 1)), "-i 0,1")
    with pytest.raises(OutOfMemoryError, match=r"virtual page 8 \(region 'region0', policy "
                                               r"--interleave=0,1\): nodes 0,2,1,3 are full"):
        proc.touch(proc.mmap(9))


def test_interleave_is_round_robin_by_virtual_page():
    proc = PagePlacement(machine(), "-i 1,2,3")
    proc.mmap(7)                                  # not touched: shifts the next region
    nodes = proc.touch(proc.mmap(9))
    assert nodes.tolist() == [2, 3, 1, 2, 3, 1, 2, 3, 1]  # pages 7..15, page v on [1,2,3][v % 3]


def test_interleave_index_does_not_depend_on_touch_order():
    proc = PagePlacement(machine(), "-i 0,1")
    region = proc.mmap(10)
    proc.touch(np.array([5, 2, 9, 2, 0]))
    assert proc.node_of(region).tolist() == [0, -1, 0, -1, -1, 1, -1, -1, -1, 1]


def test_interleave_falls_back_from_the_target_node():
    proc = PagePlacement(machine(pages=(2, 1000, 1000, 1000)), "-i 0,1")
    nodes = proc.touch(proc.mmap(8))
    assert nodes.tolist() == [0, 1, 0, 1, 2, 1, 2, 1]  # node 0 full: its next is 2


def test_weighted_interleave_2_to_1_over_3000_pages():
    proc = PagePlacement(machine(pages=(5000,) * 4), MemPolicy(
        mode="weighted-interleave", nodes=[0, 2], weights={0: 2, 2: 1}))
    nodes = proc.touch(proc.mmap(3000))
    assert proc.counts().tolist() == [2000, 0, 1000, 0]
    assert nodes[:6].tolist() == [0, 0, 2, 0, 0, 2]


def test_weighted_interleave_uses_the_machine_table():
    proc = PagePlacement(machine(weights=[3, 1, 1, 2]), "-w 0,3")
    proc.touch(proc.mmap(500))
    assert proc.counts().tolist() == [300, 0, 0, 200]


def weighted_count(node_index: int, weights: list[int], start: int, stop: int) -> int:
    """Pages in [start, stop) whose index lands in the node's slots of a round."""
    total, first = sum(weights), sum(weights[:node_index])
    w = weights[node_index]

    def upto(x: int) -> int:  # pages in [0, x)
        return x // total * w + min(max(x % total - first, 0), w)

    return upto(stop) - upto(start)


@given(weights=st.lists(st.integers(1, 255), min_size=1, max_size=4),
       start=st.integers(0, 2000), pages=st.integers(1, 20_000))
def test_weighted_interleave_counts_are_exact(weights, start, pages):
    nodes = [0, 1, 2, 3][:len(weights)]
    proc = PagePlacement(machine(pages=(30_000,) * 4), MemPolicy(
        mode="weighted-interleave", nodes=nodes, weights=dict(zip(nodes, weights))))
    if start:
        proc.mmap(start)
    proc.touch(proc.mmap(pages))
    counts = proc.counts()
    for k, node in enumerate(nodes):
        assert counts[node] == weighted_count(k, weights, start, start + pages)
    if start == 0 and pages % sum(weights) == 0:
        rounds = pages // sum(weights)
        assert counts[nodes].tolist() == [rounds * w for w in weights]


# --- against a page-at-a-time reference ------------------------------------------------

def reference(numa: Numa, process: MemPolicy, cpu_node: int,
              regions: list[tuple[int, MemPolicy | None]], touches: list[int]):
    """Place pages one at a time as the kernel would; ``(nodes, oom page or None)``."""
    free = numa.capacity.copy()
    policy_of, nodes = [], []
    for pages, policy in regions:
        policy_of += [policy if policy and policy.mode != "default" else process] * pages
        nodes += [-1] * pages
    for v in touches:
        if nodes[v] >= 0:
            continue
        policy = policy_of[v]
        if policy.mode == "default":
            route = numa.fallback(cpu_node).tolist()
        elif policy.mode == "preferred":
            route = numa.fallback(policy.nodes[0]).tolist()
        elif policy.mode == "bind":
            route = [n for n in numa.fallback(cpu_node).tolist() if n in policy.nodes]
        else:  # weighted_interleave_nid(): walk the nodes' weights from index v % total
            if policy.mode == "interleave":
                weight = dict.fromkeys(policy.nodes, 1)
            elif policy.weights:
                weight = dict(policy.weights)
            else:
                weight = {n: int(numa.interleave_weights[n]) for n in policy.nodes}
            target = v % sum(weight.values())
            node = policy.nodes[0]
            while target >= weight[node]:
                target -= weight[node]
                node = policy.nodes[policy.nodes.index(node) + 1]
            route = numa.fallback(node).tolist()
        room = [n for n in route if free[n] > 0]
        if not room:
            return nodes, v
        nodes[v] = room[0]
        free[room[0]] -= 1
    return nodes, None


@st.composite
def policies(draw, nodes: int):
    mode = draw(st.sampled_from(["default", "bind", "preferred", "interleave",
                                 "weighted-interleave"]))
    if mode == "default":
        return MemPolicy()
    chosen = draw(st.lists(st.integers(0, nodes - 1), min_size=1, max_size=1 if
                           mode == "preferred" else nodes, unique=True))
    weights = None
    if mode == "weighted-interleave" and draw(st.booleans()):
        weights = {n: draw(st.integers(1, 5)) for n in chosen}
    return MemPolicy(mode=mode, nodes=chosen, weights=weights)


@st.composite
def scenarios(draw):
    pages = draw(st.lists(st.integers(1, 40), min_size=4, max_size=4))
    weights = draw(st.none() | st.lists(st.integers(1, 4), min_size=4, max_size=4))
    regions = draw(st.lists(st.tuples(st.integers(1, 60), st.none() | policies(4)),
                            min_size=1, max_size=3))
    size = sum(p for p, _ in regions)
    touches = draw(st.lists(st.integers(0, size - 1), max_size=200))
    return pages, weights, draw(policies(4)), draw(st.sampled_from([0, 1])), regions, touches


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.integers(1, 4))
def test_placement_matches_a_page_at_a_time_reference(scenario, calls):
    pages, weights, process, cpu_node, regions, touches = scenario
    numa = machine(pages=pages, weights=weights)
    proc = PagePlacement(numa, process, cpu_node)
    for size, policy in regions:
        proc.mmap(size, policy)
    want, oom = reference(machine(pages=pages, weights=weights), process, cpu_node, regions,
                          touches)
    raised = None
    try:  # the same touches, split over several calls
        for part in np.array_split(np.array(touches, dtype=np.int64), calls):
            proc.touch(part)
    except OutOfMemoryError as err:
        raised = err
    assert proc.placement.node.tolist() == want
    assert (raised is None) == (oom is None)
    if oom is not None:
        assert f"virtual page {oom} " in str(raised)
    # never over capacity, and the free counts account for every page
    counts = proc.counts()
    assert (counts <= numa.capacity).all() and (numa.free >= 0).all()
    assert (counts + numa.free == numa.capacity).all()


# --- per-region policies: hmalloc / hmctl ---------------------------------------------

def test_only_the_hmalloc_region_follows_hmctl():
    proc = PagePlacement(machine(pages=(10**6,) * 4), "-i 1,2")   # numactl -i 1,2
    heap = proc.mmap(1001, name="malloc")
    area = proc.mmap(2000, "-p 3", name="hmalloc")                # hmctl -p 3
    rest = proc.mmap(500, name="stack")
    for region in (heap, area, rest):
        proc.touch(region)
    assert proc.counts(heap).tolist() == [0, 501, 500, 0]
    assert proc.counts(area).tolist() == [0, 0, 0, 2000]
    assert proc.counts(rest).tolist() == [0, 250, 250, 0]
    assert proc.counts().tolist() == [0, 751, 750, 2000]


def test_region_with_default_policy_follows_the_process():
    proc = PagePlacement(machine(), "-m 1")
    area = proc.mmap(10, "")
    assert area.policy is None
    proc.touch(area)
    assert proc.counts(area).tolist() == [0, 10, 0, 0]


def test_touch_is_first_touch_only():
    numa = machine()
    proc = PagePlacement(numa, "-p 3")
    region = proc.mmap(10)
    first = proc.touch(region)
    assert (proc.touch(region) == first).all() and numa.free[3] == 990
    with pytest.raises(IndexError, match=r"virtual pages must be mapped, in \[0, 10\)"):
        proc.touch([10])


def test_hmalloc_experiment_counts():
    result = load_experiment(HMALLOC).run()
    m = result.metrics
    assert m["plain.malloc.node0"] == 65536 and m["plain.hmalloc.node0"] == 131072
    assert m["hmctl-m2.malloc.node0"] == 65536 and m["hmctl-m2.hmalloc.node2"] == 131072
    assert m["numactl-m1-hmctl-m2.malloc.node1"] == 65536
    assert m["numactl-m1-hmctl-m2.hmalloc.node2"] == 131072
    table = result.tables["pages"]
    assert table.groupby("case")["pages"].sum().eq(65536 + 131072).all()


def test_hmalloc_experiment_rejects_other_hmctl_options(write):
    text = HMALLOC.read_text().replace('hmctl: "-m 3"', 'hmctl: "-i 2,3"')
    with pytest.raises(InputError, match="hmctl has only -m/--membind and -p/--preferred, "
                                         "got --interleave=2,3"):
        load_experiment(write("bad.yaml", text))


def test_t57_check_passes():
    outcome = hmalloc_regions(quick=True)["T5.7"]
    assert outcome.status == PASS, outcome.note
    assert "hmalloc 131072 pages on node 2, malloc 65536 on node 0" in outcome.simulated
