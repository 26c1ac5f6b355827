"""Run every registered check and assemble the validation table."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import as_completed

from cxlsim.validation import FAIL, NOT_MODELLED, Outcome, registered_checks, targets


def validate(quick: bool = False, progress: bool = False,
             jobs: int = 1) -> list[dict[str, str | None]]:
    """One row per published target, in the order of the targets table; notes in ``note``.
    The checks are independent and seeded: ``jobs`` worker processes run them side by side
    with the same rows as one."""
    from cxlsim.experiments.progress import progress_bar
    from cxlsim.experiments.sweep import open_executor

    outcomes: dict[str, Outcome] = {}
    checks = registered_checks()
    # the workers first: a fork copies this process only while no other thread (tqdm's
    # monitor) runs, else they start from a forkserver (0.8 s more)
    with open_executor("local", min(jobs, len(checks))) as pool, \
            progress_bar(progress, len(checks), "validate", "check") as bar:
        if pool is None:
            done: Iterable = ((ids, fn, fn(quick)) for ids, fn in checks)
        else:
            futures = {pool.submit(fn, quick): (ids, fn) for ids, fn in checks}
            done = ((*futures[f], f.result()) for f in as_completed(futures))
        for ids, fn, results in done:
            missing = set(ids) - set(results)
            if missing:
                raise RuntimeError(f"check {fn.__name__} gave no outcome for {sorted(missing)}")
            outcomes.update(results)
            bar.update()
    rows = []
    for target in targets():
        outcome = outcomes.get(target["id"])
        rows.append({
            "id": target["id"], "quantity": target["quantity"],
            "published": target["published"],
            "simulated": outcome.simulated if outcome else None,
            "tolerance": target["tolerance"],
            "status": outcome.status if outcome else NOT_MODELLED,
            "note": outcome.note if outcome else "",
        })
    return rows


def failed(rows: list[dict[str, str | None]]) -> bool:
    """True when an implemented target failed."""
    return any(row["status"] == FAIL for row in rows)
