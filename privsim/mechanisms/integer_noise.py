"""Integer noise for sums in Z_q: the (distributed) discrete Gaussian and the Skellam distribution.

Both live on the integers, so a party adds its share to its integer input and the sum
travels mod q with no rounding (no fixed point, no floating-point output to attack as in
Mironov 2012).

The discrete Gaussian N_Z(0, sigma^2), Pr[k] proportional to exp(-k^2 / (2 sigma^2)),
is sampled by Algorithm 3 of Canonne, Kamath and Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020) [CKS20]: a discrete Laplace proposal with scale
t = floor(sigma) + 1, accepted with probability exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)).
One party adding N_Z(0, sigma^2) with integer sensitivity D is D^2/(2 sigma^2)-zCDP
([CKS20] Theorem 4). A sum of discrete Gaussians is not a discrete Gaussian; Kairouz,
Liu and Steinke, "The Distributed Discrete Gaussian Mechanism for Federated Learning
with Secure Aggregation" (ICML 2021) [KLS21], Proposition 14 (the Renyi-divergence
bound behind their Theorem 1) bound how far the sum of k shares N_Z(0, sigma^2) is from
the Gaussian: for every alpha >= 1 (dimension 1, l1 = l2 sensitivity D, sigma >= 1/2)

    D_alpha <= min(alpha l^2/2 + tau, alpha (l + tau)^2 / 2),   l = D / (sqrt(k) sigma),
    tau = 10 sum_{j=1}^{k-1} exp(-2 pi^2 sigma^2 j / (j + 1)),

so the sum is rho-zCDP with rho = min(l^2/2 + tau, (l + tau)^2/2) (use alpha >= 1 on
the constant tau): :func:`ddg_rho`.

The Skellam distribution Sk(mu) = Pois(mu/2) - Pois(mu/2) has variance mu and is closed
under summation: k shares Sk(mu/k) sum to exactly Sk(mu) (Agarwal, Kairouz and Liu,
"The Skellam Mechanism for Differentially Private Federated Learning", NeurIPS 2021
[AKL21]). Their Theorem 3.5 (dimension 1) bounds its Renyi divergence at integer orders
alpha > 1:

    eps(alpha) <= alpha D^2 / (2 mu) + min(((2 alpha - 1) D^2 + 6 D) / (4 mu^2), 3 D / (2 mu)),

:func:`skellam_rdp`, converted to (epsilon, delta) order by order by [CKS20]
Proposition 12 (:func:`skellam_epsilon`).

Random generators: as in :mod:`privsim.mechanisms.noise`, each sampler takes ``rng``
(a numpy Generator or a party's trial rng, whose draws carry a leading trial axis) and
the per-trial ``size``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from privsim.errors import ParameterError
from privsim.mechanisms import _checks
from privsim.mechanisms._roots import doubled_root
from privsim.mechanisms.accounting import _renyi_epsilon

__all__ = [
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "discrete_gaussian_acceptance",
    "discrete_gaussian_sample",
    "discrete_gaussian_tail_bound",
    "ddg_tau",
    "ddg_rho",
    "ddg_sigma_for_rho",
    "skellam_share",
    "skellam_tail_bound",
    "skellam_rdp",
    "skellam_epsilon",
    "skellam_variance_for",
    "RDP_ORDERS",
]

#: Integer Renyi orders at which :func:`skellam_epsilon` evaluates [AKL21]'s bound.
RDP_ORDERS: tuple[int, ...] = (*range(2, 129), *range(136, 1025, 8), *range(1088, 8193, 64))

#: :func:`discrete_gaussian_sample` draws enough candidates per output that all of them
#: fail with probability at most 2^-_MISS_LOG2; such an output continues on its own stream.
_MISS_LOG2 = 17


def _support(sigma2: float) -> NDArray[np.int64]:
    """The integers where N_Z(0, sigma2) has mass above about e^-200 (|k| <= 20 sigma + 20)."""
    half = int(math.ceil(20.0 * math.sqrt(sigma2))) + 20
    return np.arange(-half, half + 1, dtype=np.int64)


def discrete_gaussian_pmf(k: ArrayLike, sigma2: float) -> Any:
    """Pr[K = k] = exp(-k^2/(2 sigma2)) / sum_j exp(-j^2/(2 sigma2)), K ~ N_Z(0, sigma2).

    Parameters
    ----------
    k:
        Integer(s) at which to evaluate.
    sigma2:
        The parameter sigma^2 > 0 (the variance of the continuous Gaussian it discretises).

    Returns
    -------
    float or ndarray
        The probabilities; the normaliser is summed over |j| <= 20 sigma + 20, which misses
        less than e^-200 of it.

    Raises
    ------
    ParameterError
        If ``sigma2`` is not finite and > 0.

    Examples
    --------
    >>> round(float(discrete_gaussian_pmf(0, 1.0)), 6)
    0.398942
    >>> round(float(discrete_gaussian_pmf(np.arange(-40, 41), 4.0).sum()), 12)
    1.0
    """
    sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
    norm = float(np.exp(-(_support(sigma2).astype(float) ** 2) / (2.0 * sigma2)).sum())
    return np.exp(-np.asarray(k, dtype=np.float64) ** 2 / (2.0 * sigma2)) / norm


def discrete_gaussian_variance(sigma2: float) -> float:
    """The variance of N_Z(0, sigma2): below sigma2, and equal to it up to e^-(2 pi^2 sigma2) ([CKS20] Cor. 18).

    Parameters
    ----------
    sigma2:
        The parameter sigma^2 > 0.

    Returns
    -------
    float
        sum_k k^2 Pr[K = k].

    Raises
    ------
    ParameterError
        If ``sigma2`` is not finite and > 0.

    Examples
    --------
    >>> round(discrete_gaussian_variance(0.25), 4), round(discrete_gaussian_variance(4.0), 9)
    (0.215, 4.0)
    """
    k = _support(_checks.positive("sigma2", sigma2, scalar=True))
    return float((discrete_gaussian_pmf(k, sigma2) * k.astype(float) ** 2).sum())


def _proposal_scale(sigma2: float) -> int:
    return int(math.floor(math.sqrt(sigma2))) + 1  # [CKS20] Algorithm 3: t = floor(sigma) + 1


def discrete_gaussian_acceptance(sigma2: float) -> float:
    """The probability that one candidate of [CKS20] Algorithm 3 is accepted.

    The proposal is the discrete Laplace with scale t = floor(sigma) + 1; the candidate y is
    kept with probability exp(-(|y| - sigma2/t)^2/(2 sigma2)).

    Parameters
    ----------
    sigma2:
        The parameter sigma^2 > 0.

    Returns
    -------
    float
        sum_y DLap_t(y) exp(-(|y| - sigma2/t)^2 / (2 sigma2)), in (0, 1].

    Raises
    ------
    ParameterError
        If ``sigma2`` is not finite and > 0.

    Examples
    --------
    >>> 0.4 < discrete_gaussian_acceptance(1.0) < 1.0
    True
    """
    sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
    sigma2 = min(sigma2, 1e8)  # the acceptance converges as sigma grows; this bounds the sum's length
    t = _proposal_scale(sigma2)
    half = int(math.ceil(40.0 * t + 20.0 * math.sqrt(sigma2)))
    y = np.abs(np.arange(-half, half + 1, dtype=np.float64))
    a = math.exp(-1.0 / t)
    proposal = (1.0 - a) / (1.0 + a) * a**y
    return float((proposal * np.exp(-((y - sigma2 / t) ** 2) / (2.0 * sigma2))).sum())


def _candidates(rng: np.random.Generator, sigma2: float, t: int,
                shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Candidates of [CKS20] Algorithm 3 (shape ``shape``, trial axis first with a trial rng) and which are accepted.

    X = geometric - 1 (failures before a success of probability 1 - e^{-1/t}) with a random
    sign, -0 rejected, is the discrete Laplace of scale t; one uniform u gives both the
    sign (u < 1/2) and the acceptance uniform 2u mod 1.
    """
    x = np.asarray(rng.geometric(-math.expm1(-1.0 / t), size=shape), dtype=np.int64) - 1
    u = rng.random(size=shape)
    negative = u < 0.5
    accept = (2.0 * u - (~negative)) < np.exp(-((x - sigma2 / t) ** 2) / (2.0 * sigma2))
    accept &= ~(negative & (x == 0))
    return np.where(negative, -x, x), accept


