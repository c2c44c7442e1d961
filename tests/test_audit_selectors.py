"""Candidate events chosen honestly (issue 19): the selectors, the held-out pick, the example leaks.

The full-size checks (10^6 trials, five seeds, 50 audits of each soundness case at full
size) are in bench/bench_audit_power.py and bench/bench_audit_soundness.py; here they
run at 10^5 trials (thresholds lowered by what the smaller estimation sample costs).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
from _fast_audit import fast_audit

from privsim.analysis.audit import audit_batches
from privsim.analysis.audit_events import OutcomeSetEvent, ThresholdEvent
from privsim.analysis.audit_select import select_event
from privsim.analysis.audit_selectors import (
    SELECTORS,
    BinnedScore,
    CalibratedScore,
    TreeScore,
    _calibrate,
    _distinct_columns,
    _Proposal,
    _propose_logistic,
    _propose_naive_bayes,
    _propose_pairs,
    _propose_trees,
    _smoothed_forecast,
    choose_event,
    parse_selectors,
)
from privsim.cli import main
from privsim.errors import ParameterError

_LEAKS = Path(__file__).resolve().parent.parent / "examples" / "leaks"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"privsim_example_{name}", _LEAKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)
    return module


parity_leak = _example("parity_leak")
repeated_rr = _example("repeated_rr")
X8 = [1, 0, 1, 1, 0, 0, 1, 0]


def _rng(seed: int, which: str, index: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, 0 if which == "x" else 1)))


# --------------------------------------------------------------------------------------
# The example leaks


def test_parity_leak_exact_loss_is_twice_the_claim():
    # The enumeration agrees with the closed form 1.9 eps + 2 (eps / 20) = 2 eps, at any eps.
    for eps in (0.5, 1.0, 2.0):
        assert parity_leak.exact_loss(eps) == pytest.approx(2 * eps, rel=1e-9)
    assert parity_leak.ParityLeakSum().privacy(("0",), 8, 1).epsilon == 1.0


def test_parity_leak_is_found_by_a_generic_audit():
    # 10^5 trials (the bench runs 10^6 on five seeds, target 1.8). The pair event
    # (y - b even) has probabilities 0.870 and 0.130 (ratio e^1.9); on the ~8 x 10^4
    # estimation trials its Clopper-Pearson bound is about 1.88 with a standard
    # deviation near 0.01, so 1.8 is eight of them below.
    r = fast_audit(parity_leak.ParityLeakSum(), X8, coalition="0", neighbor=2, t=1, trials=100_000, seed=1)
    assert r.epsilon_lower >= 1.8 and r.violated
    assert r.epsilon_lower <= 2.0  # the exact loss
    assert r.selection == "pairs"
    assert "msg r2 7->0" in r.event and "output 0 mod 2" in r.event  # it names both columns


def test_the_former_rule_alone_misses_the_parity_leak():
    r = fast_audit(parity_leak.ParityLeakSum(), X8, coalition="0", neighbor=2, t=1, trials=100_000, seed=1,
              selectors=("view",))
    assert r.epsilon_lower < 1.0 and not r.violated


def test_many_weak_messages():
    # Twenty 0.25-DP messages (true loss 5), 10^5 trials: the best count event on the
    # ~8 x 10^4 estimation trials reaches 2.98; the floor 2.7 leaves 0.28 for the
    # event's estimation noise (a standard deviation of about 0.06) and for selection on
    # 2 x 10^4 trials. The former rule alone gets 2.55 here. At 10^6 (bench) the targets
    # are 1.25 (twenty 0.1-DP messages) and 3.3 (0.25).
    proto = repeated_rr.RepeatedRR(round_epsilon=0.25)
    r = fast_audit(proto, [1, 1], coalition="C", neighbor=1, trials=100_000, seed=3)
    assert 2.7 <= r.epsilon_lower <= 5.0
    assert not r.violated


# --------------------------------------------------------------------------------------
# Soundness (reduced: the bench repeats both at full size)


def _zero_loss_sampler(seed: int, rows: int):
    """A view independent of the input: bits, a small integer column and a Gaussian."""

    def sample(which: str, index: int) -> np.ndarray:
        rng = _rng(seed, "x", 2 * index + (which == "xp"))
        return np.column_stack([rng.integers(0, 2, (rows, 4)), rng.integers(0, 6, rows), rng.normal(size=rows)])

    return sample


def test_soundness_zero_loss_twenty_audits():
    # The truth is 0: a sound 95% bound is positive in at most 5% of audits. Of 20, a
    # Binomial(20, 0.05) count exceeds 3 with probability 1.6%. (The bench runs 50 at
    # 10^5 trials each, at most 5 may exceed; tests/test_audit_stats.py runs 50 audits of
    # randomized response with every selector.)
    columns = ["b0", "b1", "b2", "b3", "k", "g"]
    results = [audit_batches(_zero_loss_sampler(20_000 + i, 1_000), 2, 8, columns) for i in range(20)]
    assert sum(r.epsilon_lower > 0 for r in results) <= 3


# --------------------------------------------------------------------------------------
# The pieces


def test_calibration_recovers_a_scaled_likelihood_ratio():
    # y ~ N(+-1/2, 1): the log-likelihood ratio is y. Given 2y, the fit must return a slope
    # of 1/2 and an intercept of 0; the slope's standard error at 2 x 10^5 rows is about
    # 0.0023, so 0.49..0.51 is a four-sigma band that a factor of two cannot pass.
    rng = np.random.default_rng(np.random.SeedSequence(4))
    y_x, y_xp = rng.normal(0.5, 1, 100_000), rng.normal(-0.5, 1, 100_000)
    slope, intercept = _calibrate(2 * y_x, 2 * y_xp)
    assert 0.49 < slope < 0.51 and abs(intercept) < 0.02
    assert _calibrate(-y_x, -y_xp) is None  # a score pointing the wrong way is dropped


def _proposal(vx, vxp, columns):
    return _Proposal(vx, vxp, columns, None, 0.0, 0.95, 10**5, _distinct_columns(vx, vxp))


def test_naive_bayes_sums_weak_columns():
    # Twelve columns, each a 0.2-DP randomized response of the same bit, noise, and their
    # published total: the naive-Bayes proposal sums exactly the informative columns (the
    # total would count their evidence twice).
    def sampler(which, index):
        rng = _rng(9, which, index)
        keep = rng.random((20_000, 12)) < 1 / (1 + math.exp(-0.2))
        bits = keep if which == "x" else ~keep
        return np.column_stack([bits, rng.integers(0, 2, (20_000, 3)), bits.sum(axis=1)]).astype(float)

    columns = [f"m{i}" for i in range(12)] + ["n0", "n1", "n2", "total"]
    label, event = _propose_naive_bayes(_proposal(sampler("x", 0), sampler("xp", 0), columns))
    assert label == "naive-bayes" and isinstance(event.score, CalibratedScore)
    base = event.score.base
    assert isinstance(base, BinnedScore) and set(base.columns) == set(columns[:12])
    # Calibrated, the weights read as log-likelihood ratios: a bit's two values differ by
    # 2 ln(0.55/0.45) = 0.40 (0.2-DP each). The mean over twelve columns of the fitted
    # difference has a standard deviation near 0.005 and the slope one near 0.02, so
    # 0.3..0.5 is a five-sigma band that 0.2 or 0.8 cannot pass.
    spread = np.mean([w[-1] - w[0] for w in base.weights]) * event.score.slope
    assert 0.3 < spread < 0.5


def test_pairs_find_an_xor_that_no_column_shows():
    # y = s + coin + noise with noise even and a leaked bit: (y + b) mod 2 reveals s
    # through a 2-DP coin, while b alone and y mod 2 alone are fair coins.
    def sampler(which, index):
        rng = _rng(11, which, index)
        b = rng.integers(0, 2, 20_000)
        coin = rng.random(20_000) < 1 / (1 + math.e ** 2)
        # Mod 200 (even): no boundary, where extreme values of y would tell s apart too.
        y = ((1 if which == "x" else 0) + coin + b + 2 * rng.integers(0, 100, 20_000)) % 200
        return np.column_stack([y, b, rng.integers(0, 1000, 20_000)]).astype(float)

    vx, vxp = sampler("x", 0), sampler("xp", 0)
    label, event = _propose_pairs(_proposal(vx, vxp, ["y", "b", "share"]))
    assert label == "pairs" and isinstance(event, OutcomeSetEvent)
    assert event.labels() == ("y mod 2", "b")
    # {y - b odd} (s = 1 under x, the coin is 0 mostly): exactly the outcomes (1, 0), (0, 1).
    assert event.outcomes == frozenset({(1.0, 0.0), (0.0, 1.0)})
    assert event.describe() == "(y mod 2, b) in {(0, 1), (1, 0)}"
    # Whichever selector the held-out half picks, its event is this one on the views
    # (the trees, given y mod 2 among their features, can find the same set).
    picked, _ = choose_event(vx, vxp, ["y", "b", "share"], 1, 8)
    odd = (vx[:, 0] - vx[:, 1]) % 2 == 1
    assert np.mean(picked.contains(vx) == odd) > 0.99


def test_trees_score_describes_its_features():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(2)
    design = rng.normal(size=(400, 2))
    model = HistGradientBoostingClassifier(max_iter=5).fit(design, design[:, 0] > 0)
    score = TreeScore(model, (0, 1), (0, 0), ("a", "b"), (0,))
    assert score(np.column_stack([design, design])).shape == (400,)
    assert score.describe() == "boosted-trees log-odds of (a)"


def test_trees_score_computes_only_the_features_split_on_and_scores_as_the_model():
    # A fitted proposal over many features, few of them informative: the score built
    # from the features the trees split on equals the model's own prediction on all of
    # them (a feature split on but left out would change it).
    rng = np.random.default_rng(3)
    vx, vxp = rng.integers(0, 6, (4000, 12)), rng.integers(0, 6, (4000, 12))
    vx[:, 4] = (vx[:, 4] + (rng.random(4000) < 0.3)) % 6  # column 4 shifts under x
    vx[:, 7] = (2 * rng.integers(0, 3, 4000) + (rng.random(4000) < 0.7)) % 6  # column 7 mod 2 leans odd under x
    p = _Proposal(vx, vxp, [f"c{k}" for k in range(12)], None, 0.0, 0.95, 20_000, _distinct_columns(vx, vxp))
    _, event = _propose_trees(p)
    score = event.score
    while not isinstance(score, TreeScore):
        score = score.base
    assert 0 < len(score.used) < len(score.indices)
    from privsim.analysis.audit_selectors import _features

    views = np.concatenate([vx, vxp])
    full = score.model.decision_function(_features(views, score.indices, score.moduli))
    np.testing.assert_array_equal(score(views), full)


def test_trees_score_tables_equal_the_models_prediction_bit_for_bit():
    # The look-up tables that score the estimation trials must give the model's own
    # log-odds exactly, on rows at, just below and just above every threshold the trees
    # split on (a "<=" read as "<" would move those rows to the other leaf), and on
    # residues of integer columns.
    from sklearn.ensemble import HistGradientBoostingClassifier

    from privsim.analysis.audit_selectors import _features

    rng = np.random.default_rng(np.random.SeedSequence(11))
    n = 6000
    views = np.column_stack([rng.normal(size=n), rng.integers(0, 40, n).astype(float), rng.laplace(size=n)])
    label = (views[:, 0] + views[:, 1] % 2 + np.abs(views[:, 2]) + rng.normal(size=n) > 1.2).astype(float)
    indices, moduli = (0, 1, 1, 2), (0, 0, 2, 0)
    model = HistGradientBoostingClassifier(max_iter=30, max_leaf_nodes=15, learning_rate=0.25,
                                           random_state=0).fit(_features(views, indices, moduli), label)
    score = TreeScore(model, indices, moduli, ("a", "b", "b mod 2", "c"), (0, 1, 2, 3))
    assert score._tables is not None
    cuts = np.concatenate([tree.nodes["num_threshold"][~tree.nodes["is_leaf"].astype(bool)]
                           for trees in model._predictors for tree in trees])
    assert cuts.size > 30
    edge = np.concatenate([cuts, np.nextafter(cuts, -np.inf), np.nextafter(cuts, np.inf)])
    test = np.column_stack([rng.normal(size=edge.size), rng.integers(0, 40, edge.size).astype(float),
                            rng.laplace(size=edge.size)])
    test = np.concatenate([test, views])
    test[:edge.size, 0], test[:edge.size, 2] = edge, edge[::-1]
    expected = model.decision_function(_features(test, indices, moduli))
    np.testing.assert_array_equal(score(test), expected)
    assert np.unique(expected).size > 100


def test_count_below_is_searchsorted_left():
    # The trees' intervals by comparisons: ties, infinities and nan as np.searchsorted has them,
    # on both sides of the size where it hands over to np.searchsorted.
    from privsim.analysis.audit_selectors import _COMPARE_MAX, _count_below

    rng = np.random.default_rng(np.random.SeedSequence(31))
    for size in (1, 2, 5, _COMPARE_MAX, _COMPARE_MAX + 1, 60):
        thresholds = np.sort(rng.normal(size=size).round(1))
        values = np.concatenate([rng.normal(size=500).round(1), thresholds, [np.inf, -np.inf, np.nan, -0.0]])
        got = _count_below(thresholds, values)
        np.testing.assert_array_equal(got, np.searchsorted(thresholds, values, side="left"))
        assert got.dtype == np.intp


def test_trees_score_tables_read_residues_mod_2_3_4_as_the_model_does():
    # Residues of one integer column (negative values too) read from one table over the
    # column mod 12; a column with a non-integer value falls back to np.mod and searchsorted.
    from sklearn.ensemble import HistGradientBoostingClassifier

    from privsim.analysis.audit_selectors import _features

    rng = np.random.default_rng(np.random.SeedSequence(12))
    n = 6000
    views = np.column_stack([rng.integers(-50, 50, n).astype(float), rng.normal(size=n)])
    label = ((views[:, 0] % 3 == 1) ^ (views[:, 0] % 4 == 3) ^ (rng.random(n) < 0.2)).astype(float)
    indices, moduli = (0, 0, 0, 0, 1), (0, 2, 3, 4, 0)
    model = HistGradientBoostingClassifier(max_iter=30, max_leaf_nodes=15, learning_rate=0.25,
                                           random_state=0).fit(_features(views, indices, moduli), label)
    score = TreeScore(model, indices, moduli, ("a", "a mod 2", "a mod 3", "a mod 4", "b"), (0, 1, 2, 3, 4))
    assert score._tables is not None and sum(t is not None for t in score._tables.tables) >= 2
    test = np.column_stack([rng.integers(-10**6, 10**6, n).astype(float), rng.normal(size=n)])
    np.testing.assert_array_equal(score(test), model.decision_function(_features(test, indices, moduli)))
    test[7, 0] = 2.5  # not an integer: every residue of that column by np.mod, as the model reads it
    np.testing.assert_array_equal(score(test), model.decision_function(_features(test, indices, moduli)))


def test_the_view_selector_alone_is_the_former_rule():
    rng = np.random.default_rng(np.random.SeedSequence(3))
    vx, vxp = rng.laplace(1.0, 1.0, size=(20_000, 1)), rng.laplace(0.0, 1.0, size=(20_000, 1))
    event, selection = choose_event(vx, vxp, ["y"], 1, 1, selectors=("view",))
    former = select_event(vx, vxp, ["y"], n_estimate=20_000)
    assert selection == "column" and isinstance(event, ThresholdEvent)
    assert (event.cut, event.op) == (former.cut, former.op)


def test_selectors_are_checked():
    views = np.zeros((10, 2))
    with pytest.raises(ParameterError, match="selectors"):
        choose_event(views, views, ["a", "b"], 1, 1, selectors=("view", "magic"))
    with pytest.raises(ParameterError, match="selectors"):
        choose_event(views, views, ["a", "b"], 1, 1, selectors=("trees",))
    assert SELECTORS[0] == "view"


def test_selectors_that_cannot_win_are_skipped():
    # One continuous column, published twice (a message that is also the output), and a
    # constant: one distinct column, so no trees and no logistic score (both would only
    # re-describe thresholds on it), and naive Bayes counts the column once.
    rng = np.random.default_rng(np.random.SeedSequence(5))
    y_x, y_xp = rng.laplace(1.0, 1.0, 8_000), rng.laplace(0.0, 1.0, 8_000)
    vx, vxp = (np.column_stack([y, y, np.zeros_like(y)]) for y in (y_x, y_xp))
    columns = ["msg", "output", "input"]
    proposal = _proposal(vx, vxp, columns)
    assert proposal.distinct == (0,)
    assert _propose_trees(proposal) is None and _propose_logistic(proposal) is None
    label, event = _propose_naive_bayes(proposal)
    assert event.score.base.columns == ("msg",)
    # With two distinct columns both run again.
    vx2, vxp2 = (np.column_stack([v[:, 0], rng.normal(size=len(v))]) for v in (vx, vxp))
    two = _proposal(vx2, vxp2, ["msg", "noise"])
    assert _propose_logistic(two) is not None and _propose_trees(two) is not None


def test_the_smoothed_forecast_needs_a_calibrated_tail():
    # y ~ N(+-1/2, 1): the log-likelihood ratio is y. The event {y >= 3.5} holds about
    # 135 of 10^5 rows under x and 3 under x' (here 143 and 1): too few to count, so the
    # denominator is estimated from the x rows. With u = y the estimate sum e^-u matches
    # Pr[y >= 3.5 | x'] (the forecast stands); with u = 2y (a score that counts its
    # evidence twice) it is far too small, which the tail test must reject.
    rng = np.random.default_rng(np.random.SeedSequence(6))
    y_x, y_xp = rng.normal(0.5, 1, 100_000), rng.normal(-0.5, 1, 100_000)
    alpha = 0.05
    good = _smoothed_forecast(y_x, y_xp, y_x >= 3.5, y_xp >= 3.5, 0.0, alpha)
    # Near the true ln(p/q) = ln(0.00135/3.17e-5) = 3.75, less the guard (2 x 1.645/sqrt(143)
    # relative error: about 0.3); a factor of two in the estimate moves it by 0.69.
    assert 3.2 < good < 3.75
    assert _smoothed_forecast(2 * y_x, 2 * y_xp, y_x >= 3.5, y_xp >= 3.5, 0.0, alpha) == -math.inf
    # Where the event holds enough x' rows to be counted ({y >= 2.5}: 135 expected), the
    # count is the forecast: the smoothed estimate does not apply.
    assert _smoothed_forecast(y_x, y_xp, y_x >= 2.5, y_xp >= 2.5, 0.0, alpha) == -math.inf


def test_parse_selectors():
    assert parse_selectors("view,trees, pairs,view") == ("view", "trees", "pairs")
    assert parse_selectors(["view"]) == ("view",) and parse_selectors(None) is None
    with pytest.raises(ParameterError, match="unknown 'forest'.*view, naive-bayes, logistic-lr, pairs, trees"):
        parse_selectors("view,forest")
    with pytest.raises(ParameterError, match="'view' is missing"):
        parse_selectors("pairs")


def test_audit_cli_selectors(capsys, tmp_path):
    def _cli(*args):
        code = 0
        try:
            main([str(a) for a in args])
        except SystemExit as stop:
            code = stop.code or 0
        return (code, *capsys.readouterr())

    base = ["audit", "--protocol", "central-laplace", "--n", 4, "--coalition", "public", "--neighbor", 1,
            "--trials", 20_000, "--json"]
    code, _, err = _cli(*base, "--selectors", "view,forest")
    assert code == 2 and err.count("\n") == 1 and "forest" in err and all(name in err for name in SELECTORS)
    code, out, _ = _cli(*base, "--selectors", "view")
    assert code == 0 and json.loads(out)["selection"] == "column"
    # A scenario names them too (a string or a list); a bad one fails before anything runs.
    scenario = tmp_path / "s.toml"
    scenario.write_text('protocol = "central-laplace"\nn = 4\ncoalition = "public"\nneighbor = 1\n'
                        'trials = 20000\nselectors = ["view", "magic"]\n')
    code, _, err = _cli("audit", scenario)
    assert code == 2 and "selectors: unknown 'magic'" in err
