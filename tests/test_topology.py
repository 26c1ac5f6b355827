"""Topologies: the shipped files, the switch-pool routes, graph checks with file positions,
and a property test of route latency and bottleneck bandwidth."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import GEN5_LANE, SWITCH_POOL, TOPOLOGIES, line_of
from cxlsim.config import parse_yaml, validate_document
from cxlsim.errors import InputError
from cxlsim.link.flits import saturated_efficiency
from cxlsim.link.tlp import PcieConfig, tlp_bandwidth
from cxlsim.topology import Topology, TopologySpec, build_graph, load_topology, routes


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
def test_shipped_topologies_load(path):
    topo = load_topology(path)
    assert topo.spec.name == path.stem
    devices = [n for n in topo.spec.nodes if n.type not in ("host", "root_port", "switch", "dram")]
    assert bool(topo.routes) == bool(devices), "every device has a route from a host"
    for route in topo.routes:
        assert route.path[0] == route.host and route.path[-1] == route.device
        # >= 0: the ORNL PCIe device's fixed cost is all in its DMA engine's setup
        assert route.latency >= 0 and route.bandwidth > 0 and route.links >= 1
    assert not topo.routes or any(route.latency > 0 for route in topo.routes)


def test_switch_pool_routes():
    topo = load_topology(SWITCH_POOL)
    assert len(topo.routes) == 4
    assert sorted(r.device for r in topo.routes) == ["cxl0", "cxl1", "cxl2", "cxl3"]
    for r in topo.routes:
        assert r.host == "host0"
        assert r.path == ("host0", "rp0", "sw0", r.device)
        assert r.links == 2
        # 64 ns root port + 20 ns link (2 x 10 ns ports) + 90 ns switch + 20 ns link
        assert r.latency == pytest.approx(64 + 20 + 90 + 20) == 194.0
        # x8 Gen5 downstream link is the bottleneck: 32 GT/s x 8 lanes x 128/130 / 8 bits
        assert r.bandwidth == pytest.approx(8 * GEN5_LANE, rel=1e-12)
        assert r.bandwidth / 1e9 == pytest.approx(31.51, abs=0.005)


def test_shipped_topology_details():
    deceval = load_topology(TOPOLOGIES[[p.stem for p in TOPOLOGIES].index("deceval")])
    # CXL links with cxl_penalty 0.75: the serializer runs so that reads, after the
    # flit overheads, get 0.75 of the Gen3 x16 PHY's PCIe effective bandwidth
    cxl = 0.75 * tlp_bandwidth(PcieConfig(3, 16)) / saturated_efficiency("68B", "read")
    assert {r.device: r.bandwidth for r in deceval.routes} == pytest.approx(
        {"fpga0": cxl, "gpu0": cxl})
    single = load_topology(SWITCH_POOL.with_name("single-expander.yaml"))
    (route,) = single.routes
    assert route.latency == 64 + 20 and route.bandwidth == pytest.approx(16 * GEN5_LANE)


def test_port_bandwidth_caps_the_links_of_a_switch():
    topo = load_topology(SWITCH_POOL, ["nodes[2].port_bandwidth=10 GB/s"])
    assert all(r.bandwidth == 10e9 for r in topo.routes)


def test_overrides_reach_the_routes():
    topo = load_topology(SWITCH_POOL, ["links[1].width=2", "nodes[2].hop_latency=1 us"])
    by_dev = {r.device: r for r in topo.routes}
    assert by_dev["cxl0"].bandwidth == pytest.approx(2 * GEN5_LANE)
    assert by_dev["cxl1"].bandwidth == pytest.approx(8 * GEN5_LANE)
    assert by_dev["cxl0"].latency == 64 + 20 + 1000 + 20


# --------------------------------------------------------------------------- bad files

BASE = """\
name: t
nodes:
  - {name: host0, type: host}
  - {name: rp0, type: root_port, host: host0, latency: 64 ns}
  - {name: sw0, type: switch, ports: 4, hop_latency: 90 ns}
  - {name: cxl0, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}
  - {name: cxl1, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}
