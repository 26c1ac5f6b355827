"""Run every registered check and assemble the validation table."""

from __future__ import annotations

from collections.abc import Iterable

from tqdm.auto import tqdm

from cxlsim.validation import FAIL, NOT_MODELLED, Outcome, registered_checks, targets


def validate(quick: bool = False, progress: bool = False) -> list[dict[str, str | None]]:
    """One row per published target, in the order of the targets table; notes in ``note``."""
    outcomes: dict[str, Outcome] = {}
    checks = registered_checks()
    bar: Iterable = tqdm(checks, desc="validate", unit="check", disable=not progress)
    for ids, fn in bar:
        results = fn(quick)
        missing = set(ids) - set(results)
        if missing:
            raise RuntimeError(f"check {fn.__name__} gave no outcome for {sorted(missing)}")
        outcomes.update(results)
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
