"""Pooled memory in topology files (cxlsim.fabric): a multi-logical device's LDs, the
fabric manager's bindings, what each host sees as memory, and every mistake in them
refused at its line with exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import line_of
from cxlsim.cli import main
from cxlsim.errors import InputError
from cxlsim.fabric import MAX_LDS, BindError, Bindings, LogicalDevice
from cxlsim.topology import load_topology

POOL = Path(__file__).resolve().parents[1] / "topologies" / "pool-4hosts.yaml"

#: Two hosts, a switch and a pooled device of four LDs, the first two bound.
TWO = """\
name: two
nodes:
  - {name: h0, type: host}
  - {name: h1, type: host}
  - {name: rp0, type: root_port, host: h0}
  - {name: rp1, type: root_port, host: h1}
  - {name: sw0, type: switch, ports: 4}
  - name: mld0
    preset: devices/cxl-type3-expander
    capacity: 64 GiB
    logical_devices: [{capacity: 16 GiB}, {capacity: 16 GiB}, {capacity: 16 GiB},
                      {capacity: 16 GiB}]
links:
  - {from: rp0, to: sw0.up0, preset: links/cxl-gen5-x8}
  - {from: rp1, to: sw0.up1, preset: links/cxl-gen5-x8}
  - {from: sw0.dp0, to: mld0, preset: links/cxl-gen5-x8}
bindings:
  - {ld: mld0.0, host: h0}
  - {ld: mld0.1, host: h1}
