"""Names that moved to another package keep working from the old one for a release, with
a DeprecationWarning naming the new place (docs/changes.md lists the moved modules)."""

from __future__ import annotations

import importlib

import pytest

MOVED = [("cxlsim.memory", "KernelMemory", "cxlsim.mm"),
         ("cxlsim.memory", "Numa", "cxlsim.mm"),
         ("cxlsim.memory", "Placement", "cxlsim.mm"),
         ("cxlsim.memory", "policy_shares", "cxlsim.mm"),
         ("cxlsim.tiered", "MigrationParams", "cxlsim.mm"),
         ("cxlsim.tiered", "Migrator", "cxlsim.mm")]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_a_moved_name_still_works_and_warns(old, name, new):
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to {new}\.{name}"):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)


def test_from_import_of_a_moved_name_warns():
    with pytest.warns(DeprecationWarning, match="cxlsim.mm.KernelParams"):
        from cxlsim.memory import KernelParams  # noqa: F401


def test_moved_names_are_not_in_the_old_packages_all():
    for old, name, _ in MOVED:
        assert name not in importlib.import_module(old).__all__
