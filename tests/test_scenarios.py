"""Every bundled scenario runs (at reduced size); audit scenarios audit."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from privsim.cli import main

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


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_runs(path, capsys, tmp_path):
    data = tomllib.loads(path.read_text())
    if data["protocol"] == "headline":
        # The tutorial runs exactly this scenario (test_readme.py, at 50 trials, with its
        # figure); running the whole study twice would cost a minute of the suite.
        assert "privsim run scenarios/headline.toml" in (path.parent.parent / "README.md").read_text()
        return
    d = run(capsys, "run", path, "--trials", min(data.get("trials", 50), 40), "--json")
    assert d["protocol"] == data["protocol"] and d["messages"] > 0
    if "coalition" in data:
        a = run(capsys, "audit", path, "--trials", 4096, "--json")
        assert a["trials"] == 4096 and "epsilon_lower" in a
