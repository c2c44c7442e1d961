"""Measure the peak memory and time of a few runs and audits, against privsim.resources' estimates.

Each case runs in a fresh interpreter (peak RSS is per process): ``python bench/calibrate_resources.py``
prints one line per case: measured seconds and MiB, estimated seconds and MiB, and the ratios.
"""

from __future__ import annotations

import json
import subprocess
import sys

CASES = [
    ("run", "randomized-response", 1000, None, 2000, {}),
    ("run", "randomized-response", 10_000, None, 1000, {}),
    ("run", "randomized-response", 100_000, None, 100, {}),
    ("run", "randomized-response", 100, None, 1_000_000, {}),
    ("run", "secure-sum", 100, 10, 2000, {}),
    ("run", "secure-sum", 1000, 10, 200, {}),
    ("run", "ck-sum", 1000, 5, 200, {}),
    ("run", "continual-sum", 100, None, 200, {"T": 64}),
    ("run", "secure-sum", 10_000, 10, 4, {}),
    ("run", "secure-sum", 100_000, 10, 4, {}),
    ("run", "ck-sum", 100_000, 10, 4, {}),
    ("audit", "randomized-response", 4, None, 100_000, {}),
    ("audit", "secure-sum", 16, 3, 200_000, {}),
    # the same without cohorts (every party its own task): the per-party constants
    ("run", "secure-sum", 100_000, 10, 4, {}, False),
    ("run", "secure-sum", 1000, 10, 200, {}, False),
]

CHILD = r"""
import json, resource, sys, time
from privsim.protocols import get_protocol
from privsim.plan import plan_audit, plan_run
from privsim.resources import estimate
kind, name, n, t, trials, params, *cohorts = json.loads(sys.argv[1])
from privsim.transport import LocalTransport
transport = LocalTransport(cohorts=cohorts[0] if cohorts else True)
proto = get_protocol(name, **params)
coalition = ("C",) if proto.has_curator else tuple(range((t or 0) + 1))
if kind == "audit":
    plan = plan_audit(proto, proto.default_inputs(n), coalition=coalition, neighbor=n - 1, trials=trials, seed=1, t=t)
else:
    plan = plan_run(proto, proto.default_inputs(n), trials=trials, seed=1, t=t, record=False, split=True,
                    transport=transport)
est = estimate(plan)
start = time.perf_counter()
if kind == "run":
    from privsim.simulate import run_plan
    run_plan(plan)
else:
    from privsim.analysis.audit import run_audit
    run_audit(plan)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "peak": peak, "est_seconds": est.seconds, "est_peak": est.memory}))
"""


def main() -> None:
    for case in CASES:
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)], capture_output=True, text=True,
                             check=True).stdout
        d = json.loads(out.strip().splitlines()[-1])
        mode = "" if len(case) < 7 or case[6] else " per party"
        print(f"{case[0]:5} {case[1] + mode:20} n={case[2]:<7} trials={case[4]:<8} "
              f"time {d['seconds']:7.2f} s est {d['est_seconds']:7.2f} s ({d['est_seconds'] / d['seconds']:.2f}x)  "
              f"peak {d['peak'] / 2**20:7.0f} MiB est {d['est_peak'] / 2**20:7.0f} MiB "
              f"({d['est_peak'] / d['peak']:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
