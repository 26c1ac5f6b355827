"""T5.4-T5.6: SK hynix HMSDK's DAMON tiering of Redis + YCSB under DRAM pressure.

Runs the shipped ``experiments/damon-redis.yaml`` point by point (the YCSB run phase's
``measured_time_s``): the all-DRAM and all-CXL bounds, default Linux (``static``) at
each pressure of the file's sweep and DAMON tiering (the sweep's ``damon`` policy).
The work per access is fitted in the file to T5.4, so T5.4 is CALIBRATED; T5.5 and
T5.6 are not fitted. Quick mode: three pressures for default Linux and DAMON at the
highest only.
"""

from __future__ import annotations

import numpy as np
import yaml

from cxlsim.experiments import load_experiment
from cxlsim.validation import CALIBRATED, FAIL, PASS, Outcome, check
from cxlsim.validation.checks import EXPERIMENTS, _points

PATH = EXPERIMENTS / "damon-redis.yaml"
COLD = "trace.params.cold"


def _time(policy: str | dict, cold: str) -> float:
    """The run phase's simulated seconds under ``policy`` with ``cold`` of pressure."""
    text = yaml.safe_dump(policy, default_flow_style=True).strip().removesuffix("...").strip()
    result = load_experiment(PATH, [f"policy={text}", f"{COLD}={cold}"]).run()
    return result.metrics["measured_time_s"]


@check("T5.4", "T5.5", "T5.6")
def damon_redis(quick: bool) -> dict[str, Outcome]:
    """Redis + YCSB: all-CXL slowdown, slowdown by pressure, DAMON's speedup."""
    grid = load_experiment(PATH).sweep.grid
    pressures = [str(c) for c in grid[COLD]]
    damon = next(p for p in grid["policy"] if isinstance(p, dict) and p["name"] == "damon")
    if quick:
        pressures = [pressures[0], pressures[len(pressures) // 2], pressures[-1]]
    local = _time("all-local", pressures[0])
    cxl = _time("all-cxl", pressures[0]) / local - 1
    static = np.array([_time("static", c) / local - 1 for c in pressures])
    worst = pressures[-1]
    tiered = _time(damon, worst) / local - 1
    speedup = (1 + static[-1]) / (1 + tiered) - 1
    rising = bool(np.all(np.diff(static) >= 0))
    curve = ", ".join(f"{c} {s:+.1%}" for c, s in zip(pressures, static))
    return {
        "T5.4": Outcome(f"{cxl:+.1%}", CALIBRATED,
                        "the work per traced access (compute) in experiments/"
                        "damon-redis.yaml is fitted to this row"),
        "T5.5": Outcome(f"cold {curve}; all-CXL {cxl:+.1%}", PASS if rising else FAIL,
                        "" if rising else "the slowdown falls somewhere as pressure rises"),
        "T5.6": _noted(_points("T5.6", speedup,
                               f"{speedup:+.1%} at cold {worst} (no tiering "
                               f"{static[-1]:+.1%}, DAMON {tiered:+.1%} vs all-DRAM)"),
                       "DAMON's result depends on how long it ran before Redis loaded "
                       "(the trace's settle phase), which the talk does not give"),
    }


def _noted(outcome: Outcome, note: str) -> Outcome:
    """``outcome`` with ``note`` after its own."""
    return Outcome(outcome.simulated, outcome.status,
                   "; ".join(filter(None, (outcome.note, note))))
