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
#: pgpromote_success and pgmigrate_success to the destination; pgmigrate_fail_dst_node_full
#: (TPP's patch 1) counts hint-fault migrations refused for lack of room on the
#: destination, which upstream counts nowhere (they never reach ``migrate_pages``).
COUNTERS = (
    "pgalloc", "numa_hit", "numa_miss", "numa_foreign", "pgfree", "allocstall",
    "pgactivate", "pgdeactivate", "pgrefill", "pgscan_kswapd", "pgscan_direct",
    "pgsteal_kswapd", "pgsteal_direct", "pgsteal_anon", "pgsteal_file", "pswpout",
    "pgdemote_kswapd", "pgdemote_direct", "pgpromote_success", "pgmigrate_success",
    "pgmigrate_fail", "pgmigrate_fail_dst_node_full", "kswapd_wakeup", "oom_kill",
)


class VmStat:
    """The :data:`COUNTERS` of ``n_nodes`` nodes, each a list of Python ints: reclaim
    counts one node at a time, ~80 times a call, where a numpy element costs more."""

    def __init__(self, n_nodes: int) -> None:
        self._stat = {name: [0] * n_nodes for name in COUNTERS}

    def count(self, name: str, node: int | np.ndarray, n: int | np.ndarray = 1) -> None:
        """Add ``n`` events to counter ``name`` of ``node`` (one, or one per event)."""
        counts = self._stat[name]
        if isinstance(node, (int, np.integer)) and isinstance(n, (int, np.integer)):
            counts[node] += int(n)
        else:
            added = np.zeros(len(counts), dtype=np.int64)
            np.add.at(added, node, n)
            for i, k in enumerate(added.tolist()):
                counts[i] += k

    def summary(self) -> dict[str, int]:
        """The counters summed over nodes (/proc/vmstat)."""
        return {name: sum(counts) for name, counts in self._stat.items()}

    def total(self, name: str) -> int:
        """One counter summed over nodes (one line of :meth:`summary`)."""
        return sum(self._stat[name])

    def per_node(self, name: str) -> np.ndarray:
        """One counter on every node (a copy)."""
        return np.array(self._stat[name], dtype=np.int64)

    def node(self, node: int) -> dict[str, int]:
        """One node's counters (/sys/devices/system/node/nodeN/vmstat)."""
        return {name: counts[node] for name, counts in self._stat.items()}