"""


def test_the_shipped_pool_gives_each_host_its_dram_and_two_lds():
    topo = load_topology(POOL)
    for k in range(4):
        assert topo.memory_of(f"host{k}") == [
            (f"dram{k}", 256 << 30, True), (f"pool0.{2 * k}", 64 << 30, False),
            (f"pool0.{2 * k + 1}", 64 << 30, False)]
    assert {r.host for r in topo.routes if r.device == "pool0"} == {f"host{k}" for k in range(4)}


def test_an_ld_left_unbound_is_the_fabric_managers():
    topo = load_topology(POOL, ["bindings=[]"])
    assert all(host is None for host in topo.pool.host.values())
    assert topo.memory_of("host0") == [("dram0", 256 << 30, True)]


def test_the_fabric_manager_binds_an_ld_to_one_host_at_a_time():
    table = Bindings([LogicalDevice("mld0", i, 1 << 30) for i in range(2)])
    table.bind("mld0.0", "h0")
    with pytest.raises(BindError, match="mld0.0 is already bound to h0; an LD belongs to "
                                        "one host at a time"):
        table.bind("mld0.0", "h1")
    assert table.unbind("mld0.0") == "h0"
    table.bind("mld0.0", "h1")
    assert [ld.name for ld in table.of("h1")] == ["mld0.0"]
    with pytest.raises(BindError, match="mld0.1 is not bound to any host"):
        table.unbind("mld0.1")
    with pytest.raises(BindError, match="no logical device 'mld0.2'.*mld0.0, mld0.1"):
        table.bind("mld0.2", "h0")


def test_topology_show_lists_the_lds_and_each_hosts_memory(capsys):
    assert main(["topology", "show", str(POOL)]) == 0
    out = capsys.readouterr().out
    assert "8 logical devices of pooled memory" in out
    assert "pool0.5  64 GiB    host2  194 ns" in out
    assert "host3: 0 dram3 256 GiB, 1 pool0.6 64 GiB (no CPUs), 2 pool0.7 64 GiB (no CPUs)" \
        in out
    assert "logical_devices=8" in out


def _refused(write, text: str, near: str) -> str:
    """The one-line error a topology gets, checked to name the line of ``near``; also
    exit status 2 from the command line."""
    path = write("t.yaml", text)
    with pytest.raises(InputError) as info:
        load_topology(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line_of(path, near)}:"), message
    assert main(["topology", "show", str(path)]) == 2
    return message.split(": ", 1)[1]


def test_an_ld_bound_to_two_hosts_is_refused(write):
    text = TWO + "  - {ld: mld0.0, host: h1}\n"
    assert _refused(write, text, "{ld: mld0.0, host: h1}") == (
        "bindings[2].ld: mld0.0 is bound to h0 already (bindings[0]); an LD belongs to one "
        "host at a time")


def test_more_lds_than_a_device_offers_are_refused(write):
    lds = ", ".join(["{capacity: 1 GiB}"] * (MAX_LDS + 1))
    text = TWO.replace("[{capacity: 16 GiB}, {capacity: 16 GiB}, {capacity: 16 GiB},\n"
                       "                      {capacity: 16 GiB}]", f"[{lds}]")
    assert _refused(write, text, "logical_devices:").startswith(
        "nodes[5].logical_devices: ")
    assert f"at most {MAX_LDS}" in _refused(write, text, "logical_devices:")


def test_lds_larger_than_their_device_are_refused(write):
    text = TWO.replace("capacity: 64 GiB", "capacity: 32 GiB")
    assert _refused(write, text, "name: mld0") == (
        "nodes[5]: its logical devices hold 68,719,476,736 B together, more than the "
        "device's capacity of 34,359,738,368 B")


@pytest.mark.parametrize("binding, says", [
    ("{ld: mld0.4, host: h0}",
     "bindings[2].ld: no logical device 'mld0.4' (DEVICE.N); the fabric's: mld0.0, mld0.1, "
     "mld0.2, mld0.3"),
    ("{ld: mld0.2, host: sw0}",
     "bindings[2].host: 'sw0' is not a host of this topology; its hosts: h0, h1"),
])
def test_a_binding_names_an_ld_and_a_host_there_are(write, binding, says):
    assert _refused(write, TWO + f"  - {binding}\n", binding) == says


def test_a_host_that_cannot_reach_the_device_cannot_bind_its_ld(write):
    text = TWO.replace("  - {from: rp1, to: sw0.up1, preset: links/cxl-gen5-x8}\n", "") \
        .replace("  - {name: rp1, type: root_port, host: h1}\n", "") + \
        "  - {ld: mld0.2, host: h1}\n"
    text = text.replace("  - {ld: mld0.1, host: h1}\n", "")
    assert _refused(write, text, "{ld: mld0.2, host: h1}") == (
        "bindings[1].host: h1 cannot reach mld0 (no path of links between them), so it "
        "cannot use mld0.2")


def test_only_a_type3_device_is_pooled(write):
    text = TWO.replace("    preset: devices/cxl-type3-expander\n",
                       "    preset: devices/cxl-type3-expander\n    cxl_type: 2\n")
    assert _refused(write, text, "name: mld0") == (
        "nodes[5]: only a Type 3 device is pooled into logical devices; this one is Type 2")


def test_a_fabric_with_a_loop_is_refused(write):
    text = TWO.replace("  - name: mld0\n", "  - {name: sw1, type: switch, ports: 2}\n"
                                          "  - name: mld0\n").replace(
        "bindings:\n", "  - {from: sw0.dp1, to: sw1.up, preset: links/cxl-gen5-x8}\n"
                       "  - {from: sw1.dp0, to: h1, preset: links/cxl-gen5-x8}\n"
                       "bindings:\n")
    assert _refused(write, text, "to: h1,") == (
        "links[4]: this link closes a loop (sw1 -- sw0 -- rp1 -- h1 -- sw1); a PCIe/CXL "
        "hierarchy is a tree")


#: A trace-memory run on host1 of the shipped pool: its DRAM and its two LDs.
POOLED = ["topology=pool-4hosts", "host=host1", "nodes={dram: [dram1], cxl: [pool0.2, pool0.3]}",
          "trace.n=400000", "trace.params.footprint=32 MiB", "policy=static", "figures=false",
          "topology.nodes[dram1].capacity=8 MiB",
          "topology.nodes[pool0].logical_devices[2].capacity=16 MiB",
          "topology.nodes[pool0].logical_devices[3].capacity=16 MiB", "epoch=8192"]


def test_a_host_runs_on_its_dram_and_the_lds_bound_to_it():
    from cxlsim.experiments import load_experiment

    spec = load_experiment("experiments/trace-memory.yaml", POOLED)
    memory = spec.memory()
    assert list(memory.nodes) == ["dram", "cxl"]
    assert [t.name for t in memory.nodes["cxl"].targets] == ["pool0", "pool0"]  # its two LDs
    from cxlsim.experiments import trace_setup

    assert trace_setup.numa_of(spec).capacity.tolist() == [2048, 8192]  # pages
    result = spec.run()
    assert result.metrics["traffic_share_cxl"] > 0.3
    assert result.tables["epochs"]["refs_cxl"].sum() > 0


def test_an_ld_bound_to_another_host_is_not_this_hosts_memory():
    from cxlsim.experiments import load_experiment

    sets = [s if not s.startswith("nodes=") else
            "nodes={dram: [dram1], cxl: [pool0.0]}" for s in POOLED]
    with pytest.raises(InputError, match="'pool0.0' is bound to host0, not host1; targets: "
                                         "dram1, pool0.2, pool0.3"):
        load_experiment("experiments/trace-memory.yaml", sets)


def test_a_hosts_dram_without_a_latency_is_refused():
    """It would leave the epoch level's fixed point no bracket to search (a run that
    never ended)."""
    from cxlsim.experiments import load_experiment

    with pytest.raises(InputError, match=r"nodes\.dram\[0\]: 'dram1' is host1's DRAM but has "
                                         r"no latency; expected its idle load-to-use latency"):
        load_experiment("experiments/trace-memory.yaml",
                        POOLED + ["topology.nodes[dram1].latency=0 ns"])


def _on(k: int, *extra: str):
    """The pooled run of POOLED on host ``k`` of the shipped pool, its two LDs."""
    from cxlsim.experiments import load_experiment

    sets = [s.replace("host1", f"host{k}").replace("dram1", f"dram{k}")
            .replace("pool0.2", f"pool0.{2 * k}").replace("pool0.3", f"pool0.{2 * k + 1}")
            .replace("devices[2]", f"devices[{2 * k}]").replace("devices[3]",
                                                                 f"devices[{2 * k + 1}]")
            for s in POOLED]
    return load_experiment("experiments/trace-memory.yaml", [*sets, *extra])


def test_hosts_on_one_pool_share_its_link_fairly():
    """Four hosts asking for more than the switch's one link to the device carries
    (4 x ~19 GB/s on 63 GB/s) slow down alike, and together carry about the link's
    bandwidth; two, within it, hardly at all."""
    from cxlsim.experiments.kinds.trace_memory import run_together

    busy = "real_threads=32"  # each core stands for 16 threads: ~19 GB/s to the pool
    alone = _on(0, busy).run()
    two = run_together([_on(k, busy) for k in range(2)])
    four = run_together([_on(k, busy) for k in range(4)])
    base = alone.metrics["app_time_s"]
    assert all(base < r.metrics["app_time_s"] < 1.02 * base for r in two)
    times = [r.metrics["app_time_s"] for r in four]
    assert min(times) > 1.3 * base and max(times) < 1.01 * min(times)

    def late(result, column):  # the run's second half, past the first touches
        epochs = result.tables["epochs"]
        return epochs[column].iloc[len(epochs) // 2:].mean()

    carried = sum(late(r, "GBps_cxl") for r in four)
    assert 0.9 * 63.02 < carried < 63.02
    assert min(late(r, "latency_ns_cxl") for r in four) > 1.5 * late(alone, "latency_ns_cxl")


def test_a_host_alone_on_a_pool_runs_as_trace_memory_does():
    from cxlsim.experiments.kinds.trace_memory import run_together

    (together,) = run_together([_on(1)])
    alone = _on(1).run()
    assert together.metrics == alone.metrics


#: Two hosts on a multi-headed device: each host's root port links to a head of its own
#: (no switch), so the hosts share only the device's queues: its controller and DRAM.
HEADS = """\
name: heads
nodes:
  - {name: h0, type: host}
  - {name: h1, type: host}
  - {name: d0, type: dram, preset: memory/ddr5-4800, capacity: 8 MiB, latency: 110 ns,
     attached_to: h0}
  - {name: d1, type: dram, preset: memory/ddr5-4800, capacity: 8 MiB, latency: 110 ns,
     attached_to: h1}
  - {name: rp0, preset: devices/root-port, host: h0}
  - {name: rp1, preset: devices/root-port, host: h1}
  - name: mhd
    preset: devices/cxl-type3-expander
    capacity: 64 MiB
    logical_devices: [{capacity: 32 MiB}, {capacity: 32 MiB}]
  - {name: mhd_dram, type: dram, preset: memory/ddr5-4800, channels: CHANNELS,
     attached_to: mhd}
