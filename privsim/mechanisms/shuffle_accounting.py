"""Privacy accounting for binary randomized response through a shuffler.

Each of h users sends z_i = x_i with probability p = e^eps0 / (1 + e^eps0), else
1 - x_i (eps0-LDP). A shuffler forwards a uniformly random permutation of the bits, which
carries exactly their count K = sum z_i. Two computations of the (epsilon, delta) of K:

- **Exact** (:func:`rr_count_delta`, :func:`rr_count_epsilon`). For neighbouring inputs
  (user j's bit 1 or 0) and u of the other h - 1 users holding 1, K is the convolution
  K_o + Bern(p) against K_o + Bern(1 - p), K_o = Bin(u, p) + Bin(h - 1 - u, 1 - p) (a
  convolution of Bernoullis). delta(eps) = max over u of
  sum_k max(0, P(k) - e^eps Q(k)); flipping every bit maps the reverse direction at u
  onto this one at h - 1 - u, so the maximum over u covers both.
- **Feldman, McMillan, Talwar** ("Hiding among the clones", FOCS 2021) [FMT21], which hold
  for *any* eps0-LDP randomizer. Their Theorem 3.2 reduces the shuffled output to the pair
  P = (A + D, C - A + 1 - D), Q = (A + 1 - D, C - A + D) with C ~ Bin(h - 1, e^-eps0),
  A ~ Bin(C, 1/2), D ~ Bern(e^eps0/(e^eps0 + 1)); their numerical bound is the hockey-stick
  divergence of P and Q, computed per value c of C (C is seen under both) with the
  binomial cdf at the cutoff where the likelihood ratio crosses e^eps (the ratio is
  monotone), plus the mass of the values of C left out: :func:`fmt_delta`,
  :func:`fmt_epsilon`. Their closed form (Theorem 3.1), valid only for
  eps0 <= ln(h / (16 ln(2/delta))): :func:`fmt_closed_form`.

For binary randomized response the exact value is the truth; [FMT21] is an upper bound
on it (for every randomizer), and both sit below eps0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy import optimize, stats

from privsim.mechanisms import _checks

__all__ = [
    "rr_keep_probability",
    "rr_count_delta",
    "rr_count_epsilon",
    "fmt_delta",
    "fmt_epsilon",
    "fmt_closed_form",
    "fmt_local_epsilon",
]

#: The values of C ~ Bin(h-1, e^-eps0) outside mean +- _WINDOW_SD sd are not summed; their mass is added to delta.
_WINDOW_SD = 14.0


def rr_keep_probability(eps0: float) -> float:
    """p = e^eps0 / (1 + e^eps0): binary randomized response keeps the bit with this probability.

    Parameters
    ----------
    eps0:
        The local epsilon > 0 (the exact privacy loss of one report).

    Returns
    -------
    float
        p in (1/2, 1).

    Raises
    ------
    ParameterError
        If ``eps0`` is not finite and > 0.

    Examples
    --------
    >>> round(rr_keep_probability(math.log(3)), 12)
    0.75
    """
    eps0 = _checks.positive("eps0", eps0, scalar=True)
    return 1.0 / (1.0 + math.exp(-eps0))


def _binomial_rows(counts: np.ndarray, p: float, width: int) -> np.ndarray:
    """Row u: the pmf of Bin(counts[u], p) on 0..width-1."""
    k = np.arange(width)
    return stats.binom.pmf(k[None, :], counts[:, None], p)


@lru_cache(maxsize=64)
def _others_pmf(h: int, p: float) -> np.ndarray:
    """Row u (u = 0..h-1 of the other h - 1 users hold 1): the pmf of K_o on 0..h-1, by FFT."""
    u = np.arange(h)
    size = 1 << int(math.ceil(math.log2(2 * h)))
    ones = np.fft.rfft(_binomial_rows(u, p, h), n=size, axis=1)
    zeros = np.fft.rfft(_binomial_rows(h - 1 - u, 1.0 - p, h), n=size, axis=1)
    pmf = np.fft.irfft(ones * zeros, n=size, axis=1)[:, :h]
    return np.clip(pmf, 0.0, None)  # FFT round-off (about 1e-17) below zero


def rr_count_delta(epsilon: float, eps0: float, honest: int) -> float:
    """Exact delta(epsilon) of the count of ``honest`` randomized-response bits (see the module).

    Parameters
    ----------
    epsilon:
        epsilon >= 0.
    eps0:
        The local epsilon > 0.
    honest:
        h >= 1, the number of bits in the count that the observer does not know (the
        neighbour's included).

    Returns
    -------
    float
        max over the others' inputs of the hockey-stick divergence.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> round(rr_count_delta(0.0, 1.0, 1), 6)  # one bit: total variation 2p - 1
    0.462117
    >>> rr_count_delta(1.0, 1.0, 1) < 1e-15  # one bit: the loss is exactly eps0
    True
    """
    epsilon = 0.0 if epsilon == 0 else _checks.positive("epsilon", epsilon, scalar=True)
    h = _checks.integer("honest", honest, 1)
    p = rr_keep_probability(eps0)
    others = _others_pmf(h, p)                        # (h, h): K_o on 0..h-1
    shifted = np.pad(others, ((0, 0), (1, 0)))        # K_o + 1 on 0..h
    base = np.pad(others, ((0, 0), (0, 1)))           # K_o on 0..h
    with_one = p * shifted + (1 - p) * base           # neighbour's bit 1
    with_zero = (1 - p) * shifted + p * base          # neighbour's bit 0
    gap = with_one - math.exp(epsilon) * with_zero
    return float(np.clip(gap, 0.0, None).sum(axis=1).max())


def _smallest_epsilon(delta_of: Callable[[float], float], delta: float, cap: float) -> float:
    """The smallest epsilon in [0, cap] with delta_of(epsilon) <= delta (delta_of decreases)."""
    if delta_of(0.0) <= delta:
        return 0.0
    if delta_of(cap) > delta:
        return cap
    return float(optimize.brentq(lambda e: delta_of(e) - delta, 0.0, cap, xtol=1e-10, rtol=1e-10))


@lru_cache(maxsize=256)
def rr_count_epsilon(delta: float, eps0: float, honest: int) -> float:
    """The exact epsilon at ``delta`` of the count of ``honest`` randomized-response bits.

    Parameters
    ----------
    delta:
        delta in (0, 1).
    eps0:
        The local epsilon > 0.
    honest:
        h >= 1 (see :func:`rr_count_delta`).

    Returns
    -------
    float
        epsilon in [0, eps0].

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> round(rr_count_epsilon(1e-6, 2.0, 1), 5)  # one bit alone: the local epsilon
    2.0
    >>> round(rr_count_epsilon(1e-6, 2.0, 1000), 3)
    0.323
    """
    delta = _checks.probability("delta", delta)
    return _smallest_epsilon(lambda e: rr_count_delta(e, eps0, honest), delta, float(eps0))


def _fmt_cutoff_gap(c: np.ndarray, epsilon: float, eps0: float) -> np.ndarray:
    """Per c: sum_k max(0, P_c(k) - e^eps Q_c(k)), P_c = alpha B(c) + 1 mixed with B(c), B = Bin(c, 1/2)."""
    alpha = 1.0 / (1.0 + math.exp(-eps0))
    e = math.exp(epsilon)
    # P_c(k)/Q_c(k) increases with r = k/(c+1-k); it exceeds e^eps iff r > rho, i.e. k > beta (c + 1)
    rho = (e * alpha - (1.0 - alpha)) / (alpha - e * (1.0 - alpha))
    cutoff = np.floor(rho / (1.0 + rho) * (c + 1.0))  # the last k where P_c(k) <= e^eps Q_c(k)
    upper = stats.binom.sf(cutoff, c, 0.5)            # Pr[B > cutoff]
    upper_shift = stats.binom.sf(cutoff - 1, c, 0.5)  # Pr[B + 1 > cutoff]
    p_tail = alpha * upper_shift + (1.0 - alpha) * upper
    q_tail = (1.0 - alpha) * upper_shift + alpha * upper
    return np.clip(p_tail - e * q_tail, 0.0, None)


def fmt_delta(epsilon: float, eps0: float, n: int) -> float:
    """[FMT21]'s numerical delta(epsilon) for n shuffled eps0-LDP reports (an upper bound, see the module).

    Parameters
    ----------
    epsilon:
        epsilon >= 0.
    eps0:
        The local epsilon > 0.
    n:
        The number of shuffled reports an observer does not know, >= 1.

    Returns
    -------
    float
        sum_c Pr[C = c] D_{e^eps}(P_c || Q_c) over C's central values, plus the mass of
        the others (P and Q are symmetric, so one direction suffices).

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> fmt_delta(2.0, 2.0, 100)
    0.0
    >>> 0.0 < fmt_delta(0.5, 2.0, 1000) < 1e-3
    True
    """
    epsilon = 0.0 if epsilon == 0 else _checks.positive("epsilon", epsilon, scalar=True)
    eps0 = _checks.positive("eps0", eps0, scalar=True)
    n = _checks.integer("n", n, 1)
    if epsilon >= eps0:
        return 0.0  # the likelihood ratio of P and Q never exceeds e^eps0
    q = math.exp(-eps0)
    mean, sd = (n - 1) * q, math.sqrt((n - 1) * q * (1 - q))
    lo, hi = max(0, int(mean - _WINDOW_SD * sd)), min(n - 1, int(math.ceil(mean + _WINDOW_SD * sd)))
    c = np.arange(lo, hi + 1)
    weights = stats.binom.pmf(c, n - 1, q)
    left_out = max(0.0, 1.0 - float(weights.sum()))
    return min(1.0, float((weights * _fmt_cutoff_gap(c.astype(float), epsilon, eps0)).sum()) + left_out)


@lru_cache(maxsize=256)
def fmt_epsilon(delta: float, eps0: float, n: int) -> float:
    """[FMT21]'s numerical epsilon at ``delta`` for n shuffled eps0-LDP reports (at most eps0).

    Parameters
    ----------
    delta:
        delta in (0, 1).
    eps0:
        The local epsilon > 0.
    n:
        The number of shuffled reports, >= 1.

    Returns
    -------
    float
        The smallest epsilon with :func:`fmt_delta` <= delta.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> round(fmt_epsilon(1e-6, 2.0, 1000), 3)
    0.545
    """
    delta = _checks.probability("delta", delta)
    return _smallest_epsilon(lambda e: fmt_delta(e, eps0, n), delta, float(eps0))


def fmt_closed_form(delta: float, eps0: float, n: int) -> float | None:
    """[FMT21] Theorem 3.1: epsilon <= ln(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 ln(4/delta)/n) + 8 e^eps0/n)).

    Parameters
    ----------
    delta:
        delta in (0, 1).
    eps0:
        The local epsilon > 0.
    n:
        The number of shuffled reports, >= 1.

    Returns
    -------
    float or None
        The bound, or ``None`` outside its condition eps0 <= ln(n / (16 ln(2/delta))).

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> round(fmt_closed_form(1e-6, 1.4, 1000), 3), fmt_closed_form(1e-6, 2.0, 1000) is None
    (0.798, True)
    """
    delta = _checks.probability("delta", delta)
    eps0 = _checks.positive("eps0", eps0, scalar=True)
    n = _checks.integer("n", n, 1)
    if eps0 > math.log(n / (16.0 * math.log(2.0 / delta))):
        return None
    e0 = math.exp(eps0)
    inner = 8.0 * math.sqrt(e0 * math.log(4.0 / delta) / n) + 8.0 * e0 / n
    return math.log1p((e0 - 1.0) / (e0 + 1.0) * inner)


def fmt_local_epsilon(epsilon: float, delta: float, n: int) -> float:
    """The largest local eps0 whose [FMT21] numerical bound for n shuffled reports is <= ``epsilon`` at ``delta``.

    A calibration: randomized response with this eps0 through a shuffler is (epsilon, delta)-DP
    towards the curator by [FMT21] (and the exact count law, :func:`rr_count_epsilon`, only
    improves on it).

    Parameters
    ----------
    epsilon:
        The target central epsilon > 0.
    delta:
        delta in (0, 1).
    n:
        The number of shuffled reports, >= 1.

    Returns
    -------
    float
        eps0 >= epsilon (shuffling never hurts: eps0 = epsilon always meets the target).

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> e0 = fmt_local_epsilon(1.0, 1e-6, 1000)
    >>> round(e0, 3), round(fmt_epsilon(1e-6, e0, 1000), 6)
    (2.724, 1.0)
    """
    epsilon = _checks.positive("epsilon", epsilon, scalar=True)
    delta = _checks.probability("delta", delta)
    n = _checks.integer("n", n, 1)
    excess = lambda e0: fmt_epsilon(delta, e0, n) - epsilon  # noqa: E731 -- increasing in eps0
    hi = max(2.0 * epsilon, math.log(n) + 1.0)
    if excess(hi) <= 0:
        return hi
    if excess(epsilon * (1 + 1e-9)) > 0:
        return epsilon
    return float(optimize.brentq(excess, epsilon * (1 + 1e-9), hi, xtol=1e-8, rtol=1e-8))
