"""Load an experiment file: presets, the topology and curve files it names, ``--set``, its
kind."""

from __future__ import annotations

from pathlib import Path

from cxlsim.config import apply_overrides, expand_presets, load_file, validate_document
from cxlsim.config.source import Document
from cxlsim.errors import InputError, Location
from cxlsim.experiments.kinds import kind_modules
from cxlsim.experiments.spec import ExperimentSpec, experiment_kind
from cxlsim.memory.curvefile import curve_document
from cxlsim.resources import bundled_file, file_or_shipped, is_file, shipped
from cxlsim.topology.graph import build_graph, graph_problems


def experiment_file(name: str | Path) -> Path:
    """The experiment file ``name`` names: itself if it is a file, else the experiment
    shipped with cxlsim of that name (``ornl-transfer``), for the CLI and Python alike."""
    return file_or_shipped("experiments", name)


def load_experiment(path: str | Path, overrides: list[str] | tuple[str, ...] = ()
                    ) -> ExperimentSpec:
    """Validate an experiment file (and its topology) into its kind's spec class;
    ``path`` may be a shipped experiment's name (:func:`experiment_file`)."""
    path = experiment_file(path)
    doc = expand_presets(load_file(path))
    if not isinstance(doc.data, dict):
        raise InputError("an experiment file must hold a mapping of keys", location=doc.locate(()))
    doc = _include_topology(doc, path)
    doc = _include_curves(doc, path)
    doc = apply_overrides(doc, overrides, lambda key, name, where: _topology_file(
        name, path, where) if key == ("topology",) else None)
    doc = _resolve_trace(doc, path)
    kind = doc.data.get("kind")
    cls = experiment_kind(kind) if isinstance(kind, str) else None
    if cls is None:
        found = "missing" if kind is None else f"found {kind!r}"
        raise InputError(f"expected 'kind' to be one of {', '.join(sorted(kind_modules()))}; "
                         f"{found}", location=doc.locate(("kind",)), key="kind")
    try:
        spec = validate_document(cls, doc)
    except InputError as exc:  # with the topology's graph problems found without it
        more = graph_problems(doc.subdocument(("topology",))) \
            if isinstance(doc.data.get("topology"), dict) else []
        raise exc.with_also([_under_topology(e) for e in more]) from None
    if spec.topology is not None:
        try:
            build_graph(spec.topology, doc.subdocument(("topology",)))
        except InputError as exc:
            # The graph checker names key paths inside the topology; name them as the
            # experiment file (and --set) does, under ``topology``.
            first, *more = (_under_topology(e) for e in (exc, *exc.also))
            raise first.with_also(more) from None
    return spec


def _resolve_trace(doc: Document, path: Path) -> Document:
    """``trace: FILE`` made absolute: ``FILE`` is relative to the experiment file."""
    ref = doc.data.get("trace")
    if not isinstance(ref, str):
        return doc
    full = path.parent / ref
    if not is_file(full):
        raise InputError(f"trace file {str(full)!r} not found (paths are relative to the "
                         "experiment file)", location=doc.locate(("trace",)), key="trace")
    return doc.graft(("trace",), Document(str(full), doc.source))


def _under_topology(exc: InputError) -> InputError:
    key = f"topology.{exc.key}" if exc.key else "topology"
    return InputError(exc.message, location=exc.location, key=key)


def _include_topology(doc: Document, path: Path) -> Document:
    """Replace ``topology: FILE`` with the file's (preset-expanded) content."""
    ref = doc.data.get("topology")
    if not isinstance(ref, str):
        return doc
    return doc.graft(("topology",), _topology_file(ref, path, doc.locate(("topology",))))


def _topology_file(ref: str, path: Path, where: Location) -> Document:
    """The topology ``ref`` names, preset-expanded: a file relative to the experiment
    file ``path``, or the name of a topology shipped with cxlsim."""
    topo_path = path.parent / ref
    if not is_file(topo_path):
        topo_path = bundled_file("topologies", ref)
    if topo_path is None:
        raise InputError(f"topology file {str(path.parent / ref)!r} not found (paths are "
                         f"relative to the experiment file; shipped topologies: "
                         f"{', '.join(shipped('topologies'))})", location=where, key="topology")
    return expand_presets(load_file(topo_path))


def _include_curves(doc: Document, path: Path) -> Document:
    """Replace each ``curves: {TARGET: FILE}`` with the curve file's content."""
    curves = doc.data.get("curves")
    if not isinstance(curves, dict):
        return doc
    for target, ref in curves.items():
        if isinstance(ref, str):
            key = ("curves", target)
            curve_path = path.parent / ref
            if not is_file(curve_path):
                raise InputError(f"curve file {str(curve_path)!r} not found (paths are "
                                 "relative to the experiment file)", location=doc.locate(key),
                                 key=f"curves.{target}")
            doc = doc.graft(key, curve_document(curve_path))
    return doc