links:
  - {from: rp0, to: mhd.head0, preset: links/cxl-gen5-x8}
  - {from: rp1, to: mhd.head1, preset: links/cxl-gen5-x8}
bindings:
  - {ld: mhd.0, host: h0}
  - {ld: mhd.1, host: h1}
"""


@pytest.mark.parametrize("channels, slower", [(1, True), (8, False)])
def test_hosts_on_a_multi_headed_device_share_only_its_queues(write, channels, slower):
    """Each head is its host's own link; the device's DRAM is the one queue they share:
    one channel (38.4 GB/s) for two hosts at ~19 GB/s each slows both, eight do not."""
    from cxlsim.experiments import load_experiment
    from cxlsim.experiments.kinds.trace_memory import run_together

    path = write("heads.yaml", HEADS.replace("CHANNELS", str(channels)))
    topo = load_topology(path)
    assert [r.path for r in topo.routes] == [("h0", "rp0", "mhd"), ("h1", "rp1", "mhd")]

    def spec(k):
        return load_experiment("experiments/trace-memory.yaml", [
            f"topology={path}", f"host=h{k}", f"nodes={{dram: [d{k}], cxl: [mhd.{k}]}}",
            "trace.n=400000", "trace.params.footprint=32 MiB", "policy=static",
            "figures=false", "epoch=8192", "real_threads=32"])

    alone = spec(0).run().metrics["app_time_s"]
    together = [r.metrics["app_time_s"] for r in run_together([spec(0), spec(1)])]
    if slower:
        assert min(together) > 1.05 * alone
    else:
        assert max(together) < 1.01 * alone
    assert max(together) < 1.01 * min(together)


@pytest.mark.parametrize("lds, room", [(["pool0.0"], "32 MiB"),
                                       (["pool0.0", "pool0.1"], "16 MiB")])
def test_a_host_that_has_ended_loads_the_pool_no_more(lds, room):
    """Once the short run's trace ends, the long one's epochs are as they are alone
    (with one LD, no thread is left on the device but its own; with two, its LDs still
    load each other, as they do alone)."""
    from cxlsim.experiments.kinds.trace_memory import run_together

    busy = "real_threads=32"
    mine = (f"nodes={{dram: [dram0], cxl: [{', '.join(lds)}]}}",
            f"topology.nodes[pool0].logical_devices[0].capacity={room}")
    alone = _on(0, busy, *mine).run().tables["epochs"]
    long, short = run_together([_on(0, busy, *mine), _on(1, busy, "trace.n=100000")])
    epochs = long.tables["epochs"]
    ended = short.tables["epochs"]["end_ns"].iloc[-1]
    after = epochs["end_ns"] - epochs["duration_ns"] > ended  # epochs begun after its end
    assert (epochs.loc[~after, "latency_ns_cxl"] > 1.01 * alone.loc[~after, "latency_ns_cxl"]
            ).any()  # while both ran, the pool answered later
    assert after.sum() > 5
    # as alone (the first epochs after it start from a slightly different last latency)
    assert epochs.loc[after, "latency_ns_cxl"].to_numpy() == pytest.approx(
        alone.loc[after, "latency_ns_cxl"].to_numpy(), rel=1e-8)
