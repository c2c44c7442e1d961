"""Distributional tests of privsim.mechanisms.noise.

Fixed seeds; goodness-of-fit tests reject at p < 1e-4, moment checks allow 5 standard
errors computed from the exact fourth moment. A test that a wrong parameter FAILS the
same check accompanies each fit, so the checks have power.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from _trial_rng import TrialRng
from scipy import stats

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import noise
from privsim.mechanisms.noise import (
    discrete_laplace_cdf,
    discrete_laplace_mechanism,
    discrete_laplace_pmf,
    discrete_laplace_share,
    discrete_laplace_shares_variance,
    discrete_laplace_tail_bound,
    discrete_laplace_variance,
    gaussian_mechanism,
    gaussian_share,
    gaussian_shares_variance,
    gaussian_tail_bound,
    gaussian_variance,
    laplace_mechanism,
    laplace_scale,
    laplace_share,
    laplace_shares_variance,
    laplace_tail_bound,
    laplace_variance,
)

P_MIN = 1e-4
SIGMAS = 5.0


def _within(estimate: float, expected: float, standard_error: float) -> None:
    assert abs(estimate - expected) <= SIGMAS * standard_error, (
        f"{estimate} vs {expected}: {abs(estimate - expected) / standard_error:.1f} sigma"
    )


def _discrete_chisquare_p(samples: np.ndarray, b: float) -> float:
    """Chi-square p-value of integer samples against DLap(b), tails binned to >= 5 expected."""
    n = samples.size
    k = 0
    while n * discrete_laplace_pmf(k + 1, b) >= 5:
        k += 1
    support = np.arange(-k, k + 1)
    expected = (
        np.concatenate(
            [
                [discrete_laplace_cdf(-k - 1, b)],
                discrete_laplace_pmf(support, b),
                [1.0 - discrete_laplace_cdf(k, b)],
            ]
        )
        * n
    )
    clipped = np.clip(samples, -k - 1, k + 1)
    observed = np.bincount(clipped + k + 1, minlength=2 * k + 3)
    return float(stats.chisquare(observed, expected).pvalue)


# ---------------------------------------------------------------------------------------
# Laplace shares
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 4, 17])
def test_sum_of_m_laplace_shares_is_laplace(m: int) -> None:
    b, trials = 1.7, 20_000
    rng = np.random.default_rng(1000 + m)
    total = laplace_share(rng, b, m, size=(trials, m)).sum(axis=1)
    assert stats.kstest(total, stats.laplace(scale=b).cdf).pvalue > P_MIN


@pytest.mark.parametrize("wrong", [2.0, 0.5])
def test_laplace_ks_rejects_a_factor_two_wrong_scale(wrong: float) -> None:
    b, m, trials = 1.7, 4, 20_000
    rng = np.random.default_rng(1004)
    total = laplace_share(rng, b, m, size=(trials, m)).sum(axis=1)
    assert stats.kstest(total, stats.laplace(scale=wrong * b).cdf).pvalue < P_MIN


@pytest.mark.parametrize(("n", "t"), [(10, 3), (5, 2), (6, 0)])
def test_total_of_n_laplace_shares_has_variance_2b2_n_over_n_minus_t(n: int, t: int) -> None:
    b, trials = 1.3, 200_000
    m = n - t
    rng = np.random.default_rng(2000 + 10 * n + t)
    shares = laplace_share(rng, b, m, size=(trials, n))
    total = shares.sum(axis=1)
    expected = 2 * b**2 * n / (n - t)
    assert laplace_shares_variance(b, m, n) == pytest.approx(expected)
    # total = G1 - G2, G ~ Gamma(K, b), K = n/m: E S^4 = 12 K b^4 + 12 K^2 b^4, so
    # Var S^2 = 12 K b^4 + 8 K^2 b^4 (cumulants of the Gamma, doubled in even orders)
    k = n / m
    var_s2 = 12 * k * b**4 + 8 * k**2 * b**4
    _within(float(np.mean(total**2)), expected, math.sqrt(var_s2 / trials))
    # any n - t honest parties already hold Lap(b)
    honest = shares[:, t:].sum(axis=1)
    assert stats.kstest(honest[:20_000], stats.laplace(scale=b).cdf).pvalue > P_MIN


def test_laplace_shares_with_a_trial_rng_and_per_trial_scale() -> None:
    trials, m = 4000, 5
    rng = TrialRng(seed=11, trials=trials)
    b = np.linspace(0.5, 3.0, trials)[:, None]  # broadcasts against (R, m)
    shares = laplace_share(rng, b, m, size=(m,))
    assert shares.shape == (trials, m)
    standardized = shares.sum(axis=1) / b[:, 0]
    assert stats.kstest(standardized, stats.laplace().cdf).pvalue > P_MIN


# ---------------------------------------------------------------------------------------
# Discrete Laplace (Polya-difference shares)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 3, 10])
def test_sum_of_m_polya_shares_is_discrete_laplace(m: int) -> None:
    b, trials = 2.5, 40_000
    rng = np.random.default_rng(3000 + m)
    total = discrete_laplace_share(rng, b, m, size=(trials, m)).sum(axis=1)
    assert total.dtype == np.int64
    assert _discrete_chisquare_p(total, b) > P_MIN


@pytest.mark.parametrize("wrong", [2.0, 0.5])
def test_discrete_chisquare_rejects_a_factor_two_wrong_scale(wrong: float) -> None:
    b, m, trials = 2.5, 3, 40_000
    rng = np.random.default_rng(3003)
    total = discrete_laplace_share(rng, b, m, size=(trials, m)).sum(axis=1)
    assert _discrete_chisquare_p(total, wrong * b) < P_MIN


def test_total_of_n_polya_shares_has_the_stated_variance() -> None:
    n, t, b, trials = 9, 4, 2.0, 200_000
    m = n - t
    rng = np.random.default_rng(3100)
    total = discrete_laplace_share(rng, b, m, size=(trials, n)).sum(axis=1)
    expected = discrete_laplace_shares_variance(b, m, n)
    # total = N1 - N2, N ~ NB(n/m, 1 - a); cumulants double in even orders
    mean, var, _, kurt = stats.nbinom.stats(n / m, -math.expm1(-1 / b), moments="mvsk")
    k2, k4 = 2 * float(var), 2 * float(kurt) * float(var) ** 2
    assert k2 == pytest.approx(expected)
    var_s2 = k4 + 3 * k2**2 - k2**2
    _within(float(np.mean(total.astype(float) ** 2)), expected, math.sqrt(var_s2 / trials))


def test_discrete_laplace_pmf_cdf_and_variance_agree() -> None:
    b = 1.7
    k = np.arange(-200, 201)
    pmf = discrete_laplace_pmf(k, b)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(discrete_laplace_cdf(k, b), np.cumsum(pmf), atol=1e-12)
    assert float((k**2 * pmf).sum()) == pytest.approx(discrete_laplace_variance(b), rel=1e-10)
    assert discrete_laplace_variance(b) < 2 * b**2  # a little below the continuous one


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1, 0.5), (3, 1.2)])
def test_discrete_laplace_with_b_equal_sensitivity_over_epsilon_is_exactly_epsilon_dp(
    sensitivity: int, epsilon: float
) -> None:
    b = sensitivity / epsilon
    k = np.arange(-50, 51)
    log_ratio = np.log(discrete_laplace_pmf(k, b)) - np.log(discrete_laplace_pmf(k + sensitivity, b))
    assert np.max(np.abs(log_ratio)) == pytest.approx(epsilon, rel=1e-12)


def test_discrete_laplace_mechanism_is_centred_integer_noise() -> None:
    rng = np.random.default_rng(3200)
    value = np.full(100_000, 7)
    out = discrete_laplace_mechanism(value, 2, 0.8, rng)
    assert out.dtype == np.int64
    _within(float(out.mean()), 7.0, math.sqrt(discrete_laplace_variance(2 / 0.8) / out.size))
    assert _discrete_chisquare_p(out[:40_000] - 7, 2 / 0.8) > P_MIN


def test_discrete_shares_with_a_trial_rng() -> None:
    # The stand-in draws trial by trial (slow); 5,000 trials already reject a factor of two
    # in the scale either way, which is what a broadcasting slip in the trial path would be.
    trials, m, b = 5_000, 4, 1.5
    shares = discrete_laplace_share(TrialRng(seed=12, trials=trials), b, m, size=(m,))
    assert shares.shape == (trials, m)
    assert _discrete_chisquare_p(shares.sum(axis=1), b) > P_MIN
    assert max(_discrete_chisquare_p(shares.sum(axis=1), wrong) for wrong in (2 * b, b / 2)) < P_MIN


# ---------------------------------------------------------------------------------------
# Gaussian shares
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 5, 12])
def test_sum_of_m_gaussian_shares_is_gaussian(m: int) -> None:
    sigma2, trials = 3.0, 20_000
    rng = np.random.default_rng(4000 + m)
    total = gaussian_share(rng, sigma2, m, size=(trials, m)).sum(axis=1)
    assert stats.kstest(total, stats.norm(scale=math.sqrt(sigma2)).cdf).pvalue > P_MIN
    wrong = stats.norm(scale=math.sqrt(2 * sigma2)).cdf
    assert stats.kstest(total, wrong).pvalue < P_MIN


def test_gaussian_shares_variance_and_trial_rng() -> None:
    assert gaussian_shares_variance(3.0, 7, 10) == pytest.approx(30 / 7)
    shares = gaussian_share(TrialRng(seed=13, trials=5000), 3.0, 7, size=(7,))
    assert shares.shape == (5000, 7)
    assert stats.kstest(shares.sum(axis=1), stats.norm(scale=math.sqrt(3.0)).cdf).pvalue > P_MIN


# ---------------------------------------------------------------------------------------
# Central mechanisms
# ---------------------------------------------------------------------------------------


def test_laplace_mechanism_mean_and_variance() -> None:
    sensitivity, epsilon, trials = 2.0, 0.5, 200_000
    b = laplace_scale(sensitivity, epsilon)
    rng = np.random.default_rng(5000)
    out = laplace_mechanism(np.full(trials, 5.0), sensitivity, epsilon, rng)
    variance = laplace_variance(sensitivity, epsilon)
    assert variance == pytest.approx(2 * b**2)
    _within(float(out.mean()), 5.0, math.sqrt(variance / trials))
    # E Y^4 = 24 b^4 for Lap(b), so Var Y^2 = 20 b^4
    _within(float(np.mean((out - 5.0) ** 2)), variance, math.sqrt(20 * b**4 / trials))


@pytest.mark.parametrize(
    "calibration", [{"rho": 0.3}, {"epsilon": 1.0, "delta": 1e-6}, {"epsilon": 0.3, "delta": 1e-3}]
)
def test_gaussian_mechanism_variance(calibration: dict[str, float]) -> None:
    sensitivity, trials = 1.5, 200_000
    sigma2 = gaussian_variance(sensitivity, **calibration)
    rng = np.random.default_rng(5100)
    out = gaussian_mechanism(np.zeros(trials), sensitivity, rng=rng, **calibration)
    _within(float(out.mean()), 0.0, math.sqrt(sigma2 / trials))
    _within(float(np.mean(out**2)), sigma2, math.sqrt(2 * sigma2**2 / trials))  # Var Y^2


def test_zcdp_calibration() -> None:
    assert gaussian_variance(3.0, rho=0.25) == pytest.approx(9.0 / 0.5)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-5), (0.5, 1e-8), (0.9, 1e-3), (4.0, 1e-6)])
def test_epsilon_delta_calibration_is_the_analytic_gaussian(epsilon: float, delta: float) -> None:
    sensitivity = 2.0
    sigma = math.sqrt(gaussian_variance(sensitivity, epsilon=epsilon, delta=delta))

    # the exact profile from the privacy-loss variable L ~ N(mu, 2 mu), mu = D^2/(2 sigma^2):
    # delta(eps) = Pr[L > eps] - e^eps Pr[L' > eps] with L' ~ N(-mu, 2 mu) (Balle-Wang Thm. 8)
    def profile(s: float) -> float:
        mu = sensitivity**2 / (2 * s**2)
        sd = math.sqrt(2 * mu)
        return stats.norm.sf((epsilon - mu) / sd) - math.exp(epsilon) * stats.norm.sf((epsilon + mu) / sd)

    assert profile(sigma) == pytest.approx(delta, rel=1e-6)  # meets delta ...
    assert profile(sigma * (1 - 1e-4)) > delta  # ... with the smallest such sigma
    if epsilon < 1:
        assert sigma < sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon  # classic
    unit = gaussian_variance(1.0, epsilon=epsilon, delta=delta)
    assert unit == pytest.approx(sigma**2 / sensitivity**2, rel=1e-12)


# ---------------------------------------------------------------------------------------
# Tail bounds
# ---------------------------------------------------------------------------------------


def test_tail_bounds_meet_their_failure_probability() -> None:
    b, sigma2, failure_log2 = 1.5, 2.0, 40
    assert laplace_tail_bound(b, failure_log2=failure_log2) == pytest.approx(
        b * (failure_log2 + 1) * math.log(2)
    )
    bound = laplace_tail_bound(b, m=7, count=10, failure_log2=failure_log2)
    assert 2 * stats.gamma.sf(bound, 10 / 7, scale=b) == pytest.approx(2.0**-failure_log2)
    bound = gaussian_tail_bound(sigma2, m=7, count=10, failure_log2=failure_log2)
    sd = math.sqrt(sigma2 * 10 / 7)
    assert 2 * stats.norm.sf(bound / sd) == pytest.approx(2.0**-failure_log2)
    bound = discrete_laplace_tail_bound(b, m=7, count=10, failure_log2=failure_log2)
    p = -math.expm1(-1 / b)
    assert 2 * stats.nbinom.sf(bound, 10 / 7, p) <= 2.0**-failure_log2
    assert 2 * stats.nbinom.sf(bound - 1, 10 / 7, p) > 2.0**-failure_log2


def test_tail_bounds_by_simulation_at_a_visible_level() -> None:
    failure_log2, trials, n, t, b = 5, 100_000, 8, 3, 2.0
    rng = np.random.default_rng(6000)
    limit = 2.0**-failure_log2 + SIGMAS * math.sqrt(2.0**-failure_log2 / trials)
    total = laplace_share(rng, b, n - t, size=(trials, n)).sum(axis=1)
    assert np.mean(np.abs(total) > laplace_tail_bound(b, n - t, n, failure_log2)) <= limit
    total = discrete_laplace_share(rng, b, n - t, size=(trials, n)).sum(axis=1)
    assert np.mean(np.abs(total) > discrete_laplace_tail_bound(b, n - t, n, failure_log2)) <= limit


# ---------------------------------------------------------------------------------------
# Parameters, shapes, docs
# ---------------------------------------------------------------------------------------

_RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: laplace_scale(1.0, 0.0), "epsilon"),
        (lambda: laplace_scale(-1.0, 1.0), "sensitivity"),
        (lambda: laplace_mechanism(0.0, 1.0, float("nan"), _RNG), "epsilon"),
        (lambda: laplace_share(_RNG, 1.0, 0, 3), "m"),
        (lambda: laplace_share(_RNG, 1.0, 2.5, 3), "m"),
        (lambda: laplace_share(_RNG, -1.0, 2, 3), "b"),
        (lambda: laplace_share(_RNG, 1.0, 2, -3), "size"),
        (lambda: gaussian_share(_RNG, 0.0, 2, 3), "sigma2"),
        (lambda: discrete_laplace_share(_RNG, np.array([1.0, 0.0]), 2, 2), "b"),
        (lambda: gaussian_variance(1.0), "rho"),
        (lambda: gaussian_variance(1.0, rho=1.0, epsilon=1.0, delta=0.1), "rho"),
        (lambda: gaussian_variance(1.0, epsilon=1.0, delta=1.0), "delta"),
        (lambda: gaussian_variance(1.0, epsilon=-1.0, delta=0.1), "epsilon"),
        (lambda: gaussian_variance(1.0, rho=-2.0), "rho"),
        (lambda: gaussian_variance(1.0, epsilon=1.0, delta=0.0), "delta"),
        (lambda: discrete_laplace_mechanism(3, 1.5, 1.0, _RNG), "sensitivity"),
        (lambda: discrete_laplace_pmf(0, 0.0), "b"),
        (lambda: laplace_shares_variance(1.0, 3, 0), "count"),
        (lambda: laplace_tail_bound(1.0, failure_log2=0), "failure_log2"),
    ],
)
def test_bad_parameters_raise_one_line_naming_the_field(call, field: str) -> None:
    with pytest.raises(ParameterError) as info:
        call()
    message = str(info.value)
    assert field in message and "\n" not in message


def test_discrete_mechanism_rejects_real_values() -> None:
    with pytest.raises(InputError, match="value"):
        discrete_laplace_mechanism(np.array([1.5]), 1, 1.0, _RNG)


def test_mechanisms_with_a_trial_rng_take_the_per_trial_size() -> None:
    trials = 6
    rng = TrialRng(seed=14, trials=trials)
    value = np.zeros((trials, 3))
    assert laplace_mechanism(value, 1.0, 1.0, rng, size=(3,)).shape == (trials, 3)
    assert gaussian_mechanism(value, 1.0, rho=1.0, rng=rng, size=3).shape == (trials, 3)
    ints = np.zeros((trials, 3), dtype=np.int64)
    assert discrete_laplace_mechanism(ints, 1, 1.0, rng, size=(3,)).shape == (trials, 3)


def test_each_sampler_makes_a_fixed_number_of_rng_calls() -> None:
    class Counting:
        def __init__(self) -> None:
            self.calls = 0
            self._rng = np.random.default_rng(15)

        def __getattr__(self, name):
            method = getattr(self._rng, name)

            def call(*args, **kwargs):
                self.calls += 1
                return method(*args, **kwargs)

            return call

    for sampler, expected in [(laplace_share, 2), (discrete_laplace_share, 2), (gaussian_share, 1)]:
        for b in (0.1, 10.0):
            rng = Counting()
            sampler(rng, b, 3, size=(50,))
            assert rng.calls == expected


def test_docstring_examples() -> None:
    result = doctest.testmod(noise, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
