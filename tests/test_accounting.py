"""Privacy accounting, checked against Google's dp_accounting library."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld, rdp
from hypothesis import given, settings
from hypothesis import strategies as st

from privsim.errors import ParameterError
from privsim.mechanisms.accounting import (
    analytic_gaussian_sigma,
    approx_dp_to_zcdp,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_rho,
    gaussian_sigma_for_zcdp,
    pure_dp_to_zcdp,
    zcdp_to_approx_dp,
    zcdp_to_approx_dp_tight,
)

RHOS = [1e-4, 0.01, 0.1, 0.5, 2.0, 10.0]
DELTAS = [1e-10, 1e-6, 1e-3, 0.05]
SIGMAS = [0.3, 0.8, 1.0, 2.5, 10.0, 60.0]


def test_bun_steinke_closed_form():
    assert zcdp_to_approx_dp(0.5, 1e-6) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)))
    assert pure_dp_to_zcdp(2.0) == 2.0


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_tight_conversion_matches_the_rdp_accountant(rho, delta):
    # dp_accounting's RDP accountant applies the same [CKS20] Prop. 12 bound on a grid
    # of orders; with a dense grid it can only be slightly above our continuous optimum.
    orders = np.concatenate([1 + np.geomspace(1e-3, 1e5, 4000)])
    accountant = rdp.RdpAccountant(orders=list(orders))
    accountant.compose(dp_accounting.ZCDpEvent(rho))
    theirs = accountant.get_epsilon(delta)
    ours = zcdp_to_approx_dp_tight(rho, delta)
    assert ours <= theirs + 1e-9
    assert theirs - ours <= 1e-3 * max(theirs, 1e-3)
    assert ours <= zcdp_to_approx_dp(rho, delta) + 1e-12


def test_tight_conversion_is_zero_when_delta_covers_total_variation():
    rho = 1e-4
    assert zcdp_to_approx_dp_tight(rho, 0.02) == 0.0  # sqrt(1 - e^-rho) ~ 0.01
    assert zcdp_to_approx_dp_tight(rho, 0.005) > 0.0


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("delta", DELTAS)
def test_analytic_gaussian_epsilon_matches_dp_accounting(sigma, delta):
    theirs = dp_accounting.get_epsilon_gaussian(sigma, delta)
    assert gaussian_epsilon(sigma, delta) == pytest.approx(theirs, rel=1e-8, abs=1e-9)
    # only sigma / sensitivity matters
    assert gaussian_epsilon(3 * sigma, delta, sensitivity=3.0) == pytest.approx(theirs, rel=1e-8,
                                                                                abs=1e-9)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", DELTAS)
def test_analytic_gaussian_sigma_matches_dp_accounting(epsilon, delta):
    theirs = dp_accounting.get_sigma_gaussian(epsilon, delta)
    assert analytic_gaussian_sigma(epsilon, delta) == pytest.approx(theirs, rel=1e-8)
    assert analytic_gaussian_sigma(epsilon, delta, sensitivity=2.0) == pytest.approx(2 * theirs,
                                                                                     rel=1e-8)


@pytest.mark.parametrize("sigma", [0.8, 2.5, 10.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-3])
def test_analytic_gaussian_matches_the_pld_accountant(sigma, delta):
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier=sigma))
    theirs = accountant.get_epsilon(delta)  # pessimistic discretisation: from above
    ours = gaussian_epsilon(sigma, delta)
    assert ours <= theirs + 1e-9
    assert theirs - ours < 2e-3


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("delta", DELTAS)
def test_exact_gaussian_profile_beats_every_zcdp_conversion(sigma, delta):
    rho = gaussian_rho(sigma)
    exact = gaussian_epsilon(sigma, delta)
    assert exact <= zcdp_to_approx_dp_tight(rho, delta) + 1e-9
    assert zcdp_to_approx_dp_tight(rho, delta) <= zcdp_to_approx_dp(rho, delta) + 1e-12


def test_classical_calibration_is_looser_than_the_analytic_one():
    for epsilon in (0.1, 0.5, 0.9):
        for delta in (1e-5, 1e-8):
            classical = math.sqrt(2 * math.log(1.25 / delta)) / epsilon
            assert analytic_gaussian_sigma(epsilon, delta) < classical


@settings(max_examples=60, deadline=None)
@given(sigma=st.floats(0.2, 100.0), log10_delta=st.floats(-12.0, -1.0))
def test_epsilon_and_delta_are_inverse(sigma, log10_delta):
    delta = 10.0**log10_delta
    eps = gaussian_epsilon(sigma, delta)
    if eps > 0:
        assert gaussian_delta(sigma, eps) == pytest.approx(delta, rel=1e-6)
        assert analytic_gaussian_sigma(eps, delta) == pytest.approx(sigma, rel=1e-6)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5])
def test_approx_dp_to_zcdp_inverts_the_conversions(epsilon, delta):
    rho = approx_dp_to_zcdp(epsilon, delta)
    assert zcdp_to_approx_dp(rho, delta) == pytest.approx(epsilon, rel=1e-12)
    rho_tight = approx_dp_to_zcdp(epsilon, delta, tight=True)
    assert zcdp_to_approx_dp_tight(rho_tight, delta) == pytest.approx(epsilon, rel=1e-9)
    assert rho_tight >= rho


def test_gaussian_zcdp_helpers():
    assert gaussian_rho(2.0, sensitivity=3.0) == pytest.approx(9 / 8)
    for rho in RHOS:
        assert gaussian_rho(gaussian_sigma_for_zcdp(rho, 1.7), 1.7) == pytest.approx(rho)


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match="delta"):
        zcdp_to_approx_dp(0.5, 0.0)
    with pytest.raises(ParameterError, match="delta"):
        zcdp_to_approx_dp_tight(0.5, 1.0)
    with pytest.raises(ParameterError, match="rho"):
        zcdp_to_approx_dp(-0.5, 1e-6)
    with pytest.raises(ParameterError, match="epsilon"):
        analytic_gaussian_sigma(0.0, 1e-6)
    with pytest.raises(ParameterError, match="sigma"):
        gaussian_epsilon(0.0, 1e-6)
    with pytest.raises(ParameterError, match="sensitivity"):
        gaussian_sigma_for_zcdp(1.0, sensitivity=0.0)
