"""Quick forms: a study at a coarser scale, chosen by the similarity law.

``cxlsim run NAME --quick`` runs the same study on a trace ``F`` times smaller: the
similarity law's scale ``S`` times ``F`` (so the run stands for the same real system),
the trace's records, its footprint and every generator parameter that is a share of
them divided by ``F``, the epoch and warm-up (in records) and the memory nodes' absolute
capacities likewise. Every tunable keeps its kernel value; the law scales it from the
new ``S`` (:mod:`cxlsim.mm.similarity`). ``F`` is the smallest power of two that leaves
at most :data:`QUICK_RECORDS` records. The changes are ``--set`` assignments, printed
before the run, so the quick form of any study can be written out by hand.

A kind that is not a scaled study (a curve check, a link study) has no coarser form:
:meth:`~cxlsim.experiments.spec.ExperimentSpec.coarser` says why, and it runs as is.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from cxlsim.units import format_size, parse_size

#: Most records a quick form's trace holds (a point then takes seconds).
QUICK_RECORDS = 1 << 24

#: How a change takes a value, given the factor: a size and a count (records, keys) are
#: divided by it, the scale multiplied.
RULES = ("size", "count", "scale")


@dataclass(frozen=True)
class Change:
    """One ``--set`` of a quick form: the key, its value before and after, and the rule
    that took it (one of :data:`RULES`)."""

    key: str
    old: Any
    new: Any
    rule: str = "size"

    @classmethod
    def of(cls, key: str, old: Any, rule: str, factor: int) -> "Change":
        return cls(key, old, shrink(rule, old, factor), rule)

    def assignment(self) -> str:
        return f"{self.key}={self.new}"


@dataclass(frozen=True)
class QuickForm:
    """A study's quick form: the factor, its changes, and notes on what the coarser
    scale does to the run (a TLB left with one set); or, when ``factor`` is 1, why
    there is none (``why_not``)."""

    factor: int
    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()
    why_not: str = ""

    def overrides(self) -> list[str]:
        """The changes as ``--set`` assignments."""
        return [c.assignment() for c in self.changes]

    def describe(self, name: str) -> str:
        """What ``--quick`` did, for stderr: one line, then a line per change and note."""
        if self.factor == 1:
            return f"cxlsim: --quick: {name} runs as is: {self.why_not}"
        lines = [f"cxlsim: --quick: {name} at a {self.factor}x coarser scale (the same "
                 f"study by the similarity law):"]
        lines += [f"  {c.key}: {c.old} -> {c.new}" for c in self.changes]
        lines += [f"  {note}" for note in self.notes]
        return "\n".join(lines)


def factor_for(records: int) -> int:
    """The smallest power of two ``F`` with ``records / F`` at most :data:`QUICK_RECORDS`."""
    factor = 1
    while records > factor * QUICK_RECORDS:
        factor *= 2
    return factor


def shrink(rule: str, value: Any, factor: int) -> Any:
    """``value`` taken by ``rule`` at ``factor`` (a size as text, in its units; a share
    of the footprint, ``35 %``, stays)."""
    if rule == "scale":
        return f"{float(value) * factor:g}"
    if rule == "count":
        return max(int(value) // factor, 1) if value else 0
    if isinstance(value, str) and value.strip().endswith("%"):
        return value
    return format_size(parse_size(value) // factor)


def quick_form(spec: Any) -> QuickForm:
    """``spec``'s quick form (:meth:`~cxlsim.experiments.spec.ExperimentSpec.coarser`),
    with its sweep's grid values of the keys it changes taken the same way, so that no
    point undoes a change."""
    form = spec.coarser()
    if form.factor == 1:
        return form
    changes = [c for c in form.changes if not _same(c.rule, c.old, c.new)]
    rules = {c.key: c.rule for c in changes}
    for key, values in (spec.sweep.grid.items() if spec.sweep else ()):
        new = [shrink(rules[key], v, form.factor) for v in values] if key in rules else values
        if list(map(str, new)) != list(map(str, values)):
            changes.append(Change(f"sweep.grid.{key}", _flow(values), _flow(new), rules[key]))
    return QuickForm(form.factor, tuple(changes), form.notes)


def quick_overrides(spec: Any) -> list[str]:
    """The ``--set`` assignments of ``spec``'s quick form, its description printed on
    stderr (what ``cxlsim run --quick`` and ``run_file(..., quick=True)`` do)."""
    form = quick_form(spec)
    print(form.describe(spec.name), file=sys.stderr)
    return form.overrides()


def _same(rule: str, old: Any, new: Any) -> bool:
    """Whether a change leaves the value as it was (``0 MiB`` and ``0 B`` alike)."""
    if rule == "size" and not str(old).strip().endswith("%"):
        return parse_size(old) == parse_size(new)
    return str(old) == str(new)


def _flow(values: list[Any]) -> str:
    """A list as ``--set`` reads it: ``[0 B, 64 MiB]``."""
    return "[" + ", ".join(map(str, values)) + "]"
