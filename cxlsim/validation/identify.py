"""The TPP services' quantities no source publishes, identified once from the no-tiering
rows (identify once, predict everywhere).

Each quantity has a physical meaning and a plausible range stated before any fit, and is
identified from exactly one published number of a row without a tiering policy: default
Linux against all-local at DRAM:CXL 2:1. That row part is CALIBRATED; every other part of
every T6 row -- every tiering policy, every 1:4 row, the other services' default-Linux
numbers -- is a prediction. The quantities, both from Cache2's row T6.3c:

* ``mlp``: a service thread's accesses in flight (memory-level parallelism; the Xeon 6
  core allows 16 L1D misses, a service's dependent loads far fewer), one for the four
  services, from Cache2's default-Linux loss (2 %);
* ``cache2.anon_ops``: the share of Cache2's hot accesses that fall on anon pages,
  from Cache2's default-Linux local traffic (78 %).

Why these rows: Web1's default-Linux loss (T6.2, 16.5 %) is out of reach for any MLP in
the range (the model's Web1 loses less even at one access in flight), and so is its local
traffic (22 %) for any file share in 0.3-0.9: the model's Web1 misses a mechanism, and
T6.2 stays a prediction that fails. A third quantity, the share of hot accesses that follow
no object's popularity (the generators' ``spread``), was tried beside ``mlp`` on Cache1's
3 % (T6.3b): the two cache rows could not tell it from ``mlp`` (the solution drifted
along a ridge, both rising together), so it stays at 0, the published Zipf heat alone.

The two are solved together (each by bisection on its own number, the other held, in turns
until neither moves) on the TPP experiment files, each run judged by the tiering rows' one
rule (:mod:`.steady`). The shipped values are where the model reads them (the
experiments' ``mlp``, the generator's default); ``python -m cxlsim.validation.identify
[--full]`` re-derives them, and tests/test_identify.py checks them. The fidelity page lists
each with its row, its range and a leave-one-out check (:data:`ALTERNATIVES`: the
quantity identified from another row of the same kind, predicting its own row).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from cxlsim.experiments import load_experiment
from cxlsim.traces.generators import KINDS

#: The experiment the quantities are identified on (DRAM:CXL 2:1).
FILE = "tpp-2to1.yaml"


@dataclass(frozen=True)
class Quantity:
    """An identified quantity: its name, meaning, plausible range, and the one published
    number (``row``'s ``part``, ``published``) it is identified from, on ``workload``'s
    default-Linux run; ``rises``: whether that number rises with the quantity."""

    name: str
    meaning: str
    low: float
    high: float
    row: str
    index: int            # the part's place among the row's published parts
    part: str
    workload: str
    published: float
    rises: bool

    @property
    def measure(self) -> Callable[[Mapping[str, float], bool], float]:
        """The simulated counterpart of the published number (a percentage), given every
        quantity's value and the mode."""
        return _local if self.part.endswith("local traffic") else _loss

    def value_now(self) -> float:
        """The shipped value, where the model reads it (the middle of the range where
        the model has none yet, e.g. anon_ops by pages)."""
        if self.name == "mlp":
            return float(load_experiment(FILE).thread_mlp)
        workload, _, param = self.name.rpartition(".")
        p = KINDS[workload or "cache1"].params[param]
        value = p.parse(p.default)
        return float(value) if isinstance(value, (int, float)) else (self.low + self.high) / 2


QUANTITIES = (
    Quantity("mlp", "a service thread's accesses in flight (memory-level parallelism)",
             1.0, 16.0, "T6.3c", 0, "default Linux loss", "cache2", 2.0, rises=False),
    Quantity("cache2.anon_ops", "share of Cache2's hot accesses on anon pages", 0.1, 0.9,
             "T6.3c", 2, "default Linux local traffic", "cache2", 78.0, rises=True),
)

#: Leave-one-out: each quantity identified instead from another published number of the
#: same kind (row, part index, part, workload, published), predicting its own row.
ALTERNATIVES = {
    "mlp": ("T6.3b", 0, "default Linux loss", "cache1", 3.0),
}
#: Why a quantity has no leave-one-out.
NO_ALTERNATIVE = {
    "cache2.anon_ops": "no second published number of its kind: Cache2's other local "
                       "share (91 %) is TPP's, a policy's result",
}
#: The identification as last recorded (``python -m cxlsim.validation.identify``): the
#: values and the leave-one-out, which the fidelity page prints (the runs take minutes).
RECORD = "identified_tpp.yaml"


def calibrated(row: str) -> dict[int, str]:
    """The parts of ``row`` a quantity is identified from: {part index: its name}."""
    return {q.index: q.name for q in QUANTITIES if q.row == row}


def overrides(values: Mapping[str, float], workload: str) -> tuple[str, ...]:
    """The ``--set`` assignments that give ``workload``'s runs these values."""
    out = []
    for name, value in sorted(values.items()):
        owner, _, param = name.rpartition(".")
        if name == "mlp":
            out.append(f"mlp={value:.6g}")
        elif not owner or owner == workload:
            out.append(f"trace.params.{param}={value:.6g}")
    return tuple(out)


def _default_linux(values: Mapping[str, float], workload: str, quick: bool):
    from cxlsim.validation import tpp

    return tpp._point(FILE, workload, "default-linux", overrides(values, workload), quick)


def _loss(values: Mapping[str, float], workload: str, quick: bool) -> float:
    """Default Linux's loss (%) against all-local over its window."""
    from cxlsim.validation import tpp

    run = _default_linux(values, workload, quick)
    base = tpp._point(FILE, workload, "all-local", overrides(values, workload), quick)
    return 100 * (1 - run.throughput / tpp.throughput(base.epochs, run.window.first))


def _local(values: Mapping[str, float], workload: str, quick: bool) -> float:
    """Default Linux's local share of the traffic (%) over its window."""
    return 100 * _default_linux(values, workload, quick).local


def _solve(q: Quantity, values: dict[str, float], quick: bool,
           target: tuple[str, float] | None = None, tol: float = 0.05) -> tuple[float, bool]:
    """``q``'s value that gives its published number with the others held (bisection
    within its range to ``tol`` points), and whether the number lies in the range
    (else the nearer end). ``target``: another (workload, published) to solve for."""
    workload, published = target or (q.workload, q.published)

    def error(x: float) -> float:
        got = q.measure({**values, q.name: x}, workload, quick)
        return (got - published) if q.rises else (published - got)

    lo, hi = q.low, q.high
    e_lo, e_hi = error(lo), error(hi)
    if e_lo > 0 or e_hi < 0:  # the number is beyond what the range can give
        return (lo if e_lo > 0 else hi), False
    for _ in range(30):
        mid = (lo + hi) / 2
        e = error(mid)
        if abs(e) <= tol or hi - lo < 1e-3 * (q.high - q.low):
            return mid, True
        lo, hi = (mid, hi) if e < 0 else (lo, mid)
    return (lo + hi) / 2, True


def identify(quick: bool = True, rounds: int = 4, start: Mapping[str, float] | None = None,
             log: Callable[[str], object] = lambda _: None) -> dict[str, tuple[float, bool]]:
    """Every quantity's value and whether its number was reachable in its range, solved
    in turns (each on its own row, the others held) until none moves by more than 1 %
    of its range."""
    values = dict(start or {q.name: q.value_now() for q in QUANTITIES})
    reached = {q.name: True for q in QUANTITIES}
    for turn in range(rounds):
        moved = False
        for q in QUANTITIES:
            x, reached[q.name] = _solve(q, values, quick)
            moved |= abs(x - values[q.name]) > 0.01 * (q.high - q.low)
            values[q.name] = x
            log(f"round {turn + 1}: {q.name} = {x:.4g} ({q.row} {q.part})")
        if not moved:
            break
    return {name: (values[name], reached[name]) for name in values}


def leave_one_out(values: Mapping[str, float], quick: bool = True) -> dict[str, dict]:
    """Per quantity of :data:`ALTERNATIVES`: the other row's number its value predicts,
    and its value identified from the other row alone with the own row's number that
    predicts; each against the published number and the part's tolerance."""
    out = {}
    for q in QUANTITIES:
        if q.name not in ALTERNATIVES:
            continue
        row, index, part, workload, published = ALTERNATIVES[q.name]
        alt, _ = _solve(q, dict(values), quick, (workload, published))
        out[q.name] = {
            "forward": _prediction(row, index, part, published,
                                   q.measure(values, workload, quick)),
            "backward": {"value": round(alt, 4), **_prediction(
                q.row, q.index, q.part, q.published,
                q.measure({**values, q.name: alt}, q.workload, quick))}}
    return out


def _prediction(row: str, index: int, part: str, published: float, simulated: float) -> dict:
    """A predicted part against its published number and tolerance (points)."""
    from cxlsim.validation.checks import _field

    tolerance = float(re.search(r"\d+(?:\.\d+)?",
                                _field(row, "tolerance").split(" / ")[index])[0])
    return {"row": row, "part": part, "simulated": round(simulated, 2),
            "published": published, "holds": abs(simulated - published) <= tolerance}


def record(quick: bool = True, log: Callable[[str], object] = print) -> dict:
    """Identify, run the leave-one-out and write :data:`RECORD` beside this module."""
    found = identify(quick=quick, log=log)
    values = {name: value for name, (value, _) in found.items()}
    loo = leave_one_out(values, quick)
    data = {"mode": "quick" if quick else "full", "quantities": [
        {"name": q.name, "value": round(values[q.name], 4), "reached": found[q.name][1],
         **({"leave_one_out": loo[q.name]} if q.name in loo else
            {"no_leave_one_out": NO_ALTERNATIVE[q.name]})} for q in QUANTITIES]}
    Path(__file__).with_name(RECORD).write_text(
        yaml.safe_dump(data, sort_keys=False, width=100), encoding="utf-8")
    return data


def recorded() -> dict:
    """:data:`RECORD` as shipped."""
    return yaml.safe_load(resources.files(__package__).joinpath(RECORD).read_text(
        encoding="utf-8"))


def section() -> list[str]:
    """The fidelity page's rows for these quantities (its identified-quantities table):
    the shipped value, range, row and the recorded leave-one-out."""
    from cxlsim.validation.markdown import cell

    rows = {r["name"]: r for r in recorded()["quantities"]}
    lines = []
    for q in QUANTITIES:
        r = rows[q.name]
        if "leave_one_out" in r:
            f, b = r["leave_one_out"]["forward"], r["leave_one_out"]["backward"]
            loo = (f"from {q.row} ({r['value']:g}): {f['row']} {f['part']} {f['simulated']:.2f} "
                   f"% (published {f['published']:g} %)<br>from {f['row']} alone "
                   f"({b['value']:g}): {q.row} {q.part} {b['simulated']:.2f} % (published "
                   f"{b['published']:g} %)")
            verdict = ("agree within the rows' tolerances" if f["holds"] and b["holds"] else
                       "disagree: the two cache services want different values")
        else:
            loo, verdict = "none", r["no_leave_one_out"]
        where = "the TPP experiments' mlp" if q.name == "mlp" else "Cache2's generator"
        lines.append("| " + " | ".join((
            cell(f"{q.name} ({where})"), cell(f"{q.value_now():g}"),
            cell(f"{q.low:g}-{q.high:g}: {q.meaning}"), cell(f"{q.row} ({q.part})"), loo,
            cell(f"{verdict} (recorded in {recorded()['mode']} mode by python -m "
                 "cxlsim.validation.identify)"))) + " |")
    return lines


if __name__ == "__main__":
    data = record(quick="--full" not in sys.argv[1:])
    print(yaml.safe_dump(data, sort_keys=False, width=100))
