"""Privacy accounting: zCDP <-> (epsilon, delta) and Gaussian mechanism calibration.

References
----------
[BS16]  Bun & Steinke, "Concentrated Differential Privacy: Simplifications, Extensions,
        and Lower Bounds", TCC 2016 (Propositions 1.3, 1.4, 1.6).
[CKS20] Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy",
        NeurIPS 2020, arXiv:2004.00010 (Proposition 12 / Corollary 13 in v4).
[BW18]  Balle & Wang, "Improving the Gaussian Mechanism for Differential Privacy:
        Analytical Calibration and Optimal Denoising", ICML 2018 (Theorem 8).

Which conversion to use: :func:`zcdp_to_approx_dp` is the simple closed form;
:func:`zcdp_to_approx_dp_tight` is valid for every rho-zCDP mechanism and never larger;
:func:`gaussian_epsilon` is exact for the Gaussian mechanism alone (the Gaussian is
rho-zCDP, so no zCDP-to-DP conversion can ever beat it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import optimize, special

from privsim.mechanisms._checks import positive, probability
from privsim.mechanisms._roots import doubled_root, safe_root

__all__ = [
    "pure_dp_to_zcdp",
    "zcdp_to_approx_dp",
    "zcdp_to_approx_dp_tight",
    "approx_dp_to_zcdp",
    "gaussian_rho",
    "gaussian_sigma_for_zcdp",
    "gaussian_delta",
    "gaussian_epsilon",
    "analytic_gaussian_sigma",
]


def pure_dp_to_zcdp(epsilon: float) -> float:
    """The zCDP parameter implied by epsilon-DP: rho = epsilon^2 / 2 ([BS16] Prop. 1.4).

    Parameters
    ----------
    epsilon:
        Pure DP parameter, > 0.

    Returns
    -------
    float
        rho.

    Examples
    --------
    >>> pure_dp_to_zcdp(1.0)
    0.5
    """
    epsilon = positive("epsilon", epsilon, scalar=True)
    return epsilon * epsilon / 2.0


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """epsilon such that rho-zCDP implies (epsilon, delta)-DP, in closed form.

    Parameters
    ----------
    rho:
        zCDP parameter, > 0.
    delta:
        Target delta in (0, 1).

    Returns
    -------
    float
        rho + 2 sqrt(rho ln(1/delta)) ([BS16] Prop. 1.3).

    Examples
    --------
    >>> round(zcdp_to_approx_dp(0.5, 1e-6), 4)
    5.7565
    """
    rho = positive("rho", rho, scalar=True)
    delta = probability("delta", delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))  # [BS16] Prop. 1.3


def _renyi_epsilon(rdp: Any, alpha: Any, log_delta: float, xp: Any = math) -> Any:
    """[CKS20] Prop. 12: D_alpha <= rdp at order(s) alpha > 1 gives (eps, delta)-DP with
    eps = rdp + ln(1 - 1/alpha) - (ln delta + ln alpha) / (alpha - 1); ``xp=np`` for arrays of orders."""
    return rdp + xp.log1p(-1.0 / alpha) - (log_delta + xp.log(alpha)) / (alpha - 1.0)


def _minimize_log_grid(f: Callable[[float], float], lo: float, hi: float) -> float:
    """Minimum of a unimodal f on [lo, hi] (a log-spaced grid, then Brent's method)."""
    xs = np.linspace(lo, hi, 401)
    values = [f(x) for x in xs]
    i = int(np.argmin(values))
    a, b = xs[max(i - 1, 0)], xs[min(i + 1, len(xs) - 1)]
    res = optimize.minimize_scalar(f, bounds=(a, b), method="bounded",
                                   options={"xatol": 1e-12})
    return float(min(res.fun, values[i]))


def zcdp_to_approx_dp_tight(rho: float, delta: float) -> float:
    """The smallest epsilon the [CKS20] conversion gives for a rho-zCDP mechanism.

    Minimizes, over Renyi orders alpha > 1, the bound of [CKS20] Proposition 12 applied
    to D_alpha <= alpha rho:  alpha rho + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha - 1).
    When delta >= sqrt(1 - exp(-rho)) the answer is 0: by Bretagnolle-Huber the total
    variation distance is at most sqrt(1 - exp(-KL)) and KL <= rho. Always <=
    :func:`zcdp_to_approx_dp`.

    Parameters
    ----------
    rho:
        zCDP parameter, > 0.
    delta:
        Target delta in (0, 1).

    Returns
    -------
    float
        epsilon >= 0.

    Examples
    --------
    >>> round(zcdp_to_approx_dp_tight(0.5, 1e-6), 4), round(zcdp_to_approx_dp(0.5, 1e-6), 4)
    (5.2215, 5.7565)
    """
    rho = positive("rho", rho, scalar=True)
    delta = probability("delta", delta)
    if delta * delta >= -math.expm1(-rho):
        return 0.0
    log_delta = math.log(delta)

    def f(x: float) -> float:  # x = ln(alpha - 1), so alpha ranges over (1, inf)
        alpha = 1.0 + math.exp(x)
        return _renyi_epsilon(alpha * rho, alpha, log_delta)  # rho-zCDP: D_alpha <= alpha rho

    # The optimal alpha is about 1 + sqrt(ln(1/delta) / rho); search generously around it.
    centre = 0.5 * math.log(max(-log_delta, 1e-300) / rho)
    return max(0.0, _minimize_log_grid(f, min(centre - 12.0, -20.0), max(centre + 12.0, 5.0)))


def approx_dp_to_zcdp(epsilon: float, delta: float, *, tight: bool = False) -> float:
    """The largest rho whose zCDP guarantee implies (epsilon, delta)-DP.

    This inverts a zCDP-to-DP conversion (a budget translation: "how much zCDP may I
    spend to promise (epsilon, delta)-DP"); an (epsilon, delta)-DP mechanism is not in
    general zCDP at all.

    Parameters
    ----------
    epsilon:
        Target epsilon, > 0.
    delta:
        Target delta in (0, 1).
    tight:
        Invert :func:`zcdp_to_approx_dp_tight` (numerically) instead of the [BS16] closed
        form.

    Returns
    -------
    float
        rho. With ``tight=False`` it is (sqrt(L + epsilon) - sqrt(L))^2, L = ln(1/delta),
        the solution of rho + 2 sqrt(rho L) = epsilon ([BS16] Prop. 1.3).

    Examples
    --------
    >>> rho = approx_dp_to_zcdp(1.0, 1e-6)
    >>> round(rho, 6), round(zcdp_to_approx_dp(rho, 1e-6), 9)
    (0.017469, 1.0)
    >>> approx_dp_to_zcdp(1.0, 1e-6, tight=True) > rho
    True
    """
    epsilon = positive("epsilon", epsilon, scalar=True)
    delta = probability("delta", delta)
    L = math.log(1.0 / delta)
    rho_simple = (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2
    if not tight:
        return rho_simple
    # tight <= simple, so rho_tight >= rho_simple
    return doubled_root(lambda r: zcdp_to_approx_dp_tight(r, delta) - epsilon, rho_simple, 2.0 * rho_simple,
                        safe="lo", xtol=1e-15, rtol=1e-13)


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """zCDP of the Gaussian mechanism: rho = Delta^2 / (2 sigma^2) ([BS16] Prop. 1.6).

    Parameters
    ----------
    sigma:
        Noise standard deviation, > 0.
    sensitivity:
        l2 sensitivity Delta, > 0.

    Returns
    -------
    float
        rho.

    Examples
    --------
    >>> gaussian_rho(2.0)
    0.125
    """
    sigma = positive("sigma", sigma, scalar=True)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    return sensitivity**2 / (2.0 * sigma**2)


def gaussian_sigma_for_zcdp(rho: float, sensitivity: float = 1.0) -> float:
    """Noise standard deviation that makes the Gaussian mechanism rho-zCDP.

    Parameters
    ----------
    rho:
        zCDP parameter, > 0.
    sensitivity:
        l2 sensitivity Delta, > 0.

    Returns
    -------
    float
        sigma = Delta / sqrt(2 rho) ([BS16] Prop. 1.6, rho = Delta^2 / (2 sigma^2)).

    Examples
    --------
    >>> gaussian_sigma_for_zcdp(0.125)
    2.0
    """
    rho = positive("rho", rho, scalar=True)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    return sensitivity / math.sqrt(2.0 * rho)


def _log_gaussian_delta(mu: float, epsilon: float) -> float:
    """ln delta(epsilon) of the Gaussian mechanism with mu = Delta / sigma ([BW18] Thm 8)."""
    # delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), computed in log space so
    # that large epsilon or tiny delta do not underflow.
    log_a = float(special.log_ndtr(mu / 2.0 - epsilon / mu))
    log_b = epsilon + float(special.log_ndtr(-mu / 2.0 - epsilon / mu))
    if log_b >= log_a:
        return -math.inf
    return log_a + math.log1p(-math.exp(log_b - log_a))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism ([BW18] Theorem 8).

    Parameters
    ----------
    sigma:
        Noise standard deviation, > 0.
    epsilon:
        epsilon >= 0.
    sensitivity:
        l2 sensitivity Delta, > 0.

    Returns
    -------
    float
        Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta).

    Examples
    --------
    >>> f"{gaussian_delta(1.0, 1.0):.6f}"
    '0.126937'
    """
    sigma = positive("sigma", sigma, scalar=True)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    epsilon = 0.0 if epsilon == 0 else positive("epsilon", epsilon, scalar=True)
    return math.exp(_log_gaussian_delta(sensitivity / sigma, epsilon))


def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest epsilon for which the Gaussian mechanism is (epsilon, delta)-DP.

    Solves [BW18] Theorem 8 for epsilon (the mechanism's exact privacy profile).

    Parameters
    ----------
    sigma:
        Noise standard deviation, > 0.
    delta:
        delta in (0, 1).
    sensitivity:
        l2 sensitivity Delta, > 0.

    Returns
    -------
    float
        epsilon >= 0.

    Examples
    --------
    >>> round(gaussian_epsilon(1.0, gaussian_delta(1.0, 1.0)), 9)
    1.0
    >>> round(gaussian_epsilon(1.0, 1e-6), 4)  # below rho-zCDP's 5.2215 for rho = 0.5
    4.8866
    """
    sigma = positive("sigma", sigma, scalar=True)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    delta = probability("delta", delta)
    mu, log_delta = sensitivity / sigma, math.log(delta)
    return doubled_root(lambda e: _log_gaussian_delta(mu, e) - log_delta,  # decreasing; 0 if delta(0) <= delta
                        0.0, 1.0, safe="hi", xtol=1e-14, rtol=1e-14)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest sigma making the Gaussian mechanism (epsilon, delta)-DP ([BW18] Alg. 1).

    Valid for every epsilon > 0, including epsilon > 1 where the classical
    sqrt(2 ln(1.25/delta)) Delta / epsilon calibration does not apply.

    Parameters
    ----------
    epsilon:
        epsilon > 0.
    delta:
        delta in (0, 1).
    sensitivity:
        l2 sensitivity Delta, > 0.

    Returns
    -------
    float
        sigma.

    Examples
    --------
    >>> round(analytic_gaussian_sigma(1.0, gaussian_delta(1.0, 1.0)), 9)
    1.0
    >>> round(analytic_gaussian_sigma(1.0, 1e-5, sensitivity=2.0), 4)  # classical: 9.6896
    7.4613
    """
    epsilon = positive("epsilon", epsilon, scalar=True)
    delta = probability("delta", delta)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    log_delta = math.log(delta)

    def excess(log_sigma: float) -> float:  # decreasing in sigma
        return _log_gaussian_delta(1.0 / math.exp(log_sigma), epsilon) - log_delta

    lo, hi = -1.0, 1.0  # in ln(sigma / Delta)
    while excess(lo) < 0:
        lo, hi = 2.0 * lo - 1.0, lo
    while excess(hi) > 0:
        lo, hi = hi, 2.0 * hi + 1.0
    log_sigma = safe_root(excess, lo, hi, safe="hi", xtol=1e-14, rtol=1e-14)
    return sensitivity * math.exp(log_sigma)
