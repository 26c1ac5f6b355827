"""Lazy package attributes: a package names what it offers, and the module that defines
each name is imported at its first use.

``import cxlsim`` and ``cxlsim --help`` must not pay for pandas, plotly, numba and
scipy (about a second together), which only running something needs.

A name that moved to another package stays reachable from its old one for a release:
``moved`` maps it to its new package, and each use warns (a DeprecationWarning naming the
new place).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_attributes(package: str, where: Mapping[str, str],
                    moved: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: attribute ``name`` comes from module
    ``where[name]`` (relative to ``package``), imported once, at first use; or, for a
    name that moved, from package ``moved[name]`` with a DeprecationWarning at each use."""
    moved = moved or {}

    def __getattr__(name: str) -> Any:
        if name in moved:
            warnings.warn(f"{package}.{name} moved to {moved[name]}.{name}; the old name "
                          f"goes in the next release", DeprecationWarning, stacklevel=2)
            return getattr(import_module(moved[name]), name)
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[name], package), name)
        setattr(import_module(package), name, value)  # the next look-up is direct
        return value

    return __getattr__
