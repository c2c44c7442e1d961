"""Noise for differential privacy: central reference mechanisms and distributed shares.

Central mechanisms add noise calibrated to the global sensitivity ``GS_f`` (Dwork,
McSherry, Nissim, Smith 2006; eq. (1) of Beimel, Nissim, Omri 2008): Laplace with scale
``b = GS_f / epsilon`` is epsilon-DP, the discrete Laplace with the same ``b`` is exactly
epsilon-DP for an integer-valued ``f`` with integer sensitivity, and the Gaussian is
calibrated either to rho-zCDP or, via the analytic Gaussian mechanism of Balle and Wang
(2018), to (epsilon, delta)-DP.

Distributed shares let ``n`` parties generate that noise jointly, as the secure-sum
protocols need: each party draws one share, and ``m`` shares sum to exactly the central
noise. Laplace and discrete Laplace are infinitely divisible (a Laplace is a difference
of two exponentials, an exponential a sum of ``m`` Gamma(1/m) variables; a geometric is
a sum of ``m`` Polya, i.e. negative binomial with real shape 1/m, variables). With
``m = n - t`` any ``n - t`` honest parties already hold the full noise, so a coalition
of ``t`` that subtracts its own shares still faces at least Lap(b); the price is that
the total of all ``n`` shares has variance ``n / (n - t)`` times the central one.

The floating-point samplers (Laplace, Gaussian) are reference mechanisms for accuracy
studies: floating-point noise is not exactly DP (Mironov 2012). The integer option is
the discrete Laplace, which also fits the additive sharing mod q of
:mod:`privsim.mechanisms.sharing` without rounding.

Random generators
-----------------
Every sampler takes ``rng`` and an explicit ``size`` (the shape of ONE trial's draw) and
makes a fixed number of calls ``rng.<method>(..., size=size)``, then only elementwise
numpy operations. So it works with a numpy ``Generator`` (result shape ``size``) and with
a party's trial rng, whose methods return a leading trial axis (result shape
``(R, *size)``); array parameters must broadcast against the shape the rng returns.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import _checks
from privsim.mechanisms._lazy import on_use

accounting = on_use("privsim.mechanisms.accounting")  # on first use: it brings scipy.optimize

__all__ = [
    # central mechanisms
    "laplace_scale",
    "laplace_variance",
    "laplace_mechanism",
    "gaussian_variance",
    "gaussian_mechanism",
    "discrete_laplace_mechanism",
    # discrete Laplace, exactly
    "discrete_laplace_pmf",
    "discrete_laplace_cdf",
    "discrete_laplace_variance",
    # distributed shares
    "laplace_share",
    "gaussian_share",
    "discrete_laplace_share",
    "laplace_shares_variance",
    "gaussian_shares_variance",
    "discrete_laplace_shares_variance",
    # tail bounds (for choosing a modulus)
    "laplace_tail_bound",
    "gaussian_tail_bound",
    "discrete_laplace_tail_bound",
]


def _default_size(value: ArrayLike, size: Any) -> tuple[int, ...]:
    return tuple(np.shape(value)) if size is None else _checks.shape("size", size)


def _shares(m: Any) -> int:
    return _checks.integer("m", m, 1)


def _count(count: Any) -> int:
    return _checks.integer("count", count, 1)


def _failure_log2(failure_log2: Any) -> int:
    return _checks.integer("failure_log2", failure_log2, 1, 1000)


def _geometric_ratio(b: Any) -> Any:
    """alpha = e^{-1/b}, the ratio Pr[k+1] / Pr[k] of the discrete Laplace tails."""
    return np.exp(-1.0 / np.asarray(b, dtype=np.float64))


# ---------------------------------------------------------------------------------------
# Central mechanisms
# ---------------------------------------------------------------------------------------


def laplace_scale(sensitivity: ArrayLike, epsilon: ArrayLike) -> Any:
    """The Laplace scale ``b = GS_f / epsilon`` that makes ``f(x) + Lap(b)`` epsilon-DP.

    Parameters
    ----------
    sensitivity
        the global (l1) sensitivity ``GS_f`` > 0.
    epsilon
        the privacy parameter > 0.

    Returns
    -------
        ``b`` (a float, or an array if an argument is one).

    Raises
    ------
    ParameterError
        if an argument is not finite and > 0.

    >>> laplace_scale(2.0, 0.5)
    4.0
    """
    sensitivity = _checks.positive("sensitivity", sensitivity)
    epsilon = _checks.positive("epsilon", epsilon)
    return sensitivity / epsilon  # Dwork et al. 2006; eq. (1) of Beimel-Nissim-Omri


def laplace_variance(sensitivity: ArrayLike, epsilon: ArrayLike) -> Any:
    """The variance ``2 b^2`` that :func:`laplace_mechanism` adds, ``b = GS_f / epsilon``.

    Parameters
    ----------
    sensitivity
        the global (l1) sensitivity > 0.
    epsilon
        the privacy parameter > 0.

    Returns
    -------
        ``2 (sensitivity / epsilon)^2``.

    Raises
    ------
    ParameterError
        if an argument is not finite and > 0.

    >>> laplace_variance(1.0, 0.5)
    8.0
    """
    return 2.0 * laplace_scale(sensitivity, epsilon) ** 2


def laplace_mechanism(
    value: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: ArrayLike,
    rng: np.random.Generator,
    *,
    size: Any = None,
) -> NDArray[np.float64]:
    """Release ``value + Lap(GS_f / epsilon)``, the epsilon-DP Laplace mechanism.

    Parameters
    ----------
    value
        the true answer ``f(x)`` (a number or an array).
    sensitivity
        the global (l1) sensitivity of ``f`` > 0.
    epsilon
        the privacy parameter > 0.
    rng
        a numpy ``Generator`` or a party's trial rng.
    size
        the shape of one trial's noise; ``None`` means ``np.shape(value)``, right for
        a ``Generator``. With a trial rng and a ``value`` that carries the trial axis,
        pass ``value.shape[1:]``.

    Returns
    -------
        ``value`` plus independent Laplace noise, float64, of the broadcast shape.

    Raises
    ------
    ParameterError
        if ``sensitivity`` or ``epsilon`` is not finite and > 0.

    >>> rng = np.random.default_rng(1)
    >>> laplace_mechanism(np.zeros(3), 1.0, 1.0, rng).shape
    (3,)
    """
    b = laplace_scale(sensitivity, epsilon)
    noise = rng.laplace(0.0, b, size=_default_size(value, size))
    return np.asarray(value, dtype=np.float64) + noise


def gaussian_variance(
    sensitivity: ArrayLike,
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
) -> Any:
    """The variance ``sigma^2`` of the Gaussian mechanism for rho-zCDP or (epsilon, delta)-DP.

    Give exactly one of ``rho`` or the pair ``(epsilon, delta)``:

    - rho-zCDP: ``sigma^2 = D^2 / (2 rho)`` (Bun and Steinke 2016, Prop. 1.6).
    - (epsilon, delta)-DP: the analytic Gaussian mechanism (Balle and Wang 2018, the
      smallest sigma whose exact privacy profile meets delta), from
      :func:`privsim.mechanisms.accounting.analytic_gaussian_sigma`; not the classic
      ``D sqrt(2 ln(1.25/delta)) / epsilon``, which is larger and needs epsilon < 1.

    Parameters
    ----------
    sensitivity
        the l2 sensitivity ``D`` > 0 (an array is allowed with ``rho``).
    rho
        the zCDP parameter > 0.
    epsilon
        the privacy parameter > 0 (with ``delta``).
    delta
        the privacy parameter in (0, 1) (with ``epsilon``).

    Returns
    -------
        ``sigma^2``.

    Raises
    ------
    ParameterError
        if the parameters are out of range or not exactly one of
        ``rho`` or ``(epsilon, delta)`` is given.

    >>> gaussian_variance(1.0, rho=0.5)
    1.0
    >>> round(gaussian_variance(1.0, epsilon=1.0, delta=1e-5) ** 0.5, 3)  # classic: 4.845
    3.731
    """
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ParameterError("give either rho or (epsilon, delta), not both")
    elif epsilon is None or delta is None:
        raise ParameterError("give rho > 0, or both epsilon > 0 and delta in (0, 1)")
    sensitivity = _checks.positive("sensitivity", sensitivity)
    if rho is not None:
        return sensitivity**2 / (2.0 * _checks.positive("rho", rho))  # Bun-Steinke Prop 1.6
    unit_sigma = accounting.analytic_gaussian_sigma(epsilon, delta)  # sigma is linear in D
    return (sensitivity * unit_sigma) ** 2


def gaussian_mechanism(
    value: ArrayLike,
    sensitivity: ArrayLike,
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    rng: np.random.Generator,
    size: Any = None,
) -> NDArray[np.float64]:
    """Release ``value + N(0, sigma^2)`` with sigma from :func:`gaussian_variance`.

    Parameters
    ----------
    value
        the true answer ``f(x)`` (a number or an array).
    sensitivity
        the l2 sensitivity of ``f`` > 0.
    rho
        the zCDP parameter > 0; or else
    epsilon, delta
        the (epsilon, delta)-DP target (analytic Gaussian calibration).
    rng
        a numpy ``Generator`` or a party's trial rng.
    size
        the shape of one trial's noise; ``None`` means ``np.shape(value)`` (see
        :func:`laplace_mechanism`).

    Returns
    -------
        ``value`` plus independent Gaussian noise, float64.

    Raises
    ------
    ParameterError
        as :func:`gaussian_variance`.

    >>> rng = np.random.default_rng(1)
    >>> gaussian_mechanism(np.zeros((2, 3)), 1.0, rho=0.5, rng=rng).shape
    (2, 3)
    """
    sigma2 = gaussian_variance(sensitivity, rho=rho, epsilon=epsilon, delta=delta)
    noise = rng.normal(0.0, np.sqrt(sigma2), size=_default_size(value, size))
    return np.asarray(value, dtype=np.float64) + noise


def discrete_laplace_mechanism(
    value: ArrayLike,
    sensitivity: int,
    epsilon: ArrayLike,
    rng: np.random.Generator,
    *,
    size: Any = None,
) -> NDArray[np.int64]:
    """Release ``value + DLap(b)``, ``b = sensitivity / epsilon``: exactly epsilon-DP on Z.

    For integers ``k`` and ``k + D`` the pmf ratio is ``e^{-D/b} = e^{-epsilon}`` at
    worst, so an integer-valued ``f`` with integer sensitivity ``D`` is epsilon-DP with no
    floating-point caveat.

    Parameters
    ----------
    value
        the true integer answer ``f(x)`` (an int or an integer array).
    sensitivity
        the integer l1 sensitivity ``D`` >= 1.
    epsilon
        the privacy parameter > 0.
    rng
        a numpy ``Generator`` or a party's trial rng.
    size
        the shape of one trial's noise; ``None`` means ``np.shape(value)``.

    Returns
    -------
        an int64 array.

    Raises
    ------
    ParameterError
        if ``sensitivity`` or ``epsilon`` is out of range.
    InputError
        if ``value`` is not integer-valued.

    >>> rng = np.random.default_rng(1)
    >>> discrete_laplace_mechanism(np.array([10, 20]), 1, 1.0, rng).dtype
    dtype('int64')
    """
    b = laplace_scale(_checks.integer("sensitivity", sensitivity, 1), epsilon)
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"value must be an integer or integer array (got dtype {arr.dtype})")
    return arr.astype(np.int64) + discrete_laplace_share(rng, b, 1, _default_size(value, size))


# ---------------------------------------------------------------------------------------
# The discrete Laplace distribution, exactly
# ---------------------------------------------------------------------------------------


def discrete_laplace_pmf(k: ArrayLike, b: ArrayLike) -> Any:
    """``Pr[K = k] = (1 - a) / (1 + a) * a^|k|`` with ``a = e^{-1/b}``, k an integer.

    Parameters
    ----------
    k
        integer(s) at which to evaluate.
    b
        the scale > 0 (``Pr[k] ∝ exp(-|k| / b)``).

    Returns
    -------
        the probabilities (float64).

    Raises
    ------
    ParameterError
        if ``b`` is not finite and > 0.

    >>> round(float(discrete_laplace_pmf(0, 1.0)), 6)
    0.462117
    >>> round(float(discrete_laplace_pmf(np.arange(-60, 61), 2.0).sum()), 9)
    1.0
    """
    a = _geometric_ratio(_checks.positive("b", b))
    return (1.0 - a) / (1.0 + a) * a ** np.abs(np.asarray(k, dtype=np.float64))


def discrete_laplace_cdf(k: ArrayLike, b: ArrayLike) -> Any:
    """``Pr[K <= k]`` for the discrete Laplace with scale ``b`` (k an integer).

    ``a^|k| / (1 + a)`` for ``k < 0`` and ``1 - a^(k+1) / (1 + a)`` for ``k >= 0``, with
    ``a = e^{-1/b}``.

    Parameters
    ----------
    k
        integer(s) at which to evaluate.
    b
        the scale > 0.

    Returns
    -------
        the cumulative probabilities (float64).

    Raises
    ------
    ParameterError
        if ``b`` is not finite and > 0.

    >>> round(float(discrete_laplace_cdf(-1, 1.0) + discrete_laplace_pmf(0, 1.0)), 6)
    0.731059
    >>> round(float(discrete_laplace_cdf(0, 1.0)), 6)  # 1 / (1 + e^-1)
    0.731059
    """
    a = _geometric_ratio(_checks.positive("b", b))
    k = np.asarray(k, dtype=np.float64)
    lower = a ** np.abs(k) / (1.0 + a)
    upper = 1.0 - a ** (np.abs(k) + 1.0) / (1.0 + a)
    return np.where(k < 0, lower, upper)


def discrete_laplace_variance(b: ArrayLike) -> Any:
    """The variance ``2 a / (1 - a)^2``, ``a = e^{-1/b}``, of the discrete Laplace.

    It is a little below the continuous ``2 b^2`` and tends to it as ``b`` grows.

    Parameters
    ----------
    b
        the scale > 0.

    Returns
    -------
        the variance (float, or array for an array ``b``).

    Raises
    ------
    ParameterError
        if ``b`` is not finite and > 0.

    >>> round(discrete_laplace_variance(1.0), 6)
    1.841347
    >>> round(discrete_laplace_variance(100.0) / (2 * 100.0**2), 4)
    1.0
    """
    a = _geometric_ratio(_checks.positive("b", b))
    # a difference of two geometrics (failures, success prob. 1 - a), each a / (1 - a)^2
    variance = 2.0 * a / (-np.expm1(-1.0 / np.asarray(b, dtype=np.float64))) ** 2
    return float(variance) if np.ndim(variance) == 0 else variance


# ---------------------------------------------------------------------------------------
# Distributed shares
# ---------------------------------------------------------------------------------------


def laplace_share(rng: np.random.Generator, b: ArrayLike, m: int, size: Any) -> NDArray[np.float64]:
    """One party's share of Laplace noise: ``Gamma(1/m, b) - Gamma(1/m, b)``.

    The sum of ``m`` independent shares is exactly ``Lap(b)`` (the Laplace is infinitely
    divisible: Kotz, Kozubowski, Podgorski 2001; used for distributed noise by Goryczka,
    Xiong, Sunderam 2013). In a t-private secure sum over ``n`` parties take
    ``m = n - t``: any ``n - t`` honest parties then hold at least ``Lap(b)`` between
    them, so the output is epsilon-DP for ``b = GS_f / epsilon`` even to a coalition that
    subtracts its own ``t`` shares; the total of all ``n`` shares has variance
    ``2 b^2 n / (n - t)`` (see :func:`laplace_shares_variance`).

    Parameters
    ----------
    rng
        a numpy ``Generator`` or a party's trial rng.
    b
        the Laplace scale of the sum of ``m`` shares, > 0.
    m
        the number of shares that together make ``Lap(b)``, an integer >= 1.
    size
        the shape of one trial's share.

    Returns
    -------
        float64 shares of shape ``size`` (``(R, *size)`` with a trial rng).

    Raises
    ------
    ParameterError
        if ``b``, ``m`` or ``size`` is out of range.

    >>> rng = np.random.default_rng(7)
    >>> laplace_share(rng, 2.0, 5, size=(1000, 5)).sum(axis=1).shape
    (1000,)
    """
    b = _checks.positive("b", b)
    shape = 1.0 / _shares(m)
    size = _checks.shape("size", size)
    if hasattr(rng, "successive"):  # a party's or a cohort's streams: the two draws in one call, the same values
        pair = rng.successive(2, "gamma", shape, b, size=size)
        return pair[0] - pair[1]
    return rng.gamma(shape, b, size=size) - rng.gamma(shape, b, size=size)


def gaussian_share(rng: np.random.Generator, sigma2: ArrayLike, m: int, size: Any) -> NDArray[np.float64]:
    """One party's share of Gaussian noise: ``N(0, sigma2 / m)``.

    The sum of ``m`` independent shares is exactly ``N(0, sigma2)``; with ``m = n - t``
    the total of all ``n`` shares has variance ``sigma2 n / (n - t)``.

    Parameters
    ----------
    rng
        a numpy ``Generator`` or a party's trial rng.
    sigma2
        the variance of the sum of ``m`` shares, > 0.
    m
        the number of shares that together make ``N(0, sigma2)``, an integer >= 1.
    size
        the shape of one trial's share.

    Returns
    -------
        float64 shares of shape ``size`` (``(R, *size)`` with a trial rng).

    Raises
    ------
    ParameterError
        if ``sigma2``, ``m`` or ``size`` is out of range.

    >>> rng = np.random.default_rng(7)
    >>> gaussian_share(rng, 4.0, 4, size=3).shape
    (3,)
    """
    sigma2 = _checks.positive("sigma2", sigma2)
    return rng.normal(0.0, np.sqrt(sigma2 / _shares(m)), size=_checks.shape("size", size))


def discrete_laplace_share(rng: np.random.Generator, b: ArrayLike, m: int, size: Any) -> NDArray[np.int64]:
    """One party's share of discrete Laplace noise: a difference of two Polya variables.

    Each share is ``NB(1/m, 1 - a) - NB(1/m, 1 - a)`` with ``a = e^{-1/b}``, where
    ``NB(r, p)`` counts the failures before the r-th success (numpy's
    ``negative_binomial(r, p)``, real ``r > 0``, mean ``r (1 - p) / p``). ``m`` of them
    sum to ``NB(1, 1 - a) - NB(1, 1 - a)``, a difference of two geometrics, which is
    exactly the discrete Laplace ``Pr[k] = (1 - a) / (1 + a) a^|k|`` (Goryczka, Xiong,
    Sunderam 2013; Balcer, Cheu, Joseph, Mao 2021 use these Polya shares). With
    ``b = D / epsilon`` that sum is exactly epsilon-DP for an integer sensitivity ``D``;
    take ``m = n - t`` as for :func:`laplace_share`.

    Parameters
    ----------
    rng
        a numpy ``Generator`` or a party's trial rng.
    b
        the scale of the sum of ``m`` shares, > 0.
    m
        the number of shares that together make the discrete Laplace, an integer >= 1.
    size
        the shape of one trial's share.

    Returns
    -------
        int64 shares of shape ``size`` (``(R, *size)`` with a trial rng).

    Raises
    ------
    ParameterError
        if ``b``, ``m`` or ``size`` is out of range.

    >>> rng = np.random.default_rng(7)
    >>> discrete_laplace_share(rng, 3.0, 10, size=(2, 10)).dtype
    dtype('int64')
    """
    b = _checks.positive("b", b)
    shape = 1.0 / _shares(m)
    size = _checks.shape("size", size)
    success = -np.expm1(-1.0 / np.asarray(b, dtype=np.float64))  # 1 - a, accurate for big b
    first = rng.negative_binomial(shape, success, size=size)
    second = rng.negative_binomial(shape, success, size=size)
    return np.asarray(first, dtype=np.int64) - np.asarray(second, dtype=np.int64)


def laplace_shares_variance(b: ArrayLike, m: int, count: int) -> Any:
    """The variance ``2 b^2 count / m`` of the sum of ``count`` Laplace shares.

    With ``m = n - t`` and ``count = n`` this is the error variance of the t-private
    secure sum, ``2 b^2 n / (n - t)``.

    Parameters
    ----------
    b
        the Laplace scale of ``m`` shares, > 0.
    m
        shares per ``Lap(b)``, an integer >= 1.
    count
        how many shares are summed, an integer >= 1.

    Returns
    -------
        the variance.

    Raises
    ------
    ParameterError
        if an argument is out of range.

    >>> laplace_shares_variance(1.0, 8, 10)
    2.5
    """
    return 2.0 * _checks.positive("b", b) ** 2 * _count(count) / _shares(m)  # Var Gamma(k, b) = k b^2, twice


def gaussian_shares_variance(sigma2: ArrayLike, m: int, count: int) -> Any:
    """The variance ``sigma2 count / m`` of the sum of ``count`` Gaussian shares.

    Parameters
    ----------
    sigma2
        the variance of ``m`` shares, > 0.
    m
        shares per ``N(0, sigma2)``, an integer >= 1.
    count
        how many shares are summed, an integer >= 1.

    Returns
    -------
        the variance.

    Raises
    ------
    ParameterError
        if an argument is out of range.

    >>> gaussian_shares_variance(2.0, 4, 6)
    3.0
    """
    return _checks.positive("sigma2", sigma2) * _count(count) / _shares(m)


def discrete_laplace_shares_variance(b: ArrayLike, m: int, count: int) -> Any:
    """The variance of the sum of ``count`` discrete Laplace shares: ``count / m`` times
    :func:`discrete_laplace_variance`.

    Parameters
    ----------
    b
        the scale of ``m`` shares, > 0.
    m
        shares per discrete Laplace, an integer >= 1.
    count
        how many shares are summed, an integer >= 1.

    Returns
    -------
        the variance.

    Raises
    ------
    ParameterError
        if an argument is out of range.

    >>> round(discrete_laplace_shares_variance(1.0, 2, 4), 5)
    3.68269
    """
    # Var NB(r, p) = r (1 - p) / p^2 is linear in r, so the share variance is 1/m of it
    return discrete_laplace_variance(b) * _count(count) / _shares(m)


# ---------------------------------------------------------------------------------------
# Tail bounds: |sum of count shares| <= bound except with probability <= 2^-failure_log2
# ---------------------------------------------------------------------------------------


def laplace_tail_bound(b: float, m: int = 1, count: int = 1, failure_log2: int = 40) -> float:
    """A bound ``B`` with ``Pr[|sum of count Laplace shares| > B] <= 2^-failure_log2``.

    The sum is ``G1 - G2`` with ``G1, G2 ~ Gamma(count/m, b)`` independent, and
    ``|G1 - G2| > B`` needs ``G1 > B`` or ``G2 > B``; so ``B`` is the Gamma quantile at
    ``2^-(failure_log2 + 1)``. For ``count = m`` (one ``Lap(b)``) this is
    ``b (failure_log2 + 1) ln 2``.

    Parameters
    ----------
    b
        the Laplace scale of ``m`` shares, > 0.
    m
        shares per ``Lap(b)``, an integer >= 1.
    count
        how many shares are summed, an integer >= 1.
    failure_log2
        minus log2 of the allowed failure probability, in [1, 1000].

    Returns
    -------
        ``B`` (a float).

    Raises
    ------
    ParameterError
        if an argument is out of range.

    >>> round(laplace_tail_bound(1.0, failure_log2=40) / math.log(2), 6)
    41.0
    """
    b = _checks.positive("b", b, scalar=True)
    k = _count(count) / _shares(m)
    tail = 2.0 ** -(_failure_log2(failure_log2) + 1)
    from scipy import special  # on use, and not scipy.stats: party start-up

    return float(special.gammainccinv(k, tail) * b)  # exactly stats.gamma.isf(tail, k, scale=b)


def gaussian_tail_bound(sigma2: float, m: int = 1, count: int = 1, failure_log2: int = 40) -> float:
    """A bound ``B`` with ``Pr[|sum of count Gaussian shares| > B] = 2^-failure_log2``.

    The sum is ``N(0, sigma2 count / m)``, so ``B`` is its two-sided quantile.

    Parameters
    ----------
    sigma2
        the variance of ``m`` shares, > 0.
    m
        shares per ``N(0, sigma2)``, an integer >= 1.
    count
        how many shares are summed, an integer >= 1.
    failure_log2
        minus log2 of the allowed failure probability, in [1, 1000].

    Returns
    -------
        ``B`` (a float).

    Raises
    ------
    ParameterError
        if an argument is out of range.

    >>> round(gaussian_tail_bound(1.0, failure_log2=1), 4)  # the median of |N(0, 1)|
    0.6745
    """
    sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
    sd = math.sqrt(gaussian_shares_variance(sigma2, m, count))
    from scipy import stats  # on use: party start-up
    return sd * float(stats.norm.isf(2.0 ** -(_failure_log2(failure_log2) + 1)))


def discrete_laplace_tail_bound(b: float, m: int = 1, count: int = 1, failure_log2: int = 40) -> int:
    """An integer ``B`` with ``Pr[|sum of count discrete shares| > B] <= 2^-failure_log2``.

    The sum is ``N1 - N2`` with ``N1, N2 ~ NB(count/m, 1 - e^{-1/b})``; as for
    :func:`laplace_tail_bound`, ``B`` is the negative binomial quantile at
    ``2^-(failure_log2 + 1)``.

    Parameters
    ----------
    b
        the scale of ``m`` shares, > 0.
    m
        shares per discrete Laplace, an integer >= 1.
    count
        how many shares are summed, an integer >= 1.
    failure_log2
        minus log2 of the allowed failure probability, in [1, 1000].

    Returns
    -------
        ``B`` (an int).

    Raises
    ------
    ParameterError
        if an argument is out of range.

    >>> discrete_laplace_tail_bound(1.0, failure_log2=40)
    28
    """
    b = _checks.positive("b", b, scalar=True)
    r = _count(count) / _shares(m)
    tail = 2.0 ** -(_failure_log2(failure_log2) + 1)
    from scipy import stats  # on use: party start-up
    return int(stats.nbinom.isf(tail, r, -math.expm1(-1.0 / b)))
