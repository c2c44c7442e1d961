"""shuffle-rr: the schedule, the estimator (unbiased, variance as derived), the exact count
law and the Feldman-McMillan-Talwar bound against brute force, the claims per coalition,
and the audit of the curator."""

from __future__ import annotations

import doctest
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from _fast_audit import fast_audit
from _sum_checks import assert_mean_and_variance
from scipy import stats

import privsim
from privsim.mechanisms import shuffle_accounting
from privsim.mechanisms.shuffle_accounting import (
    fmt_closed_form,
    fmt_delta,
    fmt_epsilon,
    rr_count_delta,
    rr_count_epsilon,
)
from privsim.protocols import get_protocol
from privsim.protocols import shuffle as shuffle_module
from privsim.protocols.shuffle import SHUFFLER, ShuffleRR

ROOT = Path(__file__).resolve().parent.parent


def test_doctests():
    for module in (shuffle_accounting, shuffle_module):
        result = doctest.testmod(module)
        assert result.attempted > 3 and result.failed == 0


def test_schedule_and_what_the_curator_receives():
    proto = get_protocol("shuffle-rr", epsilon="2")
    n = 9
    sched = proto.schedule(n, n - 1)
    assert sched.messages == n and sched.rounds == 2
    assert sched.neighbours("C") == [SHUFFLER] and sched.degree(SHUFFLER) == n
    res = privsim.simulate(proto, np.ones(n, dtype=int), trials=50, seed=1, record=True)
    view = res.view("C")
    assert view.columns() == ["msg r2 0->C", "output C"]  # the multiset's canonical form: the count
    shuffler = res.view([SHUFFLER])
    reports = [shuffler.to_array()[:, shuffler.columns().index(f"msg r1 {i}->0")] for i in range(1, n)]
    own = shuffler.randomness[SHUFFLER][0] < proto.p  # the shuffler's own report keeps its bit 1
    assert np.array_equal(view.to_array()[:, 0], np.sum(reports, axis=0) + own)


def test_estimator_is_unbiased_with_the_derived_variance():
    """E f = SUM(x); Var f = n p(1-p)/(2p-1)^2, checked against the exact 4th moment (5 sd)."""
    n, r, eps0 = 40, 20000, 1.0
    proto = ShuffleRR(epsilon=eps0)
    p = math.exp(eps0) / (1 + math.exp(eps0))
    x = (np.arange(n) % 3 == 0).astype(int)
    res = privsim.simulate(proto, x, trials=r, seed=5, record=False)
    scale = 1 / (2 * p - 1)
    k2 = n * p * (1 - p)                       # every report: Bernoulli variance p(1-p)
    k4 = n * p * (1 - p) * (1 - 6 * p * (1 - p))  # Bernoulli fourth cumulant
    variance = k2 * scale**2
    assert proto.variance(n) == pytest.approx(variance, rel=1e-12)
    assert_mean_and_variance(res.error, variance, (k4 + 3 * k2**2) * scale**4)
    assert proto.variance(n) != pytest.approx(n * p * (1 - p) / (2 * p - 1), rel=0.1)  # not a slip of one power