def _candidates_per_output(sigma2: float) -> int:
    """K with Pr[all K candidates rejected] <= 2^-_MISS_LOG2 (the acceptance times Pr[not -0])."""
    t = _proposal_scale(sigma2)
    rate = discrete_gaussian_acceptance(sigma2) * (1.0 + math.exp(-1.0 / t)) / 2.0
    return max(1, int(math.ceil(_MISS_LOG2 * math.log(2.0) / -math.log1p(-min(rate, 1.0 - 1e-16)))))


def discrete_gaussian_sample(rng: np.random.Generator, sigma2: float, size: Any = ()) -> NDArray[np.int64]:
    """Draw N_Z(0, sigma2) by [CKS20] Algorithm 3, vectorised with a fixed number of draws.

    Every output gets K candidates at once (two draws of shape ``(*size, K)``) and one
    63-bit seed word (a third draw); the output is its first accepted candidate. K makes
    all K rejected with probability at most 2^-17 per output; only then is the output's
    sampling continued, one candidate at a time until acceptance, from a generator seeded
    by its seed word. So the law is exactly the discrete Gaussian's, and the party's
    stream always advances by the same amount (results do not depend on how trials are
    split into batches).

    The proposal is the discrete Laplace of scale t = floor(sigma) + 1, and the acceptance
    test compares a float64 uniform with exp(-(|y| - sigma2/t)^2/(2 sigma2)): each
    acceptance probability carries the float64 rounding of exp (relative 2^-52), so the
    pmf is that of N_Z(0, sigma2) to that relative precision. The output is an integer:
    there are no low-order bits to read, unlike rounded floating-point noise.

    Parameters
    ----------
    rng:
        A numpy ``Generator`` or a party's trial rng.
    sigma2:
        The parameter sigma^2 > 0.
    size:
        The shape of one trial's draw.

    Returns
    -------
    ndarray of int64
        Shape ``size`` (``(R, *size)`` with a trial rng).

    Raises
    ------
    ParameterError
        If ``sigma2`` is not finite and > 0 or ``size`` is not a shape.

    Examples
    --------
    >>> x = discrete_gaussian_sample(np.random.default_rng(1), 9.0, size=20000)
    >>> x.dtype, bool(abs(x.var() - 9.0) < 0.5)
    (dtype('int64'), True)
    """
    sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
    size = _checks.shape("size", size)
    t = _proposal_scale(sigma2)
    y, accept = _candidates(rng, sigma2, t, (*size, _candidates_per_output(sigma2)))
    seeds = np.asarray(rng.integers(0, 2**63 - 1, size=size, dtype=np.int64))
    out = np.take_along_axis(y, np.argmax(accept, axis=-1)[..., None], axis=-1)[..., 0]  # the first accepted
    # none accepted: probability <= 2^-17 per output (argwhere, unlike nonzero, also takes size=())
    for index in map(tuple, np.argwhere(~accept.any(axis=-1))):
        local = np.random.default_rng(int(seeds[index]))
        while True:
            yy, ok = _candidates(local, sigma2, t, (1,))
            if ok[0]:
                out[index] = yy[0]
                break
    return out


