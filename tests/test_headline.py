"""The headline study: its numbers follow the closed forms, the figure is written, the scenario runs."""

from __future__ import annotations

import doctest
import json
import math
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from privsim.analysis import headline as headline_module
from privsim.analysis.headline import headline_study, load_headline_scenario, plot_headline
from privsim.errors import ParameterError
from privsim.mechanisms.shuffle_accounting import split_mix_delta
from privsim.protocols.ck_sum import CKSum
from privsim.protocols.randomized_response import RandomizedResponse
from privsim.protocols.secure_sum import SecureSum
from privsim.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def test_doctests():
    result = doctest.testmod(headline_module)
    assert result.attempted > 5 and result.failed == 0


@pytest.fixture(scope="module")
def study():
    return headline_study([16, 64, 256], epsilon=1.0, t=4, trials=400, seed=7,
                          protocols=tuple(k for k in headline_module.PROTOCOLS if not k.startswith("secagg")))


def test_secure_aggregation_rows():
    # SecAgg's n(n - 1) + 7n and SecAgg+'s n(k + 5) messages, the discrete Gaussian's error
    # (within 5 sd of the exact variance), and no run above max_n.
    from privsim.protocols.secagg import SecAggPlus

    d = headline_study([32, 64, 300], epsilon=1.0, t=3, trials=200, seed=3, protocols=("secagg", "secagg_plus"))
    for i, n in enumerate(d["ns"][:2]):
        assert d["secagg"]["messages"][i] == n * (n - 1) + 7 * n
        assert d["secagg_plus"]["messages"][i] == n * (SecAggPlus().degree(n) + 5)
        for key in ("secagg", "secagg_plus"):
            var, r = d[key]["rmse_theory"][i] ** 2, d["trials"][i]
            assert abs(d[key]["rmse"][i] ** 2 - var) < 5 * math.sqrt(2 / r) * var * 1.2  # kurtosis about 3
    assert d["secagg"]["messages"][2] is None and d["secagg"]["rmse"][2] is None  # n = 300 > max_n = 256
    assert d["secagg_plus"]["messages"][2] == 300 * (SecAggPlus().degree(300) + 5)


def test_messages_follow_the_closed_forms(study):
    for i, n in enumerate(study["ns"]):
        t = study["t"][i]
        assert study["rr"]["messages"][i] == n
        assert study["secure_sum"]["messages"][i] == SecureSum.message_count(n, t) == (t + 1) * (n - 1) + t
        assert study["ck_sum"]["messages"][i] == CKSum.message_count(n, t)
        assert study["bound_quarter"][i] == n * (t + 1) / 4 and study["bound_half"][i] == n * (t + 1) / 2
        assert study["secure_sum"]["messages"][i] >= study["bound_half"][i]
        assert study["rr"]["messages"][i] < study["bound_quarter"][i]  # t = 4: RR sits below n(t+1)/4


def test_errors_follow_the_exact_standard_deviations(study):
    """rmse^2 is within 5 sd of the exact variance (sd of a mean of squares from the 4th moment)."""
    rr = RandomizedResponse(epsilon=1.0)
    for i, n in enumerate(study["ns"]):
        t, r = study["t"][i], study["trials"][i]
        sd_rr = math.sqrt(rr.variance(n))
        assert study["rr"]["rmse_theory"][i] == pytest.approx(sd_rr)
        # RR's error is a scaled, centred binomial: its kurtosis is at most 3, so Var(err^2) <= 2 sd^4
        assert abs(study["rr"]["rmse"][i] ** 2 - sd_rr**2) < 5 * math.sqrt(2 / r) * sd_rr**2
        var_ss = 2 * n / (n - t)  # 2 b^2 n/(n-t), b = 1/eps = 1
        for key in ("secure_sum", "ck_sum"):
            assert study[key]["rmse_theory"][i] == pytest.approx(math.sqrt(var_ss))
            k = n / (n - t)
            mu4 = 12 * k + 3 * var_ss**2  # Gamma(k) - Gamma(k): kappa4 = 12 k, plus 3 kappa2^2
            assert abs(study[key]["rmse"][i] ** 2 - var_ss) < 5 * math.sqrt((mu4 - var_ss**2) / r)
    # the headline: RR grows like sqrt(n), the secure sums do not
    assert study["rr"]["rmse"][-1] > 3 * study["rr"]["rmse"][0]
    assert study["secure_sum"]["rmse"][-1] < 2 * study["secure_sum"]["rmse"][0]