# ------------------------------------------------------------------ the exact count law
def _brute_force_delta(epsilon: float, eps0: float, h: int) -> float:
    """max over u of the hockey-stick divergence, by explicit convolution of Bernoulli pmfs."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    worst = 0.0
    for u in range(h):
        others = np.array([1.0])
        for bit in [1] * u + [0] * (h - 1 - u):
            q = p if bit else 1 - p
            others = np.convolve(others, [1 - q, q])
        with_one, with_zero = np.convolve(others, [1 - p, p]), np.convolve(others, [p, 1 - p])
        for a, b in ((with_one, with_zero), (with_zero, with_one)):
            worst = max(worst, float(np.clip(a - math.exp(epsilon) * b, 0, None).sum()))
    return worst


@pytest.mark.parametrize("h, eps0, epsilon", [(1, 1.0, 0.3), (6, 2.0, 0.5), (13, 0.7, 0.1)])
def test_exact_count_delta_is_the_brute_force_convolution(h, eps0, epsilon):
    assert rr_count_delta(epsilon, eps0, h) == pytest.approx(_brute_force_delta(epsilon, eps0, h), abs=1e-12)


def test_exact_count_epsilon_solves_for_delta_and_amplifies():
    eps = rr_count_epsilon(1e-6, 2.0, 1000)
    assert rr_count_delta(eps, 2.0, 1000) == pytest.approx(1e-6, rel=1e-6)
    assert rr_count_delta(0.9 * eps, 2.0, 1000) > 1e-6
    assert eps == pytest.approx(0.3233, abs=1e-4)
    assert rr_count_epsilon(1e-6, 2.0, 100) < 1.7  # n = 100: the count still amplifies


# ------------------------------------------------------------------ Feldman, McMillan, Talwar
def _brute_force_fmt(epsilon: float, eps0: float, n: int) -> float:
    """[FMT21] Thm 3.2 by explicit pmfs: sum_c Pr[C=c] sum_k max(0, P_c(k) - e^eps Q_c(k))."""
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    total = 0.0
    for c in range(n):
        b = stats.binom.pmf(np.arange(c + 1), c, 0.5)
        shifted, base = np.concatenate([[0], b]), np.concatenate([b, [0]])
        pc, qc = alpha * shifted + (1 - alpha) * base, alpha * base + (1 - alpha) * shifted
        total += stats.binom.pmf(c, n - 1, math.exp(-eps0)) * np.clip(pc - math.exp(epsilon) * qc, 0, None).sum()
    return float(total)


@pytest.mark.parametrize("epsilon, eps0, n", [(0.5, 2.0, 300), (0.2, 1.0, 150), (1.5, 3.0, 400)])
def test_fmt_numerical_delta_is_their_reduction(epsilon, eps0, n):
    assert fmt_delta(epsilon, eps0, n) == pytest.approx(_brute_force_fmt(epsilon, eps0, n), rel=1e-9, abs=1e-15)


def test_fmt_bounds_sit_between_the_exact_count_and_the_local_epsilon():
    for n in (100, 1000):
        exact, fmt = rr_count_epsilon(1e-6, 2.0, n), fmt_epsilon(1e-6, 2.0, n)
        assert exact < fmt <= 2.0  # FMT holds for every 2-LDP randomizer, RR included
    assert fmt_epsilon(1e-6, 2.0, 100) > 1.99 and fmt_closed_form(1e-6, 2.0, 100) is None
    # the closed form at n = 1000: its condition holds only up to eps0 = ln(n/(16 ln(2/delta))) = 1.460
    limit = math.log(1000 / (16 * math.log(2 / 1e-6)))
    assert limit == pytest.approx(1.460, abs=1e-3)
    assert fmt_closed_form(1e-6, limit - 1e-9, 1000) is not None and fmt_closed_form(1e-6, 2.0, 1000) is None
    e0 = math.exp(2.0)  # ignoring the condition would give 1.13 at eps0 = 2
    ignored = math.log1p((e0 - 1) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4e6) / 1000) + 8 * e0 / 1000))
    assert ignored == pytest.approx(1.127, abs=1e-3) and ignored > fmt_epsilon(1e-6, 2.0, 1000)


# ------------------------------------------------------------------ claims and the audit
def test_claims_per_coalition():
    n = 1000
    proto = ShuffleRR(epsilon=2.0, delta=1e-6)
    curator = proto.privacy(("C",), n, n - 1)
    assert curator.epsilon == pytest.approx(rr_count_epsilon(1e-6, 2.0, n)) and curator.delta == 1e-6
    assert curator.paper.epsilon == pytest.approx(fmt_epsilon(1e-6, 2.0, n))
    with_users = proto.privacy((5, 6, "C"), n, n - 1)  # they subtract their own two reports
    assert with_users.epsilon == pytest.approx(rr_count_epsilon(1e-6, 2.0, n - 2))
    assert proto.privacy((SHUFFLER,), n, n - 1) == privsim.Privacy(2.0)
    assert proto.privacy((SHUFFLER, "C"), n, n - 1) == privsim.Privacy(2.0)
    assert proto.privacy((3, 4), n, n - 1) == privsim.Privacy(0.0)
    assert proto.public_privacy(n, n - 1) == curator


def test_audit_of_the_curator_stays_below_the_exact_claim_and_comes_close():
    """All-zero inputs are a worst case: the count 0 is the tell-tale event. n = 20 keeps it fast."""
    proto = ShuffleRR(epsilon=2.0, delta=1e-6)
    res = fast_audit(proto, np.zeros(20, dtype=int), coalition="C", neighbor=1, trials=60000, seed=1,
                     delta=1e-6)
    assert res.violated is False and res.epsilon_lower <= res.epsilon_claimed
    assert res.epsilon_lower > 1.5  # the audit has power here: the claim is nearly eps0
    assert res.paper_claim["epsilon"] >= res.epsilon_claimed


def test_audit_scenario_states_the_three_epsilons():
    data = tomllib.loads((ROOT / "scenarios" / "audit_shuffle_rr.toml").read_text())
    assert data["n"] == 1000 and data["params"]["epsilon"] == 2.0 and data["coalition"] == "C"
    proto = get_protocol(data["protocol"], **data["params"])
    bounds = proto.amplification(data["n"])
    assert bounds["exact"] == pytest.approx(0.3233, abs=1e-4)
    assert bounds["fmt_numerical"] == pytest.approx(0.5455, abs=1e-4)
    assert bounds["fmt_closed_form"] is None and bounds["local"] == 2.0
    claim = proto.privacy(("C",), data["n"], data["n"] - 1)
    assert claim.epsilon == bounds["exact"] and claim.paper.epsilon == bounds["fmt_numerical"]


def test_above_the_exact_limit_the_claim_is_the_fmt_bound():
    proto = ShuffleRR(epsilon=4.0, delta=1e-6)
    n = shuffle_module.EXACT_LIMIT + 1000
    claim = proto.privacy(("C",), n, n - 1)
    assert claim.epsilon == pytest.approx(fmt_epsilon(1e-6, 4.0, n)) and claim.paper is None
    assert proto.amplification(n)["exact"] is None and claim.epsilon < 4.0
