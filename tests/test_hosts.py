"""Hosts on one simulated time (cxlsim.tiered.host, run_hosts): until the fabric couples
them, two hosts run together exactly as each runs alone, each ending with its own trace,
and a one-host run is the case of one (trace-memory's results are those of run_hosts)."""

import copy

import pytest

from cxlsim.engine import Simulation, make_rng
from cxlsim.experiments import load_experiment
from cxlsim.experiments.kinds import trace_memory
from cxlsim.tiered import Host, run_hosts, simulate
from cxlsim.tiered.epochs import in_epochs

#: A small TPP run at 2:1: kswapd, NUMA balancing's scanner and promotions all act.
SMALL = ["trace.generate=cache1", "policy=tpp", "trace.n=2000000", "sweep=null",
         "trace.params.footprint=16 MiB", "trace.params.span=20 s", "scale=1024", "epoch=2048", "figures=false",
         "topology.nodes[dram0].capacity=11376 KiB",
         "topology.nodes[cxl0].capacity=5696 KiB"]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """The arguments trace-memory hands to simulate for the small run, and its result."""
    seen = {}

    def keep(*args):
        seen["args"] = copy.deepcopy(args[:7]) + args[7:]  # before the run changes them
        seen["run"] = simulate(*args)
        return seen["run"]

    mp = pytest.MonkeyPatch()
    mp.setattr(trace_memory, "simulate", keep)
    try:
        load_experiment("experiments/tpp-2to1.yaml", SMALL).run()
    finally:
        mp.undo()
    assert seen["run"].passes > 0 and sum(e["pgpromote_success"] for e in seen["run"].epochs)
    return seen["args"], seen["run"]


def _host(sim, args, epochs=None):
    """A fresh host of the small run (its own copies of the stateful parts); ``epochs``:
    only the trace's first that many epochs."""
    (chunks, found, memory, cpu, policy, kernel, cores, epoch, seed, kswapd, mlp,
     migration, scanner, damon, compute, sample, _, stands_for) = args
    memory, policy, kernel = copy.deepcopy((memory, policy, kernel))
    if epochs is not None:
        whole = chunks
        chunks = lambda: iter(list(in_epochs(whole, epoch))[:epochs])  # noqa: E731
    return Host(sim, make_rng(seed), chunks, found, memory, cpu, policy, kernel, cores,
                epoch, seed, mlp, migration, scanner, damon, compute, sample,
                stands_for, kswapd_interval=kswapd)


def _same(a, b):
    assert a.time_ns == b.time_ns and a.passes == b.passes and a.scans == b.scans
    assert a.epochs == b.epochs
    assert (a.placement.node == b.placement.node).all()


def test_two_hosts_on_one_time_run_as_each_alone(parts):
    args, alone = parts
    sim = Simulation(args[8])
    hosts = [_host(sim, args) for _ in range(2)]
    first, second = run_hosts(sim, hosts)
    _same(first, alone)
    _same(second, alone)


def test_each_host_ends_with_its_own_trace_and_its_kernel_threads_stop(parts):
    args, alone = parts
    short_alone = Simulation(args[8])
    short = run_hosts(short_alone, [_host(short_alone, args, epochs=40)])[0]
    assert len(short.epochs) == 40 and short.time_ns < alone.time_ns
    sim = Simulation(args[8])
    long_host, short_host = _host(sim, args), _host(sim, args, epochs=40)
    together = run_hosts(sim, [long_host, short_host])
    _same(together[0], alone)
    _same(together[1], short)  # nothing of it changed while the other host ran on
    assert short_host.ended and sim.env.now == alone.time_ns
