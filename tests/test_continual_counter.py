"""ContinualCounter: running sums under rho-zCDP with FastGaMe noise (Pagh & Sejer 2026)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.errors import InputError, ParameterError
from privsim.mechanisms.accounting import gaussian_rho
from privsim.mechanisms.continual import ContinualCounter, continual_sigma2


def _strategy_matrices(h: int) -> tuple[np.ndarray, np.ndarray]:
    """L (leaves x nodes) and R (nodes x inputs) of appendix B, nodes in heap order."""
    T = 1 << h
    nodes = [(j, p) for j in range(h + 1) for p in range(1 << j)]
    L = np.zeros((T, len(nodes)))
    R = np.zeros((len(nodes), T))
    for v, (j, p) in enumerate(nodes):
        leaves = np.arange(p << (h - j), (p + 1) << (h - j))  # the subtree of v
        L[leaves, v] = 1.0
        if j == 0:
            R[v, :] = 0.5
            continue
        sign = 1.0 if p & 1 else -1.0
        sibling = np.arange((p ^ 1) << (h - j), ((p ^ 1) + 1) << (h - j))
        if j < h:
            R[v, sibling] = 0.5 * sign
        else:
            R[v, p] += 0.5
            R[v, p ^ 1] += 0.5 * sign
    return L, R


@pytest.mark.parametrize("h", [1, 2, 3, 6])
def test_calibration_follows_from_the_appendix_b_factorization(h):
    L, R = _strategy_matrices(h)
    np.testing.assert_allclose(L @ R, np.tril(np.ones((1 << h, 1 << h))))
    sq_sensitivity = (R**2).sum(axis=0)  # one input moves h + 2 nodes by 1/2 each
    np.testing.assert_allclose(sq_sensitivity, (h + 2) / 4)
    rho = 0.37
    sigma2 = continual_sigma2(1 << h, rho)
    # Gaussian mechanism on Rx with l2 sensitivity sqrt(h + 2)/2 is exactly rho-zCDP
    assert math.isclose(gaussian_rho(math.sqrt(sigma2), math.sqrt((h + 2) / 4)), rho)


def test_exposed_parameters():
    c = ContinualCounter(2**10, rho=0.5, k=3, sensitivity=2.0, seed=0)
    assert (c.T, c.h, c.k) == (1024, 10, 3)
    assert c.sigma2 == pytest.approx(12 / (8 * 0.5) * 4)
    assert c.variance == pytest.approx(11 * c.sigma2)
    assert c.error_sd == pytest.approx(math.sqrt(11 * 12 / (8 * 0.5)) * 2)
    assert c.noise.sigma2 == c.sigma2


def test_error_sd_is_sqrt_h1_h2_over_8rho():
    T, rho, n = 2**12, 0.3, 100_000
    h = 12
    counter = ContinualCounter(T, rho, k=n, seed=41)
    rng = np.random.default_rng(0)
    truth = np.zeros(n)
    errors = []
    plan = {1: 1, 2: 0, 5: 3, 7: 0, 100: 1, 2000: 2, 4096: 0}  # step -> updates before query
    for t, n_updates in plan.items():
        for _ in range(n_updates):
            coords = rng.choice(n, 50, replace=False)
            x = rng.standard_normal(50)
            x *= rng.uniform(0, 1) / np.linalg.norm(x)  # l2 norm <= 1
            counter.update(t, x, coords=coords)
            truth[coords] += x
        errors.append(counter.query(t) - truth)
    var = (h + 1) * (h + 2) / (8 * rho)  # (h + 1) s^2 with s^2 = (h + 2)/(8 rho)
    assert counter.error_sd == pytest.approx(math.sqrt(var))
    for e in errors:
        assert abs(e.mean()) < 5 * math.sqrt(var / n)
        assert abs(e.var() - var) < 5 * var * math.sqrt(2 / n)


def test_sensitivity_scales_the_noise():
    n = 100_000
    counter = ContinualCounter(8, rho=1.0, k=n, sensitivity=3.0, seed=42)
    err = counter.query(4)
    var = 4 * 5 / 8 * 9.0
    assert abs(err.var() - var) < 5 * var * math.sqrt(2 / n)


def test_scalar_counter_releases_sum_plus_fastgame_noise():
    c = ContinualCounter(16, rho=2.0, seed=7)
    twin = ContinualCounter(16, rho=2.0, seed=7)
    c.update(2, 1.0)
    c.update(2, -0.5)
    c.update(6, 1.0)
    released = c.query(9)
    assert isinstance(released, float)
    assert released == pytest.approx(1.5 + twin.noise.noise(9))
    assert c.query(9) == released  # a repeated query gives the same value
    c.update(10, 1.0)
    assert c.query(12) == pytest.approx(2.5 + twin.noise.noise(12))


def test_time_rules():
    c = ContinualCounter(16, rho=1.0, k=2, seed=1)
    c.update(3, [0.6, 0.8])
    with pytest.raises(ParameterError, match="last update"):
        c.update(2, [0.0, 1.0])
    with pytest.raises(ParameterError, match="last update"):
        c.query(2)
    c.query(5)
    with pytest.raises(ParameterError, match="too late"):
        c.update(5, [1.0, 0.0])  # step 5 was released: no more updates at 5
    with pytest.raises(ParameterError, match="last query"):
        c.query(4)
    c.update(6, [1.0, 0.0])
    with pytest.raises(ParameterError, match="t must be"):
        c.query(17)


def test_update_values_are_checked():
    c = ContinualCounter(16, rho=1.0, k=3, seed=1)
    with pytest.raises(InputError, match="l2 norm"):
        c.update(1, [1.0, 1.0, 0.0])
    with pytest.raises(InputError, match="length k = 3"):
        c.update(1, [1.0, 0.0])
    with pytest.raises(InputError, match="finite"):
        c.update(1, [np.nan, 0.0, 0.0])
    with pytest.raises(InputError, match="distinct"):
        c.update(1, [0.5, 0.5], coords=[1, 1])
    with pytest.raises(InputError, match="coords"):
        c.update(1, [0.5], coords=[3])
    c.update(1, [0.6, 0.8], coords=[2, 0])
    np.testing.assert_allclose(c.true_sum(), [0.8, 0.0, 0.6])
    scalar = ContinualCounter(16, rho=1.0, sensitivity=2.0, seed=1)
    scalar.update(1, -2.0)
    with pytest.raises(InputError, match="sensitivity = 2.0"):
        scalar.update(1, 2.5)


def test_only_queried_coordinates_get_noise_state():
    c = ContinualCounter(2**20, rho=1.0, k=1_000_000, seed=3)
    c.update(1, [1.0], coords=[999_999])
    out = c.query(1, [5, 999_999])
    assert out.shape == (2,) and c.noise.n_materialized == 2


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match="T must be a power of two: 2, 4, 8"):
        ContinualCounter(1, rho=1.0)
    with pytest.raises(ParameterError, match=r"T must be a power of two.*got 100"):
        ContinualCounter(100, rho=1.0)
    with pytest.raises(ParameterError, match="rho"):
        ContinualCounter(8, rho=0.0)
    with pytest.raises(ParameterError, match="sensitivity"):
        ContinualCounter(8, rho=1.0, sensitivity=-1.0)
    with pytest.raises(ParameterError, match="k must be"):
        ContinualCounter(8, rho=1.0, k=0)
