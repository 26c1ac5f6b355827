"""A trace-memory run's input (:mod:`cxlsim.experiments.kinds.trace_memory`): the trace,
generated once and shared (:mod:`cxlsim.experiments.trace_cache`) or a file, its survey
(footprint, threads, page types, counts) and the checks of the run's settings against
it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from cxlsim import scratch
from cxlsim.errors import InputError
from cxlsim.experiments import trace_cache
from cxlsim.experiments.progress import progress_bar
from cxlsim.mm.placement import PAGE_TYPES
from cxlsim.tiered.trace_survey import Survey, survey
from cxlsim.traces import generate, open_trace
from cxlsim.traces.generators import KINDS, trace_bytes
from cxlsim.units import format_size

#: The trace columns the run reads (and ``page_type`` when the trace has it).
COLUMNS = ["addr", "op", "thread"]

#: Fewest pages a sampled run keeps (``sample:``): at 8,192 (64k pages, K = 8) the app
#: time came within 4.6 % of the exact run's, at 16,384 within 1.2 % (experiments/README.md).
MIN_SAMPLED_PAGES = 4096


def surveyed(exp: Any, stack: ExitStack, progress: bool = False) -> tuple[
        Path, Callable[[], Iterator[dict[str, np.ndarray]]], Survey]:
    """The trace's path, its chunks of the columns a run reads, and its survey: made
    once and shared, read-only, by the runs that share the trace (``progress``: a
    bar of its generation)."""
    path, surveyed = trace_file(exp, stack, progress)
    trace = open_trace(path)  # addr, op and thread are required columns
    columns = COLUMNS + ["page_type"] * ("page_type" in trace.fields)

    def chunks() -> Iterator[dict[str, np.ndarray]]:
        return trace.chunks(columns)

    if surveyed[0] is None:
        surveyed[0] = survey(chunks)
        for shared in (surveyed[0].counts, surveyed[0].page_type):
            shared.flags.writeable = False
    return path, chunks, surveyed[0]

def key(exp: Any) -> tuple[Any, ...]:
    """What names a generated trace: its generator, records, seed and parameters."""
    g = exp.trace
    return (g.generate, g.n, g.seed,
            tuple(f"{k}={v}" for k, v in generator_params(exp).items()))

def generator_params(exp: Any) -> dict[str, Any]:
    """The generated trace's parameters; a generator whose pages stand for a real
    service's (``real_footprint``, the TPP services' page heat) is told the real
    footprint this run stands for, S x the footprint, unless the file sets it."""
    g = exp.trace
    spec = KINDS[g.generate].params
    if "real_footprint" not in spec or "real_footprint" in g.params:
        return g.params
    footprint = spec["footprint"].parse(str(g.params.get("footprint",
                                                         spec["footprint"].default)))
    real = exp.real_footprint or exp.scale * footprint
    return {**g.params, "real_footprint": format_size(int(real))}

def trace_file(exp: Any, stack: ExitStack, progress: bool = False
               ) -> tuple[Path, list[Survey | None]]:
    """The trace's path and a one-item list for its survey: shared by the runs of
    this process, and of workers forked after the experiment's ``prepare``, that
    generate the same trace (:mod:`cxlsim.experiments.trace_cache`)."""
    if isinstance(exp.trace, str):
        return Path(exp.trace), [None]
    g = exp.trace
    name = key(exp)

    def make(folder: Path) -> Path:
        scratch.check_room(folder, trace_bytes(g.generate, g.n),
                           f"generating a trace of {g.n:,} records")
        if not progress:  # (an undrawn bar would count records as a sweep's steps)
            return generate(g.generate, g.n, g.seed, folder / "trace.arrow", name[3])
        with progress_bar(True, g.n, f"{exp.name}: generating {g.generate}", "record",
                          unit_scale=True) as bar:
            return generate(g.generate, g.n, g.seed, folder / "trace.arrow", name[3],
                            bar.update)

    return trace_cache.generated(
        name, g.n, make, lambda: stack.enter_context(scratch.temporary("cxlsim-trace-")))


def check(exp: Any, found: Survey) -> None:
    """The survey against the run's settings: records, epoch, sample and warm-up."""
    if found.records == 0:
        raise InputError("the trace has no records", key="trace")
    if exp.epoch > found.records:
        raise InputError(f"epoch ({exp.epoch:,} records) is longer than the trace "
                         f"({found.records:,} records)", key="epoch")
    if exp.sample > 1 and found.footprint < exp.sample * MIN_SAMPLED_PAGES:
        raise InputError(
            f"1 page in {exp.sample} keeps about {found.footprint // exp.sample:,} of the "
            f"trace's {found.footprint:,} pages; a sample needs at least "
            f"{MIN_SAMPLED_PAGES:,} for its estimate to hold (errors by K in "
            f"experiments/README.md): a smaller sample factor, or 1", key="sample")
    if exp.warmup >= found.records:
        raise InputError(f"warmup ({exp.warmup:,} records) leaves nothing of the trace "
                         f"({found.records:,} records) to measure", key="warmup")

def check_room(exp: Any, found: Survey, capacity: np.ndarray, room: np.ndarray) -> None:
    """Without swap, every anon (and shmem) page the trace touches stays resident
    (a trace frees nothing; file pages can be dropped): the nodes' pages above their
    min watermarks (``room``; ``capacity`` in all) must hold them, or the kernel
    would OOM whatever the policy, the epoch or the placement."""
    kept = int((found.page_type != PAGE_TYPES.index("file")).sum())
    if exp.kernel.swap or kept <= room.sum():
        return
    def pages(n: int) -> str:
        return f"{n:,} pages ({n * 4096 / 2**20:,.1f} MiB)"

    raise InputError(
        f"the trace touches {pages(kept)} of anon memory, more than "
        f"{' + '.join(exp.nodes)} hold above their min watermarks: "
        f"{pages(int(room.sum()))} of {pages(int(capacity.sum()))}; with swap off "
        f"(kernel.swap) anon pages cannot be reclaimed and the kernel would OOM: give "
        f"the nodes more capacity, make the trace's footprint smaller, or turn swap on",
        key="trace")
