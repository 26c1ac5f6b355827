"""Every module that the package, the tests, the notebooks and the benchmarks import comes
from a dependency that pyproject.toml declares (directly, or through what a declared one
requires), so that a fresh virtual environment with the README's extras runs them all."""

import ast
import json
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = {"cxlsim", "conftest"} | {p.stem for folder in ("tests", "benchmarks")
                                         for p in (ROOT / folder).glob("*.py")}
# Imported only under a guard that turns their absence into a message or a skip.
OPTIONAL = {"tomli", "threadpoolctl"}


def declared_closure(extras: set[str]) -> set[str]:
    """Normalised names of the distributions that pyproject.toml's dependencies and the
    given extras pull in, transitively (what they require, from their installed
    metadata)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    texts = list(project["dependencies"])
    wanted, done = set(extras), set()
    while wanted - done:
        extra = (wanted - done).pop()
        done.add(extra)
        for text in project["optional-dependencies"][extra]:
            req = Requirement(text)
            if _normal(req.name) == "cxlsim":
                wanted |= req.extras
            else:
                texts.append(text)
    seen: set[str] = set()
    stack = [Requirement(t) for t in texts]
    while stack:
        req = stack.pop()
        key = _normal(req.name)
        if key in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(key)
        for text in metadata.requires(req.name) or []:
            sub = Requirement(text)
            if not sub.marker or any(sub.marker.evaluate({"extra": e})
                                     for e in req.extras | {""}):
                stack.append(sub)
    return seen


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules(sources: list[str]) -> set[str]:
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def _notebook_code(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    code = ("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return "\n".join(line for block in code for line in block.splitlines()
                     if not line.lstrip().startswith(("%", "!")))


def test_every_import_is_declared():
    sources = [p.read_text() for folder in ("cxlsim", "tests", "benchmarks")
               for p in (ROOT / folder).rglob("*.py")]
    sources += [_notebook_code(p) for p in (ROOT / "notebooks").glob("*.ipynb")]
    third_party = (imported_modules(sources) - set(sys.stdlib_module_names) - FIRST_PARTY
                   - OPTIONAL)
    provided = metadata.packages_distributions()
    allowed = declared_closure({"test"})
    undeclared = {m for m in third_party
                  if not any(_normal(d) in allowed for d in provided.get(m, []))}
    assert not undeclared, f"imported but not declared in pyproject.toml: {sorted(undeclared)}"
