"""Privacy accounting in the shuffle model: randomized response, and split-and-mix sums.

Part one, binary randomized response through a shuffler (``shuffle-rr``).

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

Part two, additive shares through a shuffler (``shuffle-sum``; the "split and mix" of
Ishai, Kushilevitz, Ostrovsky, Sahai, FOCS 2006, as Balle, Bell, Gascon, Nissim use it,
CCS 2020). Each of h parties splits its value y_i in Z_q into m shares, uniform among the
m-vectors with sum y_i; the shuffler forwards the multiset of all h m shares. Let P_y be
the law of that multiset and U_Y the law of the multiset of h m values drawn uniformly
among the vectors with sum Y = sum_i y_i. Then, exactly (:func:`split_mix_chi2`),

    max over y of chi^2(P_y || U_Y) = E_sigma[q^(c(sigma) - 1)] - 1,

where sigma is a uniformly random permutation of the h m positions and c(sigma) the
number of connected components of the bipartite multigraph with the h blocks of the
first partition on one side, the h blocks of the permuted partition on the other, and
one edge per position. Proof: chi^2 + 1 = q^(hm-1) Pr[V = V'] for two independent
shuffled views V, V' of y, i.e. q^(hm-1) E_sigma Pr[s' = sigma s] for two independent
share vectors s, s'. For a fixed sigma, s must satisfy the 2h block-sum constraints of
both partitions: a connected component with v vertices and e edges leaves q^(e - v + 1)
solutions when its two sides' labels agree (a spanning tree fixes the rest, over any
Z_q), none otherwise; so Pr[s' = sigma s] = q^(c - hm) [consistent], and the maximum over
y is attained by a constant y, for which every component is consistent. Then
TV(P_y, U_Y) <= sqrt(chi^2)/2 (Cauchy-Schwarz), the *split-and-mix distance*
(:func:`split_mix_distance`), and any two inputs with one sum have views within twice
that. With a view within s of a post-processing of an epsilon-DP release of the sum, the
view is (epsilon, (1 + e^epsilon) s)-DP (:func:`split_mix_delta`).

E_sigma[q^(c-1)] is computed by a recurrence on the component of the first block: with
k blocks a side, it has j of them with probability w(k, j) p_j, where
w(k, j) = C(k-1, j-1) C(k, j) / C(km, jm) and p_j is the probability that j + j blocks are
connected, so p_k = 1 - sum_{j<k} w(k, j) p_j and chi_k = E_k[q^(c-1)] - 1 satisfies

    chi_k = sum_{j<k} w(k, j) p_j ((q - 1) + q chi_{k-j}),   chi_1 = 0,

a sum of positive terms (computed in logarithms). Above 2 W + 1 blocks (W =
:data:`SPLIT_MIX_WINDOW`) only j <= W and k - j <= W are summed; the others are bounded
by w(k, j) <= C(k, j)^(2-m) <= C(k, W)^(2-m) (C(km, jm) >= C(k, j)^m) and
q (1 + max_i chi_i) each, and that bound is added: the result is always an upper bound.
Enumerating the multiset laws for tiny h, m, q reproduces chi^2 exactly
(tests/test_shuffle_sum.py).

The paper's statements (Balle, Bell, Gascon, Nissim, "Improved summation from shuffling",
arXiv:1909.11225, merged into their CCS 2020 paper; their theorem text was not available
to check here): O(1 + sigma/log n) messages per party give statistical distance 2^-sigma,
and 32-bit numbers from n = 10^4 parties sending 12 messages each give 2^-40. The bound
above gives 2^-57.5 for that example, and 2^-42.9 with 10 messages.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

from privsim.mechanisms import _checks
from privsim.mechanisms._roots import safe_root, smallest_epsilon

__all__ = [
    "SPLIT_MIX_WINDOW",
    "rr_keep_probability",
    "rr_count_delta",
    "rr_count_epsilon",
    "fmt_delta",
    "fmt_epsilon",
    "fmt_closed_form",
    "fmt_local_epsilon",
    "split_mix_chi2",
    "split_mix_distance",
    "split_mix_delta",
    "split_mix_messages",
    "polya_difference_epsilon",
]

#: Above 2 W + 1 blocks a side the split-and-mix recurrence sums only the W smallest and
#: the W largest components of the first block exactly, and bounds the rest (see the module).
SPLIT_MIX_WINDOW = 64

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
    return stats.binom.pmf(np.arange(width)[None, :], counts[:, None], p)


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
    with_one, with_zero = _count_pmfs(h, rr_keep_probability(eps0))
    gap = np.multiply(with_zero, -math.exp(epsilon))
    gap += with_one
    np.maximum(gap, 0.0, out=gap)
    return float(gap.sum(axis=1).max())


@lru_cache(maxsize=4)
def _count_pmfs(h: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Row u: the count's pmf on 0..h with the neighbour's bit 1, and with it 0 (cached: a
    root-finder asks for many epsilons of one count)."""
    others = _others_pmf(h, p)                        # (h, h): K_o on 0..h-1
    shifted = np.pad(others, ((0, 0), (1, 0)))        # K_o + 1 on 0..h
    base = np.pad(others, ((0, 0), (0, 1)))           # K_o on 0..h
    return p * shifted + (1 - p) * base, (1 - p) * shifted + p * base


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
    return smallest_epsilon(lambda e: rr_count_delta(e, eps0, honest), delta, float(eps0))


