"""The validation table as Markdown, for the documentation site.

:func:`markdown_table` takes the rows of ``cxlsim validate --json`` (or of
:func:`cxlsim.validation.run.validate`, which also carries each row's ``note``) and
returns a Markdown table -- id, quantity, published, simulated, tolerance, status -- with
the status counts under it and the notes below that. The documentation's build runs the
validation and puts this text into its validation page, so the page shows what the code
gives today.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: The table's columns, in order: the keys of a ``--json`` row.
COLUMNS = ("id", "quantity", "published", "simulated", "tolerance", "status")

# Characters Markdown would read as syntax inside a table cell or a list item.
_ESCAPED = str.maketrans({c: "\\" + c for c in "\\`*_[]|"} | {"<": "&lt;", ">": "&gt;"})


def cell(value: object) -> str:
    """``value`` as the text of one table cell: on one line, Markdown syntax escaped, an
    empty or missing value as an em dash."""
    text = "" if value is None else " ".join(str(value).split())
    return text.translate(_ESCAPED) if text else "\u2014"


def summary(rows: Iterable[Mapping[str, object]]) -> str:
    """The status counts as ``cxlsim validate`` prints them, e.g. ``2 FAIL, 3 PASS``: in
    the order each status first appears; a status that says what it rests on (``PASS
    (idle calibrated)``, :func:`cxlsim.validation.calibrated`) is counted apart."""
    counts: dict[str, int] = {}
    for row in rows:
        status = str(row["status"])
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items())


def markdown_table(rows: Iterable[Mapping[str, object]]) -> str:
    """The validation rows as Markdown: a table of :data:`COLUMNS`, the status counts,
    and, under a ``Notes`` heading, each row's note (rows without a ``note`` key, as
    ``--json`` gives them, have none)."""
    rows = list(rows)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(key)) for key in COLUMNS) + " |"
              for row in rows]
    if rows:
        lines += ["", f"**{summary(rows)}**"]
    notes = [f"- **{cell(row['id'])}**: {cell(row['note'])}"
             for row in rows if row.get("note")]
    if notes:
        lines += ["", "### Notes", "", *notes]
    return "\n".join(lines) + "\n"
