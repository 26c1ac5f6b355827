"""What the hosts on one simulated time put on the pooled devices they share.

Each host's memory targets on a pooled device publish the read and write bandwidth of
their last epoch; before its next epoch a target takes the sum of the others' -- other
hosts', and the same host's other logical devices on that device -- as load on the
parts of the device its route shares with theirs (the links from where the routes meet,
the controller, its DRAM; :meth:`cxlsim.memory.expander.ExpanderTarget.share_load`).
The coupling lags by an epoch: each epoch's equilibrium is the host's own, at the
others' last rates, so hosts whose epochs differ in length still see each other's
load at the time they run.
"""

from __future__ import annotations


class Traffic:
    """The last epoch's load of each pooled target, by device."""

    def __init__(self) -> None:
        self._load: dict[str, dict[int, tuple[float, float]]] = {}

    def publish(self, device: str, key: int, read_bps: float, write_bps: float) -> None:
        """Target ``key``'s read and write bandwidth (B/s) on ``device`` in its last epoch."""
        self._load.setdefault(device, {})[key] = (read_bps, write_bps)

    def others(self, device: str, key: int) -> tuple[float, float]:
        """The read and write bandwidth every other target put on ``device``."""
        loads = [v for k, v in self._load.get(device, {}).items() if k != key]
        return sum(r for r, _ in loads), sum(w for _, w in loads)
