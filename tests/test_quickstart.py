"""The README's Quickstart is what CI runs: two commands, the second of them verbatim in
``.ci/run``, which runs it in a virtual environment it makes fresh."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    """The command lines of the code blocks in the README's Quickstart section."""
    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Quickstart\n(.*?)(?=^## )", text, re.M | re.S)
    assert section, "README.md has no '## Quickstart' section"
    blocks = re.findall(r"^```(?:bash|sh|console)?\n(.*?)^```", section.group(1), re.M | re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_quickstart_is_two_commands_install_and_validate_then_install_and_test():
    install_validate, install_test = quickstart_commands()
    assert install_validate.endswith("&& cxlsim validate")
    assert install_test.endswith("&& python3 -m pytest")
    assert "[test]" in install_test


def test_ci_runs_the_readme_test_command_last_in_a_fresh_virtual_environment():
    commands = ci_commands()
    test_command = quickstart_commands()[1]
    assert commands[-1] == test_command  # its runner's closing line ends CI's output
    assert commands[-3:-1] == ['python3 -m venv "$work/test"',
                               'source "$work/test/bin/activate"']
    assert not any("[test]" in c for c in commands[:-1])  # nothing installed there before
    assert any(c.startswith('work="$(mktemp -d') for c in commands), "venvs outside the tree"


def test_ci_builds_the_documentation_strictly_in_its_own_environment():
    commands = ci_commands()
    build = [c for c in commands if "mkdocs" in c and " build" in c]
    assert build and all("--strict" in c for c in build)
    assert any("[docs]" in c and '"$work/docs/bin/python"' in c for c in commands)


def test_the_readme_leads_and_stays_short():
    """What cxlsim is, then the Quickstart, a first result and the three jobs; the rest
    lives in docs/ (under 12 KB)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) < 12 * 1024
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[:2] == ["Quickstart", "A first result in seconds"]
    assert all(f"cxlsim run {job}" in text
               for job in ("ornl-sweep", "policy-compare", "deceval-flows"))
    assert re.search(r"^\*\*`cxlsim validate` today: \d+ FAIL, \d+ PASS", text, re.M)


def test_the_readmes_validation_line_counts_the_pinned_statuses():
    """The one line of validation summary says what ``cxlsim validate`` prints today."""
    import yaml

    pins = yaml.safe_load((ROOT / "tests" / "validation_pins_full.yaml").read_text())
    text = (ROOT / "README.md").read_text()
    line = re.search(r"`cxlsim validate` today: ([^*]+)\*\*", text).group(1)
    # a status that says what it rests on, "PASS (idle calibrated)", is counted apart
    said = {status: int(n) for n, status in
            re.findall(r"(\d+) ([A-Z ]+[A-Z](?: \([a-z ]+\))?)", line)}
    counted = {s: sum(p["status"] == s for p in pins) for s in {p["status"] for p in pins}}
    assert said == counted