def discrete_gaussian_tail_bound(sigma2: float, count: int = 1, failure_log2: int = 40) -> int:
    """An integer B with Pr[|sum of count N_Z(0, sigma2)| > B] <= 2^-failure_log2.

    N_Z(0, sigma2) is sigma-subgaussian ([CKS20] Corollary 9), so a sum of ``count``
    independent ones is subgaussian with variance proxy count sigma2, and
    Pr[|S| > B] <= 2 exp(-B^2 / (2 count sigma2)).

    Parameters
    ----------
    sigma2:
        The parameter of each summand, > 0.
    count:
        How many independent summands, an integer >= 1.
    failure_log2:
        Minus log2 of the allowed failure probability, in [1, 1000].

    Returns
    -------
    int
        ceil(sqrt(2 count sigma2 ln(2^(failure_log2 + 1)))).

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> discrete_gaussian_tail_bound(1.0, 1, 40)
    8
    """
    sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
    count = _checks.integer("count", count, 1)
    f = _checks.integer("failure_log2", failure_log2, 1, 1000)
    return int(math.ceil(math.sqrt(2.0 * count * sigma2 * (f + 1) * math.log(2.0))))


def ddg_tau(sigma2: float, clients: int) -> float:
    """tau = 10 sum_{j=1}^{k-1} exp(-2 pi^2 sigma2 j/(j+1)) of [KLS21] Proposition 14 (k = ``clients``).

    Parameters
    ----------
    sigma2:
        Each client's parameter sigma^2 > 0.
    clients:
        The number k >= 1 of independent discrete Gaussians summed.

    Returns
    -------
    float
        tau (0 for one client).

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> ddg_tau(1.0, 1), f"{ddg_tau(1.0, 2):.3e}"
    (0.0, '5.172e-04')
    """
    sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
    k = _checks.integer("clients", clients, 1)
    j = np.arange(1, k, dtype=np.float64)
    return float(10.0 * np.exp(-2.0 * math.pi**2 * sigma2 * j / (j + 1.0)).sum())