def _fmt_cutoff_gap(c: np.ndarray, epsilon: float, eps0: float) -> np.ndarray:
    """Per c: sum_k max(0, P_c(k) - e^eps Q_c(k)), P_c = alpha B(c) + 1 mixed with B(c), B = Bin(c, 1/2)."""
    alpha = rr_keep_probability(eps0)
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
    return smallest_epsilon(lambda e: fmt_delta(e, eps0, n), delta, float(eps0))


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
    if excess(epsilon * (1 + 1e-9)) > 0:
        return epsilon
    return safe_root(excess, epsilon * (1 + 1e-9), hi, safe="lo", xtol=1e-8, rtol=1e-8)  # hi if it meets epsilon


# ---------------------------------------------------------------------------------------
# Split and mix: additive shares through a shuffler
# ---------------------------------------------------------------------------------------


def _split_mix_args(parties: int, messages: int, q: int) -> tuple[int, int, int]:
    return (_checks.integer("parties", parties, 1), _checks.integer("messages", messages, 1),
            _checks.integer("q", q, 2))


@lru_cache(maxsize=32)
def _log_chi2_table(h: int, m: int, q: int) -> np.ndarray:
    """log chi_k for k = 0..h (entry 0 unused) by the recurrence of the module docstring."""
    W = SPLIT_MIX_WINDOW
    lf = special.gammaln(np.arange(h * m + 1) + 1.0)  # log k!
    log_q, log_1m = math.log(q), math.log1p(-1.0 / q)
    log_chi = np.full(h + 1, -np.inf)
    log_p = np.full(h + 1, -np.inf)
    log_p[1] = 0.0                                     # one block a side is connected
    near, worst = np.arange(1, W + 1), -np.inf         # worst: max log chi_i so far
    with np.errstate(divide="ignore"):
        for k in range(2, h + 1):
            # at m = 2 the skipped terms' bound C(k, W)^(2-m) does not shrink and compounds
            # (to 10^179 or inf beyond about 129 parties): sum every term instead, O(h^2)
            far = m != 2 and k > 2 * W + 1
            j = np.concatenate([near, k - near[::-1]]) if far else np.arange(1, k)
            i = k - j
            log_w = (lf[k - 1] + lf[k] - lf[k * m]) - lf[j - 1] - lf[j] - 2 * lf[i] + lf[j * m] + lf[i * m]
            s = log_w + log_p[j]
            p_k = 1.0 - float(np.exp(s).sum())        # too large by at most the skipped mass: safe
            log_p[k] = math.log(p_k) if p_k > 0 else -np.inf
            terms = s + np.logaddexp(log_1m, log_chi[i])   # log(w p_j (1 - 1/q + chi_{k-j}))
            top = float(terms.max())
            value = log_q + top + math.log(float(np.exp(terms - top).sum()))
            worst = max(worst, float(log_chi[k - 1]))
            if far:  # k - 2W skipped terms, each <= C(k, W)^(2-m) q (1 + chi_max)
                skipped = math.log(k) + log_q + float(np.logaddexp(0.0, worst)) + \
                    (2 - m) * (lf[k] - lf[W] - lf[k - W])
                value = float(np.logaddexp(value, skipped))
            log_chi[k] = value
    log_chi.flags.writeable = False
    return log_chi