def test_every_sum_protocol_is_on_the_map(study):
    """Messages per party and errors of the protocols beyond the paper's three."""
    assert study["protocols"] == [k for k in headline_module.PROTOCOLS if not k.startswith("secagg")]
    assert "secure_sum_skellam" not in headline_module.DEFAULT_PROTOCOLS
    for i, n in enumerate(study["ns"]):
        t, r = study["t"][i], study["trials"][i]
        assert study["rr_distributed"]["messages"][i] == 2 * (n - 1)
        assert study["central"]["messages"][i] == n and study["shuffle_rr"]["messages"][i] == n
        assert study["secure_sum_skellam"]["messages"][i] == study["secure_sum"]["messages"][i]
        for key in study["protocols"]:
            assert study[key]["messages_per_party"][i] == pytest.approx(study[key]["messages"][i] / n)
        # exact fourth moments: Laplace(b) mu4 = 24 b^4; Skellam(mu) mu4 = mu + 3 mu^2; RR as a Bernoulli sum
        shuffle = headline_module.PROTOCOLS["shuffle_rr"].build(1.0, n)
        p = shuffle.p
        k2, k4 = n * p * (1 - p), n * p * (1 - p) * (1 - 6 * p * (1 - p))
        sk = SecureSum(noise="skellam", epsilon=1.0, delta=1e-6)
        s = sk.units(n, t)  # the sum is Sk(M) on the grid Z / s: variance M/s^2, mu4 (M + 3 M^2)/s^4
        M = sk.family_for(n, t).mu * n / (n - t)
        for key, var, mu4 in (("central", 2.0, 24.0),
                              ("secure_sum_skellam", M / s**2, (M + 3 * M**2) / s**4),
                              ("shuffle_rr", k2 / (2 * p - 1) ** 2, (k4 + 3 * k2**2) / (2 * p - 1) ** 4)):
            assert study[key]["rmse_theory"][i] == pytest.approx(math.sqrt(var), rel=1e-9)
            assert abs(study[key]["rmse"][i] ** 2 - var) < 5 * math.sqrt((mu4 - var**2) / r), key
        # the shuffler's local eps0 is the largest that FMT amplifies to eps = 1 at delta = 1e-6
        claim = shuffle.privacy(("C",), n, n - 1)
        assert (claim.paper or claim).epsilon == pytest.approx(1.0, rel=1e-6) and shuffle.epsilon > 1.0
    # what the shuffler changes: n messages, yet an error that does not grow like sqrt(n)
    assert study["shuffle_rr"]["rmse"][-1] < 0.5 * study["rr"]["rmse"][-1]


def test_shuffle_sum_is_on_the_map(study):
    """m shares per user plus the shuffler's one message; error sqrt(n/(n-t) Var DLap(p/eps))/p."""
    from _sum_checks import discrete_laplace_total_moments

    for i, n in enumerate(study["ns"]):
        t, r = study["t"][i], study["trials"][i]
        proto = headline_module.PROTOCOLS["shuffle_sum"].build(1.0, n)
        m, p = proto.messages_for(n, t), proto.precision_for(n)
        assert study["shuffle_sum"]["messages"][i] == (n - 1) * m + 1
        assert study["shuffle_sum"]["rounds"][i] == m + 1 and 7 <= m <= 13
        q = proto.modulus_for(n, t)  # m: the fewest shares that keep the curator's delta <= 1e-6
        assert proto.privacy(("C",), n, t).delta <= 1e-6 < split_mix_delta(1.0, n, m - 1, q)
        var, mu4 = discrete_laplace_total_moments(p / 1.0, n / (n - t))
        var, mu4 = var / p**2, mu4 / p**4
        assert study["shuffle_sum"]["rmse_theory"][i] == pytest.approx(math.sqrt(var), rel=1e-12)
        assert abs(study["shuffle_sum"]["rmse"][i] ** 2 - var) < 5 * math.sqrt((mu4 - var**2) / r)
    # O(1/eps) with about m messages per party and no share holders: the trusted shuffler's doing
    assert study["shuffle_sum"]["rmse"][-1] < 0.2 * study["rr"]["rmse"][-1]


