"""An audit's CPU time at this checkout against the same audit at a former commit.

For a claim such as "at most 2x today's time" (issue 24), where "today" is the code when
the issue was filed: the former commit is checked out into a temporary git worktree, and
each bundled scenario is audited alternately by this checkout and by that commit, each
run in a fresh interpreter (``PYTHONPATH`` set to the tree's root), so that both see the
same machine in the same minutes. A figure is the CPU time of the audit alone (after
the imports and a small audit of 10^4 trials, so that neither side pays the first-use
imports inside the figure). Both sides audit the scenario files of this checkout.

Run: ``python bench/compare_commits.py --rev 42b1efb --scenarios audit_secure_sum_t,audit_shuffle_sum``
(prints JSON: per scenario the CPU seconds of every run on each side, their medians, the
ratio of the medians and each side's epsilon_lower). Not one of the ``privsim bench``
keys: it needs the git history and takes minutes a scenario. The former commit must have
``privsim.analysis.audit.audit``, ``privsim.cli.make_inputs`` and
``privsim.scenario.load_scenario`` (every commit since the audit's selectors, issue 19).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: Run in a fresh interpreter by each side: argv = scenario path, trials, selectors ("" for all).
CHILD = """
import json, sys, time
import privsim
from privsim.analysis.audit import audit
from privsim.cli import make_inputs
from privsim.scenario import load_scenario
import scipy.stats, sklearn.ensemble  # first-use imports outside the figure
path, trials, selectors = sys.argv[1], int(float(sys.argv[2])), sys.argv[3]
spec = load_scenario(path)
proto, extra = spec.build(), spec.extra
coalition = extra["coalition"]
kw = dict(protocol=proto, inputs=make_inputs(proto, spec.inputs, spec.n, spec.seed), t=spec.t,
          coalition=",".join(map(str, coalition)) if isinstance(coalition, list) else str(coalition),
          neighbor=int(extra["neighbor"]), seed=spec.seed, delta=extra.get("delta"))
if selectors:
    kw["selectors"] = tuple(selectors.split(","))
audit(trials=10**4, **kw)
cpu = time.process_time()
result = audit(trials=trials, **kw)
cpu = time.process_time() - cpu
print(json.dumps({"cpu_s": cpu, "epsilon_lower": result.epsilon_lower, "selection": result.selection,
                  "privsim": privsim.__file__}))
"""


def _one(tree: Path, scenario: Path, trials: int, selectors: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # cwd too: ``python -c`` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-c", CHILD, str(scenario), str(trials), selectors], env=env, cwd=tree,
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if not got.pop("privsim").startswith(str(tree)):  # the other tree's privsim was imported: no comparison
        raise RuntimeError(f"{tree}: the child imported privsim from elsewhere (an installed copy first on the path?)")
    return got


def compare(rev: str, scenarios: list[str], trials: int = 10**6, repeats: int = 2,
            selectors: str = "") -> dict[str, Any]:
    """Audit each scenario ``repeats`` times on each side, alternating; the figures (see the module docstring)."""
    report: dict[str, Any] = {"rev": rev, "trials": trials, "repeats": repeats, "selectors": selectors or "all",
                              "head": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                                     capture_output=True, text=True, check=True).stdout.strip()}
    with tempfile.TemporaryDirectory(prefix="privsim-compare-") as tmp:
        former = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(former), rev],
                       capture_output=True, text=True, check=True)
        try:
            for name in scenarios:
                path = ROOT / "scenarios" / f"{name}.toml"
                runs: dict[str, list[dict[str, Any]]] = {"head": [], "former": []}
                for r in range(repeats):
                    order = [("head", ROOT), ("former", former)]
                    for side, tree in order if r % 2 == 0 else order[::-1]:
                        print(f"  {name} {side} {r + 1}/{repeats} ...", file=sys.stderr, flush=True)
                        runs[side].append(_one(tree, path, trials, selectors))
                med = {side: statistics.median(run["cpu_s"] for run in got) for side, got in runs.items()}
                report[name] = {
                    **{f"{side}_cpu_s": [round(run["cpu_s"], 2) for run in got] for side, got in runs.items()},
                    "head_over_former_ratio": round(med["head"] / med["former"], 3),
                    **{f"{side}_epsilon_lower": got[0]["epsilon_lower"] for side, got in runs.items()},
                    **{f"{side}_selection": got[0]["selection"] for side, got in runs.items()}}
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(former)],
                           capture_output=True, text=True, check=False)
    return report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", required=True, help="the former commit (any git revision)")
    ap.add_argument("--scenarios", default="audit_secure_sum_t",
                    help="comma-separated stems of scenarios/*.toml (default: audit_secure_sum_t)")
    ap.add_argument("--trials", type=float, default=1e6)
    ap.add_argument("--repeats", type=int, default=2, help="runs per side and scenario (alternating)")
    ap.add_argument("--selectors", default="", help="comma-separated selectors for both sides (default: all)")
    args = ap.parse_args()
    names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    print(json.dumps(compare(args.rev, names, int(args.trials), args.repeats, args.selectors), indent=2))
