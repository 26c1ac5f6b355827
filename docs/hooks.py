"""MkDocs build hook: pages filled from the code at build time, and the notebooks.

A page asks for generated text with an HTML comment on a line of its own:

* ``<!-- cxlsim:validation -->``: the validation table, from running ``cxlsim validate
  --quick`` (:func:`cxlsim.validation.run.validate`, every check on as many processes as
  there are CPUs, ~1 min 50 s on two) and :func:`cxlsim.validation.markdown.markdown_table`; the
  rows are kept in ``.cache/cxlsim-docs/`` under a digest of the package's code and
  data, so a rebuild with nothing changed there (``mkdocs serve``) reuses them;
* ``<!-- cxlsim:policy NAME -->``: the tunables of the placement policy NAME;
* ``<!-- cxlsim:fields KIND FIELD -->``: the fields of the mapping that experiment kind
  KIND takes under FIELD (e.g. ``trace-memory kernel``);
* ``<!-- cxlsim:model MODULE.CLASS -->``: the fields of any parameter model (e.g.
  ``cxlsim.topology.schema.LinkSpec``);
* ``<!-- cxlsim:kinds -->``: the experiment kinds, as ``cxlsim kinds`` lists them.

Field tables come from the pydantic models through :mod:`cxlsim.config.describe`, as
``cxlsim schema`` prints them, so they cannot drift from what a file may say. An unknown
marker fails the build. Sphinx roles in the API reference's docstrings
(``:class:`Name```) are shown as plain code. The notebooks (``notebooks/*.ipynb``,
outside ``docs/``) join the site as ``notebooks/NAME.ipynb`` before mkdocs-jupyter turns
them into pages.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
import typing
import warnings
from importlib import metadata
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority, get_plugin_logger
from mkdocs.structure.files import File
from pydantic import BaseModel

log = get_plugin_logger("cxlsim")
REPO = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- cxlsim:(\S+)((?: \S+)*) -->$", re.M)


@event_priority(100)  # before mkdocs-jupyter's on_files, which makes the notebooks pages
def on_files(files, config):
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        files.append(File(f"notebooks/{path.name}", src_dir=str(REPO), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files


def on_page_markdown(markdown, page, config, files):
    def fill(match: re.Match) -> str:
        what, args = match.group(1), match.group(2).split()
        try:
            return GENERATORS[what](*args)
        except (KeyError, TypeError, AttributeError, ImportError) as exc:
            raise PluginError(f"{page.file.src_uri}: cannot fill {match.group(0)}: "
                              f"{type(exc).__name__}: {exc}") from exc

    return MARKER.sub(fill, markdown)


#: A Sphinx role left in a rendered docstring, ``:func:`name``` -> ``<code>name</code>``
#: (``~a.b.name`` shows ``name``, as Sphinx shows it).
ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj):"
                  r"<code>(~(?:[\w.]*\.)?)?([^<]*)</code>")


def on_page_content(html, page, config, files):
    # and a literal block's "::" (the block itself is already code) shows as ":"
    return ROLE.sub(r"<code>\2</code>", html).replace("::</p>", ":</p>")


def _validation() -> str:
    from cxlsim.validation.markdown import markdown_table

    cache = REPO / ".cache" / "cxlsim-docs" / f"validation-{_inputs_digest()}.json"
    if cache.is_file():  # the same code and data gave these rows (mkdocs serve rebuilds)
        rows = json.loads(cache.read_text(encoding="utf-8"))
        log.info("validation table: %d rows from %s", len(rows), cache.relative_to(REPO))
    else:
        from cxlsim.validation.run import validate

        start = time.perf_counter()
        with warnings.catch_warnings():  # one line each in the log, not mkdocs' traceback
            warnings.showwarning = _log_warning
            rows = validate(quick=True, jobs=os.cpu_count() or 1)
        log.info("validation table: %d rows in %.1f s", len(rows), time.perf_counter() - start)
        cache.parent.mkdir(parents=True, exist_ok=True)
        for old in cache.parent.glob("validation-*.json"):
            old.unlink()
        cache.write_text(json.dumps(rows), encoding="utf-8")
    return markdown_table(rows)


def _log_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning of the validation run as an info line of the build's log (a run warning
    is one line, ``warning: ...`` after the log's ``cxlsim:``)."""
    text = warnings.formatwarning(message, category, filename, lineno, line)
    log.info(text.removeprefix("cxlsim: ").rstrip())


def _inputs_digest() -> str:
    """A digest of what the validation's rows depend on: the package's source and data,
    the shipped models, topologies and experiments, and the versions of Python and of the
    libraries the models compute with."""
    import cxlsim

    digest = hashlib.sha256()
    package = Path(cxlsim.__file__).parent
    for base in (package, REPO / "models", REPO / "topologies", REPO / "experiments"):
        for path in sorted(base.rglob("*")):
            if path.suffix in (".py", ".yaml", ".toml", ".csv") and path.is_file():
                digest.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes())
    digest.update(sys.version.encode())
    for name in ("numpy", "scipy", "simpy", "numba", "pandas", "pydantic"):
        digest.update(f"{name}={metadata.version(name)}".encode())
    return digest.hexdigest()[:16]


def _fields_table(model: type[BaseModel]) -> str:
    from cxlsim.config.describe import describe_fields
    from cxlsim.validation.markdown import cell

    rows = describe_fields(model)
    if not rows:
        return "*No tunables.*\n"
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{r['field']}` | {cell(r['type'])} | {cell(r['default'])} | "
              f"{cell(r['description'])} |" for r in rows]
    return "\n".join(lines) + "\n"


def _policy(name: str) -> str:
    from cxlsim.tiered.policies import POLICIES

    return _fields_table(POLICIES[name].Params)


def _model_of(annotation) -> type[BaseModel]:
    """The pydantic model a field holds (directly, or as ``Model | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        try:
            return _model_of(arg)
        except TypeError:
            pass
    raise TypeError(f"{annotation!r} holds no mapping of fields")


def _fields(kind: str, field: str) -> str:
    from cxlsim.experiments import experiment_kinds

    return _fields_table(_model_of(experiment_kinds()[kind].model_fields[field].annotation))


def _model(path: str) -> str:
    from importlib import import_module

    module, _, name = path.rpartition(".")
    return _fields_table(_model_of(getattr(import_module(module), name)))


def _kinds() -> str:
    from cxlsim.catalog import CATEGORIES
    from cxlsim.validation.markdown import cell

    lines = ["| kind | what it runs |", "|---|---|"]
    lines += [f"| `{name}` | {cell(text)} |"
              for name, text in CATEGORIES["kinds"].entries().items()]
    return "\n".join(lines) + "\n"


GENERATORS = {"validation": _validation, "policy": _policy, "fields": _fields,
              "model": _model, "kinds": _kinds}
