"""The quantities identified from one published number each, and their leave-one-out.

No source publishes them, so each is identified once (issue 36's rule): one physical
quantity, a range of plausible values stated before fitting, exactly one row it is
fitted to (that row alone is CALIBRATED), the value used unchanged wherever the same
part appears -- every other row touching it is a prediction. The leave-one-out tests
the rule: the quantity identified from a second row alone, each identification
predicting the other row. When they disagree beyond the rows' tolerances the model is
missing a mechanism, which :attr:`Quantity.missing` names.

* **trackers** (``models/cpus/xeon6.yaml``): the reads to memory the Xeon 6 socket's
  uncore tracks at once, shared by DRAM and CXL (Yang et al., arXiv 2503.17864: CXL
  requests hold shared request queues and cut DRAM bandwidth). Identified on T5.1 (the
  HMSDK weighted interleave's gain at 2:1 read:write); T5.2 is the other row.
* **channel_queue** (``models/devices/cxl-controller.yaml``): the requests the one CXL
  device model's controller takes at once per DRAM channel. Identified on T8.6 (CXL-A's
  all-read bandwidth, one channel); T8.5 (Micron CZ120, two channels) is the other row.

An identification is the whole value whose row's simulated number is nearest the
published one; the rows' values rise with the quantity, so a bisection over the range
finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from cxlsim.experiments import load_experiment
from cxlsim.resources import bundled
from cxlsim.units import LINE_BYTES

EXPERIMENTS = bundled("experiments")


@dataclass(frozen=True)
class Quantity:
    """One identified quantity: what it is, where the model holds it, its plausible
    range (stated before fitting) and why, the row it is identified on and the row of
    the leave-one-out, and ``simulate(row, value)``: the row's simulated number (in the
    published number's unit) with the quantity at ``value``."""

    name: str
    held_in: str
    low: int
    high: int
    why_range: str
    row: str
    other: str
    simulate: Callable[[str, int], float]
    held: Callable[[], int]
    missing: str
    remark: Callable[[], str] = lambda: ""


def identify(quantity: Quantity, row: str) -> int:
    """The whole value in the quantity's range whose ``row`` lies nearest its published
    number."""
    from cxlsim.validation import published_number as _published

    return nearest(lambda v: quantity.simulate(row, v), _published(row), quantity.low,
                   quantity.high)


def nearest(simulate: Callable[[int], float], target: float, low: int, high: int) -> int:
    """The whole value in ``[low, high]`` at which ``simulate`` (rising with its argument)
    comes nearest ``target``, by bisection; an end of the range if the target lies
    beyond it."""
    lo, hi = low, high
    if simulate(hi) < target:
        return hi
    while hi - lo > 1:  # simulate(lo) < target <= simulate(hi), or lo the range's end
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if simulate(mid) < target else (lo, mid)
    return min((lo, hi), key=lambda v: abs(simulate(v) - target))


@dataclass(frozen=True)
class LeaveOneOut:
    """A quantity identified from ``source`` alone, predicting ``predicted`` (the other
    row): the value, the prediction and the published number, in the row's unit."""

    source: str
    value: int
    predicted: str
    simulated: float
    published: float
    unit: str
    tolerance: float
    points: bool

    @property
    def error(self) -> float:
        """Simulated against published: points, or relative."""
        if self.points:
            return self.simulated - self.published
        return self.simulated / self.published - 1

    @property
    def holds(self) -> bool:
        return abs(self.error) <= self.tolerance

    def text(self) -> str:
        """'T5.2 +36.2 % (+5.2 points from +31 %)', in the row's unit."""
        if self.points:
            return (f"{self.predicted} {self.simulated:+.1f} % ({self.error:+.1f} points from "
                    f"{self.published:+g} %)")
        return (f"{self.predicted} {self.simulated:.1f} {self.unit} ({self.error:+.1%} from "
                f"{self.published:g} {self.unit})")


def leave_one_out(quantity: Quantity) -> list[LeaveOneOut]:
    """Identified from its row, predicting the other; identified from the other alone,
    predicting its row."""
    from cxlsim.validation import field as _field
    from cxlsim.validation import published_number as _published
    from cxlsim.validation import tolerance as _tolerance

    out = []
    for source, predicted in ((quantity.row, quantity.other), (quantity.other, quantity.row)):
        value = identify(quantity, source)
        unit = _field(predicted, "published").split(maxsplit=1)[-1]
        out.append(LeaveOneOut(source, value, predicted, quantity.simulate(predicted, value),
                               _published(predicted), unit, _tolerance(predicted),
                               "point" in _field(predicted, "tolerance")))
    return out


# --- the host's trackers: T5.1 / T5.2 --------------------------------------------------

#: The read:write mix of each row of the weighted interleave.
MIXES = {"T5.1": "2:1", "T5.2": "1:1"}


def interleave_gain(row: str, trackers: int) -> float:
    """The weighted 2:1 interleave's gain over DRAM only (percent) at ``row``'s
    read:write mix (experiments/weighted-interleave.yaml) with ``trackers``."""
    return _interleave_gains(trackers)[MIXES[row]]


