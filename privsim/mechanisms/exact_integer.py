"""Exact privacy loss of integer noise sums: the hockey-stick divergence of the honest total's pmf.

The honest parties' noise total of a secure sum with integer noise has a computable law:
the convolution of k discrete Gaussians N_Z(0, s2) (not itself a discrete Gaussian), or
the Skellam Sk(mu). The released value is x + Z; two neighbours differ by at most D, so
the exact delta at epsilon is the hockey-stick divergence

    delta(epsilon) = max_{|d| <= D} sum_z max(0, P(z) - e^epsilon P(z - d))

(for a symmetric unimodal law the worst shift is d = D; every |d| <= D is checked
anyway). Laws are computed on a finite window; the mass left outside (bounded
analytically, not by 1 - sum) is added to delta: with P = P_w + R (P_w the window's
sub-probability, R of mass tau), sum max(0, P - e^eps P') <= sum max(0, P_w - e^eps P'_w) + tau.
Convolution by FFT adds a round-off of about 1e-16 per entry, clipped at 0 (entries are
summed over the window: below 1e-12 in total for the windows used here, far below the
deltas claimed).

The published bounds ([KLS21] Prop. 14 for discrete-Gaussian sums, [AKL21] Thm. 3.5 for
Skellam) are upper bounds on this exact value; :func:`exact_epsilon` inverts it with
:func:`~privsim.mechanisms._roots.safe_root`, so the claimed epsilon is never below the
truth by rounding. See docs/architecture.md ("claims are promises").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from privsim.mechanisms import _checks
from privsim.mechanisms._roots import safe_root

__all__ = ["IntegerLaw", "ddg_sum_law", "exact_delta", "exact_epsilon", "skellam_law"]

#: Each window leaves out at most this mass (added to delta).
TRUNCATION = 1e-14


@dataclass(frozen=True)
class IntegerLaw:
    """A sub-probability pmf on lo, lo + 1, ... and a bound ``tail`` on the mass left outside.

    >>> law = skellam_law(10.0)
    >>> law.tail <= 1e-14, round(float(law.pmf.sum()), 12)
    (True, 1.0)
    """

    lo: int
    pmf: np.ndarray
    tail: float


def _dg_window(s2: float, tail: float) -> tuple[int, np.ndarray, float]:
    """N_Z(0, s2) on [-K, K] and a bound on Pr[|X| > K] (normaliser >= its j = 0 term, 1)."""
    K = int(math.ceil(math.sqrt(2.0 * s2 * math.log(4.0 / tail)))) + 1
    k = np.arange(-K, K + 1, dtype=float)
    w = np.exp(-k * k / (2.0 * s2))
    pmf = w / w.sum()  # the window's normaliser is <= the full one: each entry >= the true pmf
    # sum_{j > K} e^{-j^2/2s2} <= e^{-K^2/2s2} / (1 - e^{-K/s2}); twice, over Z >= 1
    out = 2.0 * math.exp(-K * K / (2.0 * s2)) / -math.expm1(-K / s2)
    return -K, pmf * (1.0 - out), out  # (1 - out) pmf_window <= the true pmf on the window


def ddg_sum_law(s2: float, k: int, tail: float = TRUNCATION) -> IntegerLaw:
    """The law of the sum of k independent N_Z(0, s2), by FFT convolution of one windowed share.

    Parameters
    ----------
    s2:
        The discrete Gaussian's parameter sigma^2 > 0 (its pmf is proportional to e^{-z^2/2 s2}).
    k:
        The number of shares >= 1.
    tail:
        The total mass that may be left outside the window (union bound over the shares).

    Returns
    -------
    IntegerLaw

    Examples
    --------
    >>> law = ddg_sum_law(0.5, 3)  # variance 3 Var N_Z(0, 1/2)
    >>> law.lo, round(float((law.pmf * (np.arange(law.pmf.size) + law.lo) ** 2).sum()), 6)
    (-21, 1.496937)
    """
    s2 = _checks.positive("s2", s2, scalar=True)
    k = _checks.integer("k", k, 1)
    lo, one, out = _dg_window(s2, tail / k)
    size = k * (one.size - 1) + 1
    n_fft = 1 << (size - 1).bit_length()
    pmf = np.fft.irfft(np.fft.rfft(one, n_fft) ** k, n_fft)[:size]
    return IntegerLaw(k * lo, np.clip(pmf, 0.0, None), min(1.0, k * out))


def skellam_law(mu: float, tail: float = TRUNCATION) -> IntegerLaw:
    """Sk(mu) = Pois(mu/2) - Pois(mu/2) on a window of mass >= 1 - tail (scipy's pmf and sf).

    >>> skellam_law(4.0).lo < 0
    True
    """
    mu = _checks.positive("mu", mu, scalar=True)
    K = 10
    while 2.0 * stats.skellam.sf(K, mu / 2, mu / 2) > tail:
        K *= 2
    k = np.arange(-K, K + 1)
    return IntegerLaw(-K, stats.skellam.pmf(k, mu / 2, mu / 2), float(2.0 * stats.skellam.sf(K, mu / 2, mu / 2)))


def exact_delta(law: IntegerLaw, sensitivity: int, epsilon: float) -> float:
    """max over shifts 1..D of sum_z max(0, P(z) - e^eps P(z - d)), both directions, plus the tail.

    Parameters
    ----------
    law:
        The noise law.
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
    worst = 0.0
    for d in range(1, D + 1):
        pad = np.zeros(d)
        a, b = np.concatenate([p, pad]), np.concatenate([pad, p])  # P(z) and P(z - d) on one grid
        worst = max(worst, float(np.clip(a - e * b, 0.0, None).sum()), float(np.clip(b - e * a, 0.0, None).sum()))
    return min(1.0, worst + law.tail)


def exact_epsilon(law: IntegerLaw, sensitivity: int, delta: float, cap: float = 50.0) -> float:
    """The smallest epsilon (safe side of the root) with :func:`exact_delta` <= delta; ``inf`` if none <= cap.

    Examples
    --------
    >>> eps = exact_epsilon(skellam_law(400.0), 1, 1e-6)  # [AKL21]'s bound: 0.206
    >>> exact_delta(skellam_law(400.0), 1, eps) <= 1e-6, round(eps, 3)
    (True, 0.188)
    """
    delta = _checks.probability("delta", delta)
    f = lambda e: exact_delta(law, sensitivity, e) - delta  # noqa: E731 -- decreasing in e
    if f(0.0) <= 0:
        return 0.0
    if f(cap) > 0:
        return math.inf
    return safe_root(f, 0.0, cap, safe="hi", xtol=1e-9, rtol=1e-9)
