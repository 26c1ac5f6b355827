"""NUMA nodes: validation of the machine, fallback order by distance, auto weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from cxlsim.mm.numa import Numa, NumaParams, auto_weights

GiB = 2**30

#: Two sockets (0, 1) and a CXL node behind each (2 behind 0, 3 behind 1).
SLIT = [[10, 21, 14, 24], [21, 10, 24, 14], [14, 24, 10, 26], [24, 14, 26, 10]]


def machine(**extra) -> dict:
    nodes = [{"cpus": 8, "memory": 4 * GiB}, {"cpus": 8, "memory": 4 * GiB},
             {"memory": 2 * GiB}, {"memory": 2 * GiB}]
    return {"nodes": nodes, "distances": SLIT} | extra


def test_capacities_and_free_counts_are_in_pages():
    numa = Numa(machine())
    assert numa.capacity.tolist() == [2**20, 2**20, 2**19, 2**19]
    assert numa.free.tolist() == numa.capacity.tolist() and numa.free is not numa.capacity
    assert numa.has_cpus.tolist() == [True, True, False, False]
    assert Numa(machine(page_size="2 MiB")).capacity.tolist() == [2048, 2048, 1024, 1024]


def test_default_distances_are_10_local_20_remote():
    numa = Numa({"nodes": [{"cpus": 1, "memory": GiB}, {"memory": GiB}, {"memory": GiB}]})
    assert numa.distance.tolist() == [[10, 20, 20], [20, 10, 20], [20, 20, 10]]


@pytest.mark.parametrize("change, message", [
    ({"distances": [[10, 21], [21, 10]]}, "distances must be a 4 x 4 matrix, one row per node"),
    ({"distances": [[10, 21, 14, 24], [21, 11, 24, 14], [14, 24, 10, 26], [24, 14, 26, 10]]},
     r"distances\[1\]\[1\] must be 10 \(a node's distance to itself\), got 11"),
    ({"distances": [[10, 10, 14, 24], [10, 10, 24, 14], [14, 24, 10, 26], [24, 14, 26, 10]]},
     r"distances\[0\]\[1\] must be in 11..254, got 10"),
    ({"distances": [[10, 21, 14, 255], [21, 10, 24, 14], [14, 24, 10, 26], [255, 14, 26, 10]]},
     r"distances\[0\]\[3\] must be in 11..254, got 255"),
    ({"distances": [[10, 21, 14, 24], [21, 10, 24, 14], [16, 24, 10, 26], [24, 14, 26, 10]]},
     r"distances must be symmetric: distances\[0\]\[2\] is 14 but distances\[2\]\[0\] is 16"),
    ({"page_size": 6144}, "page_size must be a power of two of at least 4 KiB, got 6144 B"),
    ({"page_size": "2 MiB", "nodes": [{"cpus": 1, "memory": "3 MiB"}], "distances": None},
     r"nodes\[0\].memory must be a whole number of 2097152 B pages, got 3145728 B"),
    ({"nodes": [{"memory": GiB}], "distances": None}, "at least one node must have CPUs"),
    ({"nodes": [{"cpus": 4, "memory": 0}], "distances": None},
     "at least one node must have memory"),
    ({"interleave_weights": [2, 1]}, r"interleave_weights must have one weight per node \(4\), "
                                     "got 2"),
    ({"interleave_weights": [2, 2, 1, 256]}, "interleave weights must be in 1..255, got 256"),
])
def test_bad_machines_are_rejected(change, message):
    with pytest.raises(ValidationError, match=message):
        NumaParams.model_validate(machine(**change))


def test_fallback_is_nearest_first():
    numa = Numa(machine())
    assert [numa.fallback(n).tolist() for n in range(4)] == [
        [0, 2, 1, 3], [1, 3, 0, 2], [2, 0, 1, 3], [3, 1, 0, 2]]


def test_fallback_ties_prefer_cpu_less_nodes_then_higher_numbers():
    nodes = [{"cpus": 1, "memory": GiB}] * 3 + [{"memory": GiB}] * 2
    numa = Numa({"nodes": nodes})  # every remote node at 20
    assert numa.fallback(1).tolist() == [1, 3, 4, 2, 0]


def test_memory_less_nodes_are_never_fallback_targets():
    numa = Numa({"nodes": [{"cpus": 4, "memory": 0}, {"memory": GiB}, {"memory": GiB}],
                 "distances": [[10, 30, 20], [30, 10, 20], [20, 20, 10]]})
    assert numa.fallback(0).tolist() == [2, 1]


@st.composite
def slits(draw):
    n = draw(st.integers(1, 6))
    d = [[10] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            d[i][j] = d[j][i] = draw(st.integers(11, 254))
    memory = draw(st.lists(st.sampled_from([0, GiB]), min_size=n, max_size=n))
    cpus = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    memory[0], cpus[0] = GiB, 1
    return {"nodes": [{"cpus": c, "memory": m} for c, m in zip(cpus, memory)], "distances": d}


@given(slits())
def test_fallback_holds_every_memory_node_once_by_distance(params):
    numa = Numa(params)
    with_memory = np.flatnonzero(numa.capacity > 0).tolist()
    for node in range(numa.n_nodes):
        order = numa.fallback(node)
        assert sorted(order.tolist()) == with_memory
        assert (np.diff(numa.distance[node, order]) >= 0).all()
        if numa.capacity[node]:
            assert order[0] == node


@pytest.mark.parametrize("bandwidth, memory, weights", [
    ([200e9, 100e9], [1, 1], [21, 10]),                 # 2:1 is not exactly 2:1
    ([300e9, 300e9, 150e9, 150e9], [1, 1, 1, 1], [2, 2, 1, 1]),  # 10:10:5:5 over GCD 5
    ([1000e6, 10e6], [1, 1], [31, 1]),                  # a share <= 1/32 gets 1
    ([0, 0, 0], [1, 1, 1], [1, 1, 1]),                  # unknown bandwidths: all 1
    ([64e9], [1], [1]),                                 # 32 alone, reduced to 1
    ([100e9, 100e9, 500e9], [1, 1, 0], [1, 1, 1]),      # memory-less: not in the sum
])
def test_auto_weights_follow_the_kernel(bandwidth, memory, weights):
    assert auto_weights(bandwidth, memory).tolist() == weights


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=8))
def test_auto_weights_are_reduced_bounded_and_ordered_like_bandwidth(mbps):
    w = auto_weights([b * 1e6 for b in mbps], [True] * len(mbps))
    assert ((1 <= w) & (w <= 32)).all()
    assert math.gcd(*w.tolist()) == 1
    order = np.argsort(mbps, kind="stable")
    assert (np.diff(w[order]) >= 0).all()


def test_weight_table_is_auto_unless_given():
    bw = machine()
    for node, b in zip(bw["nodes"], ["300 GB/s", "300 GB/s", "150 GB/s", "150 GB/s"]):
        node["bandwidth"] = b
    assert Numa(bw).interleave_weights.tolist() == [2, 2, 1, 1]
    assert Numa(bw | {"interleave_weights": [3, 3, 1, 1]}).interleave_weights.tolist() == [
        3, 3, 1, 1]
    assert Numa(machine()).interleave_weights.tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("node, kwargs, message", [
    (4, {}, r"node 4 does not exist \(nodes 0-3\)"),
    (2, {"cpus": True}, "node 2 has no CPUs"),
])
def test_check_node(node, kwargs, message):
    with pytest.raises(ValueError, match=message):
        Numa(machine()).check_node(node, **kwargs)