@cache
def _interleave_gains(trackers: int) -> dict[str, float]:
    """Each mix's gain (percent) of the weighted 2:1 interleave with ``trackers``."""
    metrics = load_experiment(EXPERIMENTS / "weighted-interleave.yaml", [
        f"cpu.trackers={trackers}", "weights=[2]", "auto=false"]).run().metrics
    return {mix: metrics[f"gain_w2to1_rw{mix.replace(':', 'to')}"] * 100
            for mix in MIXES.values()}


def _xeon6_trackers() -> int:
    return load_experiment(EXPERIMENTS / "weighted-interleave.yaml").cpu.trackers


# --- the CXL controller's request queue: T8.6 / T8.5 ---------------------------------

#: The module of each row: topology, device, read fraction of the published bandwidth.
MODULES = {"T8.5": ("cz120", "cz0", 2 / 3), "T8.6": ("one-channel-expander", "cxl0", 1.0)}


def module(row: str, channel_queue: int | None = None):
    """The epoch level's expander of ``row``'s module (its topology as shipped, or with
    the controller's queue a channel set to ``channel_queue``), and its read fraction."""
    from cxlsim.memory.expander import ExpanderTarget
    from cxlsim.topology import load_topology

    name, device, r = MODULES[row]
    path = bundled("topologies") / f"{name}.yaml"
    overrides = []
    if channel_queue is not None:
        index = next(i for i, n in enumerate(load_topology(path).spec.nodes)
                     if n.name == device)
        overrides = [f"nodes[{index}].channel_queue={channel_queue}"]
    return ExpanderTarget(load_topology(path, overrides), "host0", device), r


@cache
def module_bandwidth(row: str, channel_queue: int) -> float:
    """``row``'s module's largest bandwidth (GB/s) with ``channel_queue``."""
    target, r = module(row, channel_queue)
    return target.capacity(r) / 1e9


def _controller_queue() -> int:
    from cxlsim.topology import load_topology

    name, device, _ = MODULES["T8.6"]
    topology = load_topology(bundled("topologies") / f"{name}.yaml")
    return topology.graph.nodes[device]["spec"].channel_queue


def _not_on_cmm() -> str:
    """Why the CMM modules of T5 are not this device: what the queue would hold them to."""
    from cxlsim.memory.expander import ExpanderTarget
    from cxlsim.topology import load_topology

    cmm = ExpanderTarget(load_topology(bundled("topologies") / "hmsdk-cmm.yaml"), "host0",
                         "cmm0")
    queue = _controller_queue()
    return (f"not applied to T5's CMM modules: {queue} requests at their "
            f"{cmm.idle_latency:.0f} ns round trip would hold a one-channel module to "
            f"{queue * LINE_BYTES / cmm.idle_latency:.1f} GB/s, against the 36 GB/s SK hynix "
            "quotes for one (models/devices/cmm-ddr5.yaml)")


TRACKERS = Quantity(
    name="trackers", held_in="models/cpus/xeon6.yaml",
    low=488, high=1536, why_range=(
        "below 488 the socket could not keep enough reads in flight to reach its own "
        "DRAM's sustained bandwidth at the idle latency (8 x 38.4 GB/s x 0.924 / 64 B x "
        "110 ns); 1536 is gem5 CHI's default of 32 home-node trackers a slice, one LLC "
        "slice a core (48 cores). Above 752 (MLC's 47 threads x 16 misses) none binds"),
    row="T5.1", other="T5.2", simulate=interleave_gain, held=_xeon6_trackers,
    missing=("at one value the model's gain at 1:1 read:write exceeds the 2:1 one by more "
             "than the published 10 points: write-backs pass the trackers (posted), so the "
             "1:1 mix holds fewer of them a byte. Held for their whole round trip instead, "
             "the two gains come within about a point of each other (tried outside the "
             "shipped model: +20.0 and +20.8 % at 900 trackers). Missing: how long a "
             "write-back holds a shared uncore entry (between none and its round trip; not "
             "published), or the DRAM controller's read/write switching under mixed "
             "traffic (the DRAM scheduling item of issue 36)"))

CHANNEL_QUEUE = Quantity(
    name="channel_queue", held_in="models/devices/cxl-controller.yaml",
    low=32, high=128, why_range=(
        "memory controllers queue 32-64 reads a channel (gem5's DRAM controller 32, "
        "server controllers 64) and CXL-DMSim's silicon-calibrated CXL controllers hold "
        "48-52 requests; from the least of these to twice the most"),
    row="T8.6", other="T8.5", simulate=module_bandwidth, held=_controller_queue,
    missing=("beyond a depth a channel, the two modules' controllers differ (a request "
             "rate of their own, their DRAM's scheduling)"),
    remark=_not_on_cmm)

#: Every identified quantity, in the fidelity page's order.
QUANTITIES = (TRACKERS, CHANNEL_QUEUE)
