"""Every name discoverable (issue 33): what ships and what each name is, the names taken
from any folder, numbered and named links, and the messages that point a user to a
name."""

from __future__ import annotations

import cxlsim
from conftest import refused
from cxlsim.cli import main


def test_a_shipped_topology_is_shown_by_name_from_any_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["topology", "show", "switch-pool"]) == 0
    assert capsys.readouterr().out.startswith("Topology switch-pool: One host, one CXL switch")
    assert cxlsim.load_topology("switch-pool").spec.name == "switch-pool"
    refused(capsys, ["topology", "show", "switch-pol"],
            "switch-pol: no such file, nor a topology shipped with cxlsim; did you mean "
            "'switch-pool'? (shipped: a64fx, cz120, ")