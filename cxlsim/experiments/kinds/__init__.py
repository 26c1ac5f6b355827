"""Experiment kinds, one module each; a module registers its kind (``@register("NAME")``)
when imported. :func:`kind_modules` finds which module names which kind by reading the
modules' sources, so a run imports only its own kind's module (and what that needs):
a new kind needs only its file.
"""

from __future__ import annotations

import pkgutil
import re
from functools import cache
from importlib import import_module, resources

_REGISTER = re.compile(r"""^@register\(["']([^"']+)["']\)""", re.M)


@cache
def kind_modules() -> dict[str, str]:
    """Kind name -> the module of this package that registers it."""
    found = {}
    for module in pkgutil.iter_modules(__path__):
        text = resources.files(__name__).joinpath(f"{module.name}.py").read_text("utf-8")
        for kind in _REGISTER.findall(text):
            found[kind] = f"{__name__}.{module.name}"
    return found


def import_kind(kind: str) -> None:
    """Import the module registering ``kind`` (nothing if no module does)."""
    if kind in kind_modules():
        import_module(kind_modules()[kind])


def import_all() -> None:
    """Import every kind's module."""
    for module in set(kind_modules().values()):
        import_module(module)