def split_mix_chi2(parties: int, messages: int, q: int) -> float:
    """max_y chi^2(P_y || U_Y) for ``parties`` values split into ``messages`` shares mod q and shuffled.

    Exact up to the bounded tail of the recurrence above 2 W + 1 parties (then an upper
    bound); see the module docstring for the identity chi^2 = E[q^(c-1)] - 1 and its proof.

    Parameters
    ----------
    parties:
        h >= 1, the number of parties whose shares are mixed (those the observer does not know).
    messages:
        m >= 1 shares per party.
    q:
        The modulus, >= 2.

    Returns
    -------
    float
        chi^2 >= 0 (``inf`` when it overflows a float).

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> round(split_mix_chi2(2, 2, 3), 12)  # the two 2 + 2 block graphs: connected or two pairs
    0.666666666667
    >>> split_mix_chi2(5, 1, 2)  # one share each: the view is the values themselves
    15.0
    """
    h, m, q = _split_mix_args(parties, messages, q)
    if h == 1:
        return 0.0  # one party's shares given its value are exactly U_Y
    if m == 1:
        return float(q ** (h - 1) - 1) if (h - 1) * math.log(q) < 700 else math.inf  # c = h always
    log_chi = float(_log_chi2_table(h, m, q)[h])
    return math.exp(log_chi) if log_chi < 700 else math.inf


def split_mix_distance(parties: int, messages: int, q: int) -> float:
    """An upper bound on max_y TV(P_y, U_Y): sqrt(chi^2)/2 (at most 1).

    Two inputs with the same sum give views within twice this of each other.

    Parameters
    ----------
    parties:
        h >= 1 parties whose shares are mixed.
    messages:
        m >= 1 shares per party.
    q:
        The modulus, >= 2.

    Returns
    -------
    float
        The bound, in [0, 1].

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> round(math.log2(2 * split_mix_distance(1000, 10, 2**32)), 1)  # between two inputs: 2^-29.6
    -29.6
    """
    h, m, q = _split_mix_args(parties, messages, q)
    if h == 1 or m == 1:
        return min(1.0, 0.5 * math.sqrt(split_mix_chi2(h, m, q)))
    # in logs: at m = 2 chi^2 is finite but far beyond a float (e^942 at h = 100), the bound 1
    return min(1.0, 0.5 * math.exp(min(1.0, 0.5 * float(_log_chi2_table(h, m, q)[h]))))


def split_mix_delta(epsilon: float, parties: int, messages: int, q: int) -> float:
    """(1 + e^epsilon) times :func:`split_mix_distance`: the delta that mixing adds to an epsilon-DP sum.

    If the sum of the h mixed values is epsilon-DP in the neighbour's input, the view of
    the multiset is (epsilon, delta)-DP with this delta: it is within the distance s of
    U applied to the sum, so Pr[V(x) in E] <= Pr[U(M(x)) in E] + s
    <= e^eps Pr[U(M(x')) in E] + s <= e^eps Pr[V(x') in E] + (1 + e^eps) s.

    Parameters
    ----------
    epsilon:
        The pure epsilon >= 0 of the sum.
    parties:
        h >= 1 parties whose shares are mixed.
    messages:
        m >= 1 shares per party.
    q:
        The modulus, >= 2.

    Returns
    -------
    float
        delta in [0, 1].

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> split_mix_delta(1.0, 1, 3, 2**20)  # one party: its shares reveal only its value
    0.0
    """
    epsilon = 0.0 if epsilon == 0 else _checks.positive("epsilon", epsilon, scalar=True)
    return min(1.0, (1.0 + math.exp(epsilon)) * split_mix_distance(parties, messages, q))


