"""Exact privacy loss of integer noise sums: the hockey-stick divergence of the honest total's pmf.

The honest parties' noise total of a secure sum with integer noise has a computable law:
the convolution of k discrete Gaussians N_Z(0, s2) (not itself a discrete Gaussian), or
the Skellam Sk(mu). The released value is x + Z; two neighbours differ by at most D, so
the exact delta at epsilon is the hockey-stick divergence

    delta(epsilon) = max_{|d| <= D} sum_z max(0, P(z) - e^epsilon P(z - d)).

Both laws are symmetric and log-concave (N_Z and the Poisson are log-concave sequences,
and convolution keeps log-concavity), so the shifts z -> z + d have a monotone
likelihood ratio: the best test of P against P(. - d) is a threshold on z for every d,
and P(. - D) dominates P(. - d) stochastically, so the trade-off curve only falls as d
grows; by symmetry both directions are the same. The worst shift is therefore d = D in
one direction (:attr:`IntegerLaw.monotone`); a law without that flag is checked at every
|d| <= D, both ways.

Laws are computed on a finite window with two bounds carried beside the pmf, both added
to delta (:func:`exact_delta`):

- ``tail``: the mass left outside (bounded analytically, not by 1 - sum). With P = P_w + R
  (P_w the window's sub-probability, R >= 0 of mass tau),
  sum max(0, P - e^eps P') <= sum max(0, P_w - e^eps P'_w) + tau.
- ``error``: a bound r on each entry's floating-point error (a number for all, or one per
  entry): with A the exact windowed law and P^ the computed one, |P^ - A| <= r; and
  ``envelope``, if given, an upper bound on A itself. Where the true term
  A(z) - e^eps A(z - d) is positive it is at most A(z) <= P^(z) + r'(z),
  r' = min(r, envelope), and at most the computed term plus r'(z) + e^eps min(r(z - d),
  P^(z - d)) (A >= 0, so P^ - A <= P^); :func:`exact_delta` sums the smaller of the two
  over the grid, so that far tails are not charged e^eps r each.
- ``alias``: mass that may sit at a wrong point of the grid (the wrap-around of a
  circular convolution), counted e^eps times (it can only add to P(z - d)).

The sum of k discrete Gaussians is computed in one step, as the k-th power of the
share's characteristic function on a circle of N points (:func:`ddg_sum_law`, with the
error bounds derived there), so that the round-off does not compound over k.

The published bounds ([KLS21] Prop. 14 for discrete-Gaussian sums, [AKL21] Thm. 3.5 for
Skellam) are upper bounds on this exact value. :func:`exact_epsilon` inverts it, and
:func:`ddg_sigma2_for` / :func:`skellam_mu_for` calibrate the noise to it, with
:func:`~privsim.mechanisms._roots.safe_root`, so that neither the claimed epsilon nor the
calibrated noise is on the wrong side of the truth by rounding. See
docs/architecture.md ("claims are promises").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from privsim.mechanisms import _checks
from privsim.mechanisms._roots import safe_root, smallest_epsilon

__all__ = ["IntegerLaw", "ddg_sigma2_for", "ddg_sum_law", "exact_delta", "exact_epsilon", "skellam_law",
           "skellam_mu_for"]

#: Each window leaves out at most this mass (added to delta).
TRUNCATION = 1e-14
#: The constant of the FFT round-off bound: 21 u log2(N) |y|_2 for a transform of size N
#: (Higham, "Accuracy and Stability of Numerical Algorithms", Thm. 24.2), rounded up.
_FFT_CONSTANT = 32.0
#: The mass a circular convolution may wrap around (counted e^eps times, up to e^50).
_ALIAS = 1e-40
#: The relative evaluation error allowed per entry of scipy's Skellam pmf.
_SKELLAM_RELATIVE = 1e-13


@dataclass(frozen=True)
class IntegerLaw:
    """A sub-probability pmf on lo, lo + 1, ..., a bound ``tail`` on the mass left outside, a
    bound ``error`` on every entry's floating-point error, and ``monotone``: symmetric and
    log-concave (the worst shift is the largest; see the module docstring).

    >>> law = skellam_law(10.0)
    >>> law.tail <= 1e-14, round(float(law.pmf.sum()), 12), law.monotone
    (True, 1.0, True)
    """

    lo: int
    pmf: np.ndarray
    tail: float
    error: float | np.ndarray = 0.0
    monotone: bool = False
    alias: float = 0.0
    envelope: np.ndarray | None = None


def _dg_window(s2: float, tail: float) -> tuple[int, np.ndarray, float]:
    """K, N_Z(0, s2) on [-K, K] and a bound on Pr[|X| > K] (normaliser >= its j = 0 term, 1)."""
    K = int(math.ceil(math.sqrt(2.0 * s2 * math.log(4.0 / tail)))) + 1
    k = np.arange(-K, K + 1, dtype=float)
    w = np.exp(-k * k / (2.0 * s2))
    pmf = w / w.sum()  # the window's normaliser is <= the full one: each entry >= the true pmf
    # sum_{j > K} e^{-j^2/2s2} <= e^{-K^2/2s2} / (1 - e^{-K/s2}); twice, over Z >= 1
    out = 2.0 * math.exp(-K * K / (2.0 * s2)) / -math.expm1(-K / s2)
    return K, pmf * (1.0 - out), out  # (1 - out) pmf_window <= the true pmf on the window


@lru_cache(maxsize=512)
def ddg_sum_law(s2: float, k: int, tail: float = TRUNCATION) -> IntegerLaw:
    """The law of the sum of k independent N_Z(0, s2): the k-th power of one share's transform.

    One share, windowed to [-K, K] (its pmf there under-estimated, the rest of mass <=
    ``tail``/k), is placed on a circle of N points, N a power of two with
    Pr[|S| >= N/2] <= 1e-40 for the sum S (N_Z(0, s2) is s2-subgaussian, [CKS20]
    Corollary 9, so Pr[|S| >= T] <= 2 exp(-T^2 / (2 k s2))): the circular k-fold
    convolution then differs from the linear one only by that wrapped mass (``alias``).
    Its transform is real (the share is symmetric): phi(w) = p_0 + 2 sum_j p_j
    cos(2 pi (w j mod N) / N), each evaluated directly with error <= delta_w = (2K + 40) u.
    Then |phi^^k - phi^k| <= k delta (|phi^| + delta)^(k-1) + 2 u |phi^|^k (mean value, and
    pow's rounding), summed over w and divided by N (the inverse transform's weights), plus
    the inverse transform's own round-off: a bound r on every entry. The factor k is
    tamed by |phi|^(k-1), tiny away from w = 0. In the tails the true entry itself is
    small (``envelope``): S is symmetric and unimodal (log-concave), so for 0 <= m <= |z|,
    P(z) <= Pr[S >= |z| - m] / (m + 1) <= exp(-(|z| - m)^2 / (2 k s2)) / (m + 1), taken at
    m = floor(k s2 / |z|) (about the minimiser) and at m = 0.

    Parameters
    ----------
    s2:
        The discrete Gaussian's parameter sigma^2 > 0 (its pmf is proportional to e^{-z^2/2 s2}).
    k:
        The number of shares >= 1.
    tail:
        The total mass that may be left outside the windows of the shares.

    Returns
    -------
    IntegerLaw
        ``monotone`` (symmetric, log-concave).

    Examples
    --------
    >>> law = ddg_sum_law(0.5, 3)  # variance 3 Var N_Z(0, 1/2)
    >>> round(float((law.pmf * (np.arange(law.pmf.size) + law.lo) ** 2).sum()), 6), bool(law.error < 1e-13)
    (1.496937, True)
    """
    s2 = _checks.positive("s2", s2, scalar=True)
    k = _checks.integer("k", k, 1)
    K, one, out = _dg_window(s2, tail / k)
    reach = math.sqrt(2.0 * k * s2 * math.log(2.0 / _ALIAS))
    N = 1 << int(math.ceil(math.log2(max(2.0 * reach + 2.0, 2.0 * K + 2.0))))
    u = np.finfo(float).eps / 2
    w = np.arange(N // 2 + 1)
    j = np.arange(1, K + 1)
    cosines = np.cos((2.0 * math.pi / N) * ((w[:, None] * j[None, :]) % N))
    phi = one[K] + 2.0 * cosines @ one[K + 1:]
    delta = (2 * K + 40) * u
    power = np.power(phi, k)
    err_hat = k * delta * np.power(np.abs(phi) + delta, k - 1) + 2.0 * u * np.abs(power)
    circle = np.fft.irfft(power, N)
    pmf = np.clip(np.concatenate([circle[N // 2:], circle[:N // 2]]), 0.0, None)  # values -N/2 .. N/2 - 1
    weights = np.full(w.size, 2.0)
    weights[0] = weights[-1] = 1.0  # the zero and the Nyquist terms appear once
    r = float(weights @ err_hat) / N + _FFT_CONSTANT * u * math.log2(N) * float(np.sqrt(pmf @ pmf))
    z = np.abs(np.arange(-(N // 2), N // 2, dtype=float))
    v = k * s2
    m = np.minimum(np.floor(v / np.maximum(z, 1.0)), z)
    envelope = np.minimum(np.exp(-z * z / (2.0 * v)), np.exp(-(z - m) ** 2 / (2.0 * v)) / (m + 1.0))
    return IntegerLaw(-(N // 2), pmf, min(1.0, k * out), r, True, _ALIAS, envelope)


@lru_cache(maxsize=512)
def skellam_law(mu: float, tail: float = TRUNCATION) -> IntegerLaw:
    """Sk(mu) = Pois(mu/2) - Pois(mu/2) on a window of mass >= 1 - tail (scipy's pmf and sf).

    >>> skellam_law(4.0).lo < 0
    True
    """
    mu = _checks.positive("mu", mu, scalar=True)
    K = 10
    while (out := float(2.0 * stats.skellam.sf(K, mu / 2, mu / 2))) > tail:  # the mass outside [-K, K]
        K *= 2
    pmf = stats.skellam.pmf(np.arange(-K, K + 1), mu / 2, mu / 2)
    return IntegerLaw(-K, pmf, out, _SKELLAM_RELATIVE * pmf, True)


def exact_delta(law: IntegerLaw, sensitivity: int, epsilon: float) -> float:
    """max over shifts |d| <= D of sum_z max(0, P(z) - e^eps P(z - d)), with tail, round-off and alias.

    Parameters
    ----------
    law:
        The noise law (a ``monotone`` one is checked at d = D only; see the module docstring).
    sensitivity:
        The integer sensitivity D >= 1.
    epsilon:
        epsilon >= 0.

    Returns
    -------
    float
        delta in [0, 1].

    Examples
    --------
    >>> law = IntegerLaw(0, np.array([0.5, 0.5]), 0.0)  # a fair bit: shifting by 1
    >>> exact_delta(law, 1, 0.0)
    0.5
    """
    D = _checks.integer("sensitivity", sensitivity, 1)
    e = math.exp(epsilon)
    p = law.pmf
    r = np.broadcast_to(np.asarray(law.error, dtype=float), p.shape)
    below = r if law.envelope is None else np.minimum(r, law.envelope)  # bounds A - P^ (A <= envelope)
    worst = 0.0
    for d in (D,) if law.monotone else range(1, D + 1):
        pad = np.zeros(d)
        a, b = np.concatenate([p, pad]), np.concatenate([pad, p])  # P(z) and P(z - d) on one grid
        ra, rb = np.concatenate([below, pad]), np.concatenate([pad, below])  # A(z) - P^(z), z and z - d
        sa, sb = np.concatenate([r, pad]), np.concatenate([pad, r])  # P^ - A, both
        cases = ((a, b, ra, sb),) if law.monotone else ((a, b, ra, sb), (b, a, rb, sa))
        for x, y, rx, sy in cases:
            terms = np.minimum(x + rx, x - e * y + rx + e * np.minimum(sy, y))
            worst = max(worst, float(np.clip(terms, 0.0, None).sum()))
    return min(1.0, worst + law.tail + e * law.alias)


def exact_epsilon(law: IntegerLaw, sensitivity: int, delta: float, cap: float = 50.0) -> float:
    """The smallest epsilon (safe side of the root) with :func:`exact_delta` <= delta; ``inf`` if none <= cap.

    Examples
    --------
    >>> eps = exact_epsilon(skellam_law(400.0), 1, 1e-6)  # [AKL21]'s bound: 0.206
    >>> exact_delta(skellam_law(400.0), 1, eps) <= 1e-6, round(eps, 3)
    (True, 0.188)
    """
    delta = _checks.probability("delta", delta)
    return smallest_epsilon(lambda e: exact_delta(law, sensitivity, e), delta, cap, beyond=math.inf, tol=1e-9)


def _smallest_scale(law_of: Callable[[float], IntegerLaw], sensitivity: int, epsilon: float, delta: float,
                    start: float) -> float | None:
    """The smallest v (safe side) with exact_delta(law_of(v), D, epsilon) <= delta, searched from ``start``.

    delta falls as the noise grows; the root is found on log v. ``None`` when no v up to
    2^20 start meets it (the round-off and tail bounds alone exceed a tiny delta).
    """
    excess = lambda log_v: exact_delta(law_of(math.exp(log_v)), sensitivity, epsilon) - delta  # noqa: E731
    hi = math.log(start)
    for _ in range(20):
        if excess(hi) <= 0:
            break
        hi += math.log(2.0)
    else:
        return None
    lo = hi - math.log(2.0)
    while excess(lo) <= 0 and lo > hi - 60:
        lo -= math.log(2.0)
    return math.exp(safe_root(excess, lo, hi, safe="hi", xtol=1e-7, rtol=1e-7))


@lru_cache(maxsize=256)
def ddg_sigma2_for(epsilon: float, delta: float, shares: int, sensitivity: int, start: float) -> float | None:
    """The smallest per-share s2 with which ``shares`` N_Z(0, s2) meet (epsilon, delta) exactly.

    Parameters
    ----------
    epsilon, delta:
        The target (epsilon > 0, delta in (0, 1)).
    shares:
        The number m >= 1 of honest shares the calibration must protect with.
    sensitivity:
        The integer sensitivity D >= 1.
    start:
        A first guess (e.g. the published bound's s2, which meets the target).

    Returns
    -------
    float or None
        s2 on the safe side of the root, or ``None`` if none up to 2^20 ``start`` does.

    Examples
    --------
    >>> s2 = ddg_sigma2_for(1.0, 1e-6, 10, 1, 1.0)
    >>> exact_delta(ddg_sum_law(s2, 10), 1, 1.0) <= 1e-6 < exact_delta(ddg_sum_law(0.99 * s2, 10), 1, 1.0)
    True
    """
    return _smallest_scale(lambda s2: ddg_sum_law(s2, shares), sensitivity, epsilon, delta, start)


@lru_cache(maxsize=256)
def skellam_mu_for(epsilon: float, delta: float, sensitivity: int, start: float) -> float | None:
    """The smallest variance mu with which Sk(mu) meets (epsilon, delta) exactly (see :func:`ddg_sigma2_for`).

    >>> mu = skellam_mu_for(1.0, 1e-6, 1, 20.0)
    >>> exact_delta(skellam_law(mu), 1, 1.0) <= 1e-6 < exact_delta(skellam_law(0.99 * mu), 1, 1.0), round(mu, 2)
    (True, 14.24)
    """
    return _smallest_scale(skellam_law, sensitivity, epsilon, delta, start)
