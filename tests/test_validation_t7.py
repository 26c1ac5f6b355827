"""The T7 checks of ``cxlsim validate`` (our own model checks) pass in quick mode."""

from __future__ import annotations

import pytest

from cxlsim.validation import PASS, registered_checks, targets
from cxlsim.validation.checks import flit_efficiency, littles_law, md1_link, monotonicity

T7 = {"T7.1": flit_efficiency, "T7.2": md1_link, "T7.3": littles_law, "T7.4": monotonicity}


def test_t7_targets_are_registered():
    ids = {t["id"] for t in targets() if t["id"].startswith("T7.")}
    assert ids == set(T7)
    registered = {i: fn for ids_, fn in registered_checks() for i in ids_}
    for target, fn in T7.items():
        assert registered[target] is fn


@pytest.mark.parametrize("target", sorted(T7))
def test_t7_check_passes_quick(target):
    outcome = T7[target](True)[target]
    assert outcome.status == PASS, (outcome.simulated, outcome.note)
    assert outcome.simulated


def test_t7_1_shows_the_packed_efficiencies():
    shown = flit_efficiency(True)["T7.1"].simulated
    assert shown.startswith("68B read 83.7 %, write 75.3 %; 256B read 83.3 %")
