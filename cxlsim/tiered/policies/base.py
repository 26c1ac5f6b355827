"""The policy interface of the trace-driven run: what a policy sees and what it decides.

A policy sees the run's pages as dense ids (first-seen order) and the machine's NUMA
nodes. At a page's first touch it names the node the allocation aims at (and, for a bind
policy, the nodes allowed); the kernel's allocator (:class:`~cxlsim.mm.kernel.
KernelMemory`) decides where it lands -- falling back by distance, reclaiming, demoting.
Where every page is, its type, when it was allocated and last accessed, its accesses and
how it last moved are the run's :class:`~cxlsim.mm.placement.Placement`
(``EpochView.placement``). After each epoch a policy may ask for pages to move.

A policy's tunables are its :attr:`Policy.Params` (a strict model: every field with the
kernel's default, its sysctl/sysfs name and source in the description), given in an
experiment as ``policy: {name: NAME, key: value, ...}``. The kernel switches a policy
stands for (``kernel.numa_balancing=2`` implies the tiering mode, demotion on, the
hint-fault scanner) are its :meth:`Policy.switches`: the experiment turns them on, and a
file that sets one of them the other way is an error, not a silent override.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cxlsim.config.base import StrictModel
from cxlsim.mm.kernel import KernelMemory
from cxlsim.mm.mempolicy import MemPolicy
from cxlsim.mm.migrate import MigrationParams
from cxlsim.mm.numa import Numa
from cxlsim.mm.placement import Placement


@dataclass
class EpochView:
    """What a policy sees after an epoch: the pages accessed (dense ids, with repeats),
    the kernel's memory state (LRU lists, counters, and every page's placement), the epoch's
    statistics (its row of the run's epochs table: a policy may add columns of its own),
    the pages that took a NUMA hint fault with their fault latency (ns since the scanner
    marked them), the access monitor's latest regions, the simulated time at the epoch's
    end (ns), the run's migration limits, the pages the scanner marked during the
    epoch (after its faults), the scanner's longest period, and each faulting page's
    ``last_cpupid`` before its fault (the thread of its previous hint fault, -1 none;
    :mod:`cxlsim.mm.numa_balancing`)."""

    pages: np.ndarray
    kernel: KernelMemory
    stats: dict
    hint_faults: np.ndarray
    fault_latency: np.ndarray
    regions: list[tuple[int, int, int, int]]  # the DAMON monitor's last: start, end,
                                              # nr_accesses, age
    now: float = 0.0
    migration: MigrationParams = field(default_factory=MigrationParams)
    scanned: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    scan_period_max: float = 60e9  # the scanner's numa_balancing_scan_period_max (ns)
    fault_cpupid: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    @property
    def placement(self) -> Placement:
        """Every page's node, type, allocation and access epochs, accesses and flags."""
        return self.kernel.placement

    def per_node(self, stat: str) -> np.ndarray:
        """The epoch's ``stat`` per node, in the kernel's node order (the stats'
        ``STAT_NODE`` columns: ``refs``, ``latency_ns``, ``GBps``)."""
        prefix = f"{stat}_"
        return np.array([v for k, v in self.stats.items() if k.startswith(prefix)], float)


class PolicyParams(StrictModel):
    """A policy's tunables (none for the static policies)."""


@dataclass(frozen=True)
class Switches:
    """Kernel settings a policy stands for: fields of the experiment's ``kernel``
    (:class:`~cxlsim.mm.params.KernelParams`), ``numa_balancing`` and ``damon``
    blocks, each ``{field: value}``; the experiment applies them and refuses a file that
    sets one of them otherwise."""

    kernel: dict = field(default_factory=dict)
    numa_balancing: dict = field(default_factory=dict)
    damon: dict = field(default_factory=dict)


class Policy:
    """First-touch targets and moves; subclasses register under a name."""

    name = ""
    Params: type[PolicyParams] = PolicyParams
    needs_counts = False   # True: wants every page's access count before the run
    unbounded = False      # True: the nodes it uses are given room for every page
    in_task = False        # True: its moves are made in the task's context (a hint-fault
                           # handler), so the task pays them (cxlsim.mm.migrate)
    kernel_5x = False      # True: it stands for a 5.x patch set (TPP 5.13, AutoTiering
                           # 5.3), whose task_numa_fault counts every hint fault
                           # (cxlsim.mm.numa_balancing: Scanner.upstream false)
    demoted_protnone = False  # True: its kernel maps a demoted page PROT_NONE, so its
                              # next access hint-faults (TPP's PG_demoted)

    def __init__(self, numa: Numa, footprint: int, mempolicy: MemPolicy | str = "",
                 counts: np.ndarray | None = None, room: np.ndarray | None = None,
                 params: PolicyParams | None = None) -> None:
        self.numa = numa
        self.footprint = footprint
        self.local = int(np.flatnonzero(numa.has_cpus)[0])
        self.params = params if params is not None else self.Params()

    @classmethod
    def switches(cls, params: PolicyParams) -> Switches:
        """The kernel settings this policy with ``params`` stands for (default: none)."""
        return Switches()

    def preferred(self, pages: np.ndarray) -> tuple[np.ndarray, list[int] | None]:
        """The node each of ``pages`` aims at, and the nodes allowed (None: any)."""
        raise NotImplementedError

    def moves(self, epoch: EpochView) -> tuple[np.ndarray, np.ndarray]:
        """Pages to move after an epoch and their destinations (static: none)."""
        return np.empty(0, np.int64), np.empty(0, np.int64)
