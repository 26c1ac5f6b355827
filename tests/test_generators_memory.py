"""Every generator streams in chunks of bounded size whatever ``n`` and its phases: 10^9
records under a memory limit (a subprocess whose address space may grow by
:data:`ROOM` once every generator has made its first, small trace)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from conftest import REPO
from cxlsim.traces.generators import KINDS
from cxlsim.traces.generators.base import CHUNK

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="RLIMIT_AS and /proc/self/status are Linux's")

N = 10**9
#: What the address space may grow by while the generators run: a few chunks, their
#: footprint-sized tables (pointer-chase's permutation of 2^24 nodes: 128 MiB), far less
#: than one array of a phase (redis's settle of 5·10^8 records took ~20 GB as one).
ROOM = 1 << 30
#: Settle records of the redis cases: as in the issue that found the one-array settle,
#: and a short one whose every phase boundary comes within a few chunks.
LONG_SETTLE, SHORT_SETTLE = 500_000_000, 3 * CHUNK + 5

#: Per generator: parameters, and records to draw -- past every phase boundary (the
#: phases' ends, the warm-up's, the start's, a burst's) and two chunks on.
CASES = {kind: ([], 3 * CHUNK) for kind in KINDS} | {
    "phases": (["phases=1000"], 3 * CHUNK),  # a phase every 10^6 records
    "redis": ([f"settle={SHORT_SETTLE}", "cold=1 GiB", f"keys={2 * CHUNK}"],
              SHORT_SETTLE + 4 * CHUNK + 2 * CHUNK),
    "redis-long": ([f"settle={LONG_SETTLE}", "cold=1 GiB"], 3 * CHUNK),
}

_SCRIPT = """
import resource, sys
from cxlsim.engine.rng import make_rng
from cxlsim.traces.generators import KINDS
from cxlsim.traces.params import parse_params

cases = {cases!r}

def stream(kind, params, n):
    spec = KINDS[kind.removesuffix("-long")]
    return spec.stream(parse_params(spec.params, params, flag="--param", owner=kind),
                       make_rng(1), n)

def address_space():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize:"))

for kind in KINDS:  # compile and cache what each needs, at its defaults
    next(stream(kind, [], 10**7))
limit = address_space() + {room}
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
for kind, (params, records) in cases.items():
    done = most = 0
    for chunk in stream(kind, params, {n}):
        done += len(chunk["addr"])
        most = max(most, len(chunk["addr"]))
        if done >= records:
            break
    print(kind, done, most, flush=True)
"""


def _run(cases: dict, timeout: float) -> dict[str, tuple[int, int]]:
    """Per case: records drawn and the largest chunk's records, under the limit."""
    script = _SCRIPT.format(cases=cases, room=ROOM, n=N)
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]  # a MemoryError names its generator
    return {kind: (int(done), int(most)) for kind, done, most in
            (line.split() for line in out.stdout.splitlines())}


def _check(cases: dict, timeout: float) -> None:
    drawn = _run(cases, timeout)
    assert set(drawn) == set(cases)
    for kind, (done, most) in drawn.items():
        assert done >= cases[kind][1], kind
        assert most <= 2 * CHUNK, kind  # kv's operations vary a chunk's records a little


def test_every_generator_crosses_its_phases_at_a_billion_records_in_bounded_chunks():
    _check(CASES, timeout=600)


@pytest.mark.slow
def test_every_record_of_a_billion_record_redis_trace_with_a_long_settle():
    """The whole settle (5·10^8 records), the load and the run to the 10^9th record."""
    _check({"redis": ([f"settle={LONG_SETTLE}", "cold=1 GiB"], N)}, timeout=3600)
