"""A policy's tunables and the kernel switches it implies, as an experiment file gives them."""

from __future__ import annotations

import pytest
from pydantic import Field

from cxlsim.errors import InputError
from cxlsim.experiments import load_experiment
from cxlsim.tiered import policies
from cxlsim.tiered.policies import PolicyParams, Switches
from cxlsim.tiered.policies.static import Static

SPEC = """name: pp
kind: trace-memory
topology: single-expander
cpu: {preset: cpus/xeon6}
nodes: {dram: [dram0], cxl: [cxl0]}
trace: {generate: uniform, n: 4000, params: {footprint: 4MiB}}
epoch: 1000
%s
"""


class TierParams(PolicyParams):
    level: int = Field(3, ge=1, le=8, description="a tunable with a kernel range")


class Tiering(Static):
    """A toy policy standing for the tiering mode with demotion and the scanner on."""

    name = "toy-tiering"
    Params = TierParams

    @classmethod
    def switches(cls, params):
        return Switches(kernel={"numa_balancing_tiering": True, "demotion_enabled": True},
                        numa_balancing={"enabled": True})


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(policies.POLICIES, Tiering.name, Tiering)


def _load(tmp_path, text):
    path = tmp_path / "pp.yaml"
    path.write_text(SPEC % text)
    return load_experiment(path)


def test_a_mapping_names_the_policy_and_its_tunables(tmp_path, toy):
    spec = _load(tmp_path, "policy: {name: toy-tiering, level: 5}")
    assert spec.policy == "toy-tiering" and spec.policy_params == {"level": 5}
    assert spec._params.level == 5


def test_the_implied_switches_are_turned_on(tmp_path, toy):
    spec = _load(tmp_path, "policy: toy-tiering")
    assert spec.kernel.numa_balancing_tiering and spec.kernel.demotion_enabled
    assert spec.numa_balancing.enabled
    assert spec._params.level == 3


def test_a_static_policy_leaves_the_kernel_alone(tmp_path):
    spec = _load(tmp_path, "policy: static")
    assert not spec.kernel.demotion_enabled and not spec.numa_balancing.enabled


@pytest.mark.parametrize("text, line, where, message", [
    ("policy: {name: toy-tiering, levle: 5}", 8, "policy.levle",
     "unknown tunable 'levle'; did you mean 'level'?"),
    ("policy: {name: toy-tiering, speed: 5}", 8, "policy.speed",
     "unknown tunable 'speed'; expected one of: level"),
    ("policy: toy-tiering\npolicy_params: {speed: 5}", 9, "policy_params.speed",
     "unknown tunable 'speed'; expected one of: level"),
    ("policy: {name: toy-tiering, level: 9}", 8, "policy.level",
     "expected less than or equal to 8; found 9"),
    ("policy: {level: 9}", 8, "policy", "a mapping needs the policy's name (name: ...)"),
    ("policy: {name: static, level: 1}", 8, "policy.level",
     "policy static has no tunables; found 'level'"),
    ("policy: toy-tiering\nkernel: {demotion_enabled: false}", 9, "kernel.demotion_enabled",
     "policy toy-tiering needs true (it sets kernel.demotion_enabled from its own "
     "tunables); the file sets false"),
    ("policy: toy-tiering\nnuma_balancing: {enabled: false}", 9, "numa_balancing.enabled",
     "policy toy-tiering needs true (it sets numa_balancing.enabled from its own tunables); "
     "the file sets false"),
])
def test_bad_tunables_and_conflicting_switches_are_named(tmp_path, toy, text, line, where,
                                                          message):
    """At the line of the key (the policy mapping's or policy_params'), in our words."""
    with pytest.raises(InputError) as info:
        _load(tmp_path, text)
    first = str(info.value)
    assert first.startswith(f"{tmp_path / 'pp.yaml'}:{line}:")
    assert first.endswith(f": {where}: {message}")


def test_an_unknown_tunable_from_set_names_the_option(tmp_path, toy):
    path = tmp_path / "pp.yaml"
    path.write_text(SPEC % "policy: toy-tiering")
    with pytest.raises(InputError) as info:
        load_experiment(path, ["policy_params.levl=2"])
    assert str(info.value) == ("--set policy_params.levl=2: policy_params.levl: unknown "
                               "tunable 'levl'; did you mean 'level'?")
