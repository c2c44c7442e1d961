"""Exact privacy loss of integer noise sums (issue 26), checked by direct enumeration in mpmath.

The independent route: the pmf of a sum of shares by direct (not FFT) convolution of the
shares' pmfs written out from their formulas, and the hockey-stick sum in 30-digit mpmath.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from privsim.mechanisms import exact_integer, integer_noise
from privsim.mechanisms.exact_integer import IntegerLaw, ddg_sum_law, exact_delta, exact_epsilon, skellam_law
from privsim.privacy import Privacy


def _mp_delta(pmf: list, D: int, epsilon: float) -> mpmath.mpf:
    with mpmath.workdps(30):
        e = mpmath.e ** mpmath.mpf(epsilon)
        p = [mpmath.mpf(0)] * D + [mpmath.mpf(x) for x in pmf] + [mpmath.mpf(0)] * D
        worst = mpmath.mpf(0)
        for d in range(1, D + 1):
            for sign in (1, -1):
                total = mpmath.mpf(0)
                for z in range(D, len(p) - D):
                    total += max(mpmath.mpf(0), p[z] - e * p[z - sign * d])
                total += sum(p[len(p) - D:]) if sign == 1 else sum(p[:D])  # mass shifted off the end
                worst = max(worst, total)
        return worst


def _dg_sum_direct(s2: float, k: int, K: int = 30) -> np.ndarray:
    z = np.arange(-K, K + 1)
    one = np.exp(-z * z / (2 * s2))
    one /= one.sum()
    total = one
    for _ in range(k - 1):
        total = np.convolve(total, one)
    return total


@pytest.mark.parametrize("s2,k,D,eps", [(0.5, 4, 1, 0.5), (2.0, 3, 2, 0.3), (0.3, 6, 1, 1.0)])
def test_ddg_sum_delta_matches_direct_enumeration(s2: float, k: int, D: int, eps: float) -> None:
    ours = exact_delta(ddg_sum_law(s2, k), D, eps)
    direct = float(_mp_delta(_dg_sum_direct(s2, k).tolist(), D, eps))
    assert ours == pytest.approx(direct, rel=1e-9, abs=2e-14)
    assert ours >= direct  # the tail bound only adds


@pytest.mark.parametrize("mu,D,eps", [(6.0, 1, 0.4), (30.0, 2, 0.5)])
def test_skellam_delta_matches_direct_enumeration(mu: float, D: int, eps: float) -> None:
    z = np.arange(-400, 401)
    direct = float(_mp_delta(stats.skellam.pmf(z, mu / 2, mu / 2).tolist(), D, eps))
    assert exact_delta(skellam_law(mu), D, eps) == pytest.approx(direct, rel=1e-9, abs=2e-14)


def test_discrete_laplace_is_exactly_its_epsilon_and_a_factor_two_is_caught() -> None:
    b = 2.0  # DLap(b): Pr[k] ~ e^{-|k|/b}, exactly (1/b)-DP for D = 1
    z = np.arange(-200, 201)
    a = math.exp(-1 / b)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)
    law = IntegerLaw(-200, pmf, 2 * a**201 / (1 + a))
    eps = exact_epsilon(law, 1, 1e-12)
    assert 0.5 - 1e-6 <= eps <= 0.5 + 1e-9
    assert exact_delta(law, 1, 0.25) > 0.05  # at half the epsilon the loss is far from 0
    assert exact_epsilon(law, 2, 1e-12) == pytest.approx(1.0, abs=1e-6)  # twice the sensitivity


def test_exact_claim_of_the_issue_case_is_below_the_kls_bound() -> None:
    # n = 100, t = 10, rho = 0.05 on the integers: KLS21 gives eps 1.47 at 1e-6, the exact law 0.61
    s2 = integer_noise.ddg_sigma_for_rho(0.05, 90)
    law = ddg_sum_law(s2, 90)
    exact = exact_epsilon(law, 1, 1e-6)
    paper = Privacy.zcdp(integer_noise.ddg_rho(s2, 90), delta=1e-6).epsilon_at(1e-6)
    assert exact == pytest.approx(0.611, abs=2e-3) and paper == pytest.approx(1.47, abs=1e-2)
    assert exact_delta(law, 1, exact) <= 1e-6 < exact_delta(law, 1, exact * 0.98)


def test_exact_skellam_is_below_akl_and_above_the_gaussian() -> None:
    from privsim.mechanisms.accounting import gaussian_epsilon

    for mu in (20.0, 400.0):
        exact = exact_epsilon(skellam_law(mu), 1, 1e-6)
        assert gaussian_epsilon(math.sqrt(mu), 1e-6) * 0.9 < exact <= integer_noise.skellam_epsilon(mu, 1e-6)


def test_the_worst_shift_of_a_log_concave_law_is_the_largest() -> None:
    # ddg_sum_law and skellam_law are flagged monotone (symmetric, log-concave): exact_delta
    # then checks d = D one way; the generic check over every |d| <= D both ways must agree
    from dataclasses import replace

    for law, D, eps in [(ddg_sum_law(0.7, 5), 3, 0.4), (skellam_law(12.0), 2, 0.3), (ddg_sum_law(0.05, 40), 2, 1.0)]:
        generic = replace(law, monotone=False)
        assert exact_delta(law, D, eps) == pytest.approx(exact_delta(generic, D, eps), rel=1e-12)
        assert exact_delta(law, D, eps) > exact_delta(law, D - 1, eps)  # and the shift matters


@pytest.mark.parametrize("s2,k", [(0.5, 6), (2.0, 40), (0.05, 300)])
def test_fft_law_is_within_its_error_bound_of_direct_convolution(s2: float, k: int) -> None:
    law = ddg_sum_law(s2, k)
    direct = _dg_sum_direct(s2, k, K=12)  # non-negative terms: relative round-off only
    d_lo = -(direct.size // 2)
    lo, hi = max(d_lo, law.lo), min(d_lo + direct.size, law.lo + law.pmf.size)  # the common window
    ours, envelope = law.pmf[lo - law.lo: hi - law.lo], law.envelope[lo - law.lo: hi - law.lo]
    theirs = direct[lo - d_lo: hi - d_lo]
    assert np.all(np.abs(ours - theirs) <= law.error + 1e-12 * theirs)
    assert np.all(theirs <= envelope * (1 + 1e-12))
    assert direct.sum() - theirs.sum() <= law.tail + law.alias + 1e-15  # what the window leaves out
    assert law.error < 1e-11  # and the bound is small enough to matter nowhere


def test_error_bounds_stay_small_for_a_million_shares() -> None:
    # 10^6 shares of s2 = 4 and D = 64: the true delta at eps 1 is ~1e-23 (mu = 0.032); what
    # exact_delta reports is then the round-off, alias and tail bounds alone
    law = ddg_sum_law(4.0, 10**6)
    assert exact_delta(law, 64, 1.0) < 5e-8


@pytest.mark.parametrize("family", ["ddg", "skellam"])
def test_exact_calibration_meets_the_target_and_half_the_noise_does_not(family: str) -> None:
    eps, delta = 1.0, 1e-6
    if family == "ddg":
        m = 50
        v = exact_integer.ddg_sigma2_for(eps, delta, m, 1, 1.0)
        law_of = lambda s2: ddg_sum_law(s2, m)  # noqa: E731
    else:
        v = exact_integer.skellam_mu_for(eps, delta, 1, 20.0)
        law_of = skellam_law
    assert exact_epsilon(law_of(v), 1, delta) <= eps + 1e-8
    assert exact_epsilon(law_of(v), 1, delta) > eps - 1e-5  # the smallest such noise (tight)
    assert exact_epsilon(law_of(v / 2), 1, delta) > 1.3 * eps  # a factor of two is caught
    assert exact_epsilon(law_of(v), 2, delta) > 1.8 * eps  # and so is the sensitivity