def ddg_rho(sigma2: float, clients: int, sensitivity: float = 1.0) -> float:
    """zCDP of the sum of k independent N_Z(0, sigma2) shares ([KLS21] Proposition 14, d = 1).

    rho = min(l^2/2 + tau, (l + tau)^2/2) with l = D/(sqrt(k) sigma) and tau from
    :func:`ddg_tau`: Proposition 14 bounds D_alpha by alpha l^2/2 + tau and by
    alpha (l + tau)^2/2 (its second and third terms coincide when l1 = l2 = D), and
    tau <= alpha tau for alpha >= 1. For one client it is [CKS20] Theorem 4's D^2/(2 sigma2).

    Parameters
    ----------
    sigma2:
        Each client's parameter sigma^2 >= 1/4 (the proposition needs sigma >= 1/2).
    clients:
        The number k >= 1 of shares in the sum (the honest clients a coalition faces).
    sensitivity:
        The integer sensitivity D > 0 of the sum.

    Returns
    -------
    float
        rho.

    Raises
    ------
    ParameterError
        If ``sigma2 < 1/4`` or an argument is out of range.

    Examples
    --------
    >>> ddg_rho(4.0, 1), round(ddg_rho(1.0, 100, 1.0) / (1 / (2 * 100)), 3)
    (0.125, 1.011)
    """
    sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
    if sigma2 < 0.25:
        raise ParameterError(f"sigma2 of each discrete Gaussian share must be >= 1/4 ([KLS21] Prop. 14 needs "
                             f"sigma >= 1/2; got {sigma2:.4g})")
    k = _checks.integer("clients", clients, 1)
    d = _checks.positive("sensitivity", sensitivity, scalar=True)
    tau = ddg_tau(sigma2, k)
    ell = d / math.sqrt(k * sigma2)
    return min(ell * ell / 2.0 + tau, (ell + tau) ** 2 / 2.0)


