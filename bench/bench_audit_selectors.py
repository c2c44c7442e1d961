"""What the audit finds, and what the competing selectors cost (issue 19).

Run: ``privsim bench --only audit_selectors`` (or ``python bench/bench_audit_selectors.py``;
prints JSON; about half an hour on the 2-core reference machine).

- The power table of the README ("What the audit finds"): every bundled audit scenario
  (``scenarios/audit_*.toml``) and the two example leaks (``examples/leaks/``) at 10^5
  and 10^6 trials per input, with the selector that won, beside the exact loss where it
  is known.
- Time: each bundled scenario at 10^6 trials with all selectors and with the former rule
  alone (``selectors=("view",)``), one after the other in this process; the ratio of
  the two (issue 19 asks for at most 2), in wall-clock and in CPU seconds (the audit runs
  in this process, so its CPU time does not count the shared machine's other tenants).
- The issue's targets at 10^6 trials: the parity-leak secure sum on five seeds
  (epsilon_lower >= 1.8 and violated on each), twenty 0.1-DP messages (>= 1.25) and
  twenty 0.25-DP messages (>= 3.3).

Two environment variables narrow a run (the report says what ran):
``PRIVSIM_BENCH_AUDIT_TIME_ONLY=1`` measures only the time part (each scenario at 10^6
with all selectors, then with the former rule; no 10^5 row, no example leaks, no
targets); ``PRIVSIM_BENCH_AUDIT_SCENARIOS=GLOB[,GLOB...]`` (e.g. ``audit_public_*``) keeps only the
bundled scenarios whose file stem matches one of them.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import cloudpickle

from privsim.analysis.audit import audit
from privsim.cli import make_inputs
from privsim.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10**5, 10**6)
PARITY_SEEDS = (1, 2, 3, 4, 5)

#: The exact loss of each bundled scenario's view, where it is known in closed form (the
#: scenario files and the README give the reasons); None where only the claim is known.
EXACT_LOSS: dict[str, float | None] = {
    "audit_randomized_response": math.log(2),  # ln(1 + eps)
    "audit_central_laplace": 1.0,  # a shift of 1 under Lap(1/eps)
    "audit_public_central_laplace": 1.0,
    "audit_secure_sum_t": 1.0,  # the honest shares alone sum to exactly Lap(1/eps)
    "audit_secure_sum_holders": math.inf,  # a spiky Gamma(1/5) difference: unbounded
    "audit_leaky": math.inf,  # the input in the clear with probability 0.01 (delta = 0)
    "audit_dist_alpha": None,
    "audit_public_central_gaussian": None,  # exact Gaussian: the claim is the exact epsilon at delta
    "audit_public_continual_sum": None,
}


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"privsim_example_{name}", ROOT / "examples" / "leaks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    cloudpickle.register_pickle_by_value(module)
    return module


def _cases(pattern: str = "audit_*", examples: bool = True) -> list[dict[str, Any]]:
    """The bundled audit scenarios whose stem matches ``pattern`` (comma-separated globs) and the example leaks, as
    keyword arguments of audit()."""
    cases = []
    for path in sorted((ROOT / "scenarios").glob("audit_*.toml")):
        if not any(fnmatch.fnmatch(path.stem, one.strip()) for one in pattern.split(",")):
            continue
        spec = load_scenario(path)
        proto = spec.build()
        extra = spec.extra
        cases.append({"name": path.stem, "exact": EXACT_LOSS.get(path.stem), "kw": {
            "protocol": proto, "inputs": make_inputs(proto, spec.inputs, spec.n, spec.seed), "t": spec.t,
            "coalition": str(extra["coalition"]) if not isinstance(extra["coalition"], list)
            else ",".join(map(str, extra["coalition"])),
            "neighbor": int(extra["neighbor"]), "seed": spec.seed, "delta": extra.get("delta")}})
    if not examples:
        return cases
    parity, repeated = _example("parity_leak"), _example("repeated_rr")
    cases.append({"name": "example parity_leak (n = 8, t = 1, {0} vs 2)", "exact": parity.exact_loss(1.0), "kw": {
        "protocol": parity.ParityLeakSum(), "inputs": [1, 0, 1, 1, 0, 0, 1, 0], "t": 1, "coalition": "0",
        "neighbor": 2, "seed": 1, "delta": None}})
    for eps in (0.1, 0.25):
        cases.append({"name": f"example repeated_rr (20 x {eps}, C vs 1)", "exact": 20 * eps, "kw": {
            "protocol": repeated.RepeatedRR(round_epsilon=eps), "inputs": [1, 1], "t": None, "coalition": "C",
            "neighbor": 1, "seed": 3, "delta": None}})
    return cases


def _run(kw: dict[str, Any], trials: int, selectors: tuple[str, ...] | None = None) -> tuple[Any, float, float]:
    """The audit, its wall-clock seconds and its CPU seconds (this process: the audit runs in it)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = audit(trials=trials, selectors=selectors, **kw)
    return result, time.perf_counter() - start, time.process_time() - cpu


