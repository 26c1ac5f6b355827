"""The TPP services' identified quantities (cxlsim.validation.identify): each read from
one place, each row part it comes from CALIBRATED and no other, the solver finds a
monotone number's value, and (slow) the shipped values still give their rows."""

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cxlsim.experiments import load_experiment
from cxlsim.validation import CALIBRATED, FAIL, PASS
from cxlsim.validation import identify as ident
from cxlsim.validation.tpp import _judge

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
SERVICES = {"web1", "cache1", "cache2", "warehouse"}


def _service_files():
    for path in sorted(EXPERIMENTS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and (data.get("trace") or {}).get("generate") in SERVICES:
            yield path


def test_no_tpp_study_sets_an_mlp_of_its_own():
    """MLP is not identified (at the value the baseline rows give, the oracle is refuted
    at 1:4: see cxlsim.validation.identify): every TPP study keeps the CPU's."""
    files = list(_service_files())
    assert len(files) >= 4  # tpp-2to1, tpp-1to4, tpp-ablation, tpp-latency, policy-compare
    for path in files:
        spec = load_experiment(path)
        assert spec.mlp is None and spec.thread_mlp == spec.cpu.mlp, path.name


def test_each_quantity_has_one_row_part_and_a_range():
    parts = [(q.row, q.index) for q in ident.QUANTITIES]
    assert len(parts) == len(set(parts))
    assert len(ident.QUANTITIES) <= 4
    for q in ident.QUANTITIES:
        assert q.low < q.high
        assert q.low <= q.value_now() <= q.high, q.name
    assert ident.calibrated("T6.3c") == {2: "cache2.anon_ops"}
    assert ident.calibrated("T6.2") == {} and ident.calibrated("T6.4") == {}


def test_overrides_give_each_workload_its_own_quantities_only():
    values = {"spread": 0.25, "web1.file_share": 0.7, "cache2.anon_ops": 0.6}
    assert ident.overrides(values, "web1") == (
        "trace.params.spread=0.25", "trace.params.file_share=0.7")
    assert ident.overrides(values, "cache2") == (
        "trace.params.anon_ops=0.6", "trace.params.spread=0.25")


def test_a_row_of_calibrated_parts_only_is_calibrated_and_still_judged():
    # T6.2: 16.5 % / 22 % within 3 / 5 points
    assert _judge("T6.2", [16.0, 23.0], "x", calibrated={0: "mlp", 1: "f"}).status == CALIBRATED
    half = _judge("T6.2", [16.0, 23.0], "x", calibrated={0: "mlp"})
    assert half.status == PASS and "CALIBRATED: (the part mlp is identified from)" in half.note
    assert _judge("T6.2", [30.0, 23.0], "x", calibrated={0: "mlp", 1: "f"}).status == FAIL


@settings(max_examples=25, deadline=None)
@given(slope=st.floats(0.5, 20), target=st.floats(0.05, 0.95), rises=st.booleans())
def test_the_solver_finds_a_monotone_numbers_value(slope, target, rises):
    q = ident.Quantity("spread", "x", 0.0, 1.0, "T6.3b", 0, "default Linux loss",
                       "cache1", 10.0, rises=rises)
    sign = 1 if rises else -1

    def fake(values, workload, quick):
        return 10.0 + sign * slope * (values["spread"] - target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ident, "_loss", fake)
        value, reached = ident._solve(q, {"spread": 0.5}, True, tol=1e-3)
    assert reached and value == pytest.approx(target, abs=2e-3)


def test_a_number_beyond_the_range_gives_the_nearer_end(monkeypatch):
    q = ident.Quantity("spread", "x", 0.0, 1.0, "T6.3b", 0, "default Linux loss",
                       "cache1", 10.0, rises=True)
    monkeypatch.setattr(ident, "_loss", lambda values, w, quick: values["spread"])
    assert ident._solve(q, {"spread": 0.5}, True) == (1.0, False)


@pytest.mark.slow
def test_the_shipped_values_are_what_the_identification_finds():
    found = ident.identify(quick=True, rounds=1)
    for q in ident.QUANTITIES:
        value, _ = found[q.name]
        assert value == pytest.approx(q.value_now(), abs=0.1 * (q.high - q.low)), q.name


def test_the_recorded_identification_is_what_ships():
    """The fidelity page prints the recorded identification: its values are the ones the
    model reads (re-record with ``python -m cxlsim.validation.identify``)."""
    rows = {r["name"]: r for r in ident.recorded()["quantities"]}
    assert list(rows) == [q.name for q in ident.QUANTITIES]
    for q in ident.QUANTITIES:
        assert rows[q.name]["reached"], q.name
        assert rows[q.name]["value"] == pytest.approx(q.value_now(),
                                                      abs=0.01 * (q.high - q.low)), q.name
    assert len(ident.section()) == len(ident.QUANTITIES)
