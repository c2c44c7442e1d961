"""Every bundled scenario runs (at reduced size); audit scenarios audit."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from privsim.cli import main

#: Trials per input for the audits here and in the tutorial's test: just above the fewest an
#: audit takes (min_audit_trials: 2024 at these n); they check that the audit runs and reports.
AUDIT_TRIALS = 2048
SCENARIOS = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))


def run(capsys, *args):
    main([*map(str, args)])
    return json.loads(capsys.readouterr().out)


def test_catalogue_is_complete():
    names = {p.stem for p in SCENARIOS}
    for needed in ("randomized_response", "randomized_response_distributed", "secure_sum_laplace",
                   "secure_sum_gaussian", "secure_sum_discrete", "secure_sum_none", "ck_sum", "dist_alpha",
                   "gap_threshold", "interactive_rr", "continual_sum", "range_counting", "join_size", "headline",
                   "audit_secure_sum_t", "audit_secure_sum_holders"):
        assert needed in names
    for path in SCENARIOS:
        text = path.read_text()
        assert text.startswith("#") and "What to look at" in text, f"{path.name} needs its comment"


def tutorial_runs() -> set[tuple[str, str]]:
    """The (command, scenario) pairs the docs pages run: test_docs_pages.py runs each at
    this file's sizes and checks its output with :func:`check_output`."""
    from test_docs_pages import docs_commands

    return {(argv[1], argv[2]) for argv in docs_commands() if argv[2].endswith(".toml")}


def check_output(command: str, path: Path, d: dict, trials: int) -> None:
    """What a scenario's run or audit must print: its protocol and messages; the audit's bound."""
    if command == "run":
        assert d["protocol"] == tomllib.loads(path.read_text())["protocol"] and d["messages"] > 0
    else:
        assert d["trials"] == trials and "epsilon_lower" in d


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_runs(path, capsys, tmp_path):
    data = tomllib.loads(path.read_text())
    # What the tutorial runs is run there (the headline study at reduced size: the whole study
    # would cost a minute of the suite); running it twice would only measure it twice.
    done = {command for command, where in tutorial_runs() if where == f"scenarios/{path.name}"}
    if data["protocol"] == "headline":
        assert "run" in done
    if "run" not in done:
        check_output("run", path, run(capsys, "run", path, "--trials", min(data.get("trials", 50), 40), "--json"),
                     40)
    if "coalition" in data and "audit" not in done:
        check_output("audit", path, run(capsys, "audit", path, "--trials", AUDIT_TRIALS, "--json"), AUDIT_TRIALS)