links:
  - {name: up, from: rp0, to: sw0.up, generation: 5, width: 16}
  - {from: sw0.dp0, to: cxl0, generation: 5, width: 8}
  - {from: sw0.dp1, to: cxl1, generation: 5, width: 8}
"""

# (case, replace this, by this, key, the line is the one containing, message fragment)
BAD = [
    ("zero port bandwidth", "hop_latency: 90 ns", "hop_latency: 90 ns, port_bandwidth: 0 GB/s",
     "nodes[2].port_bandwidth", "0 GB/s", "found '0 GB/s' (must be greater than zero)"),
    ("type 3 without memory", "cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}",
     "cxl_type: 3}", "nodes[3]", "name: cxl0", "a CXL Type 3 device has memory: missing "
     "capacity and controller_latency/media_latency; a preset such as "
     "'devices/cxl-type3-expander' gives them"),
    ("huge capacity", "capacity: 1 GiB,", "capacity: 1e400 GiB,", "nodes[3].capacity",
     "1e400", "found '1e400 GiB' (too large)"),
    ("misspelt key", "hop_latency: 90 ns", "hop_latncy: 90 ns", "nodes[2].hop_latncy",
     "hop_latncy", "unknown key 'hop_latncy'; did you mean 'hop_latency'?"),
    ("link to a missing node", "to: cxl1,", "to: cxl9,", "links[2].to", "cxl9",
     "link to unknown node 'cxl9'; known nodes: cxl0, cxl1, host0, rp0, sw0"),
    ("negative latency", "latency: 64 ns", "latency: -5 ns", "nodes[1].latency", "-5 ns",
     "expected a time such as '90 ns' or '1.5 us'; found '-5 ns' (must not be negative)"),
    ("bandwidth 64 GBs", "hop_latency: 90 ns", "hop_latency: 90 ns, port_bandwidth: 64 GBs",
     "nodes[2].port_bandwidth", "64 GBs",
     "expected a bandwidth such as '64 GB/s' or '25 Gb/s'; found '64 GBs' "
     "(unknown unit 'GBs'; did you mean 'GB/s' or 'Gb/s'?)"),
    ("port used twice", "from: sw0.dp1", "from: sw0.dp0", "links[2].from", "to: cxl1",
     "port sw0.dp0 is already used by links[1]"),
    ("device port used twice", "to: cxl1,", "to: cxl0,", "links[2].to", "sw0.dp1",
     "port cxl0.0 is already used by links[1]"),
    ("zero width", "width: 16", "width: 0", "links[0].width", "width: 0",
     "expected 1, 2, 4, 8 or 16; found 0"),
    ("duplicate node name", "{name: cxl1, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}",
     "{name: cxl0, type: cxl_device, cxl_type: 2, capacity: 1 GiB, media_latency: 80 ns}", "nodes[4].name", "cxl_type: 2",
     "duplicate node name 'cxl0'"),
    ("unreachable device", "  - {name: cxl1, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}\n",
     "  - {name: cxl1, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}\n"
     "  - {name: cxl2, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}\n", "nodes[5].name", "cxl2",
     "cxl_device 'cxl2' cannot be reached from any host"),
    ("root port of a non-host", "host: host0", "host: sw0", "nodes[1].host", "host: sw0",
     "'sw0' is not a host node of this topology"),
    ("root port of a missing node", "host: host0", "host: hots0", "nodes[1].host", "hots0",
     "'hots0' is not a host node of this topology"),
    ("switch with more links than ports", "ports: 4", "ports: 2", "nodes[2].ports", "ports: 2",
     "switch 'sw0' has 2 ports but 3 links"),
    ("link joining a node to itself", "{from: sw0.dp1, to: cxl1", "{from: sw0.dp1, to: sw0.dp2",
     "links[2]", "sw0.dp2", "a link must join two different nodes"),
    ("two links between the same nodes", "{from: sw0.dp1, to: cxl1",
     "{from: sw0.dp1, to: rp0.x", "links[2]", "rp0.x",
     "'sw0' and 'rp0' are already joined by another link"),
    ("link to a dram node", "{name: cxl1, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}",
     "{name: cxl1, type: dram, attached_to: host0}", "links[2].to", "to: cxl1",
     "'cxl1' is a dram node; memory is joined by 'attached_to', not by links"),
    ("dram of a missing node", "  - {name: cxl1, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}\n",
     "  - {name: cxl1, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}\n"
     "  - {name: mem0, type: dram, attached_to: nobody}\n", "nodes[5].attached_to", "nobody",
     "'nobody' is not a host or cxl_device or accelerator or pcie_device node"),
    ("malformed endpoint", "to: sw0.up", "to: sw0.", "links[0].to", "to: sw0.,",
     "expected an endpoint 'node' or 'node.port'; found 'sw0.'"),
    ("misspelt node type", "type: switch", "type: swtich", "nodes[2].type", "swtich",
     "unknown type 'swtich'; did you mean 'switch'?"),
    ("unknown node type", "type: switch", "type: router", "nodes[2].type", "router",
     "unknown type 'router'; expected one of 'host', 'root_port', 'switch', 'cxl_device', "
     "'accelerator', 'pcie_device', 'dram'"),
    ("link without generation or rate", "generation: 5, width: 16", "width: 16", "links[0]",
     "to: sw0.up", "a link needs a 'generation' (1-6) or a 'rate' such as '32 GT/s'"),
    ("bad node name", "{name: cxl1,", "{name: 1cxl,", "nodes[4].name", "1cxl",
     "expected a name of letters, digits, '_' and '-', starting with a letter or '_'; "
     "found '1cxl'"),
    ("duplicate link name", "{from: sw0.dp1, to: cxl1,", "{name: up, from: sw0.dp1, to: cxl1,",
     "links[2].name", "name: up, from: sw0.dp1",
     "duplicate link name 'up' (links[0] has it); a link's name must be unique"),
]


@pytest.mark.parametrize("case, old, new, key, needle, fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_topology_names_file_line_and_key(write, case, old, new, key, needle, fragment):
    assert old in BASE
    path = write("bad.yaml", BASE.replace(old, new, 1))
    with pytest.raises(InputError) as info:
        load_topology(path)
    err = info.value
    line = line_of(path, needle)
    assert err.location.source == str(path)
    assert err.location.line == line
    assert err.key == key
    assert fragment in err.message
    assert str(err).startswith(f"{path}:{line}:")
    assert f": {key}: " in str(err)
    assert "\n" not in err.headline()


def test_misspelt_required_key_suggests_the_right_one(write):
    path = write("bad.yaml", BASE.replace("ports: 4", "prots: 4"))
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert info.value.key == "nodes[2].prots"
    assert "did you mean 'ports'?" in info.value.message


def test_misspelt_required_key_is_still_reported_on_its_line(write):
    path = write("bad.yaml", BASE.replace("ports: 4", "prots: 4"))
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert info.value.location.line == line_of(path, "prots")
    assert info.value.message == "unknown key 'prots'; did you mean 'ports'?"


def test_topology_needs_a_host(write):
    path = write("t.yaml", "name: t\nnodes:\n  - {name: c, type: cxl_device, cxl_type: 3, capacity: 1 GiB, media_latency: 80 ns}\n")
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert str(info.value) == (f"{path}:3:3: nodes: a topology needs at least one node of "
                               "type 'host'")


def test_topology_needs_nodes(write):
    path = write("t.yaml", "name: t\nnodes: []\n")
    with pytest.raises(InputError, match=r"t\.yaml:2:8: nodes: expected at least 1 item; found none"):
        load_topology(path)


def test_error_from_a_set_override_names_the_set():
    with pytest.raises(InputError) as info:
        load_topology(SWITCH_POOL, ["links[1].to=cxl9"])
    assert str(info.value).startswith("--set links[1].to=cxl9: links[1].to: link to unknown "
                                      "node 'cxl9'")


def test_a_link_is_set_by_its_name(write):
    path = write("t.yaml", BASE)
    topo = load_topology(path, ["links[up].width=4"])
    assert topo.spec.links[0].name == "up" and topo.spec.links[0].width == 4
    assert all(r.bandwidth == pytest.approx(4 * GEN5_LANE) for r in topo.routes)


def test_an_unknown_link_name_lists_the_names(write):
    path = write("t.yaml", BASE)
    with pytest.raises(InputError) as info:
        load_topology(path, ["links[down].width=4"])
    assert str(info.value) == ("--set links[down].width=4: links: no item named 'down'; "
                               "names: up")


def test_spec_built_in_python_reports_key_without_file():
    spec = TopologySpec.model_validate(yaml.safe_load(BASE.replace("to: cxl1,", "to: cxl9,")))
    with pytest.raises(InputError) as info:
        Topology.from_spec(spec)
    assert info.value.location is None
    assert str(info.value).startswith("links[2].to: link to unknown node 'cxl9'")


# --------------------------------------------------------------------------- property

GENERATIONS = {1: (2.5e9, 0.8), 2: (5e9, 0.8), 3: (8e9, 128 / 130), 4: (16e9, 128 / 130),
               5: (32e9, 128 / 130), 6: (64e9, 1.0)}
_NS = st.integers(0, 400).map(lambda n: n / 4)          # exact binary fractions of a ns


@st.composite
def tree_topologies(draw):
    """A host, 1-3 root ports, and a random tree of switches and devices below them.

    Returns the file data and, per device, the expected (latency, bandwidth).
    """
    nodes = [{"name": "host0", "type": "host"}]
    links = []
    reach: dict[str, tuple[float, float]] = {}   # node -> (latency, bottleneck) from host0
    free_root_ports = []
    for i in range(draw(st.integers(1, 3))):
        lat = draw(_NS)
        nodes.append({"name": f"rp{i}", "type": "root_port", "host": "host0",
                      "latency": f"{lat} ns"})
        reach[f"rp{i}"] = (lat, float("inf"))
        free_root_ports.append(f"rp{i}")
    switches: list[str] = []
    expected: dict[str, tuple[float, float]] = {}
    kinds = ["switch"] * draw(st.integers(0, 4)) + ["device"] * draw(st.integers(1, 6))
    for j, kind in enumerate(kinds):
        parents = free_root_ports + switches
        if not parents:
            break
        parent = draw(st.sampled_from(parents))
        if parent in free_root_ports:
            free_root_ports.remove(parent)        # a root port has a single port
        gen = draw(st.sampled_from(sorted(GENERATIONS)))
        width = draw(st.sampled_from([1, 2, 4, 8, 16]))
        port_lat, extra = draw(_NS), draw(_NS)
        rate, eff = GENERATIONS[gen]
        protocol = draw(st.sampled_from(["cxl", "pcie"]))
        # a route moves raw bytes on CXL, TLP bytes (after DLLPs and SKPs) on PCIe 1-5
        link_lat = 2 * port_lat + extra
        link_bw = (rate * width * eff / 8 if protocol == "cxl" or gen == 6
                   else tlp_bandwidth(PcieConfig(gen, width)))
        lat_before, bw_before = reach[parent]
        if kind == "switch":
            name, hop = f"sw{j}", draw(_NS)
            nodes.append({"name": name, "type": "switch", "ports": 16,
                          "hop_latency": f"{hop} ns"})
            reach[name] = (lat_before + link_lat + hop, min(bw_before, link_bw))
            switches.append(name)
        else:
            name = f"dev{j}"
            nodes.append(draw(st.sampled_from([
                {"name": name, "type": "cxl_device", "cxl_type": 3, "capacity": "1 GiB",
                 "media_latency": "80 ns"},
                {"name": name, "type": "accelerator", "kind": "gpu"},
                {"name": name, "type": "pcie_device"}])))
            expected[name] = (lat_before + link_lat, min(bw_before, link_bw))
        links.append({"from": parent, "to": name, "generation": gen, "width": width,
                      "protocol": protocol,
                      "port_latency": f"{port_lat} ns", "latency": f"{extra} ns"})
    return {"name": "gen", "nodes": draw(st.permutations(nodes)),
            "links": draw(st.permutations(links))}, expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree_topologies())
def test_route_latency_is_sum_of_hops_and_bandwidth_is_min_of_links(case):
    data, expected = case
    doc = parse_yaml(yaml.safe_dump(data, sort_keys=False), "gen.yaml")
    spec = validate_document(TopologySpec, doc)
    found = {r.device: r for r in routes(build_graph(spec, doc))}
    assert set(found) == set(expected)
    for device, (latency, bandwidth) in expected.items():
        r = found[device]
        assert r.latency == pytest.approx(latency, rel=1e-12, abs=1e-12)
        assert r.bandwidth == pytest.approx(bandwidth, rel=1e-12)
        assert r.links == len(r.path) - 2          # every hop but host -> root port


@settings(max_examples=30, deadline=None)
@given(hops=st.lists(st.tuples(_NS, _NS, st.sampled_from([1, 2, 4, 8, 16])), min_size=1,
                     max_size=6),
       rp_latency=_NS)
def test_chain_of_switches(hops, rp_latency):
    """host - rp - sw1 - ... - swN - dev: latency and bandwidth by hand."""
    names = [f"sw{i}" for i in range(len(hops) - 1)]
    nodes = [{"name": "h", "type": "host"},
             {"name": "rp", "type": "root_port", "host": "h", "latency": f"{rp_latency} ns"}]
    nodes += [{"name": n, "type": "switch", "ports": 2, "hop_latency": f"{hops[i][1]} ns"}
              for i, n in enumerate(names)]
    nodes.append({"name": "dev", "type": "cxl_device", "cxl_type": 3, "capacity": "1 GiB",
                  "media_latency": "80 ns"})
    ends = ["rp", *names, "dev"]
    links = [{"from": a, "to": b, "generation": 5, "width": w, "latency": f"{lat} ns"}
             for (a, b), (lat, _, w) in zip(zip(ends, ends[1:]), hops)]
    topo = Topology.from_spec(TopologySpec.model_validate(
        {"name": "chain", "nodes": nodes, "links": links}))
    (route,) = topo.routes
    assert route.path == ("h", *ends)
    assert route.latency == pytest.approx(
        rp_latency + sum(lat for lat, _, _ in hops) + sum(h for _, h, _ in hops[:-1]))
    assert route.bandwidth == pytest.approx(min(w for _, _, w in hops) * GEN5_LANE)


def test_a_loop_of_switches_is_refused(write):
    path = write("loop.yaml", BASE.replace("ports: 4,", "ports: 6,").replace(
        "  - {name: cxl0,", "  - {name: sw1, type: switch, ports: 4}\n"
                            "  - {name: sw2, type: switch, ports: 4}\n  - {name: cxl0,") + (
        "  - {from: sw0.dp2, to: sw1.up, generation: 5, width: 8}\n"
        "  - {from: sw1.dp0, to: sw2.up, generation: 5, width: 8}\n"
        "  - {from: sw2.dp0, to: sw0.dp3, generation: 5, width: 8}\n"))
    with pytest.raises(InputError) as info:
        load_topology(path)
    assert str(info.value) == (
        f"{path}:{line_of(path, 'from: sw2.dp0')}:5: links[5]: this link closes a loop "
        "(sw2 -- sw1 -- sw0 -- sw2); a PCIe/CXL hierarchy is a tree")


def test_every_graph_problem_is_shown(write):
    path = write("two.yaml", BASE.replace("to: cxl1,", "to: cxl9,").replace(
        "from: sw0.dp0", "from: sw0.dpX, to: rp0, generation: 5, width: 8}\n"
                         "  - {from: sw0.dp0"))
    with pytest.raises(InputError) as info:
        load_topology(path)
    lines = str(info.value).splitlines()
    assert lines[0].endswith("links[1].to: port rp0.0 is already used by links[0]")
    assert lines[1].startswith("  also: ") and lines[1].endswith(
        "links[3].to: link to unknown node 'cxl9'; known nodes: cxl0, cxl1, host0, rp0, sw0")
    assert len(lines) == 2  # not that cxl1 is cut off: cxl9 may have been meant for it