def ddg_sigma_for_rho(rho: float, clients: int, sensitivity: float = 1.0) -> float:
    """The smallest per-share sigma2 >= 1/4 whose [KLS21] bound for ``clients`` shares is <= rho.

    Parameters
    ----------
    rho:
        Target zCDP parameter, > 0.
    clients:
        The number k >= 1 of shares a coalition of the largest allowed size still faces.
    sensitivity:
        The integer sensitivity D > 0.

    Returns
    -------
    float
        sigma2 (1/4 when even sigma = 1/2 meets rho).

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> s2 = ddg_sigma_for_rho(0.01, 50)
    >>> round(ddg_rho(s2, 50), 9), s2 > 1 / (2 * 0.01 * 50)
    (0.01, True)
    """
    rho = _checks.positive("rho", rho, scalar=True)
    if ddg_rho(0.25, clients, sensitivity) <= rho:
        return 0.25
    hi = max(1.0, sensitivity**2 / (2.0 * rho * clients))
    return doubled_root(lambda s: ddg_rho(s, clients, sensitivity) - rho,  # rho decreases in sigma2
                        0.25, hi, safe="hi", keep_lo=True, xtol=1e-14, rtol=1e-13)


def skellam_share(rng: np.random.Generator, variance: float, size: Any = ()) -> NDArray[np.int64]:
    """One Skellam share Sk(variance) = Pois(variance/2) - Pois(variance/2), integer, variance ``variance``.

    Shares add up exactly: k shares Sk(mu/k) sum to Sk(mu) ([AKL21] Section 3).

    Parameters
    ----------
    rng:
        A numpy ``Generator`` or a party's trial rng.
    variance:
        The share's variance mu > 0.
    size:
        The shape of one trial's share.

    Returns
    -------
    ndarray of int64
        Shape ``size`` (``(R, *size)`` with a trial rng).

    Raises
    ------
    ParameterError
        If ``variance`` is not finite and > 0 or ``size`` is not a shape.

    Examples
    --------
    >>> skellam_share(np.random.default_rng(2), 3.0, size=4).dtype
    dtype('int64')
    """
    variance = _checks.positive("variance", variance, scalar=True)
    size = _checks.shape("size", size)
    first = np.asarray(rng.poisson(variance / 2.0, size=size), dtype=np.int64)
    second = np.asarray(rng.poisson(variance / 2.0, size=size), dtype=np.int64)
    return first - second


def skellam_tail_bound(variance: float, failure_log2: int = 40) -> int:
    """An integer B with Pr[|Sk(variance)| > B] <= 2^-failure_log2.

    Two bounds, the smaller wins. |Sk| > B needs P1 > B or P2 > B (Sk = P1 - P2, both
    Pois(mu/2)): the Poisson quantile at 2^-(f+1), tight for small mu. And Chernoff:
    E e^{lambda Sk} = exp(mu (cosh lambda - 1)), so
    Pr[Sk >= B] <= exp(-I(B)) with I(B) = B asinh(B/mu) - mu (sqrt(1 + (B/mu)^2) - 1) (the
    optimal lambda = asinh(B/mu)), and B is the smallest integer with 2 exp(-I(B)) <= 2^-f.

    Parameters
    ----------
    variance:
        The variance mu > 0 of the Skellam variable (e.g. a sum of shares).
    failure_log2:
        Minus log2 of the allowed failure probability, in [1, 1000].

    Returns
    -------
    int
        B.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> skellam_tail_bound(2.0, 40), skellam_tail_bound(300.0, 20)
    (14, 94)
    """
    mu = _checks.positive("variance", variance, scalar=True)
    f = _checks.integer("failure_log2", failure_log2, 1, 1000)
    target = (f + 1) * math.log(2.0)

    def rate(b: float) -> float:  # I(B) - target, increasing in B
        r = b / mu
        return b * math.asinh(r) - mu * (math.sqrt(1.0 + r * r) - 1.0) - target

    chernoff = int(math.ceil(doubled_root(lambda b: -rate(b), 0.0, 1.0, safe="hi", keep_lo=True, xtol=1e-9)))
    return min(chernoff, int(stats.poisson.isf(2.0 ** -(f + 1), mu / 2.0)))


