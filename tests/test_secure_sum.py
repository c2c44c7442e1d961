"""secure-sum: message counts, exactness, noise calibration and distribution, perfect sharing, no wrap."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from _sum_checks import (
    ALPHA,
    assert_mean_and_variance,
    assert_pmf_fits,
    discrete_laplace_total_moments,
    gaussian_total_moments,
    homogeneous,
    laplace_total_moments,
    nb_difference_pmf,
    uniform_p,
)
from scipy import stats

import privsim
from privsim.errors import InputError, ParameterError
from privsim.mechanisms.noise import discrete_laplace_pmf
from privsim.protocols import get_protocol
from privsim.protocols import secure_sum as secure_sum_module
from privsim.protocols.secure_sum import SecureSum, modulus_bits

R = 20000  # trials of the statistical tests


def test_doctests():
    result = doctest.testmod(secure_sum_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10 and result.failed == 0


def test_registered_under_its_cli_name():
    assert isinstance(get_protocol("secure-sum", noise="none"), SecureSum)


# ------------------------------------------------------------------ messages
@pytest.mark.parametrize("n,t", [(2, 1), (5, 0), (5, 2), (5, 4), (12, 3), (40, 7), (64, 1)])
@pytest.mark.parametrize("broadcast", [False, True])
def test_message_count_closed_form(n, t, broadcast):
    proto = SecureSum(noise="discrete-laplace", broadcast=broadcast)
    res = privsim.simulate(proto, np.ones(n, dtype=int), trials=2, seed=1, t=t)
    expected = (t + 1) * (n - 1) + t + ((n - 1) if broadcast else 0)
    assert res.messages == res.schedule.messages == SecureSum.message_count(n, t, broadcast) == expected
    assert res.messages >= n * (t + 1) / 2  # the Chor–Kushilevitz bound for t-private sums
    assert res.rounds == (3 if broadcast else (2 if t > 0 else 1))
    assert res.bits == res.messages * modulus_bits(proto.modulus_for(n, t))


def test_message_count_at_least_ck_bound_for_many_settings():
    for n in range(2, 80):
        for t in range(n):
            assert SecureSum.message_count(n, t) >= n * (t + 1) / 2


def test_no_self_messages_and_holders_keep_a_share():
    sched = SecureSum(noise="none").schedule(6, 2)
    triples = list(sched.triples())
    assert all(s != d for _, s, d in triples)
    assert sum(1 for r, s, _ in triples if r == 1 and s == 1) == 2      # a holder sends t shares
    assert sum(1 for r, s, _ in triples if r == 1 and s == 4) == 3      # a non-holder sends t + 1
    assert [(s, d) for r, s, d in triples if r == 2] == [(1, 0), (2, 0)]


# ------------------------------------------------------------------ exactness
@pytest.mark.parametrize("n,t,max_input", [(1, 0, 1), (7, 3, 1), (9, 8, 5), (30, 2, 3)])
def test_noiseless_sum_is_exact_and_broadcast(n, t, max_input):
    rng = np.random.default_rng(n)
    x = rng.integers(0, max_input + 1, size=(50, n))
    res = privsim.simulate(SecureSum(noise="none", max_input=max_input, broadcast=True), x,
                           trials=50, seed=2, t=t)
    assert np.array_equal(res.estimate, x.sum(axis=1))
    for i in range(n):
        assert np.array_equal(res.outputs[i], x.sum(axis=1))


# ------------------------------------------------------------------ noise: unbiased, exact variance
def _moments(proto: SecureSum, n: int, t: int) -> tuple[float, float]:
    k = n / (n - t)
    if proto.noise == "laplace":
        return laplace_total_moments(proto.max_input / proto.epsilon, k)
    if proto.noise == "gaussian":
        return gaussian_total_moments(proto.sigma2 * k)
    return discrete_laplace_total_moments(proto.max_input / proto.epsilon, k)


@pytest.mark.parametrize("params", [
    {"noise": "laplace", "epsilon": 1.0},
    {"noise": "laplace", "epsilon": 0.5, "max_input": 3},      # b = 6: sensitivity is max_input
    {"noise": "gaussian", "rho": 0.5, "max_input": 2},         # sigma2 = 4/(2 * 0.5) = 4
    {"noise": "gaussian", "epsilon": 1.0, "delta": 1e-5},      # analytic Gaussian, sigma = 3.731
    {"noise": "discrete-laplace", "epsilon": 1.0},
    {"noise": "discrete-laplace", "epsilon": 0.25, "max_input": 2},
])
def test_unbiased_with_the_stated_variance(params):
    n, t = 12, 4
    proto = SecureSum(**params)
    x = np.arange(n) % (proto.max_input + 1)
    res = privsim.simulate(proto, x, trials=R, seed=11, t=t, record=False)
    variance, mu4 = _moments(proto, n, t)
    # an independent derivation of the released variance: a factor-of-two slip fails here
    assert math.isclose(proto.noise_variance(n, t), variance, rel_tol=1e-12)
    if params["noise"] == "laplace":
        b = proto.max_input / proto.epsilon
        assert math.isclose(variance, 2 * b * b * n / (n - t))
    # fixed point: each party's rounding error is at most 2^-(digits+1), independent across parties
    slack = math.sqrt(n) * 2.0 ** -(proto.digits + 1) if proto.fixed_point else 0.0
    assert_mean_and_variance(res.error, variance, mu4, slack_sd=slack)
    assert np.all(np.abs(res.error - np.rint(res.error * 2**proto.digits) / 2**proto.digits) == 0)


def test_rounding_error_bound_is_stated():
    proto = SecureSum(noise="laplace", digits=4)
    assert proto.rounding_bound(64) == 64 / 32
    assert SecureSum(noise="discrete-laplace").rounding_bound(64) == 0.0


# ------------------------------------------------------------------ noise: distributions
def test_discrete_laplace_total_has_the_exact_pmf_when_t_is_0():
    n, b = 10, 2.0
    res = privsim.simulate(SecureSum(noise="discrete-laplace", epsilon=1 / b), np.zeros(n, dtype=int),
                           trials=R, seed=3, t=0, record=False)
    assert res.estimate.dtype.kind == "f" and np.all(res.estimate == np.rint(res.estimate))
    assert_pmf_fits(res.error, lambda k: discrete_laplace_pmf(k, b), -200, 200)


def test_discrete_laplace_total_is_a_negative_binomial_difference_when_t_is_positive():
    n, t, b = 10, 6, 1.5
    res = privsim.simulate(SecureSum(noise="discrete-laplace", epsilon=1 / b), np.zeros(n, dtype=int),
                           trials=R, seed=4, t=t, record=False)
    a = math.exp(-1 / b)
    assert_pmf_fits(res.error, lambda k: nb_difference_pmf(n / (n - t), 1 - a, k), -300, 300)
    with pytest.raises(AssertionError):  # power: the total is wider than one discrete Laplace
        assert_pmf_fits(res.error, lambda k: discrete_laplace_pmf(k, b), -300, 300)


def test_laplace_total_is_laplace_when_t_is_0():
    n, b = 10, 2.0
    res = privsim.simulate(SecureSum(noise="laplace", epsilon=1 / b), np.zeros(n, dtype=int),
                           trials=R, seed=5, t=0, record=False)
    assert stats.kstest(res.error, stats.laplace(scale=b).cdf).pvalue > ALPHA


def test_laplace_total_is_a_gamma_difference_when_t_is_positive():
    n, t, b = 10, 7, 1.0
    res = privsim.simulate(SecureSum(noise="laplace", epsilon=1 / b), np.zeros(n, dtype=int),
                           trials=R, seed=6, t=t, record=False)
    rng = np.random.default_rng(99)
    k = n / (n - t)
    reference = rng.gamma(k, b, size=R) - rng.gamma(k, b, size=R)
    assert stats.ks_2samp(res.error, reference).pvalue > ALPHA


def test_gaussian_total_is_normal_with_variance_sigma2_n_over_n_minus_t():
    n, t = 10, 3
    proto = SecureSum(noise="gaussian", rho=0.125)  # sigma2 = 4
    res = privsim.simulate(proto, np.zeros(n, dtype=int), trials=R, seed=7, t=t, record=False)
    sd = math.sqrt(4.0 * n / (n - t))
    assert stats.kstest(res.error, stats.norm(scale=sd).cdf).pvalue > ALPHA


# ------------------------------------------------------------------ the honest parties' noise
def _member_noise(view, member, noise, digits):
    draws = view.randomness[member]
    if noise == "discrete-laplace":
        return draws[0].astype(np.int64) - draws[1].astype(np.int64)
    share = draws[0] - draws[1]  # Gamma(1/m, b) - Gamma(1/m, b)
    return np.rint(share * 2.0**digits) / 2.0**digits


def test_any_n_minus_t_honest_parties_hold_exactly_lap_b():
    """A t-coalition that subtracts its own (recorded) noise shares still faces Lap(b)."""
    n, t, b = 9, 4, 1.0
    coalition = [0, 2, 5, 8]
    proto = SecureSum(noise="laplace", epsilon=1 / b)
    res = privsim.simulate(proto, np.ones(n, dtype=int), trials=R, seed=8, t=t, coalition=coalition)
    view = res.view(coalition)
    assert set(view.outputs) == {0}
    honest = view.outputs[0] - n - sum(_member_noise(view, m, "laplace", proto.digits) for m in coalition)
    assert stats.kstest(honest, stats.laplace(scale=b).cdf).pvalue > ALPHA


def test_any_n_minus_t_honest_parties_hold_exactly_the_discrete_laplace():
    n, t, b = 9, 4, 1.5
    coalition = [0, 1, 2, 3]
    proto = SecureSum(noise="discrete-laplace", epsilon=1 / b)
    res = privsim.simulate(proto, np.ones(n, dtype=int), trials=R, seed=9, t=t, coalition=coalition)
    view = res.view(coalition)
    honest = view.outputs[0] - n - sum(_member_noise(view, m, proto.noise, 0) for m in coalition)
    assert_pmf_fits(honest, lambda k: discrete_laplace_pmf(k, b), -200, 200)


# ------------------------------------------------------------------ perfect secret sharing
def _shares_seen(res, coalition, sender):
    """The round-1 messages ``sender`` sends to the coalition, as one cell index per trial.

    Each share is reduced mod c = min(q, 16) (q is 11 or a power of two, so the reduced
    share stays uniform); returns the cells, their number and the count of messages.
    """
    q = res.protocol.modulus_for(res.n, res.t)
    c = q if q <= 16 else 16
    assert q % c == 0
    msgs = [v for r, s, d, v in res.view(coalition).messages if r == 1 and s == sender and d in coalition]
    cell = np.zeros(res.trials, dtype=np.int64)
    for v in msgs:
        cell = cell * c + np.asarray(v) % c
    return cell, c ** len(msgs), len(msgs)


@pytest.mark.parametrize("noise", ["none", "discrete-laplace"])
@pytest.mark.parametrize("coalition,sender", [([1, 2], 3), ([0, 2], 3), ([1, 2], 0), ([0, 1], 2)])
def test_any_t_shares_are_uniform_and_independent_of_the_input(noise, coalition, sender):
    """Chi-square on the actual messages a t-coalition receives, x_sender = 0 versus 1."""
    n, t, trials = 4, 2, 12100
    proto = SecureSum(noise=noise, modulus=11 if noise == "none" else 0)
    cells = {}
    for bit, seed in ((0, 21), (1, 22)):
        x = np.zeros(n, dtype=int)
        x[sender] = bit
        res = privsim.simulate(proto, x, trials=trials, seed=seed, t=t, coalition=coalition)
        cells[bit], size, count = _shares_seen(res, coalition, sender)
        assert count == t  # the coalition holds t of the sender's t + 1 shares
        assert uniform_p(cells[bit], size) > ALPHA
    assert homogeneous(cells[0], cells[1], size) > ALPHA


def test_the_chi_square_detects_t_plus_1_shares():
    """Power: all t + 1 shares of a party (t + 1 holders) reveal its input."""
    n, t, trials = 4, 2, 4000
    proto = SecureSum(noise="none", modulus=11)
    sums = {}
    for bit, seed in ((0, 31), (1, 32)):
        x = np.zeros(n, dtype=int)
        x[3] = bit
        res = privsim.simulate(proto, x, trials=trials, seed=seed, t=t)
        msgs = [v for r, s, d, v in res.view([0, 1, 2]).messages if r == 1 and s == 3]
        sums[bit] = np.sum(msgs, axis=0) % 11
    assert homogeneous(sums[0], sums[1], 11) < 1e-10
    assert res.protocol.privacy([0, 1, 2], n, t) is None


# ------------------------------------------------------------------ the modulus: no wrap
@pytest.mark.parametrize("noise", ["laplace", "gaussian", "discrete-laplace"])
def test_sum_never_wraps_with_all_ones_and_large_noise(noise):
    n, t = 64, 3
    proto = SecureSum(noise=noise, epsilon=0.01, delta=1e-3)
    q = proto.modulus_for(n, t)
    # the rule: q > 2 (n max_input 2^d + B), B the 2^-40 tail bound of the encoded noise
    assert q > 2 * (n * proto.scale + proto.noise_bound(n, t))
    assert q <= 2 * 2 * (n * proto.scale + proto.noise_bound(n, t)) + 2  # the smallest power of two
    res = privsim.simulate(proto, np.ones(n, dtype=int), trials=5000, seed=12, t=t, record=False)
    sd = math.sqrt(proto.noise_variance(n, t))
    assert np.max(np.abs(res.error)) < 8 * sd  # a wrap would be off by about q / 2^d
    assert abs(res.error.mean()) < 5 * sd / math.sqrt(5000)


def test_a_modulus_too_small_for_the_range_is_refused():
    n, t = 10, 2
    need = 2 * n  # noiseless bits: q > 2 n
    with pytest.raises(ParameterError, match="modulus must be > 20"):
        privsim.simulate(SecureSum(noise="none", modulus=need), np.ones(n, dtype=int), t=t)
    res = privsim.simulate(SecureSum(noise="none", modulus=need + 1), np.ones(n, dtype=int), t=t, trials=3)
    assert np.all(res.estimate == n)
    with pytest.raises(ParameterError, match="modulus"):
        privsim.simulate(SecureSum(noise="laplace", modulus=2**20), np.ones(n, dtype=int), t=t)


# ------------------------------------------------------------------ privacy claims
def test_privacy_claims_per_coalition():
    n, t = 10, 3
    lap = SecureSum(noise="laplace", epsilon=0.7)
    assert lap.privacy([0, 4], n, t) == privsim.Privacy(0.7)        # sees the output
    assert lap.privacy([1, 2, 3], n, t) == privsim.Privacy(0.0)     # t holders, no output: shares only
    assert lap.privacy([0, 1, 2, 3], n, t) is None                  # t + 1 holders
    assert SecureSum(noise="laplace", broadcast=True).privacy([5], n, t) == privsim.Privacy(1.0)
    assert SecureSum(noise="none").privacy([0], n, t) is None       # the exact sum is not DP
    assert SecureSum(noise="none").privacy([1], n, t) == privsim.Privacy(0.0)
    assert SecureSum(noise="discrete-laplace", epsilon=2.0).privacy([0], n, t) == privsim.Privacy(2.0)


def test_gaussian_claims_are_exact_for_the_residual_noise():
    """(issue 13) A coalition of size s <= t seeing the output faces n - s honest shares of
    N(0, sigma2/(n-t)): exactly the Gaussian mechanism with mu = D / sqrt(sigma2 (n-s)/(n-t));
    the calibration's blanket claim is attached as the paper's."""
    n, t = 10, 3
    proto = SecureSum(noise="gaussian", epsilon=1.0, delta=1e-5)
    sigma = math.sqrt(proto.sigma2)
    full = proto.privacy([0, 1, 2], n, t)  # |T| = t: exactly N(0, sigma2), the calibrated noise
    assert full.measure == "gaussian" and full.mu == pytest.approx(1 / sigma, rel=1e-12)
    assert full.epsilon_at(1e-5) == pytest.approx(1.0, rel=1e-9)
    assert full.paper is None  # the calibration's (1, 1e-5): the same point of the same curve
    one = proto.privacy([0], n, t)         # 9 honest shares: variance sigma2 9/7
    assert one.mu == pytest.approx(1 / (sigma * math.sqrt(9 / 7)), rel=1e-12)
    assert one.epsilon_at(1e-5) < 0.9 and one.paper == privsim.Privacy(1.0, 1e-5)
    two = SecureSum(noise="gaussian", rho=0.5, delta=1e-6, max_input=2).privacy([0], n, t)  # sigma2 = 4
    assert two.mu == pytest.approx(2 / math.sqrt(4 * 9 / 7), rel=1e-12)
    assert two.paper.measure == "zcdp" and two.paper.rho == 0.5 and two.delta == 1e-6


def test_the_exact_gaussian_claim_matches_the_measured_residual_noise():
    """With broadcast, the empty coalition sees the output with all n = 2 (n - t) shares: the
    residual variance is 2 sigma2, so mu is 1/sqrt(2) of the blanket one. The variance is
    measured (5 sd of a sample variance: sqrt(2/R)), so a claim built on sigma2 (a factor of
    two) or on the standard deviation fails."""
    n, t, d = 8, 4, 1
    proto = SecureSum(noise="gaussian", rho=0.125, broadcast=True)  # sigma2 = 4
    res = privsim.simulate(proto, np.zeros(n, dtype=int), trials=R, seed=21, t=t, record=False)
    measured = float(np.mean(res.error**2))
    assert abs(measured - 8.0) < 5 * 8.0 * math.sqrt(2 / R)
    claim = proto.privacy((), n, t)
    assert claim.mu == pytest.approx(d / math.sqrt(measured), rel=5 * math.sqrt(2 / R))
    assert abs(claim.mu - d / math.sqrt(4.0)) > 0.2 * claim.mu  # the blanket mu is visibly different


# ------------------------------------------------------------------ bad parameters
def test_bad_parameters_are_refused_with_one_clear_line():
    with pytest.raises(ParameterError, match="t must satisfy"):
        privsim.simulate(SecureSum(), np.ones(5, dtype=int), t=5)
    with pytest.raises(ParameterError, match="noise must be one of"):
        SecureSum(noise="gauss")
    with pytest.raises(ParameterError, match="rho applies only to noise=gaussian"):
        SecureSum(noise="laplace", rho=0.5)
    with pytest.raises(ParameterError, match="epsilon must be > 0"):
        SecureSum(epsilon=0)
    with pytest.raises(ParameterError, match="delta must be < 1"):
        SecureSum(noise="gaussian", delta=1.0)
    with pytest.raises(ParameterError, match="modulus"):
        SecureSum(modulus=1)
    with pytest.raises(InputError, match=r"integers in \[0, 1\]"):
        privsim.simulate(SecureSum(), [0, 1, 2], t=1)
    with pytest.raises(InputError, match=r"integers in \[0, 3\]"):
        privsim.simulate(SecureSum(max_input=3), [0, 1, -1], t=1)


def test_the_outside_observer_reads_the_release_with_all_n_shares_as_noise():
    n, t = 10, 3
    proto = SecureSum(noise="gaussian", rho=0.125)  # sigma2 = 4
    assert proto.publishes(n, t) == (0,)
    claim = proto.public_privacy(n, t)
    assert claim.mu == pytest.approx(1 / math.sqrt(4 * n / (n - t)), rel=1e-12)
    assert SecureSum(noise="laplace", epsilon=0.5).public_privacy(n, t) == privsim.Privacy(0.5)
    assert SecureSum(noise="none").public_privacy(n, t) is None
    assert SecureSum(noise="laplace", broadcast=True).publishes(n, t) == tuple(range(n))
