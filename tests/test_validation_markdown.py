"""The validation table as Markdown (the documentation's validation page): columns, cells
that would break a table, the status counts and the notes, on rows made by hand."""

from __future__ import annotations

import json
import re

from cxlsim.validation import PASS, ROW_KEYS, calibrated, verdict
from cxlsim.validation.markdown import COLUMNS, cell, markdown_table, summary

ROWS = [
    {"id": "T1.1", "quantity": "speedup t_pcie/t_cxl at 64 B", "published": "14.0x",
     "simulated": "14.18x", "tolerance": "±1 %", "status": "FAIL",
     "note": "+1.27% from the published 14;\nthe closed form gives 14.05x"},
    {"id": "T8.1", "quantity": "DRAM loaded latency", "published": "measured curve",
     "simulated": "mean |Δ| 2.1 ns", "tolerance": "[0, 10] ns", "status": "PASS", "note": ""},
    {"id": "T6.1", "quantity": "TPP vs all-local", "published": "gap < 1 %",
     "simulated": "0.0 %", "tolerance": "< 1.5 %", "status": "PASS", "note": ""},
    {"id": "T9.9", "quantity": "a target without its check", "published": "1x",
     "simulated": None, "tolerance": "±1 %", "status": "NOT MODELLED", "note": ""},
]


def _cells(line: str) -> list[str]:
    """A table line's cells, split at the pipes that are not escaped."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_the_columns_are_the_json_rows_keys():
    assert COLUMNS == ROW_KEYS


def test_one_line_per_row_under_the_header_every_line_with_six_cells():
    lines = markdown_table(ROWS).splitlines()
    assert _cells(lines[0]) == list(COLUMNS)
    assert set(lines[1]) <= set("|-")
    body = lines[2:2 + len(ROWS)]
    assert [_cells(line)[0] for line in body] == ["T1.1", "T8.1", "T6.1", "T9.9"]
    assert all(len(_cells(line)) == len(COLUMNS) for line in lines[:2 + len(ROWS)])


def test_cells_escape_markdown_and_show_a_missing_value_as_a_dash():
    lines = markdown_table(ROWS).splitlines()
    assert _cells(lines[3])[3] == r"mean \|Δ\| 2.1 ns"
    assert _cells(lines[2])[1] == r"speedup t\_pcie/t\_cxl at 64 B"
    assert _cells(lines[4])[2] == "gap &lt; 1 %"
    assert _cells(lines[5])[3] == "\u2014"
    assert cell("") == cell(None) == "\u2014"
    assert cell("a\n  b") == "a b"
    assert cell("[x](y) *z* `w` \\") == r"\[x\](y) \*z\* \`w\` \\"


def test_the_counts_follow_the_table_in_the_order_statuses_first_appear():
    assert summary(ROWS) == "1 FAIL, 2 PASS, 1 NOT MODELLED"
    assert "\n**1 FAIL, 2 PASS, 1 NOT MODELLED**\n" in markdown_table(ROWS)


def test_a_status_that_rests_on_a_calibrated_value_is_counted_apart():
    rows = [*ROWS, {**ROWS[1], "id": "T8.9", "status": calibrated(PASS, "idle")}]
    assert summary(rows) == "1 FAIL, 2 PASS, 1 NOT MODELLED, 1 PASS (idle calibrated)"
    assert verdict(rows[-1]["status"]) == PASS


def test_notes_below_the_table_one_line_each_only_rows_that_have_one():
    text = markdown_table(ROWS)
    table, notes = text.split("### Notes")
    assert "closed form" not in table
    items = [line for line in notes.splitlines() if line.startswith("- ")]
    assert items == [r"- **T1.1**: +1.27% from the published 14; the closed form gives 14.05x"]


def test_rows_as_json_gives_them_have_no_notes_and_no_notes_heading():
    rows = json.loads(json.dumps([{k: row[k] for k in ROW_KEYS} for row in ROWS]))
    text = markdown_table(rows)
    assert "Notes" not in text
    assert text.count("\n| T") == len(ROWS)


def test_no_rows_is_a_header_alone():
    assert markdown_table([]).splitlines() == ["| " + " | ".join(COLUMNS) + " |",
                                               "|" + "---|" * len(COLUMNS)]