def skellam_rdp(alpha: int, variance: float, sensitivity: float = 1.0) -> float:
    """[AKL21] Theorem 3.5 (d = 1): the Renyi divergence of order ``alpha`` of the Skellam mechanism.

    eps(alpha) = alpha D^2/(2 mu) + min(((2 alpha - 1) D^2 + 6 D)/(4 mu^2), 3 D/(2 mu)),
    for an integer order alpha > 1, variance mu and integer sensitivity D (l1 = l2 = D).

    Parameters
    ----------
    alpha:
        The integer order, >= 2.
    variance:
        The variance mu > 0 of the Skellam noise on the sum.
    sensitivity:
        The integer sensitivity D > 0.

    Returns
    -------
    float
        The bound on D_alpha.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> skellam_rdp(2, 10.0)  # 2/20 + min((3 + 6)/400, 3/20)
    0.1225
    """
    a = _checks.integer("alpha", alpha, 2)
    mu = _checks.positive("variance", variance, scalar=True)
    d = _checks.positive("sensitivity", sensitivity, scalar=True)
    return float(_skellam_rdp_bound(a, mu, d))


def _skellam_rdp_bound(a: Any, mu: float, d: float) -> Any:
    """[AKL21] Theorem 3.5's bound at the order(s) ``a`` (a number or an array), unchecked."""
    return a * d * d / (2.0 * mu) + np.minimum(((2 * a - 1) * d * d + 6.0 * d) / (4.0 * mu * mu), 3.0 * d / (2.0 * mu))


def skellam_epsilon(variance: float, delta: float, sensitivity: float = 1.0) -> float:
    """epsilon at ``delta`` of the Skellam mechanism from [AKL21]'s Renyi bound.

    min over the integer orders :data:`RDP_ORDERS` of
    eps(alpha) + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha - 1) ([CKS20] Prop. 12,
    which holds order by order for any Renyi bound).

    Parameters
    ----------
    variance:
        The variance mu > 0 of the Skellam noise on the sum.
    delta:
        Target delta in (0, 1).
    sensitivity:
        The integer sensitivity D > 0.

    Returns
    -------
    float
        epsilon >= 0.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> round(skellam_epsilon(1000.0, 1e-6), 3)
    0.127
    """
    mu = _checks.positive("variance", variance, scalar=True)
    delta = _checks.probability("delta", delta)
    d = _checks.positive("sensitivity", sensitivity, scalar=True)
    a = np.asarray(RDP_ORDERS, dtype=np.float64)
    eps = _renyi_epsilon(_skellam_rdp_bound(a, mu, d), a, math.log(delta), np)
    return max(0.0, float(eps.min()))


def skellam_variance_for(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest Skellam variance mu whose :func:`skellam_epsilon` at ``delta`` is <= ``epsilon``.

    Parameters
    ----------
    epsilon:
        Target epsilon > 0.
    delta:
        Target delta in (0, 1).
    sensitivity:
        The integer sensitivity D > 0.

    Returns
    -------
    float
        mu.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> mu = skellam_variance_for(1.0, 1e-6)
    >>> round(skellam_epsilon(mu, 1e-6), 6)
    1.0
    """
    epsilon = _checks.positive("epsilon", epsilon, scalar=True)
    return doubled_root(lambda v: skellam_epsilon(v, delta, sensitivity) - epsilon,  # epsilon decreases in mu
                        1e-3, 1.0, safe="hi", xtol=1e-12, rtol=1e-12)
