"""What ships with cxlsim, by category, each name with a line on it: ``cxlsim list``.

The lines come from where each thing is described already, so they cannot drift: an
experiment's or a topology's ``description``, a preset's opening comment, a policy's or
an experiment kind's docstring, a generator's or a trace format's ``doc``. Files are
found with :mod:`cxlsim.resources`, in a clone and in an installed wheel alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import yaml

from cxlsim.resources import bundled, bundled_file, shipped

#: Characters a line on one name takes at most; a longer first sentence is cut at a
#: clause.
LIMIT = 120

#: Abbreviations whose dot ends no sentence.
_ABBREVIATIONS = {"e.g", "i.e", "al", "vs", "cf", "etc", "approx", "fig", "no"}


def brief(text: str, limit: int = LIMIT) -> str:
    """``text``'s first sentence without its asides in parentheses or reST markup, cut
    at the last clause that fits ``limit`` characters (marked ``...``)."""
    text = " ".join(text.replace("``", "").split())
    kept, depth = [], 0
    for i, char in enumerate(text):
        depth += char in "(["
        if depth == 0:
            kept.append(char)
            if char == "." and text[i + 1:i + 2] in ("", " ") and _ends_sentence(text[:i]):
                break
        depth -= depth > 0 and char in ")]"
    sentence = re.sub(r"\s+([,.;:])", r"\1", re.sub(r"\s+", " ", "".join(kept))).strip()
    if len(sentence) <= limit:
        return sentence
    head = sentence[:limit - 4]
    cut = max(head.rfind(sep) for sep in (", ", "; ", ": ", " -- "))
    return (head[:cut] if cut > limit // 2 else head.rsplit(" ", 1)[0]) + " ..."


def _ends_sentence(before: str) -> bool:
    """Whether a dot after ``before`` ends a sentence: not after an initial (``M.``) or
    an abbreviation (``e.g.``)."""
    word = before.rsplit(" ", 1)[-1]
    return len(word) > 1 and word.lower() not in _ABBREVIATIONS


def _described(folder: str) -> dict[str, str]:
    """``folder``'s shipped files, each with its ``description``'s first sentence."""
    out = {}
    for name in shipped(folder):
        data = yaml.safe_load(bundled_file(folder, name).read_text(encoding="utf-8"))
        text = data.get("description") if isinstance(data, dict) else None
        out[name] = brief(text) if isinstance(text, str) else ""
    return out


def _presets() -> dict[str, str]:
    """Every shipped preset (``cpus/xeon6``), with its opening comment's first sentence."""
    from cxlsim.config.presets import preset_files

    models = bundled("models")
    out = {}
    for name, path in preset_files(models).items():
        comment = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.startswith("#"):
                break
            comment.append(line.lstrip("#"))
        out[name] = brief(" ".join(comment))
    return out


def _policies() -> dict[str, str]:
    from cxlsim.tiered.policies import POLICIES

    return {name: brief(policy.__doc__ or "") for name, policy in POLICIES.items()}


def _generators() -> dict[str, str]:
    from cxlsim.traces.generators import KINDS

    return {name: kind.doc for name, kind in KINDS.items()}


def _formats() -> dict[str, str]:
    from cxlsim.traces.formats import described

    return described()


def _kinds() -> dict[str, str]:
    from cxlsim.experiments import experiment_kinds

    return {name: brief(cls.__doc__ or "") for name, cls in sorted(experiment_kinds().items())}


@dataclass(frozen=True)
class Category:
    """One kind of name cxlsim ships: what one is called, its names (each with a line
    on it), and how a name of it is used."""

    noun: str
    entries: Callable[[], dict[str, str]]
    usage: str


#: The categories ``cxlsim list`` takes, by name.
CATEGORIES = {
    "experiments": Category("experiment", lambda: _described("experiments"),
                            "cxlsim run NAME; its settings: cxlsim resolve NAME"),
    "topologies": Category("topology", lambda: _described("topologies"),
                           "cxlsim topology show NAME; in an experiment: topology: NAME"),
    "presets": Category("preset", _presets,
                        "in a file: preset: NAME; on the command line: --set "
                        "KEY.preset=NAME (e.g. cpu.preset=cpus/epyc-7452)"),
    "policies": Category("policy", _policies,
                         "in a trace-memory experiment: policy: NAME (--set policy=NAME); "
                         "its tunables: cxlsim schema NAME"),
    "generators": Category("generator", _generators,
                           "cxlsim trace gen NAME --n N OUT, or trace: {generate: NAME, n: "
                           "N} in an experiment; parameters: cxlsim trace list"),
    "formats": Category("format", _formats,
                        "cxlsim trace convert IN OUT --from NAME [--to NAME]; options: "
                        "cxlsim trace list"),
    "kinds": Category("kind", _kinds,
                      "an experiment file's kind: NAME; its fields: cxlsim schema NAME"),
}