def _row(case: dict[str, Any], sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    print(f"  {case['name']} ...", file=sys.stderr, flush=True)
    row: dict[str, Any] = {"exact_loss": None if case["exact"] is None else round(case["exact"], 4)}
    for trials in sizes:
        result, seconds, cpu = _run(case["kw"], trials)
        row[f"cpu_seconds_{trials:.0e}"] = round(cpu, 1)
        row[f"epsilon_lower_{trials:.0e}"] = round(result.epsilon_lower, 4)
        row[f"selection_{trials:.0e}"] = result.selection
        row[f"violated_{trials:.0e}"] = result.violated
        row[f"seconds_{trials:.0e}"] = round(seconds, 1)
    row["epsilon_claimed"] = result.epsilon_claimed
    row["event_1e+06"] = result.event[:160]
    return row


def _time_ratio(case: dict[str, Any], seconds_all: float, cpu_all: float) -> dict[str, float]:
    former, seconds, cpu = _run(case["kw"], SIZES[-1], ("view",))
    return {"seconds_former_rule_1e+06": round(seconds, 1), "epsilon_lower_former_rule_1e+06":
            round(former.epsilon_lower, 4), "time_ratio_all_over_former": round(seconds_all / seconds, 2),
            "cpu_seconds_former_rule_1e+06": round(cpu, 1),
            "cpu_time_ratio_all_over_former": round(cpu_all / cpu, 2)}


def _targets() -> dict[str, Any]:
    parity, repeated = _example("parity_leak"), _example("repeated_rr")
    runs = []
    for seed in PARITY_SEEDS:
        r = audit(parity.ParityLeakSum(), [1, 0, 1, 1, 0, 0, 1, 0], coalition="0", neighbor=2, t=1,
                  trials=10**6, seed=seed)
        runs.append({"seed": seed, "epsilon_lower": round(r.epsilon_lower, 4), "violated": r.violated,
                     "selection": r.selection})
    weak = {}
    for eps, target in ((0.1, 1.25), (0.25, 3.3)):
        r = audit(repeated.RepeatedRR(round_epsilon=eps), [1, 1], coalition="C", neighbor=1, trials=10**6, seed=3)
        weak[f"20x{eps}"] = {"epsilon_lower": round(r.epsilon_lower, 4), "target": target,
                             "met": r.epsilon_lower >= target, "selection": r.selection}
    return {"parity_leak_1e+06": {"runs": runs, "min_epsilon_lower": min(r["epsilon_lower"] for r in runs),
                                  "all_violated": all(r["violated"] for r in runs), "target": 1.8},
            "many_weak_messages_1e+06": weak}


def main() -> dict[str, Any]:
    """Run every measurement; return (and print) them as one JSON-ready dict."""
    start = time.perf_counter()
    time_only = os.environ.get("PRIVSIM_BENCH_AUDIT_TIME_ONLY", "") not in ("", "0")
    pattern = os.environ.get("PRIVSIM_BENCH_AUDIT_SCENARIOS", "audit_*")
    table = {}
    for case in _cases(pattern, examples=not time_only):
        row = _row(case, SIZES[-1:] if time_only else SIZES)
        if case["name"].startswith("audit_"):
            row.update(_time_ratio(case, row["seconds_1e+06"], row["cpu_seconds_1e+06"]))
        table[case["name"]] = row
    ratios = [row["time_ratio_all_over_former"] for row in table.values() if "time_ratio_all_over_former" in row]
    cpu_ratios = [row["cpu_time_ratio_all_over_former"] for row in table.values()
                  if "cpu_time_ratio_all_over_former" in row]
    report = {"scenarios": pattern, "time_only": time_only, "power_table": table,
              "max_time_ratio_all_over_former": max(ratios, default=None),
              "max_cpu_time_ratio_all_over_former": max(cpu_ratios, default=None), **({} if time_only else _targets())}
    report["seconds"] = round(time.perf_counter() - start, 1)
    return report


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
