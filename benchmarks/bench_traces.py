"""Trace throughput: native reading, zipfian generation, text import; memory of reading.

Generates --zipf zipfian records (theta 0.99) into a native file, imports --lines lines
of text traces, writes a --records trace (10^8 by default, 2.5 GB) to a temporary folder
in chunks and reads it back in a separate process that reports its own peak RSS. The
figures are cxlsim's, not the disk's: the big file is read from the page cache right
after it is written, and the zipfian file goes to tmpfs (/dev/shm) when there is one
(the speed into the disk folder is printed beside it). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cxlsim.traces.formats import import_trace
from cxlsim.traces.generators import generate
from cxlsim.traces.generators.zipf import Zipfian
from cxlsim.traces.native import open_trace

# Runs in a fresh interpreter so that its peak RSS is the reading alone (plus imports).
# The peak is VmHWM: getrusage's ru_maxrss would carry the parent's RSS over exec.
_READER = """
import json, sys, time
import numpy as np
from cxlsim.traces.native import open_trace

start = time.perf_counter()
records = reads = size = 0
high = last = 0
for chunk in open_trace(sys.argv[1]).chunks():  # every column of every record is touched
    records += len(chunk["addr"])
    reads += int(np.count_nonzero(chunk["op"] == 0))
    high = max(high, int(chunk["addr"].max()))
    size += int(chunk["size"].sum()) + int(chunk["thread"].max())
    last = int(chunk["time"][-1])
