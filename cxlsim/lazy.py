"""Lazy package attributes: a package names what it offers, and the module that defines
each name is imported at its first use.

``import cxlsim`` and ``cxlsim --help`` must not pay for pandas, plotly, numba and
scipy (about a second together), which only running something needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: attribute ``name`` comes from module
    ``where[name]`` (relative to ``package``), imported once, at first use."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[name], package), name)
        setattr(import_module(package), name, value)  # the next look-up is direct
        return value

    return __getattr__
