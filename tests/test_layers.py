"""The package map in cxlsim/README.md is true: every subpackage listed, documented, and
importing only layers listed before it; and no import cycle between any two modules."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import networkx as nx
from conftest import REPO

PACKAGE = REPO / "cxlsim"


def _layers() -> list[str]:
    """Subpackages and top-level modules in the README's order."""
    text = (PACKAGE / "README.md").read_text()
    names = []
    for row in re.findall(r"^\| (`[^|]+`) \|", text, re.M):
        names += [n.strip("`/").removesuffix(".py") for n in re.findall(r"`[^`]+`", row)]
    return names


@functools.cache
def _import_graph(package: Path) -> nx.DiGraph:
    """Module -> module it imports, for every ``import`` and ``from ... import`` anywhere
    in a module of ``package`` (function bodies and ``TYPE_CHECKING`` blocks too; relative
    imports resolved). A name imported from a package is an edge to the package's
    ``__init__`` unless the name is one of its submodules."""
    def name_of(path: Path) -> str:
        parts = path.relative_to(package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    files = {name_of(p): p for p in package.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[:len(here) + 1 - node.level] if node.level else []
                base = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]
            else:
                continue
            graph.add_edges_from((name, t) for t in targets if t in files and t != name)
    return graph


def _layer(module: str) -> str:
    """``cxlsim.memory.dram`` -> ``memory``; the package's own ``__init__``: ``__init__``."""
    return module.split(".")[1] if "." in module else "__init__"


def test_every_subpackage_is_in_the_map_and_documented():
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert subpackages <= set(_layers())
    for name in subpackages:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
        assert doc, f"cxlsim/{name}/__init__.py has no docstring"


def test_layers_import_only_layers_before_them():
    # the package's entry points import any layer, and no layer imports them
    order = {name: i for i, name in enumerate([*_layers(), "__init__", "__main__"])}
    unmapped = {_layer(m) for m in _import_graph(PACKAGE).nodes} - set(order)
    assert not unmapped, f"not in cxlsim/README.md's map: {sorted(unmapped)}"
    wrong = []
    for module, used in _import_graph(PACKAGE).edges:
        layer = _layer(module)
        if layer not in ("__init__", "__main__") and order[_layer(used)] > order[layer]:
            wrong.append(f"{module} imports {used}")
    assert not wrong, sorted(wrong)


def test_no_import_cycle_between_modules():
    cycle = next(nx.simple_cycles(_import_graph(PACKAGE)), None)
    assert cycle is None, "import cycle: " + " -> ".join([*cycle, cycle[0]])