wall = time.perf_counter() - start
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
print(json.dumps({"records": records, "seconds": wall, "peak_rss_mib": peak}))
"""


def read_in_child(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _READER, str(path)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def bench_read(folder: Path, records: int) -> tuple[float, float]:
    path = folder / "big.arrow"
    start = time.perf_counter()
    generate("uniform", records, 1, path)
    wrote = time.perf_counter() - start
    size = path.stat().st_size
    print(f"wrote {records:,} records ({size / 1e9:.2f} GB) in {wrote:.1f} s "
          f"({records / wrote / 1e6:.1f} M records/s, disk included)")
    runs = [read_in_child(path) for _ in range(2)]
    for run in runs:
        assert run["records"] == records
        print(f"read      : {run['records'] / run['seconds'] / 1e6:8.1f} M records/s   "
              f"{size / run['seconds'] / 1e9:5.2f} GB/s   peak RSS {run['peak_rss_mib']:.0f} MiB")
    path.unlink()
    best = max(runs, key=lambda r: r["records"] / r["seconds"])
    return best["records"] / best["seconds"], max(r["peak_rss_mib"] for r in runs)


def bench_zipf(folder: Path, memory: Path, records: int) -> float:
    """Best of three runs into a file in ``memory`` (tmpfs: the generator's speed) and, for
    comparison, into ``folder`` (this machine's disk)."""
    generate("zipfian", 1000, 0, folder / "warm.arrow")  # compile the numba kernels first

    def rate(where: Path, *params: str) -> float:
        best = 0.0
        for _ in range(3):
            path = where / "zipf.arrow"
            start = time.perf_counter()
            generate("zipfian", records, 1, path, params)
            best = max(best, records / (time.perf_counter() - start))
            path.unlink()
        return best

    in_memory, scrambled, on_disk = rate(memory), rate(memory, "scrambled=yes"), rate(folder)
    print(f"zipfian   : {in_memory / 1e6:8.1f} M records/s into a file in {memory} "
          f"(scrambled: {scrambled / 1e6:.1f} M/s; into {folder.parent} on disk: "
          f"{on_disk / 1e6:.1f} M/s)")
    return in_memory


def reference_zipf(records: int) -> float:
    """Naive reference: YCSB's zipfian formula in a plain Python loop, per record."""
    import random

    z = Zipfian(1 << 24)
    rng = random.Random(1)
    start = time.perf_counter()
    out = []
    for _ in range(records):
        u = rng.random()
        uz = u * z.zetan
        item = 0 if uz < 1.0 else 1 if uz < z.second else min(
            int(z.items * max(z.eta * u - z.eta + 1.0, 0.0) ** z.alpha), z.items - 1)
        out.append(item * 64)
    rate = records / (time.perf_counter() - start)
    u = np.random.default_rng(2).random(1000)  # same formula as the kernel: same items
    assert [int(v) for v in z.draw(u)] == [0 if x * z.zetan < 1 else 1 if x * z.zetan < z.second
                                           else min(int(z.items * max(z.eta * x - z.eta + 1, 0)
                                                        ** z.alpha), z.items - 1) for x in u]
    print(f"reference : {rate / 1e6:8.2f} M records/s   zipfian in a Python loop "
          f"({records:,} records, no file)")
    return rate


def reference_import(text: str) -> float:
    """Naive reference: lackey lines parsed one by one in Python (split, int())."""
    start = time.perf_counter()
    addrs, ops, sizes = [], [], []
    for line in text.splitlines():
        kind, rest = line[:2], line[3:]
        addr, size = rest.split(",")
        addrs.append(int(addr, 16))
        ops.append(kind.strip())
        sizes.append(int(size))
    rate = len(addrs) / (time.perf_counter() - start)
    print(f"reference : {rate / 1e6:8.2f} M lines/s   lackey parsed in a Python loop "
          f"({len(addrs):,} lines, no file)")
    return rate


def _lackey_text(lines: int) -> str:
    rng = np.random.default_rng(0)
    kinds = rng.choice(["I ", " L", " S", " M"], lines, p=[0.6, 0.25, 0.1, 0.05]).tolist()
    addr = rng.integers(0x400000, 1 << 47, lines).tolist()
    size = rng.choice([1, 2, 4, 8], lines).tolist()
    return "".join(f"{k} {a:08x},{s}\n" for k, a, s in zip(kinds, addr, size))


def _other_texts(lines: int) -> dict[str, str]:
    rng = np.random.default_rng(1)
    addr = rng.integers(0x400000, 1 << 47, lines).tolist()
    op = np.where(rng.random(lines) < 0.7, "R", "W").tolist()
    return {"pin": "".join(f"0x401136: {o} 0x{a:x}\n" for a, o in zip(addr, op)),
            "ramulator": "".join(f"0x{a:x} {o}\n" for a, o in zip(addr, op)),
            "csv": "time,addr,op,size\n" + "".join(f"{i},0x{a:x},{o},64\n" for i, (a, o)
                                                   in enumerate(zip(addr, op)))}


def bench_import(folder: Path, lines: int) -> float:
    texts = {"lackey": _lackey_text(lines), **_other_texts(lines)}
    head = texts["lackey"][:texts["lackey"].index("\n", 1000) + 1]
    import_trace(_write(folder / "warm.txt", head), folder / "w.arrow", "lackey")  # compile
    rates = {}
    for fmt, text in texts.items():
        src = _write(folder / f"{fmt}.txt", text)
        start = time.perf_counter()
        report = import_trace(src, folder / f"{fmt}.arrow", fmt)
        rates[fmt] = report.lines / (time.perf_counter() - start)
        print(f"import    : {rates[fmt] / 1e6:8.1f} M lines/s   {fmt:<9} "
              f"({report.lines:,} lines, {src.stat().st_size / 1e6:.0f} MB -> "
              f"{report.records:,} records)")
        assert open_trace(folder / f"{fmt}.arrow").count == report.records
    return rates["lackey"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=float, default=1e8, help="records of the read test")
    parser.add_argument("--zipf", type=float, default=1e7, help="zipfian records generated")
    parser.add_argument("--lines", type=float, default=5e6, help="text lines imported")
    parser.add_argument("--dir", default=None, help="where the temporary files go")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-traces-", dir=args.dir))
    shm = Path("/dev/shm")
    memory = Path(tempfile.mkdtemp(prefix="bench-traces-", dir=shm)) if shm.is_dir() else folder
    try:
        zipf_rps = bench_zipf(folder, memory, int(args.zipf))
        zipf_ref = reference_zipf(min(int(args.zipf), 1_000_000))
        import_lps = bench_import(folder, int(args.lines))
        import_ref = reference_import(_lackey_text(min(int(args.lines), 500_000)))
        print(f"ratio     : zipfian {zipf_rps / zipf_ref:.1f}x, lackey import "
              f"{import_lps / import_ref:.1f}x over the Python references")
        read_rps, rss = bench_read(folder, int(args.records))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(memory, ignore_errors=True)
    print(json.dumps({"read_rps": round(read_rps), "zipf_rps": round(zipf_rps),
                      "import_lps": round(import_lps), "read_peak_rss_mib": round(rss, 1)}))


if __name__ == "__main__":
    main()
