"""The kernel's event counters, per node as ``/sys/devices/system/node/nodeN/vmstat``
(each event on the node the kernel charges it to), summed as ``/proc/vmstat``.

Every part of the kernel model counts here: allocation, the LRU lists' aging, reclaim
and demotion, migration.
"""

from __future__ import annotations

import numpy as np

#: Counters kept per node. pgsteal_* count every page reclaim freed from its node,
#: demoted ones included (``shrink_folio_list`` adds them to nr_reclaimed); numa_hit and
#: numa_miss are charged to the node allocated on, numa_foreign to the preferred node;
#: pgpromote_success and pgmigrate_success to the destination.
COUNTERS = (
    "pgalloc", "numa_hit", "numa_miss", "numa_foreign", "pgfree", "allocstall",
    "pgactivate", "pgdeactivate", "pgrefill", "pgscan_kswapd", "pgscan_direct",
    "pgsteal_kswapd", "pgsteal_direct", "pgsteal_anon", "pgsteal_file", "pswpout",
    "pgdemote_kswapd", "pgdemote_direct", "pgpromote_success", "pgmigrate_success",
    "pgmigrate_fail", "kswapd_wakeup", "oom_kill",
)


class VmStat:
    """The :data:`COUNTERS` of ``n_nodes`` nodes."""

    def __init__(self, n_nodes: int) -> None:
        self._stat = {name: np.zeros(n_nodes, dtype=np.int64) for name in COUNTERS}

    def count(self, name: str, node: int | np.ndarray, n: int | np.ndarray = 1) -> None:
        """Add ``n`` events to counter ``name`` of ``node`` (one, or one per event)."""
        if isinstance(node, (int, np.integer)) and isinstance(n, (int, np.integer)):
            self._stat[name][node] += n  # one node: no scatter (reclaim counts often)
        else:
            np.add.at(self._stat[name], node, n)

    def summary(self) -> dict[str, int]:
        """The counters summed over nodes (/proc/vmstat)."""
        return {name: self.total(name) for name in self._stat}

    def total(self, name: str) -> int:
        """One counter summed over nodes (one line of :meth:`summary`)."""
        return int(self._stat[name].sum())

    def per_node(self, name: str) -> np.ndarray:
        """One counter on every node (a copy)."""
        return self._stat[name].copy()

    def node(self, node: int) -> dict[str, int]:
        """One node's counters (/sys/devices/system/node/nodeN/vmstat)."""
        return {name: int(v[node]) for name, v in self._stat.items()}
