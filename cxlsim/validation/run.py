"""Run every registered check and assemble the validation table."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from concurrent.futures import as_completed

from cxlsim.validation import (CALIBRATED, FAIL, NOT_MODELLED, Outcome, registered_checks,
                               targets, verdict)

_NUMBER = r"[-+]?\d+(?:\.\d+)?"


def held(target: dict[str, str], outcome: Outcome) -> Outcome:
    """A CALIBRATED row still answers to its tolerance: the published value is an input
    of the model, so the row cannot be a PASS, but when the simulated value drifts out of
    the tolerance (a model change moved it) the fit no longer holds and the row FAILs.
    The tolerance must read "±N %" (relative) or "±N points" (absolute)."""
    if outcome.status != CALIBRATED:
        return outcome
    tolerance = re.search(rf"±\s*({_NUMBER})\s*(%|point)", target["tolerance"])
    if tolerance is None:
        raise ValueError(f"{target['id']}: a CALIBRATED row needs a '±N %' or '±N points' "
                         f"tolerance, not {target['tolerance']!r}")
    simulated = float(re.search(_NUMBER, outcome.simulated)[0])
    published = float(re.search(_NUMBER, target["published"])[0])
    limit, points = float(tolerance[1]), tolerance[2] == "point"
    off = simulated - published if points else (simulated / published - 1) * 100
    if abs(off) <= limit:
        return outcome
    unit = "points" if points else "%"
    return Outcome(outcome.simulated, FAIL, "; ".join(filter(None, (
        f"calibrated to the published {target['published']} but drifted {off:+.2f} "
        f"{unit} from it (tolerance {target['tolerance']})", outcome.note))))


def selected(only: Iterable[str]) -> set[str]:
    """The target ids ``only`` names: an id (``T8.5``) or a family (``T8``: every
    ``T8.*``). A name that matches no target is an :class:`InputError`."""
    from cxlsim.errors import InputError

    ids = [t["id"] for t in targets()]
    chosen: set[str] = set()
    for name in only:
        hits = {i for i in ids if i == name or i.startswith(name + ".")}
        if not hits:
            families = sorted({i.split(".")[0] for i in ids}, key=lambda f: int(f[1:]))
            raise InputError(f"{name!r} names no target; expected an id such as T8.5 or a "
                             f"family: {', '.join(families)}", location="--only")
        chosen |= hits
    return chosen


def validate(quick: bool = False, progress: bool = False, jobs: int = 1,
             only: Iterable[str] | None = None,
             on_row: Callable[[dict[str, str | None]], object] | None = None
             ) -> list[dict[str, str | None]]:
    """One row per published target, in the order of the targets table; notes in ``note``.
    The checks are independent and seeded: ``jobs`` worker processes run them side by side
    with the same rows as one. ``only`` (ids or families, :func:`selected`) runs just the
    checks behind those targets and returns their rows; ``on_row(row)`` is called with
    each row as soon as its check has finished."""
    from cxlsim.experiments.progress import progress_bar
    from cxlsim.experiments.sweep import open_executor
    from cxlsim.runwarnings import counted, once_each

    wanted = None if only is None else selected(only)
    outcomes: dict[str, Outcome] = {}
    checks = [(ids, fn) for ids, fn in registered_checks()
              if wanted is None or wanted & set(ids)]
    # the workers first: a fork copies this process only while no other thread (tqdm's
    # monitor) runs, else they start from a forkserver (0.8 s more); run warnings are
    # shown once each, with a count, after the bar
    with once_each() as warned, open_executor("local", min(jobs, len(checks))) as pool, \
            progress_bar(progress, len(checks), "validate", "check") as bar:
        if pool is None:
            done: Iterable = ((ids, fn, fn(quick)) for ids, fn in checks)
        else:
            futures = {pool.submit(counted, fn, quick): (ids, fn) for ids, fn in checks}

            def outcomes_of(future):
                results, tally = future.result()
                warned.merge(tally)
                return results

            done = ((*futures[f], outcomes_of(f)) for f in as_completed(futures))
        for ids, fn, results in done:
            missing = set(ids) - set(results)
            if missing:
                raise RuntimeError(f"check {fn.__name__} gave no outcome for {sorted(missing)}")
            outcomes.update(results)
            if on_row is not None:
                for target in targets():
                    if target["id"] in results:
                        on_row(_row(target, results[target["id"]]))
            bar.update()
    return [_row(target, outcomes.get(target["id"])) for target in targets()
            if wanted is None or target["id"] in wanted]


def _row(target: dict[str, str], outcome: Outcome | None) -> dict[str, str | None]:
    """The table's row of ``target`` with its check's ``outcome`` (None: not modelled)."""
    outcome = outcome and held(target, outcome)
    return {"id": target["id"], "quantity": target["quantity"],
            "published": target["published"],
            "simulated": outcome.simulated if outcome else None,
            "tolerance": target["tolerance"],
            "status": outcome.status if outcome else NOT_MODELLED,
            "note": outcome.note if outcome else ""}


def failed(rows: list[dict[str, str | None]]) -> bool:
    """True when an implemented target failed (whatever its status says it rests on)."""
    return any(verdict(str(row["status"])) == FAIL for row in rows)
