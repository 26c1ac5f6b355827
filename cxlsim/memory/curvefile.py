"""Curve files: measured loaded-latency curves that replace a memory target's model.

A curve file holds, per read fraction, points (total bandwidth, mean read latency) as a
tool such as Intel MLC's loaded-latency mode measures them, bandwidth increasing. Two
forms are read:

YAML or TOML, validated like every other input file (units are required)::

    name: xeon6-ddr5-measured          # optional; default: the file name
    source: where the points come from
    curves:
      - read_fraction: 1.0
        points: [[10 GB/s, 112 ns], [150 GB/s, 131 ns], [230 GB/s, 260 ns]]

CSV, one point per row, the units in the column names::

    read_fraction,bandwidth_GBps,latency_ns
    1.0,10,112

A mistake in either names the file, the line and what was expected
(:class:`~cxlsim.errors.InputError`). An experiment on the epoch level names curve
files under ``curves`` (memory target -> file, or the same mapping inline);
:func:`write_curves` writes any curves -- e.g. the model's own,
:func:`~cxlsim.memory.loaded.model_curves` -- in the CSV form.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field, field_validator

from cxlsim.config import StrictModel, expand_presets, load_file, validate_document
from cxlsim.config.source import Document, TOML_SUFFIXES, YAML_SUFFIXES
from cxlsim.errors import InputError, Location
from cxlsim.memory.loaded import Curve, CurveTarget, monotone_problem
from cxlsim.units import DeliveredBandwidth, Time, format_bandwidth, format_time

#: The CSV form's columns.
CSV_COLUMNS = ("read_fraction", "bandwidth_GBps", "latency_ns")


class CurveSpec(StrictModel):
    """The measured points at one read fraction."""

    read_fraction: float = Field(gt=0, le=1, description="fraction of the bytes moved that are "
                                                         "read (1: all reads)")
    points: list[tuple[DeliveredBandwidth, Time]] = Field(
        min_length=2, description="(total bandwidth, mean read latency), bandwidth increasing")

    @field_validator("points")
    @classmethod
    def _monotone(cls, points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        problem = monotone_problem(points)
        if problem:
            raise ValueError(problem)
        return points

    def curve(self) -> Curve:
        bandwidth, latency = np.array(self.points, dtype=np.float64).T
        return Curve(self.read_fraction, bandwidth, latency)


class CurveFileSpec(StrictModel):
    """A curve file: one memory target's measured loaded-latency curves."""

    name: str | None = Field(None, description="target label (default: the file name)")
    source: str = Field("", description="where the measurements come from")
    curves: list[CurveSpec] = Field(min_length=1, description="one curve per read fraction")

    @field_validator("curves")
    @classmethod
    def _distinct(cls, curves: list[CurveSpec]) -> list[CurveSpec]:
        fractions = [c.read_fraction for c in curves]
        if len(set(fractions)) < len(fractions):
            raise ValueError(f"read fractions must differ from curve to curve; "
                             f"found {fractions}")
        return curves

    def target(self, name: str | None = None) -> CurveTarget:
        """The memory target these curves describe, labelled ``name`` (default: ``name``)."""
        return CurveTarget(name or self.name or "curves", [c.curve() for c in self.curves])


def curve_document(path: str | Path) -> Document:
    """A curve file as a :class:`Document` (not yet validated); CSV rows are checked here."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in YAML_SUFFIXES + TOML_SUFFIXES:
        return expand_presets(load_file(path))
    if suffix != ".csv":
        raise InputError(f"a curve file must be .csv, {', '.join(YAML_SUFFIXES)} or "
                         f"{', '.join(TOML_SUFFIXES)}; found {suffix or 'no suffix'!r}",
                         location=str(path))
    return _csv_document(path)


def _csv_document(path: Path) -> Document:
    """The CSV form as the YAML form's data, each row checked and located at its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the curve file: {exc}", location=str(path)) from None
    rows = csv.reader(text.splitlines())
    header = [h.strip() for h in next(rows, [])]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise InputError(f"expected the columns {', '.join(CSV_COLUMNS)}; missing "
                         f"{', '.join(missing)}", location=Location(str(path), 1))
    col = {c: header.index(c) for c in CSV_COLUMNS}
    groups: dict[float, list[tuple[float, float]]] = {}
    for line, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        where = Location(str(path), line)
        values = []
        for name in CSV_COLUMNS:
            cell = row[col[name]].strip() if col[name] < len(row) else ""
            try:
                value = float(cell)
            except ValueError:
                value = float("nan")
            if not 0 <= value < float("inf"):
                raise InputError(f"expected a non-negative number; found {cell!r}",
                                 location=where, key=name)
            values.append(value)
        fraction, gbps, ns = values
        if not 0 < fraction <= 1:
            raise InputError(f"expected a fraction in (0, 1]; found {fraction:g}",
                             location=where, key="read_fraction")
        points = groups.setdefault(fraction, [])
        points.append((gbps * 1e9, ns))
        problem = monotone_problem(points[-2:], len(points) - 2)
        if problem:
            raise InputError(f"at read fraction {fraction:g}: {problem}", location=where)
    if not groups:
        raise InputError(f"no points: expected rows of {', '.join(CSV_COLUMNS)}",
                         location=str(path))
    for fraction, points in groups.items():
        if len(points) < 2:
            raise InputError(f"at read fraction {fraction:g}: expected at least two points; "
                             "found one", location=str(path))
    data = {"name": path.stem, "curves": [
        {"read_fraction": fraction, "points": [[format_bandwidth(b), format_time(lat)]
                                               for b, lat in points]}
        for fraction, points in groups.items()]}
    return Document(data, str(path))


def load_curve_file(path: str | Path) -> CurveFileSpec:
    """Read and validate a curve file (any form)."""
    return validate_document(CurveFileSpec, curve_document(path))


def load_curves(path: str | Path, name: str | None = None) -> CurveTarget:
    """The memory target a curve file describes (label: ``name``, its ``name``, or its stem)."""
    spec = load_curve_file(path)
    return spec.target(name or spec.name or Path(path).stem)


def write_curves(path: str | Path, curves: Sequence[Curve]) -> None:
    """Write curves in the CSV form."""
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(CSV_COLUMNS)
        for c in curves:
            for b, lat in zip(c.bandwidth, c.latency):
                out.writerow([f"{c.read_fraction:.6g}", f"{b / 1e9:.9g}", f"{lat:.9g}"])
