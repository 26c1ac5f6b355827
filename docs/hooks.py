"""MkDocs build hook: pages filled from the code at build time, and the notebooks.

A page asks for generated text with an HTML comment on a line of its own:

* ``<!-- cxlsim:validation -->``: the validation table of the full-mode rows as pinned
  (``tests/validation_pins_full.yaml``, which CI checks against a full run), through
  :func:`cxlsim.validation.markdown.markdown_table`;
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

import re
import typing
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
    """The table of the full-mode rows as pinned (tests/validation_pins_full.yaml, which
    CI checks against a full ``cxlsim validate --full`` run): the one truth the README's
    counts and the fidelity page also read, so the build runs no validation."""
    import yaml

    from cxlsim.validation import targets
    from cxlsim.validation.markdown import markdown_table

    pins = {row["id"]: row for row in yaml.safe_load(
        (REPO / "tests" / "validation_pins_full.yaml").read_text(encoding="utf-8"))}
    rows = [{**target, "status": pins[target["id"]]["status"],
             "simulated": pins[target["id"]]["simulated"], "note": ""}
            for target in targets()]
    log.info("validation table: %d rows from the full-mode pins", len(rows))
    return markdown_table(rows)


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
