"""The `privsim` command: the JSON contract of DESIGN.md section 5 and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _bench import load_bench

from privsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ["protocol", "n", "t", "trials", "seed", "rounds", "messages", "bits", "true_value",
            "estimate_mean", "estimate_std", "abs_error_mean", "rmse"]


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([*map(str, args)])
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


def test_run_json_contract(capsys):
    code, out, _ = cli(capsys, "run", "--protocol", "randomized-response", "--n", 1000, "--trials", 2000,
                       "--seed", 1, "--param", "epsilon=1", "--json")
    assert code == 0
    d = json.loads(out)
    assert all(k in d for k in CONTRACT)
    assert (d["n"], d["trials"], d["seed"], d["messages"], d["rounds"]) == (1000, 2000, 1, 1000, 1)
    # the estimate's spread matches sqrt(n (1/4 - a^2))/(2a) = 44.7 at eps = 1 (5-sigma band)
    sd = (1000 * (0.25 - 1 / 36) / (4 / 36)) ** 0.5
    assert abs(d["estimate_std"] - sd) < 5 * sd / (2 * 1999) ** 0.5
    assert abs(d["estimate_mean"] - d["true_value"]) < 5 * sd / 2000 ** 0.5


def test_run_is_deterministic(capsys):
    args = ["run", "--protocol", "randomized-response-distributed", "--n", 50, "--trials", 100, "--seed", 4, "--json"]
    assert cli(capsys, *args)[1] == cli(capsys, *args)[1]


def test_run_scenario_file_and_flag_override(capsys):
    code, out, _ = cli(capsys, "run", ROOT / "scenarios" / "randomized_response.toml", "--n", 100, "--trials", 50,
                       "--json")
    d = json.loads(out)
    assert code == 0 and d["n"] == 100 and d["trials"] == 50 and d["true_value"] == 50


def test_run_table_and_plot(capsys, tmp_path):
    png = tmp_path / "est.png"
    code, out, _ = cli(capsys, "run", "--protocol", "randomized-response", "--n", 64, "--trials", 200, "--seed", 1,
                       "--plot", png)
    assert code == 0 and "estimate_mean" in out and png.stat().st_size > 1000


@pytest.mark.parametrize("args, message", [
    (["--param", "epsilon=0"], "epsilon must be > 0"),
    (["--t", "16"], "t must satisfy 0 <= t < n = 16"),
    (["--param", "noise"], "--param must look like KEY=VALUE"),
    (["--inputs", "count:99"], "inputs: bad argument"),
    (["--bogus"], "No such option"),
])
def test_bad_input_one_line_exit_2(capsys, args, message):
    code, out, err = cli(capsys, "run", "--protocol", "randomized-response", "--n", 16, "--trials", 5, *args)
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1 and message in err


def test_unknown_protocol(capsys):
    code, _, err = cli(capsys, "run", "--protocol", "no-such-protocol", "--n", 4, "--trials", 1)
    assert code == 2 and "unknown protocol 'no-such-protocol'" in err


def test_bad_scenario_file(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('protocol = "randomized-response"\nn = "ten"\n')
    code, _, err = cli(capsys, "run", bad)
    assert code == 2 and f"{bad}: key 'n' must be int" in err
    bad.write_text('protocol = "randomized-response"\nnn = 3\n')
    code, _, err = cli(capsys, "run", bad)
    assert code == 2 and "unknown key 'nn'" in err
    code, _, err = cli(capsys, "run", tmp_path / "missing.toml")
    assert code == 2 and "does not exist" in err


def test_views_json_and_table(capsys):
    code, out, _ = cli(capsys, "views", "--protocol", "randomized-response-distributed", "--n", 4,
                       "--coalition", "0", "--trials", 2, "--seed", 1, "--json")
    d = json.loads(out)
    assert code == 0 and d["coalition"] == ["0"] and len(d["trials"]) == 2
    msgs = d["trials"][0]["messages"]
    assert [(m["round"], m["from"], m["to"]) for m in msgs] == [
        (1, "1", "0"), (1, "2", "0"), (1, "3", "0"), (2, "0", "1"), (2, "0", "2"), (2, "0", "3")]
    code, out, _ = cli(capsys, "views", "--protocol", "randomized-response", "--n", 4, "--coalition", "C",
                       "--trials", 1, "--seed", 1)
    assert code == 0 and "view of coalition {C}" in out


def test_views_bad_coalition(capsys):
    code, _, err = cli(capsys, "views", "--protocol", "randomized-response", "--n", 4, "--coalition", "0,9")
    assert code == 2 and "party 9 does not exist" in err


def test_installed_command_has_no_traceback():
    p = subprocess.run([sys.executable, "-m", "privsim", "run", "--protocol", "randomized-response", "--n", "8",
                        "--trials", "2", "--param", "epsilon=-1"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.parametrize("body, message", [
    ('protocol = "randomized-response"\nn = 8\ncolour = "red"\n', "unknown key 'colour' (allowed:"),
    ('protocol = "randomized-response"\nn = 8\ntrials = "many"\n', "key 'trials' must be int (got str)"),
    ('protocol = "randomized-response"\nn = 0\n', "n must be >= 1 (got 0)"),
    ('protocol = "randomized-response"\nn = 8\nt = 9\n', "t must satisfy 0 <= t < n = 8 (got 9)"),
    ('protocol = "randomized-response"\nn = 8\n[params]\nepsilon = -1\n', "epsilon must be > 0 (got -1.0)"),
    ('protocol = "randomized-response"\nn = 8\n[params]\nrho = 1\n', "unknown parameter 'rho' for randomized-response"),
    ('protocol = "secure-sum"\nn = 8\n[params]\nnoise = "cauchy"\n', "noise must be one of none, laplace"),
    ('protocol = "randomized-response"\nn = 8\ninputs = "halves"\n', "inputs: unknown spec 'halves'"),
    ('protocol = "nope"\nn = 8\n', "unknown protocol 'nope'"),
    ('protocol = "randomized-response"\nn = 8\n[params\n', "not valid TOML"),
])
def test_bad_scenarios_name_file_key_and_allowed(capsys, tmp_path, body, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(body)
    code, out, err = cli(capsys, "run", bad)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {bad}: ") and message in err


def test_bench_prints_one_json_object(capsys, monkeypatch, tmp_path):
    # The command's plumbing (find the suites, run --only those, print one JSON object), on a
    # stand-in suite: the real one re-measures for half a minute what `privsim bench` reports.
    import importlib.util

    stand_in = tmp_path / "bench_engine.py"
    stand_in.write_text("def main():\n    return {'messages_per_second': 2.5e6}\n")
    real = importlib.util.spec_from_file_location
    monkeypatch.setattr(importlib.util, "spec_from_file_location", lambda name, path: real(name, stand_in))
    main(["bench", "--only", "engine", "--json"])
    assert json.loads(capsys.readouterr().out) == {"engine": {"messages_per_second": 2.5e6}}
    code, out, err = cli(capsys, "bench", "--only", "nope")
    assert code == 2 and out == "" and "--only: unknown suite 'nope' (allowed: " in err and "engine" in err


def test_bench_engine_figures_at_small_size():
    # What the engine benchmark checks besides timing: the engine's outputs are bit for bit
    # numpy's loop over the per-party streams (here over two trial blocks of 1024), and
    # messages get delivered.
    bench = load_bench("engine")
    rr = bench.rr_vs_numpy(n=64, trials=1100)
    assert rr["rr_same_outputs_bit_for_bit"] == 1.0 and rr["rr_engine_seconds"] > 0
    rate = bench.message_rate(n=20)
    assert rate["messages_per_second"] > 0 and rate["all_to_all_parties"] == 20

