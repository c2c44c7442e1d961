"""Statistical checks shared by the secure-sum, ck-sum and central-mechanism tests.

Every tolerance is derived from the exact distribution: a sample mean is within 5 standard
errors, a sample variance within 5 standard deviations of the sample variance computed
from the exact fourth moment, and distribution tests use a fixed significance level at
fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

ALPHA = 1e-4  # significance of the distribution tests (fixed seeds: deterministic outcomes)


def laplace_total_moments(b: float, k: float) -> tuple[float, float]:
    """(variance, 4th central moment) of Gamma(k, b) - Gamma(k, b).

    Even cumulants add: kappa2 = 2 k b^2, kappa4 = 2 * 6 k b^4; mu4 = kappa4 + 3 kappa2^2.
    k = n/m for the total of n Laplace shares, each Gamma(1/m, b) - Gamma(1/m, b).
    """
    k2, k4 = 2 * k * b**2, 12 * k * b**4
    return k2, k4 + 3 * k2**2


def gaussian_total_moments(sigma2: float) -> tuple[float, float]:
    """(variance, 4th central moment) of N(0, sigma2)."""
    return sigma2, 3 * sigma2**2


def discrete_laplace_total_moments(b: float, k: float) -> tuple[float, float]:
    """(variance, 4th central moment) of NB(k, 1-a) - NB(k, 1-a), a = e^{-1/b}.

    Failures-before-k-successes NB(k, p), q = 1 - p: kappa2 = k q/p^2 and
    kappa4 = k q (1 + 4q + q^2)/p^4; the difference doubles both.
    """
    a = math.exp(-1.0 / b)
    p = 1.0 - a
    k2 = 2 * k * a / p**2
    k4 = 2 * k * a * (1 + 4 * a + a * a) / p**4
    return k2, k4 + 3 * k2**2


def assert_mean_and_variance(err: np.ndarray, variance: float, mu4: float, *, slack_sd: float = 0.0) -> None:
    """The errors have mean 0 (5 standard errors) and variance ``variance`` (5 sd of s^2).

    ``slack_sd`` bounds |sd(err) - sqrt(variance)| that a known deterministic effect may
    add (fixed-point rounding), and widens the variance band by exactly that much.
    """
    r = err.size
    mean_tol = 5 * math.sqrt(variance / r) + slack_sd
    assert abs(err.mean()) < mean_tol, (err.mean(), mean_tol)
    s2 = err.var(ddof=1)
    var_s2 = mu4 / r - variance**2 * (r - 3) / (r * (r - 1))
    sd = math.sqrt(variance)
    lo = (sd - slack_sd) ** 2 - 5 * math.sqrt(var_s2)
    hi = (sd + slack_sd) ** 2 + 5 * math.sqrt(var_s2)
    assert lo < s2 < hi, (s2, variance, lo, hi)


def assert_pmf_fits(samples: np.ndarray, pmf, lo: int, hi: int) -> None:
    """Chi-square goodness of fit of integer samples to ``pmf``.

    [lo, hi] must hold all but a negligible mass of ``pmf``; the bins are the integers
    that expect at least 5 samples, plus one bin for each tail.
    """
    samples = np.asarray(samples).astype(np.int64)
    r = samples.size
    ks = np.arange(lo, hi + 1)
    probs = np.asarray(pmf(ks), dtype=float)
    assert abs(probs.sum() - 1) < 1e-9, probs.sum()
    keep = np.flatnonzero(probs * r >= 5)
    first, last = ks[keep[0]], ks[keep[-1]]
    mid = (ks >= first) & (ks <= last)
    f_exp = np.concatenate([[probs[ks < first].sum()], probs[mid], [probs[ks > last].sum()]]) * r
    f_obs = np.concatenate([[np.count_nonzero(samples < first)],
                            np.bincount(samples[(samples >= first) & (samples <= last)] - first,
                                        minlength=last - first + 1),
                            [np.count_nonzero(samples > last)]]).astype(float)
    mask = f_exp > 0
    assert f_obs[~mask].sum() == 0
    f_obs, f_exp = f_obs[mask], f_exp[mask]
    p = stats.chisquare(f_obs, f_exp * f_obs.sum() / f_exp.sum()).pvalue
    assert p > ALPHA, p


def nb_difference_pmf(k_shape: float, p: float, support: np.ndarray) -> np.ndarray:
    """Exact pmf of NB(k, p) - NB(k, p) on ``support`` (failures before k successes)."""
    top = int(stats.nbinom.isf(1e-17, k_shape, p)) + 2
    j = np.arange(top + 1)
    base = stats.nbinom.pmf(j, k_shape, p)
    out = []
    for d in np.abs(np.asarray(support)):
        out.append(float(np.dot(base[d:], base[: base.size - d])) if d <= top else 0.0)
    return np.asarray(out)


def homogeneous(a: np.ndarray, b: np.ndarray, cells: int) -> float:
    """p-value of the chi-square test that two samples of cell indices share one distribution."""
    ca = np.bincount(a, minlength=cells)
    cb = np.bincount(b, minlength=cells)
    table = np.vstack([ca, cb])
    table = table[:, table.sum(axis=0) > 0]
    return float(stats.chi2_contingency(table).pvalue)


def uniform_p(a: np.ndarray, cells: int) -> float:
    """p-value of the chi-square test that cell indices are uniform on ``cells`` cells."""
    return float(stats.chisquare(np.bincount(a, minlength=cells)).pvalue)
