"""Hosts on one pooled device, run together on one simulated time, and the same hosts run
one after another.

The system: ``--hosts`` hosts (at most 16, a multi-logical device's LDs), each with its
own DRAM and an x8 link to a switch whose one x16 link reaches a pooled Type 3 device
of that many logical devices, one bound to each host. Each host runs the same kind of
trace-memory experiment: a zipfian trace of ``--records`` records over a 32 MiB
footprint on two Xeon 6 cores, 8 MiB of DRAM, the rest on its logical device, static
placement, each core standing for 16 threads. Together (``run_together``) the hosts load
the device as one another's threads; the reference, in the same run, is what a user
without the fabric would do: the same experiments run one by one, each alone. It prints
the wall time of both, the simulated host-time, and the slowdown per simulated
host-second; the last line is one JSON object.

    python benchmarks/bench_pool.py [--hosts 16] [--records 400000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml

from cxlsim.experiments import load_experiment
from cxlsim.experiments.kinds.trace_memory import run_together


def topology(hosts: int) -> dict:
    """``hosts`` hosts and one pooled device of as many 16 GiB logical devices."""
    nodes, links = [], []
    for k in range(hosts):
        nodes += [{"name": f"host{k}", "type": "host", "cores": 32, "frequency": "2.4 GHz"},
                  {"name": f"dram{k}", "type": "dram", "preset": "memory/ddr5-4800",
                   "capacity": "64 GiB", "latency": "110 ns", "attached_to": f"host{k}"},
                  {"name": f"rp{k}", "preset": "devices/root-port", "host": f"host{k}"}]
        links.append({"from": f"rp{k}", "to": f"sw0.up{k}", "preset": "links/cxl-gen5-x8"})
    nodes += [{"name": "sw0", "type": "switch", "ports": hosts + 1, "hop_latency": "90 ns"},
              {"name": "pool0", "preset": "devices/cxl-type3-expander",
               "capacity": f"{16 * hosts} GiB",
               "logical_devices": [{"capacity": "16 GiB"}] * hosts}]
    links.append({"from": "sw0.dp0", "to": "pool0", "preset": "links/cxl-gen5-x16"})
    return {"name": f"pool-{hosts}hosts", "nodes": nodes, "links": links,
            "bindings": [{"ld": f"pool0.{k}", "host": f"host{k}"} for k in range(hosts)]}


def spec(path: Path, k: int, records: int):
    """Host ``k``'s experiment: trace-memory.yaml on the pool, its DRAM and its LD."""
    return load_experiment(Path(__file__).resolve().parents[1] / "experiments/trace-memory.yaml", [
        f"topology={path}", f"host=host{k}", f"nodes={{dram: [dram{k}], cxl: [pool0.{k}]}}",
        f"trace.n={records}", "trace.params.footprint=32 MiB", "policy=static",
        "figures=false", "epoch=8192", "real_threads=32",
        f"topology.nodes[dram{k}].capacity=8 MiB",
        f"topology.nodes[pool0].logical_devices[{k}].capacity=32 MiB"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--records", type=int, default=400_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pool.yaml"
        path.write_text(yaml.safe_dump(topology(args.hosts)))
        specs = [spec(path, k, args.records) for k in range(args.hosts)]
        specs[0].run()  # compile and warm the trace cache outside the timings
        start = time.perf_counter()
        alone = [s.run() for s in specs]
        one_by_one = time.perf_counter() - start
        start = time.perf_counter()
        together = run_together(specs)
        jointly = time.perf_counter() - start
    simulated = sum(r.metrics["app_time_s"] for r in together)
    slower = [t.metrics["app_time_s"] / a.metrics["app_time_s"] for t, a in zip(together, alone)]
    gbps = sum(r.tables["epochs"]["GBps_cxl"].iloc[len(r.tables["epochs"]) // 2:].mean()
               for r in together)
    print(f"{args.hosts} hosts x {args.records:,} records: together {jointly:.2f} s, "
          f"one by one (reference) {one_by_one:.2f} s")
    print(f"simulated host-time {simulated * 1e3:.2f} ms: {jointly / simulated:,.0f} s of "
          f"wall time per simulated host-second")
    print(f"each host {min(slower):.2f}-{max(slower):.2f}x slower than alone; "
          f"{gbps:.1f} GB/s on the device's link in the runs' second half")
    print(json.dumps({"hosts": args.hosts, "records": args.records, "together_s": jointly,
                      "one_by_one_s": one_by_one, "simulated_host_s": simulated,
                      "wall_per_host_s": jointly / simulated, "slowdown": [min(slower),
                                                                          max(slower)],
                      "link_gbps": gbps}))


if __name__ == "__main__":
    main()