def split_mix_messages(epsilon: float, delta: float, parties: int, q: int, max_messages: int = 64) -> int | None:
    """The fewest shares per party m for which :func:`split_mix_delta` is <= ``delta``, or ``None``.

    Each m whose chi^2 is certainly too large is skipped cheaply: chi^2 >= (q - 1) h / C(hm, m),
    the recurrence's term for a first block that is a component on its own.

    Parameters
    ----------
    epsilon:
        The pure epsilon > 0 of the sum.
    delta:
        The target delta in (0, 1).
    parties:
        h >= 1 parties whose shares are mixed.
    q:
        The modulus, >= 2.
    max_messages:
        The largest m tried.

    Returns
    -------
    int or None
        m in [1, max_messages], or ``None`` if none suffices.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> split_mix_messages(1.0, 1e-6, 1000, 2**17)
    8
    """
    epsilon = _checks.positive("epsilon", epsilon, scalar=True)
    delta = _checks.probability("delta", delta)
    h, _, q = _split_mix_args(parties, 1, q)
    top = _checks.integer("max_messages", max_messages, 1)
    # (1 + e^eps) sqrt(chi^2)/2 <= delta  <=>  chi^2 <= (2 delta / (1 + e^eps))^2
    log_target = 2.0 * math.log(2.0 * delta / (1.0 + math.exp(epsilon)))
    if h == 1:
        return 1  # one party's shares reveal only its value, however few
    for m in range(1, top + 1):
        log_lower = math.log(q - 1) + math.log(h) - (special.gammaln(h * m + 1) - special.gammaln(m + 1)
                                                     - special.gammaln(h * m - m + 1))
        if log_lower > log_target:
            continue
        if split_mix_delta(epsilon, h, m, q) <= delta:
            return m
    return None


def polya_difference_epsilon(epsilon: float, precision: int, shape: float) -> float:
    """The exact pure epsilon of x -> round(x p) + NB(shape, 1 - a) - NB(shape, 1 - a), a = e^(-epsilon/p).

    The Polya differences of :func:`privsim.mechanisms.noise.discrete_laplace_share`:
    shape 1 is the discrete Laplace of scale p/epsilon, exactly epsilon-DP for the
    sensitivity p of a rounded input in [0, 1] (and so is any shape >= 1: more noise on
    top). For shape < 1 the Polya law is log-convex, hence so is the pmf W of the
    difference on k >= 0 (a mixture of log-convex sequences), and W is symmetric and
    decreasing there; so max_k W(k)/W(k + d) over |d| <= p is W(0)/W(p). Randomized
    rounding mixes shifts in [0, p], which cannot exceed that ratio, and inputs 0 and 1
    attain it: epsilon_local = ln(W(0)/W(p)).

    Parameters
    ----------
    epsilon:
        The epsilon > 0 that shape 1 meets.
    precision:
        p >= 1, the fixed-point precision (the sensitivity of one rounded input).
    shape:
        The Polya shape > 0 of the noise that the observer does not know.

    Returns
    -------
    float
        epsilon_local >= epsilon.

    Raises
    ------
    ParameterError
        If an argument is out of range.

    Examples
    --------
    >>> polya_difference_epsilon(1.0, 10, 1.0), polya_difference_epsilon(1.0, 10, 3.0)
    (1.0, 1.0)
    >>> round(polya_difference_epsilon(1.0, 10, 0.01), 3)  # one party's share of 100: much weaker
    7.866
    """
    epsilon = _checks.positive("epsilon", epsilon, scalar=True)
    p = _checks.integer("precision", precision, 1)
    shape = _checks.positive("shape", shape, scalar=True)
    if shape >= 1.0:
        return epsilon
    success = -math.expm1(-epsilon / p)  # 1 - a
    # the terms of W(0) = sum_j P(j)^2 and W(p) = sum_j P(j) P(j + p) fall off as a^(2j)
    last = int(stats.nbinom.isf(1e-30, shape, success)) + p + 1
    log_pmf = stats.nbinom.logpmf(np.arange(last + p + 1), shape, success)
    w0 = special.logsumexp(2.0 * log_pmf[: last + 1])
    wp = special.logsumexp(log_pmf[: last + 1] + log_pmf[p: last + p + 1])
    return max(epsilon, float(w0 - wp))
