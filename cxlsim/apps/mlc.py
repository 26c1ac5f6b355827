"""MLC-like measurements on the epoch level: idle and loaded latency, bandwidth by mix, STREAM.

Intel's Memory Latency Checker measures *loaded latency* by running bandwidth threads
on all cores but one -- each a loop of independent loads (or loads and stores) with an
injected delay between accesses -- while the remaining core measures the latency of
dependent loads (a pointer chase) in the same memory. Sweeping the delay traces the
latency-versus-bandwidth curve from saturation (delay 0) down to idle.

Here each bandwidth thread is a :class:`~cxlsim.memory.epoch.Demand`: ``gap`` = the
injected delay (ns), ``mlp`` = the core's outstanding misses, ``shares`` = the memory
policy (bind to one node, interleave, weighted interleave). The latency thread's pages
follow the same policy, so it sees the share-weighted mean of the nodes' loaded read
latencies; its own traffic (one line per latency) is negligible and left out.

Not modelled: MLC's exact delay loop (its delay unit is core cycles of a loop, taken
here as ns, as Selectel's lab report quotes it), hardware prefetchers beyond the core's MLP, the
latency thread's own cache misses in the caches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from cxlsim.memory.epoch import Demand, MemorySystem
from cxlsim.mm.placement import policy_shares

#: MLC's default delay list for --loaded_latency (its "Inject Delay" column).
MLC_DELAYS = (0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500,
              5000, 9000, 20000)

#: Read/write mixes MLC reports in --max_bandwidth (read fraction of the bytes).
MIXES = {"all reads": 1.0, "3:1": 0.75, "2:1": 2 / 3, "1:1": 0.5}

#: STREAM kernels: (arrays read, arrays written) per element; 8-byte doubles.
STREAM_KERNELS = {"copy": (1, 1), "scale": (1, 1), "add": (2, 1), "triad": (2, 1)}


def idle_latency(system: MemorySystem, weights: Mapping[str, float]) -> float:
    """MLC --idle_latency: a lone pointer chase in memory placed by ``weights`` (ns)."""
    shares = policy_shares(weights)
    return sum(s * system.nodes[n].idle_latency for n, s in shares.items())


def loaded_latency(system: MemorySystem, weights: Mapping[str, float], threads: int,
                   mlp: float, delays: Sequence[float] = MLC_DELAYS,
                   read_fraction: float = 1.0) -> pd.DataFrame:
    """MLC --loaded_latency: one row per injected delay with the bandwidth the threads
    draw (GB/s, reads + writes), the latency thread's mean latency (ns) and each node's
    bandwidth, latency and busiest-queue utilisation."""
    shares = policy_shares(weights)
    rows = []
    for delay in delays:
        eq = system.solve([Demand(threads, mlp, shares, float(delay), read_fraction)])
        row = {"delay_ns": float(delay), "bandwidth_GBps": eq.bandwidth / 1e9,
               "latency_ns": eq.latencies[0]}
        for n in shares:
            row[f"{n}_GBps"] = eq.node_bandwidth(n) / 1e9
            row[f"{n}_latency_ns"] = eq.latency[n]
            row[f"{n}_utilisation"] = eq.utilisation[n]
        rows.append(row)
    return pd.DataFrame(rows)


def bandwidth_by_mix(system: MemorySystem, weights: Mapping[str, float], threads: int,
                     mlp: float, mixes: Mapping[str, float] = MIXES) -> pd.DataFrame:
    """MLC --max_bandwidth: delay 0, one row per read/write mix (bandwidth in GB/s)."""
    shares = policy_shares(weights)
    rows = []
    for name, r in mixes.items():
        eq = system.solve([Demand(threads, mlp, shares, 0.0, r)])
        rows.append({"mix": name, "read_fraction": r, "bandwidth_GBps": eq.bandwidth / 1e9,
                     "latency_ns": eq.latencies[0]})
    return pd.DataFrame(rows)


def stream(system: MemorySystem, weights: Mapping[str, float], threads: int, mlp: float,
           nontemporal: bool = False) -> pd.DataFrame:
    """STREAM-like kernels: the bandwidth STREAM reports (GB/s), per kernel.

    STREAM counts the bytes of the arrays it names (copy 16 B per element, add 24 B).
    With ordinary stores each written line is first read for ownership (an extra read:
    copy moves 2 reads and 1 write per element); with non-temporal stores it is not.
    The memory moves the real traffic; STREAM reports the counted share of it.
    """
    shares = policy_shares(weights)
    rows = []
    for kernel, (reads, writes) in STREAM_KERNELS.items():
        actual_reads = reads + (0 if nontemporal else writes)
        r = actual_reads / (actual_reads + writes)
        eq = system.solve([Demand(threads, mlp, shares, 0.0, r)])
        counted = (reads + writes) / (actual_reads + writes)
        rows.append({"kernel": kernel, "read_fraction": r,
                     "traffic_GBps": eq.bandwidth / 1e9,
                     "reported_GBps": eq.bandwidth * counted / 1e9})
    return pd.DataFrame(rows)
