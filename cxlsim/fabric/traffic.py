"""What the hosts on one simulated time put on the pooled devices they share.

Each host's memory targets on a pooled device publish, after each epoch, the threads
that reached them: each class of the host's threads with its MLP, its gap (its wait on
the host's other memory folded in), the device's weight in its mean latency and its
share of the accesses. Before its next epoch a target takes the others' -- other
hosts', and the same host's other logical devices on that device -- into its
equilibrium as threads of their own, closed-loop: as the device's latency rises in the
host's solution, their rate falls as the host's own threads' does
(:func:`cxlsim.memory._latency.foreign_load`). So every host solves the same shared
queues with the same threads, and a saturated link is shared as its threads share it,
not by who was solved first. They load the parts of the device the routes share (the
links from where they meet, the controller, its DRAM); the device's latency they see
is taken as this host's. The threads' classes are those of each host's last epoch.
"""

from __future__ import annotations

#: One class of another host's threads on a pooled target: threads, MLP, gap (ns,
#: with its wait on its other nodes), the target's weight in its mean latency, its
#: share of the accesses, read fraction.
Row = tuple[float, float, float, float, float, float]


class Traffic:
    """The last epoch's threads on each pooled target, by device."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[int, list[Row]]] = {}

    def publish(self, device: str, key: int, rows: list[Row]) -> None:
        """Target ``key``'s threads on ``device`` in its last epoch."""
        self._rows.setdefault(device, {})[key] = rows

    def others(self, device: str, key: int) -> list[Row]:
        """The threads every other target put on ``device``."""
        return [row for k, rows in self._rows.get(device, {}).items() if k != key
                for row in rows]