def test_trials_shrink_at_large_n():
    d = headline_study([8, 64], t=1, trials=200, max_party_trials=1024, min_trials=20, include_ck=False,
                       protocols=("rr", "secure_sum", "ck_sum"))
    assert d["trials"] == [128, 20] and "ck_sum" not in d and d["protocols"] == ["rr", "secure_sum"]
    assert d["t"] == [1, 1]
    assert headline_study([3], t=5, trials=30, protocols=("secure_sum",))["t"] == [2]  # t capped at n - 1


def test_bad_arguments():
    with pytest.raises(ParameterError, match="ns must be"):
        headline_study([])
    with pytest.raises(ParameterError, match="ns must be"):
        headline_study([1, 16])
    with pytest.raises(ParameterError, match="t must be"):
        headline_study([16], t=-1)
    with pytest.raises(ParameterError, match="protocols must be a non-empty selection"):
        headline_study([16], protocols=("telepathy",))


def test_plot_writes_a_png(tmp_path, study):
    path = tmp_path / "headline.png"
    plot_headline(path, study)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_shipped_scenario():
    path = ROOT / "scenarios" / "headline.toml"
    raw = tomllib.loads(path.read_text())
    assert raw["protocol"] == "headline"
    kwargs = load_headline_scenario(path)
    assert kwargs["ns"] == [2**k for k in range(6, 15)] and kwargs["t"] == 5 and kwargs["epsilon"] == 1.0
    assert max(kwargs["ns"]) * min(kwargs["trials"], headline_module.MAX_PARTY_TRIALS // max(kwargs["ns"])) \
        <= headline_module.MAX_PARTY_TRIALS


def test_scenario_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('protocol = "headline"\nns = [1]\n')
    with pytest.raises(ParameterError, match="ns must be"):
        load_headline_scenario(bad)
    bad.write_text('protocol = "secure-sum"\nns = [16]\n')
    with pytest.raises(ParameterError, match="protocol must be"):
        load_headline_scenario(bad)
    bad.write_text('protocol = "headline"\nns = [16]\n[params]\ndelta = 0.1\n')
    with pytest.raises(ParameterError, match="unknown parameter"):
        load_headline_scenario(bad)


def test_cli_table_lists_every_protocol_of_the_study(tmp_path, capsys, monkeypatch):
    # 200 columns whatever the terminal (the CLI's console reads its width when privsim.cli is imported)
    from rich.console import Console

    from privsim.cli import main

    monkeypatch.setattr("privsim.cli.stdout", Console(width=200))
    scenario = tmp_path / "h.toml"
    scenario.write_text('protocol = "headline"\nns = [16, 32]\nt = 1\ntrials = 50\nseed = 3\n')
    main(["run", str(scenario), "--no-progress"])
    out = capsys.readouterr().out
    for key in headline_module.DEFAULT_PROTOCOLS:  # one row per n, in the protocol column
        cell = re.compile(rf"│ {re.escape(headline_module.PROTOCOLS[key].label)}\s+│")
        assert len(cell.findall(out)) == 2, key
    assert "shuffle-sum" in out


def test_module_fallback_command(tmp_path):
    scenario = tmp_path / "h.toml"
    scenario.write_text('protocol = "headline"\nns = [16, 32]\nt = 1\ntrials = 50\nseed = 3\n'
                        '[params]\nepsilon = 2.0\n')
    png = tmp_path / "h.png"
    out = subprocess.run([sys.executable, "-m", "privsim.analysis.headline", str(scenario), "--plot", str(png),
                          "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["ns"] == [16, 32] and data["epsilon"] == 2.0 and data["plot"] == str(png)
    assert png.stat().st_size > 0
    bad = subprocess.run([sys.executable, "-m", "privsim.analysis.headline", str(tmp_path / "missing.toml")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: scenario file")


@pytest.mark.parametrize("name", ["secure_sum_laplace", "secure_sum_gaussian", "secure_sum_discrete",
                                  "secure_sum_none", "ck_sum", "central_laplace"])
def test_protocol_scenarios_load_and_run(name):
    """Each shipped scenario is valid; a short run gives the documented messages."""
    from privsim.scenario import make_inputs
    from privsim.simulate import simulate

    spec = load_scenario(ROOT / "scenarios" / f"{name}.toml")
    proto = spec.build()
    x = make_inputs(proto, spec.inputs, spec.n, spec.seed)
    res = simulate(proto, x, trials=20, seed=spec.seed, t=spec.t, record=False)
    text = (ROOT / "scenarios" / f"{name}.toml").read_text()
    assert f"= {res.messages}" in text or f"= {res.messages} " in text, res.messages
    assert np.all(np.isfinite(res.estimate))


def test_the_module_prints_a_row_above_a_protocols_max_n(monkeypatch, capsys, tmp_path):
    # python -m privsim.analysis.headline: a protocol not simulated at some n prints "-"
    from privsim.analysis import headline

    data = {"ns": [64, 512], "trials": [200, 200], "protocols": ["secure_sum", "secagg"], "seconds": 1.0,
            "secure_sum": {"rmse": [1.4, 1.41], "messages": [383, 3071]},
            "secagg": {"rmse": [4.2, None], "messages": [4928, None]}}
    monkeypatch.setattr(headline, "load_headline_scenario", lambda path: {})
    monkeypatch.setattr(headline, "headline_study", lambda **kw: data)
    assert headline.main(["ignored.toml"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "secagg: rmse=   4.200" in out[0] and "secagg:" in out[1] and "rmse" not in out[1].split("secagg:")[1]


def test_a_long_headline_comparison_is_announced_and_the_estimate_reads_its_runs(tmp_path, capsys, monkeypatch):
    """Issue 27: the headline comparison says, before its first run, how long it will take
    (the sum of its runs' estimates), and is refused when its largest run cannot fit."""
    import privsim.resources as res
    from privsim.cli import main

    scenario = tmp_path / "h.toml"
    scenario.write_text('protocol = "headline"\nns = [16, 32]\nt = 1\ntrials = 50\nseed = 3\n')
    est = headline_module.headline_estimate([16, 32], t=1, trials=50, seed=3)
    assert est.batches == 2 * len(headline_module.DEFAULT_PROTOCOLS)  # every protocol at both n
    monkeypatch.setattr(res, "START_SECONDS", 10.0)  # each run now costs at least 10 s in the model
    longer = headline_module.headline_estimate([16, 32], t=1, trials=50, seed=3)
    assert longer.seconds - est.seconds == pytest.approx(9.75 * est.batches)
    main(["run", str(scenario), "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert json.loads(captured.out)["ns"] == [16, 32]
    assert re.search(rf"the headline comparison will take about {res.format_seconds(longer.seconds)} \(estimated; "
                     rf".* {est.batches} runs\); Ctrl-C stops it", captured.err), captured.err
    monkeypatch.setattr(res, "available_memory", lambda: 1 << 20)
    with pytest.raises(SystemExit) as stop:
        main(["run", str(scenario), "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert stop.value.code == 2 and captured.out == "" and "of memory (estimated), above the 1.0 MiB" in captured.err
