"""A trace through cores, caches and memory nodes, epoch by epoch, in simulated time.

The trace is read twice, chunk by chunk, in bounded memory. The first pass numbers its
pages densely in first-seen order (:class:`~cxlsim.traces.pages.PageCompactor`), so the
page table and every per-page array are sized by the footprint, counts each page's
accesses (what an offline policy needs) and takes each page's type (anon or file) from
the trace's ``page_type`` column (anon without one). Every page's placement -- node,
type, allocation and last-access epochs, accesses, how it last moved -- is one
:class:`~cxlsim.mm.placement.Placement`, which the kernel's memory model changes
and the page table, the scanner, the monitor and the policies read. The second pass is
the simulation: one or more hosts (:class:`~cxlsim.tiered.host.Host`), each its own
trace, cores, kernel memory state and policy, as SimPy processes on one
:class:`~cxlsim.engine.Simulation`'s time (:func:`run_hosts`; a one-host run is the
case of one). Each host's epochs go as follows:

* an epoch is ``epoch`` consecutive records; each record's thread runs on a core (threads
  in first-seen order, folded onto ``cores``), each core with its own TLBs and private
  caches and the shared ones of its complex, over one page table;
* at a page's first touch the placement policy (:mod:`cxlsim.tiered.policies`) names the
  node it aims at and the kernel's allocator (:class:`~cxlsim.mm.kernel.
  KernelMemory`) places it -- falling back by distance, waking kswapd, reclaiming
  directly; a page reclaim took back is allocated again at its next epoch (a refault);
* each core's share of the epoch runs through its hierarchy with the last epoch's loaded
  latencies; the memory references it counts per node and its other time are its
  demand, and :class:`~cxlsim.memory.epoch.EpochEngine` finds the nodes' loaded
  latencies for all cores together; the epoch lasts as long as its slowest core, and
  simulated time advances by that much;
* NUMA balancing's scanner, when on, is another: after its delay, every period it makes
  the next stretch of the address space PROT_NONE (in tiering mode skipping top-tier
  pages); the next access to such a page is a hint fault (``numa_hint_faults``), costs
  the task a fault's kernel time, and reaches the policy with its latency since the
  scan -- what NUMA balancing's promotion decides on. The period is the kernel's: a
  pass over the resident pages takes scan_period_min to _max (per scan, divided by the
  pass's windows, at most the maximum scan rate), adapted after each pass to its
  faults as ``task_numa_fault`` counts them, with the outcome of the moves they asked
  for: failed migrations slow it (:mod:`cxlsim.mm.numa_balancing`);
* a DAMON-style monitor, when on, is another (:mod:`cxlsim.mm.damon`): regions of
  pages sampled every sample interval, their access counts published to the policy
  every aggregation interval;
* kswapd is a SimPy process too: every ``kswapd_interval`` of simulated time (after
  TPP's scheduler-tick check, when its WMARK_DEMOTE is set) it runs the woken nodes'
  reclaim (demoting to the next tier when the kernel allows it); every page that moved
  is copied -- its lines read at the source and written at the destination in the next
  epoch, loading the same nodes and links as the application (a stream of its own,
  whose time is the kernel thread's, not the application's).

After each epoch the policy may move pages (``moves``): each move is a kernel migration
by its rules, copied like a demotion; a page moving back where it left within the
placement's ``pingpong`` epochs counts as a ping-pong. Moving costs as
:mod:`cxlsim.mm.migrate` says: a page demoted by direct reclaim, or moved by a
policy working in the task's context, costs the task its kernel time (unmap, copy,
remap) and the shootdown's IPI wait; kswapd's demotions cost its own thread; every page
unmapped (moved, or reclaimed) leaves every core's TLBs, and each core pays its flushes.
A policy's promotions and demotions pass the rate limits first (``migrate_rate_limited``
counts the refused).

Writes: every access brings its line in (a store reads for ownership), and a written
line goes back once, so an epoch whose records write a fraction ``w`` reads
``1 / (1 + w)`` of its memory bytes. Not modelled yet: write-backs as cache evictions,
DAMON's interval auto-tuning, per-record time stamps (cores are in step at epoch
boundaries).
"""

from __future__ import annotations

from collections.abc import Callable

from cxlsim.engine import Simulation
from cxlsim.tiered.host import Host, TraceRun


def run_hosts(sim: Simulation, hosts: list[Host],
              epoch_done: Callable[[], object] | None = None) -> list[TraceRun]:
    """Run ``hosts`` on ``sim``'s one simulated time until every host's trace has ended;
    each host's result ends with its own trace (``time_ns``). Hosts given one
    :class:`~cxlsim.fabric.Traffic` load the pooled devices they share together;
    otherwise they share only the time."""
    done = [host.start(epoch_done) for host in hosts]
    for process in done:
        if not process.processed:  # the run stops as the last trace ends, not after
            sim.env.run(until=process)
    return [host.result for host in hosts]
