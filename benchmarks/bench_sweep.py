"""Sweeps on worker processes: wall time of a shipped sweep with ``--jobs 2`` vs
``--jobs 1`` (the reference: the same points one after another in one process).

Issue 14's target: a ratio of 0.6 or less on ``ornl-sweep`` and ``deceval-sweep``. Each
sweep runs in a fresh ``cxlsim run`` process, as a user runs it (median of ``--runs``);
the last line is one JSON object.

    python benchmarks/bench_sweep.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWEEPS = ("ornl-sweep", "deceval-sweep")


def wall(sweep: str, jobs: int, out: Path) -> float:
    """Seconds of ``cxlsim run SWEEP --jobs JOBS`` in a fresh process, into a new folder
    ``out`` (a folder with saved points would resume instead of running)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cxlsim", "run", sweep, "--jobs", str(jobs),
                    "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for sweep in SWEEPS:
            one, two = ([wall(sweep, jobs, Path(tmp) / f"{sweep}-{jobs}-{i}")
                         for i in range(args.runs)] for jobs in (1, 2))
            one, two = statistics.median(one), statistics.median(two)
            print(f"{sweep:14s} jobs 1 {one:6.2f} s  jobs 2 {two:6.2f} s  ratio {two / one:.2f}")
            out[sweep] = round(two / one, 3)
    print(json.dumps({"ratio_jobs2_over_jobs1": out}))


if __name__ == "__main__":
    main()
