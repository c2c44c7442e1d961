"""central-laplace and central-gaussian: calibration, distributions, who sees what, claims."""

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
    laplace_total_moments,
)
from scipy import stats

import privsim
from privsim.errors import InputError, ParameterError
from privsim.mechanisms.accounting import gaussian_epsilon
from privsim.mechanisms.noise import discrete_laplace_pmf
from privsim.protocols import central as central_module
from privsim.protocols import get_protocol
from privsim.protocols.central import CentralGaussian, CentralLaplace

R = 20000


def test_doctests():
    result = doctest.testmod(central_module)
    assert result.attempted > 5 and result.failed == 0


def test_registered_under_their_cli_names():
    assert isinstance(get_protocol("central-laplace"), CentralLaplace)
    assert isinstance(get_protocol("central-gaussian", rho="0.5"), CentralGaussian)


@pytest.mark.parametrize("broadcast", [True, False])
def test_messages_rounds_and_outputs(broadcast):
    n = 30
    res = privsim.simulate(CentralLaplace(broadcast=broadcast), np.arange(n) % 2, trials=5, seed=1)
    assert res.messages == res.schedule.messages == (2 * n if broadcast else n)
    assert res.rounds == (2 if broadcast else 1)
    for i in range(n):
        if broadcast:
            assert np.array_equal(res.outputs[i], res.outputs["C"])
        else:
            assert i not in res.outputs


@pytest.mark.parametrize("epsilon,max_input", [(1.0, 1), (0.5, 2)])
def test_laplace_is_unbiased_with_variance_2b2_and_laplace_distributed(epsilon, max_input):
    proto = CentralLaplace(epsilon=epsilon, max_input=max_input)
    b = max_input / epsilon
    res = privsim.simulate(proto, np.arange(20) % (max_input + 1), trials=R, seed=2, record=False)
    variance, mu4 = laplace_total_moments(b, 1.0)
    assert math.isclose(proto.noise_variance(), 2 * b * b) and math.isclose(variance, 2 * b * b)
    assert_mean_and_variance(res.error, variance, mu4)
    assert stats.kstest(res.error, stats.laplace(scale=b).cdf).pvalue > ALPHA


def test_discrete_laplace_has_the_exact_pmf():
    proto = CentralLaplace(epsilon=0.5, discrete=True)
    res = privsim.simulate(proto, np.ones(15, dtype=int), trials=R, seed=3, record=False)
    assert np.all(res.error == np.rint(res.error))
    variance, mu4 = discrete_laplace_total_moments(2.0, 1.0)
    assert math.isclose(proto.noise_variance(), variance)
    assert_mean_and_variance(res.error, variance, mu4)
    assert_pmf_fits(res.error, lambda k: discrete_laplace_pmf(k, 2.0), -200, 200)


@pytest.mark.parametrize("params,sigma2", [
    ({"rho": 0.5, "max_input": 2}, 4.0),                       # D^2 / (2 rho)
    ({"rho": 0.125}, 4.0),
    ({"epsilon": 1.0, "delta": 1e-5}, 3.730631**2),            # analytic Gaussian (Balle–Wang)
])
def test_gaussian_calibration_and_distribution(params, sigma2):
    proto = CentralGaussian(**params)
    assert math.isclose(proto.noise_variance(), sigma2, rel_tol=1e-5)
    res = privsim.simulate(proto, np.ones(10, dtype=int), trials=R, seed=4, record=False)
    assert_mean_and_variance(res.error, *gaussian_total_moments(proto.noise_variance()))
    assert stats.kstest(res.error, stats.norm(scale=math.sqrt(proto.noise_variance())).cdf).pvalue > ALPHA


def test_privacy_claims():
    n, t = 10, 9
    lap = CentralLaplace(epsilon=0.3)
    assert lap.privacy(["C"], n, t) is None and lap.privacy([0, "C"], n, t) is None
    assert lap.privacy([0], n, t) == privsim.Privacy(0.3)
    assert lap.privacy(list(range(9)), n, t) == privsim.Privacy(0.3)
    assert CentralLaplace(broadcast=False).privacy([0, 1], n, t) == privsim.Privacy(0.0)
    # The Gaussian's exact curve: at the calibration's delta it is the calibration's epsilon.
    claim = CentralGaussian(epsilon=1.0, delta=1e-5).privacy([0], n, t)
    assert claim.measure == "gaussian" and claim.epsilon == pytest.approx(1.0, abs=1e-9)
    assert claim.paper is None  # privsim's claim is the paper's (eps, delta): nothing to report beside
    claim = CentralGaussian(rho=0.5, delta=1e-6).privacy([0], n, t)
    assert claim.mu == pytest.approx(1.0) and claim.epsilon == pytest.approx(gaussian_epsilon(1.0, 1e-6))
    assert claim.paper.measure == "zcdp" and claim.paper.rho == 0.5
    # what public sees: C's release, with or without the broadcast
    assert CentralLaplace(epsilon=0.3, broadcast=False).public_privacy(n, t) == privsim.Privacy(0.3)


def test_a_party_sees_only_its_input_and_the_output():
    """Coalition 0 audits the released output alone: its view is x_0 and the release."""
    res = privsim.simulate(CentralLaplace(), [1, 0, 1, 1], trials=6, seed=5)
    view = res.view("0")
    assert view.columns() == ["input 0", "msg r1 0->C", "msg r2 C->0", "output 0"]
    assert np.array_equal(view.to_array()[:, 2], res.outputs["C"])
    curator = res.view("C").to_array()
    assert curator.shape[1] >= 4  # C receives every input in the clear


def test_bad_parameters():
    with pytest.raises(ParameterError, match="epsilon must be > 0"):
        CentralLaplace(epsilon=-1)
    with pytest.raises(ParameterError, match="delta must be < 1"):
        CentralGaussian(delta=2)
    with pytest.raises(ParameterError, match="rho must be >= 0"):
        CentralGaussian(rho=-0.1)
    with pytest.raises(InputError, match=r"integers in \[0, 1\]"):
        privsim.simulate(CentralLaplace(), [0, 3])
    with pytest.raises(ParameterError, match="t must satisfy"):
        privsim.simulate(CentralGaussian(), [0, 1], t=2)
