"""Integer distributed noise: the samplers' laws, the accounting against the published
formulas, and secure-sum / ck-sum with noise=discrete-gaussian and noise=skellam.

Fixed seeds; chi-square fits at significance 1e-4 (each with a wrong-parameter check
that must fail, so the fit has power); moments within 5 standard deviations.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from _sum_checks import ALPHA, assert_mean_and_variance
from _trial_rng import TrialRng
from scipy import stats

import privsim
from privsim.errors import ParameterError
from privsim.mechanisms import integer_noise, noise_families
from privsim.mechanisms.accounting import approx_dp_to_zcdp, gaussian_epsilon, zcdp_to_approx_dp_tight
from privsim.mechanisms.exact_integer import ddg_sum_law, exact_epsilon, skellam_law
from privsim.mechanisms.integer_noise import (
    ddg_rho,
    ddg_sigma_for_rho,
    ddg_tau,
    discrete_gaussian_pmf,
    discrete_gaussian_sample,
    discrete_gaussian_tail_bound,
    discrete_gaussian_variance,
    skellam_epsilon,
    skellam_rdp,
    skellam_share,
    skellam_tail_bound,
    skellam_variance_for,
)
from privsim.privacy import Privacy
from privsim.protocols.ck_sum import CKSum
from privsim.protocols.secure_sum import SecureSum


def test_doctests():
    for module in (integer_noise, noise_families):
        result = doctest.testmod(module)
        assert result.attempted > 5 and result.failed == 0


def _chisquare_p(samples: np.ndarray, pmf, lo: int, hi: int) -> float:
    """Chi-square p-value of integer samples against ``pmf`` (mass outside [lo, hi] negligible).

    The bins are the integers expecting at least 5 samples; each tail is pooled into the
    outermost of them (so no bin expects fewer than 5, as the test's approximation needs).
    """
    samples = np.asarray(samples).astype(np.int64).ravel()
    ks = np.arange(lo, hi + 1)
    probs = np.asarray(pmf(ks), dtype=float)
    assert abs(probs.sum() - 1) < 1e-9, probs.sum()
    keep = np.flatnonzero(probs * samples.size >= 5)
    first, last = keep[0], keep[-1]
    expected = probs[first:last + 1].copy()
    expected[0] += probs[:first].sum()
    expected[-1] += probs[last + 1:].sum()
    observed = np.bincount(np.clip(samples, ks[first], ks[last]) - ks[first], minlength=last - first + 1)
    return float(stats.chisquare(observed, expected * samples.size / expected.sum()).pvalue)


def assert_pmf_fits(samples: np.ndarray, pmf, lo: int, hi: int) -> None:
    p = _chisquare_p(samples, pmf, lo, hi)
    assert p > ALPHA, p


# ------------------------------------------------------------------ the discrete Gaussian sampler
@pytest.mark.parametrize("sigma2, seed", [(0.3, 1), (2.5, 2), (40.0, 3)])
def test_discrete_gaussian_sampler_has_the_discrete_gaussian_law(sigma2, seed):
    x = discrete_gaussian_sample(np.random.default_rng(seed), sigma2, size=60000)
    half = int(12 * math.sqrt(sigma2)) + 12
    assert_pmf_fits(x, lambda k: discrete_gaussian_pmf(k, sigma2), -half, half)
    # power: the same samples do not fit a parameter off by 10% (nor, a fortiori, by 2x)
    assert _chisquare_p(x, lambda k: discrete_gaussian_pmf(k, 1.1 * sigma2), -half - 8, half + 8) < ALPHA


def test_discrete_gaussian_sampler_works_with_a_trial_rng_and_keeps_the_law():
    rng = TrialRng(5, trials=400)
    x = discrete_gaussian_sample(rng, 1.5, size=(50,))
    assert x.shape == (400, 50) and x.dtype == np.int64
    assert_pmf_fits(x.ravel(), lambda k: discrete_gaussian_pmf(k, 1.5), -25, 25)


def test_discrete_gaussian_variance_is_exact_and_below_sigma2():
    # direct sum over a wide support, independent of the module's helper
    for s2 in (0.25, 1.0, 9.0):
        k = np.arange(-400, 401, dtype=float)
        w = np.exp(-k * k / (2 * s2))
        assert discrete_gaussian_variance(s2) == pytest.approx(float((w * k * k).sum() / w.sum()), rel=1e-12)
        assert discrete_gaussian_variance(s2) <= s2 * (1 + 1e-12)


@pytest.mark.parametrize("bad", [-1.0, 0.0, math.inf, math.nan])
def test_discrete_gaussian_variance_refuses_a_bad_sigma2(bad):
    # -1 used to reach math.sqrt in the support and fail with "math domain error"
    with pytest.raises(ParameterError, match="sigma2 must be a finite number > 0"):
        discrete_gaussian_variance(bad)


def test_discrete_gaussian_tail_bound_holds_for_the_sum():
    s2, count, f = 0.5, 6, 10
    b = discrete_gaussian_tail_bound(s2, count, f)
    k = np.arange(-60, 61)
    pmf = discrete_gaussian_pmf(k, s2)
    total = pmf
    for _ in range(count - 1):
        total = np.convolve(total, pmf)
    support = np.arange(-60 * count, 60 * count + 1)
    assert float(total[np.abs(support) > b].sum()) <= 2.0**-f
    assert b < 3 * math.sqrt(2 * count * s2 * (f + 1) * math.log(2))  # and not absurdly loose


# ------------------------------------------------------------------ the distributed discrete Gaussian accounting
def test_ddg_rho_is_kls21_proposition_14():
    """rho = min(l^2/2 + tau, (l + tau)^2/2), l = D/(sqrt(k) sigma), tau = 10 sum_{j<k} e^{-2 pi^2 s2 j/(j+1)}."""
    for s2, k, d in ((0.25, 50, 1.0), (1.0, 10, 2.0), (0.6, 1000, 1.0)):
        tau = 10 * sum(math.exp(-2 * math.pi**2 * s2 * j / (j + 1)) for j in range(1, k))
        assert ddg_tau(s2, k) == pytest.approx(tau, rel=1e-12)
        ell = d / math.sqrt(k * s2)
        assert ddg_rho(s2, k, d) == pytest.approx(min(ell**2 / 2 + tau, (ell + tau) ** 2 / 2), rel=1e-12)
    # one client: exactly [CKS20] Theorem 4, D^2/(2 sigma^2) -- a factor-of-two slip fails here
    assert ddg_rho(4.0, 1, 2.0) == pytest.approx(0.5, rel=1e-15)
    # many clients at large sigma: tau vanishes and the bound is the continuous Gaussian's
    assert ddg_rho(25.0, 100, 1.0) == pytest.approx(1 / (2 * 100 * 25.0), rel=1e-9)
    # the highly distributed, low-noise regime: tau dominates (KLS21's warning)
    assert ddg_rho(0.25, 1000, 1.0) > 10 * (1 / (2 * 1000 * 0.25))
    with pytest.raises(ParameterError, match="sigma2 of each discrete Gaussian share must be >= 1/4"):
        ddg_rho(0.2, 10)


def test_ddg_sigma_for_rho_inverts_the_bound():
    s2 = ddg_sigma_for_rho(0.02, 40, 1.0)
    assert ddg_rho(s2, 40, 1.0) == pytest.approx(0.02, rel=1e-9)
    assert ddg_rho(0.99 * s2, 40, 1.0) > 0.02
    assert ddg_sigma_for_rho(100.0, 3) == 0.25  # even sigma = 1/2 is private enough


# ------------------------------------------------------------------ Skellam
def test_skellam_share_and_sums_of_shares_have_the_skellam_law():
    rng = np.random.default_rng(8)
    mu, k = 6.0, 7
    one = skellam_share(rng, mu, size=50000)
    assert_pmf_fits(one, lambda v: stats.skellam.pmf(v, mu / 2, mu / 2), -60, 60)
    assert _chisquare_p(one, lambda v: stats.skellam.pmf(v, mu, mu), -80, 80) < ALPHA  # variance 2 mu: fails
    total = skellam_share(rng, mu / k, size=(50000, k)).sum(axis=1)  # closed under summation: Sk(mu)
    assert_pmf_fits(total, lambda v: stats.skellam.pmf(v, mu / 2, mu / 2), -60, 60)


def test_skellam_tail_bound_holds():
    for mu, f in ((2.0, 40), (300.0, 20)):
        b = skellam_tail_bound(mu, f)
        assert 2 * stats.skellam.sf(b, mu / 2, mu / 2) <= 2.0**-f
        assert 2 * stats.skellam.sf(b // 2, mu / 2, mu / 2) > 2.0**-f  # not absurdly loose


def test_skellam_rdp_is_akl21_theorem_3_5():
    for a, mu, d in ((2, 10.0, 1.0), (7, 3.0, 2.0), (50, 1000.0, 1.0)):
        expected = a * d * d / (2 * mu) + min(((2 * a - 1) * d * d + 6 * d) / (4 * mu * mu), 3 * d / (2 * mu))
        assert skellam_rdp(a, mu, d) == pytest.approx(expected, rel=1e-15)


def _exact_skellam_delta(mu: float, eps: float, d: int = 1) -> float:
    """delta(eps) of the Skellam mechanism, from its pmf: sum_k max(0, P(k) - e^eps P(k - d))."""
    k = np.arange(-int(40 * math.sqrt(mu)) - 40, int(40 * math.sqrt(mu)) + 41)
    p, q = stats.skellam.pmf(k, mu / 2, mu / 2), stats.skellam.pmf(k - d, mu / 2, mu / 2)
    return float(np.maximum(0.0, p - math.exp(eps) * q).sum())


@pytest.mark.parametrize("mu", [5.0, 40.0, 400.0])
def test_skellam_epsilon_is_sound_and_near_the_gaussian(mu):
    delta = 1e-6
    eps = skellam_epsilon(mu, delta)
    assert _exact_skellam_delta(mu, eps) <= delta            # the claim holds for the exact law
    # above the exact Gaussian's (the Renyi route is never tighter), and within the price of the route
    gauss = gaussian_epsilon(math.sqrt(mu), delta)
    assert gauss < eps < 1.5 * zcdp_to_approx_dp_tight(1 / (2 * mu), delta) + 3 / (2 * mu)
    assert skellam_variance_for(eps, delta) == pytest.approx(mu, rel=1e-6)


# ------------------------------------------------------------------ the protocols with integer noise
@pytest.mark.parametrize("cls", [SecureSum, CKSum])
def test_discrete_gaussian_total_is_the_sum_of_n_discrete_gaussians(cls):
    n, t = 12, 3
    proto = cls(noise="discrete-gaussian", rho=0.05, granularity=1.0)  # on the integers (the grid: Z/s)
    s2 = proto.family.local_sigma2(n - t)
    res = privsim.simulate(proto, np.zeros(n, dtype=int), trials=20000, seed=3, t=t, record=False)
    err = res.error.astype(np.int64)
    k = np.arange(-40, 41)
    pmf = discrete_gaussian_pmf(k, s2)
    total = pmf
    for _ in range(n - 1):
        total = np.convolve(total, pmf)
    support = np.arange(-40 * n, 40 * n + 1)
    lookup = dict(zip(support.tolist(), total.tolist()))
    assert_pmf_fits(err, lambda v: np.array([lookup.get(int(x), 0.0) for x in np.atleast_1d(v)]), -60, 60)
    assert proto.noise_variance(n, t) == pytest.approx(n * discrete_gaussian_variance(s2), rel=1e-12)


@pytest.mark.parametrize("cls", [SecureSum, CKSum])
def test_skellam_total_is_exactly_skellam_with_variance_mu_n_over_m(cls):
    n, t = 12, 3
    proto = cls(noise="skellam", epsilon=1.0, delta=1e-6, granularity=1.0)  # on the integers
    mu = proto.family.mu
    x = np.arange(n) % 2
    res = privsim.simulate(proto, x, trials=20000, seed=4, t=t, record=False)
    total_mu = mu * n / (n - t)
    assert proto.noise_variance(n, t) == pytest.approx(total_mu, rel=1e-12)
    assert_pmf_fits(res.error.astype(np.int64), lambda v: stats.skellam.pmf(v, total_mu / 2, total_mu / 2),
                    -200, 200)
    # Skellam cumulants: kappa2 = mu, kappa4 = mu, so mu4 = mu + 3 mu^2
    assert_mean_and_variance(res.error, total_mu, total_mu + 3 * total_mu**2)


def test_integer_claims_per_coalition():
    n, t = 20, 4
    dg = SecureSum(noise="discrete-gaussian", rho=0.05, delta=1e-6, granularity=1.0)  # on the integers
    full = dg.privacy([0, 1, 2, 3], n, t)       # |T| = t: the calibrated rho, by KLS21
    assert full.measure == "zcdp" and full.rho == pytest.approx(0.05, rel=1e-9) and full.paper is None
    one = dg.privacy([0], n, t)                 # 19 honest shares: a smaller rho, the blanket one as paper
    s2 = dg.family.local_sigma2(n - t)
    assert one.rho == pytest.approx(min(ddg_rho(s2, j) for j in range(16, 20)), rel=1e-12)
    assert one.rho < 0.05 and one.paper.rho == pytest.approx(0.05, rel=1e-9)
    assert dg.privacy([1], n, t) == privsim.Privacy(0.0) and dg.privacy(list(range(5)), n, t) is None
    # Skellam: mu calibrated to the exact law, claims exact, [AKL21]'s bound for the same noise beside them
    sk = SecureSum(noise="skellam", epsilon=0.8, delta=1e-5, granularity=1.0)
    mu = sk.family.mu
    full = sk.privacy([0, 1, 2, 3], n, t)
    assert full.measure == "approx" and full.epsilon == pytest.approx(0.8, rel=1e-5) and full.epsilon <= 0.8 + 1e-8
    assert full.epsilon == exact_epsilon(skellam_law(mu), 1, 1e-5)
    assert full.paper.epsilon == pytest.approx(skellam_epsilon(mu, 1e-5), rel=1e-12) and full.paper.epsilon > 0.85
    assert mu < skellam_variance_for(0.8, 1e-5)  # less noise than the published bound needs
    one = sk.privacy([0], n, t)
    assert one.epsilon == exact_epsilon(skellam_law(mu * 19 / 16), 1, 1e-5) < full.epsilon
    assert one.paper.epsilon == pytest.approx(skellam_epsilon(mu * 19 / 16, 1e-5), rel=1e-12)
    # discrete Gaussian to (epsilon, delta): s2 calibrated to the exact law of the m shares
    eps_dg = SecureSum(noise="discrete-gaussian", epsilon=1.0, delta=1e-6, granularity=1.0)
    claim = eps_dg.privacy([0, 1, 2, 3], n, t)
    s2 = eps_dg.family.local_sigma2(n - t)
    assert claim.measure == "approx" and claim.epsilon == pytest.approx(1.0, rel=1e-5)
    assert claim.epsilon == exact_epsilon(ddg_sum_law(s2, n - t), 1, 1e-6)
    assert claim.paper.epsilon_at(1e-6) == pytest.approx(Privacy.zcdp(ddg_rho(s2, n - t), delta=1e-6).epsilon)
    assert s2 < ddg_sigma_for_rho(approx_dp_to_zcdp(1.0, 1e-6, tight=True), n - t)


def test_integer_noise_never_wraps_and_the_modulus_follows_the_tail_bound():
    n, t = 30, 2
    for proto in (SecureSum(noise="skellam", epsilon=0.05, delta=1e-3, granularity=1.0),
                  SecureSum(noise="discrete-gaussian", rho=0.001, granularity=1.0)):
        q = proto.modulus_for(n, t)
        bound = proto.family.tail_bound(n - t, n, 40)
        assert q > 2 * (n + bound) and q <= 4 * (n + bound) + 2 and proto.scale == 1
        res = privsim.simulate(proto, np.ones(n, dtype=int), trials=3000, seed=2, t=t, record=False)
        assert np.all(np.abs(res.error) <= bound)


def test_rho_is_refused_where_the_family_does_not_read_it():
    with pytest.raises(ParameterError, match="rho applies only to noise=gaussian or noise=discrete-gaussian"):
        SecureSum(noise="skellam", rho=0.5)
    with pytest.raises(ParameterError, match="noise must be one of"):
        SecureSum(noise="binomial")
    assert ALPHA == 1e-4


def test_discrete_gaussian_sample_of_one_output_and_its_fallback(monkeypatch):
    # size=() is the documented default (it raised numpy's "nonzero on 0d arrays"); with one
    # candidate per output the rare no-candidate-accepted path runs, for every shape.
    from privsim.mechanisms import integer_noise

    one = integer_noise.discrete_gaussian_sample(np.random.default_rng(1), 4.0)
    assert np.shape(one) == () and np.asarray(one).dtype == np.int64
    monkeypatch.setattr(integer_noise, "_candidates_per_output", lambda sigma2: 1)
    for size in [(), (400,), (20, 30)]:
        x = np.asarray(integer_noise.discrete_gaussian_sample(np.random.default_rng(2), 4.0, size=size))
        assert x.shape == size and x.dtype == np.int64
    # the fallback still draws N_Z(0, 4): variance 4 within 5 sigma (Var of a sample variance ~ 2 sigma^4 / N)
    x = np.asarray(integer_noise.discrete_gaussian_sample(np.random.default_rng(3), 4.0, size=20000), dtype=float)
    assert abs(x.var() - 4.0) < 5 * 4.0 * np.sqrt(2 / x.size)


@pytest.mark.parametrize("name", [f for f in noise_families.FAMILIES if f != "none"])
def test_every_family_refuses_a_share_count_below_one(name):
    # Skellam divided by m unchecked (ZeroDivisionError); every family now names the argument.
    family = noise_families.noise_family(name, sensitivity=1.0, epsilon=1.0, delta=1e-6)
    rng = np.random.default_rng(0)
    for call in (lambda: family.share(rng, 0), lambda: family.shares_variance(0, 1),
                 lambda: family.tail_bound(0, 3, 40), lambda: family.shares_variance(2, 0)):
        with pytest.raises(ParameterError, match="must be an integer >= 1"):
            call()
