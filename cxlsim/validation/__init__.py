"""``cxlsim validate``: every published target, simulated versus published.

A *check* runs the simulator for one or more targets and returns an :class:`Outcome`
per target id. Targets whose check is not registered yet are NOT MODELLED: the table
never shows a value that did not come out of a model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import import_module, resources

import yaml

PASS, FAIL, EXPLAINED, NOT_MODELLED = "PASS", "FAIL", "EXPLAINED", "NOT MODELLED"
#: The published value is an input of the model (fitted to this row): it cannot PASS, and
#: it FAILs when its value drifts out of the tolerance (:func:`run.held`).
CALIBRATED = "CALIBRATED"
#: Quick mode does not judge this row (its coarser scale cannot give the full run's
#: status; the note says why): shown, not counted as a pass or a failure.
SMOKE = "SMOKE"


def calibrated(status: str, what: str) -> str:
    """The status of a row whose judged quantity rests on ``what``, a value taken from
    the measurement it is judged on (``PASS (idle calibrated)``): shown and counted apart
    from the rows that rest on nothing measured."""
    return f"{status} ({what} calibrated)"


def verdict(status: str) -> str:
    """A status without what it rests on: ``FAIL (idle calibrated)`` -> ``FAIL``."""
    return status.split(" (", 1)[0]


#: Keys of one validation row, in order (the ``--json`` schema).
ROW_KEYS = ("id", "quantity", "published", "simulated", "tolerance", "status")


@dataclass(frozen=True)
class Outcome:
    """A check's verdict on one target: the simulated value as text, status, and why."""

    simulated: str
    status: str
    note: str = ""


def smoke(outcome: Outcome, why: str) -> Outcome:
    """``outcome`` as quick mode shows a row it does not judge (:data:`SMOKE`): its value,
    why quick mode cannot judge it, and the status it would have had."""
    return Outcome(outcome.simulated, SMOKE, "; ".join(filter(None, (
        f"not judged in quick mode: {why} (as judged: {outcome.status})", outcome.note))))


Check = Callable[[bool], dict[str, Outcome]]
_CHECKS: list[tuple[tuple[str, ...], Check]] = []


def check(*target_ids: str) -> Callable[[Check], Check]:
    """Register a function ``f(quick) -> {target_id: Outcome}`` for these targets."""

    def deco(fn: Check) -> Check:
        _CHECKS.append((target_ids, fn))
        return fn

    return deco


def targets() -> list[dict[str, str]]:
    """The published targets table (id, quantity, published, tolerance): a new list of
    new rows each call, parsed once per process (checks look up their rows often)."""
    return [dict(row) for row in _targets()]


@cache
def _targets() -> tuple[dict[str, str], ...]:
    text = resources.files(__package__).joinpath("targets.yaml").read_text(encoding="utf-8")
    return tuple({k: str(v) for k, v in row.items()} for row in yaml.safe_load(text))


#: Modules of this package whose checks register when imported, a family each.
CHECK_MODULES = ("tpp", "hmsdk", "caches", "checks")  # the longest first: they start first


def registered_checks() -> list[tuple[tuple[str, ...], Check]]:
    """The registered checks, importing the modules that define them; in the order of
    :data:`CHECK_MODULES` whichever imports which (a module may import another's helpers)."""
    for module in CHECK_MODULES:
        import_module(f"{__package__}.{module}")
    return sorted(_CHECKS, key=lambda c: CHECK_MODULES.index(c[1].__module__.rpartition(".")[2]))


def published_number(target_id: str) -> float:
    """The number in the published column of a target ("14.0x" -> 14.0)."""
    text = next(t["published"] for t in targets() if t["id"] == target_id)
    return float(re.search(r"[-+]?\d+(?:\.\d+)?", text).group())


def field(target_id: str, key: str) -> str:
    """A column of a target as text."""
    return next(t[key] for t in targets() if t["id"] == target_id)


@cache
def tolerance(target_id: str) -> float:
    """The target's "±N %" / "within N %" as a fraction, "±N points" or ">= N point" in
    points: acceptance criteria live in the targets file, not here."""
    m = re.search(r"(?:±|within |>= )\s*(\d+(?:\.\d+)?)\s*(%|point)",
                  field(target_id, "tolerance"))
    return float(m[1]) / 100 if m[2] == "%" else float(m[1])
