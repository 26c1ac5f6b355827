"""Hosts on one simulated time (cxlsim.tiered.host, run_hosts): hosts that share no
pooled device run together exactly as each runs alone, each ending with its own trace,
and a one-host run is the case of one (trace-memory's own run)."""

from contextlib import ExitStack

import pytest

from cxlsim.engine import Simulation
from cxlsim.experiments import load_experiment
from cxlsim.tiered import run_hosts

#: A small TPP run at 2:1: kswapd, NUMA balancing's scanner and promotions all act.
SMALL = ["trace.generate=cache1", "policy=tpp", "trace.n=2000000", "sweep=null",
         "trace.params.footprint=16 MiB", "trace.params.span=20 s", "scale=1024",
         "epoch=2048", "figures=false", "topology.nodes[dram0].capacity=11376 KiB",
         "topology.nodes[cxl0].capacity=5696 KiB"]


def _spec(*extra: str):
    return load_experiment("experiments/tpp-2to1.yaml", [*SMALL, *extra])


@pytest.fixture(scope="module")
def alone():
    """The small run as trace-memory runs it, and a shorter one."""
    long, short = _spec().run(), _spec("trace.n=300000", "trace.params.span=3 s").run()
    assert long.metrics["numa_scan_passes"] > 0 and long.metrics["pgpromote_success"] > 0
    return long, short


def _together(*specs):
    """``specs`` as hosts on one time (each its own traffic: nothing pooled in common):
    their results, the hosts and the simulation."""
    sim = Simulation(specs[0].seed)
    with ExitStack() as stack:
        built = [spec.build_host(sim, stack) for spec in specs]
        run_hosts(sim, [b.host for b in built])
    return [b.result() for b in built], [b.host for b in built], sim


def _same(result, alone) -> None:
    assert result.metrics == alone.metrics
    assert result.tables.keys() == alone.tables.keys() and "pages" in result.tables
    for name, table in result.tables.items():
        assert table.equals(alone.tables[name]), name


def test_two_hosts_on_one_time_run_as_each_alone(alone):
    results, _, _ = _together(_spec(), _spec())
    for result in results:
        _same(result, alone[0])


def test_each_host_ends_with_its_own_trace_and_its_kernel_threads_stop(alone):
    (long, short), hosts, sim = _together(
        _spec(), _spec("trace.n=300000", "trace.params.span=3 s"))
    assert short.metrics["app_time_s"] < long.metrics["app_time_s"]
    _same(long, alone[0])
    _same(short, alone[1])  # its pages did not move while the other ran on
    assert hosts[1].ended and sim.env.now == hosts[0].result.time_ns
