"""Epoch-level memory model, the hardware: TLBs, caches, page tables and a core's path
through them; DRAM, CXL expanders, loaded latency.

A core consumes its accesses in chunks; a compiled kernel runs each chunk through the
TLB levels, the page walker (whose references go through the data caches) and the
cache levels, and returns per-level counts and the chunk's latency::

    cpu = CpuParams.model_validate(...)            # e.g. models/cpus/epyc-7452.yaml
    pt = PageTable(page_size=4096, va_base=2**30, va_size=2**26)
    pt.map(2**30, 2**24)                           # first touch, in address order
    core = CoreMemory(cpu, pt)
    stats = core.access(addresses)                 # ChunkStats: hits, walks, latency

See :mod:`cxlsim.memory.hierarchy` for the timing model and
:mod:`cxlsim.memory.reference` for the plain-Python reference it is tested against;
:mod:`cxlsim.memory.cores` runs the cores of a complex together (private levels on the
host's CPUs, the shared ones in core order, the next chunks' private levels ahead), and
:mod:`cxlsim.memory.sampling` a 1-in-K sample of the pages on a core scaled down K times.

Beyond the caches: DRAM channels and their loaded latency (:mod:`~cxlsim.memory.dram`,
:mod:`~cxlsim.memory.loaded`), CXL expanders (:mod:`~cxlsim.memory.expander`), the
per-epoch bandwidth/latency equilibrium of many cores (:mod:`~cxlsim.memory.epoch`),
measured loaded-latency curves in place of a target's model
(:mod:`~cxlsim.memory.curvefile`). The operating system's side -- NUMA nodes, memory
policies, every page's placement (which the page table reads through
:class:`~cxlsim.memory.pagetable.PageNodes`), the kernel's memory state -- is
:mod:`cxlsim.mm`.
"""

from typing import TYPE_CHECKING

from cxlsim.lazy import lazy_attributes

#: Where each public name lives; imported at first use (the compiled kernels, scipy and
#: the curve files only when asked for).
_WHERE = {
    "CacheParams": ".cache",
    "SetAssociative": ".cache",
    "CurveFileSpec": ".curvefile",
    "load_curve_file": ".curvefile",
    "load_curves": ".curvefile",
    "write_curves": ".curvefile",
    "DramParams": ".dram",
    "DramTarget": ".dram",
    "Demand": ".epoch",
    "EpochEngine": ".epoch",
    "Equilibrium": ".epoch",
    "MemorySystem": ".epoch",
    "ExpanderTarget": ".expander",
    "ChunkStats": ".hierarchy",
    "CoreMemory": ".hierarchy",
    "CpuParams": ".hierarchy",
    "access_cores": ".cores",
    "CurveTarget": ".loaded",
    "MemoryNode": ".loaded",
    "model_curves": ".loaded",
    "PAGE_SIZES": ".pagetable",
    "PageTable": ".pagetable",
    "WALK_LEVELS": ".pagetable",
    "ReferenceCore": ".reference",
    "TlbArrayParams": ".tlb",
    "TlbParams": ".tlb",
}
#: Names that moved to the OS layer (:mod:`cxlsim.mm`): they work here, with a warning,
#: for one release.
_MOVED = dict.fromkeys(("KernelMemory", "KernelParams", "MemPolicy", "Numa", "NumaParams",
                        "OutOfMemoryError", "PagePlacement", "Placement", "policy_shares"),
                       "cxlsim.mm")
__all__ = sorted(_WHERE)
__getattr__ = lazy_attributes(__name__, _WHERE, _MOVED)

if TYPE_CHECKING:  # what the names are, for type checkers and IDEs
    from cxlsim.memory.cache import CacheParams, SetAssociative
    from cxlsim.memory.cores import access_cores
    from cxlsim.memory.curvefile import CurveFileSpec, load_curve_file, load_curves, write_curves
    from cxlsim.memory.dram import DramParams, DramTarget
    from cxlsim.memory.epoch import Demand, EpochEngine, Equilibrium, MemorySystem
    from cxlsim.memory.expander import ExpanderTarget
    from cxlsim.memory.hierarchy import ChunkStats, CoreMemory, CpuParams
    from cxlsim.memory.loaded import CurveTarget, MemoryNode, model_curves
    from cxlsim.memory.pagetable import PAGE_SIZES, WALK_LEVELS, PageTable
    from cxlsim.memory.reference import ReferenceCore
    from cxlsim.memory.tlb import TlbArrayParams, TlbParams
