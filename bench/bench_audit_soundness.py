"""Audit soundness at full size: 50 independent audits of randomized response (eps = 1,
true loss ln 2) with R = 10^6 trials per input at 95% confidence; how many exceed ln 2?

Run: ``python bench/bench_audit_soundness.py`` (about 2-3 minutes; prints JSON).
"""

from __future__ import annotations

import json
import math
import time

from privsim.analysis.audit import audit
from privsim.protocols import RandomizedResponse


def main(audits: int = 50, trials: int = 10**6) -> dict[str, float]:
    """Exceedances of the true loss over independent audits, and the spread of the bounds."""
    t0 = time.perf_counter()
    bounds = [audit(RandomizedResponse(epsilon=1.0), [0, 1, 0, 1, 1, 0, 0, 1], coalition="C", neighbor=1,
                    trials=trials, seed=50_000 + k).epsilon_lower for k in range(audits)]
    return {"soundness_audits": audits, "soundness_trials": trials,
            "soundness_exceed_ln2": sum(b > math.log(2) for b in bounds),
            "soundness_min_bound": min(bounds), "soundness_mean_bound": sum(bounds) / audits,
            "soundness_max_bound": max(bounds), "soundness_seconds": time.perf_counter() - t0}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
