"""Start-up time: ``import cxlsim`` and ``cxlsim --help`` in a fresh interpreter.

The reference, in the same run: the bare interpreter (``python -c pass``) and
``import numpy`` -- the floor any command pays. Median of ``--runs`` fresh processes
each; the last line is one JSON object. Issue 14's target: both under 0.25 s.

    python benchmarks/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import numpy": [sys.executable, "-c", "import numpy"],
    "import cxlsim": [sys.executable, "-c", "import cxlsim"],
    "cxlsim --help": [sys.executable, "-m", "cxlsim", "--help"],
}


def median_seconds(command: list[str], runs: int) -> float:
    """Median wall time of ``runs`` fresh runs of ``command``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    seconds = {name: median_seconds(cmd, args.runs) for name, cmd in COMMANDS.items()}
    for name, s in seconds.items():
        print(f"{name:16s} {s * 1000:7.1f} ms")
    print(json.dumps({k.replace(" ", "_").replace("-", ""): round(v, 4)
                      for k, v in seconds.items()}))


if __name__ == "__main__":
    main()
