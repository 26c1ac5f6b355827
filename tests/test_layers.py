"""The package map in cxlsim/README.md is true: every subpackage listed, documented, and
importing only layers listed before it (so no import cycles between layers)."""

from __future__ import annotations

import ast
import re

from conftest import REPO

PACKAGE = REPO / "cxlsim"


def _layers() -> list[str]:
    """Subpackages and top-level modules in the README's order."""
    text = (PACKAGE / "README.md").read_text()
    names = []
    for row in re.findall(r"^\| (`[^|]+`) \|", text, re.M):
        names += [n.strip("`/").removesuffix(".py") for n in re.findall(r"`[^`]+`", row)]
    return names


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cxlsim."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("cxlsim.")}
    return found


def test_every_subpackage_is_in_the_map_and_documented():
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert subpackages <= set(_layers())
    for name in subpackages:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
        assert doc, f"cxlsim/{name}/__init__.py has no docstring"


def test_layers_import_only_layers_before_them():
    order = {name: i for i, name in enumerate(_layers())}
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        layer = rel.parts[0].removesuffix(".py")
        if layer in ("__init__", "__main__"):  # the package's entry points: any layer
            continue
        for used in _imports(path) - {layer}:
            if order[used] > order[layer]:
                wrong.append(f"{rel} imports cxlsim.{used}")
    assert not wrong, wrong
