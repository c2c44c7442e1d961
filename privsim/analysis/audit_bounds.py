"""The bound of a DP audit: Clopper–Pearson intervals and the certified epsilon.

An audit fixes a distinguishing event S on one part of the samples, then counts its hits
on another, disjoint part: ``k_x`` of ``n_x`` views under x and ``k_xp`` of ``n_xp``
under x'. Because S is fixed before the counted samples are drawn, the one-sided
Clopper–Pearson bounds on p = Pr[S | x] and q = Pr[S | x'] are exact, and

    epsilon >= ln((p_lo - delta) / q_hi)

holds with the stated confidence for any (epsilon, delta)-DP mechanism
(Def. of (eps, delta)-DP: Pr[S | x] <= e^eps Pr[S | x'] + delta for every S).

Confidence split: S is chosen *oriented*, as the event estimated likelier under x. The
two directions of the privacy inequality, ``Pr[S|x] <= e^eps Pr[S|x'] + delta`` and
``Pr[not S|x'] <= e^eps Pr[not S|x] + delta``, then both follow from the same two
one-sided bounds p >= p_lo and q <= q_hi (a complement's Clopper–Pearson bounds are 1
minus the event's), so the union bound is over two events, each at (1 - confidence)/2,
and the larger of the two directions is reported. :func:`epsilon_lower_bound` without
``oriented`` also covers the reversed roles on S itself, with four bounds at a quarter
each (Bonferroni over the directions and the two bounds).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
from scipy import special

from privsim.errors import ParameterError

__all__ = ["Direction", "EpsilonBound", "check_level", "clopper_pearson", "epsilon_lower_bound", "oriented_bounds"]

Side = Literal["lower", "upper"]
Direction = Literal[
    "event, x over x'",
    "complement, x' over x",
    "event, x' over x",
    "complement, x over x'",
]



def clopper_pearson(k: int | np.ndarray, n: int | np.ndarray, alpha: float, side: Side) -> float | np.ndarray:
    """One-sided exact (Clopper–Pearson) confidence bound for a binomial proportion.

    Parameters
    ----------
    k:
        number of successes, ``0 <= k <= n`` (an int or an array, broadcast with n).
    n:
        number of trials, ``n >= 1``.
    alpha:
        error probability of the one-sided bound, ``0 < alpha < 1``.
    side:
        ``"lower"``: ``Pr[p < bound] <= alpha``; ``"upper"``: ``Pr[p > bound] <= alpha``.

    Returns
    -------
    The bound, a float for scalar input, else an array. The lower bound for k = 0 is
    0 and the upper bound for k = n is 1.

    Raises
    ------
    ParameterError
        for k outside [0, n], n < 1, alpha outside (0, 1) or a bad side.

    >>> round(clopper_pearson(50, 100, 0.025, "lower"), 4)
    0.3983
    >>> clopper_pearson(0, 10, 0.05, "lower"), clopper_pearson(10, 10, 0.05, "upper")
    (0.0, 1.0)
    """
    k_arr = np.asarray(k, dtype=float)
    n_arr = np.asarray(n, dtype=float)
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"alpha must be in (0, 1), got {alpha}")
    if np.any(n_arr < 1) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ParameterError("clopper_pearson needs n >= 1 and 0 <= k <= n")
    if side not in ("lower", "upper"):
        raise ParameterError(f"side must be 'lower' or 'upper', got {side!r}")
    # Lower bound = alpha-quantile of Beta(k, n - k + 1) (Clopper & Pearson 1934). Upper
    # bound = (1 - alpha)-quantile of Beta(k + 1, n - k); written as 1 minus the lower
    # bound of the complement count so tiny alpha keeps its precision.
    count = k_arr if side == "lower" else n_arr - k_arr
    safe = np.where(count > 0, count, 1.0)
    lower = np.where(count > 0, special.betaincinv(safe, n_arr - safe + 1, alpha), 0.0)
    bound = lower if side == "lower" else 1.0 - lower
    return float(bound) if bound.ndim == 0 else bound


class EpsilonBound(NamedTuple):
    """The result of :func:`epsilon_lower_bound` (unpacks as a 3-tuple).

    Attributes
    ----------
    epsilon_lower:
        the certified lower bound on epsilon (0.0 when nothing is certified).
    direction:
        which inequality attains it, e.g. ``"event, x over x'"`` for
        ``Pr[S | x] <= e^eps Pr[S | x'] + delta`` or ``"complement, x' over x"`` for
        ``Pr[not S | x'] <= e^eps Pr[not S | x] + delta``.
    epsilon_point:
        the plug-in estimate ``ln((p_hat - delta) / q_hat)`` for that
        direction, floored at 0 (``inf`` when the denominator count is 0).

    >>> EpsilonBound(0.5, "event, x over x'", 0.7).epsilon_lower
    0.5
    """

    epsilon_lower: float
    direction: Direction
    epsilon_point: float


def _log_ratio(num: np.ndarray | float, den: np.ndarray | float) -> np.ndarray:
    """ln(num / den) with -inf for num <= 0 and +inf for den == 0 < num."""
    num_arr, den_arr = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(num_arr) - np.log(den_arr)
    out = np.where(num_arr <= 0, -np.inf, out)
    return np.where((den_arr <= 0) & (num_arr > 0), np.inf, out)


def oriented_bounds(
    k_x: np.ndarray | int,
    n_x: int,
    k_xp: np.ndarray | int,
    n_xp: int,
    delta: float,
    alpha_each: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower bounds (arrays, like the counts) for "event, x over x'" and "complement, x' over x".

    Both need only p >= p_lo and q <= q_hi: the Clopper–Pearson bounds of a complement
    are 1 minus those of the event (1 - q >= 1 - q_hi, 1 - p <= 1 - p_lo), so the two
    directions share two one-sided intervals and a union bound over those two suffices.

    >>> forward, backward = oriented_bounds(600, 1000, 300, 1000, 0.0, 0.025)
    >>> bool(0.5 < forward < 0.6932 and backward < forward)
    True
    """
    p_lo = clopper_pearson(k_x, n_x, alpha_each, "lower")
    q_hi = clopper_pearson(k_xp, n_xp, alpha_each, "upper")
    forward = _log_ratio(np.asarray(p_lo) - delta, q_hi)  # Pr[S|x] <= e^eps Pr[S|x'] + delta
    backward = _log_ratio(1.0 - np.asarray(q_hi) - delta, 1.0 - np.asarray(p_lo))
    return forward, backward


def check_level(delta: float, confidence: float) -> None:
    """Check the level of a statement: ``0 <= delta < 1`` and ``0 < confidence < 1``.

    Raises
    ------
    ParameterError
        Naming the field that is out of range.

    >>> check_level(0.0, 0.95)
    """
    if not 0.0 <= delta < 1.0:
        raise ParameterError(f"delta must be in [0, 1), got {delta}")
    if not 0.0 < confidence < 1.0:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence}")


def epsilon_lower_bound(
    k_x: int,
    n_x: int,
    k_xp: int,
    n_xp: int,
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    oriented: bool = False,
) -> EpsilonBound:
    """Certified lower bound on epsilon from the hit counts of one fixed event S.

    ``k_x`` of ``n_x`` views under x fell in S, ``k_xp`` of ``n_xp`` under x'. S must have
    been fixed before these samples were drawn. The bound is the largest of
    ``ln((lo - delta) / hi)`` over the directions considered, each with one-sided
    Clopper–Pearson bounds; the error probability ``1 - confidence`` is split evenly
    (Bonferroni) over the one-sided bounds used, so all directions hold at once.

    Parameters
    ----------
    k_x, n_x:
        hits and trials under x.
    k_xp, n_xp:
        hits and trials under x'.
    delta:
        the delta of the (epsilon, delta) claim being tested, ``0 <= delta < 1``.
    confidence:
        probability that the returned bound is valid.
    oriented:
        False (default): all four inequalities (S and its complement, x over
        x' and x' over x) are considered; they need the four bounds p_lo, p_hi,
        q_lo, q_hi, each at ``alpha / 4``. True: only "event, x over x'" and
        "complement, x' over x"; both need just p_lo and q_hi, each at
        ``alpha / 2``. Either is sound for any S fixed in advance; True is tighter
        when S was chosen (on other samples) as the event likelier under x, and
        useless when S is in fact likelier under x'.

    Returns
    -------
    An :class:`EpsilonBound` ``(epsilon_lower, direction, epsilon_point)``.

    Raises
    ------
    ParameterError
        for a delta or confidence out of range or impossible counts.

    >>> b = epsilon_lower_bound(666_667, 10**6, 333_333, 10**6, oriented=True)
    >>> round(b.epsilon_lower, 3), b.direction, round(b.epsilon_point, 3)
    (0.689, "event, x over x'", 0.693)
    >>> round(epsilon_lower_bound(333_333, 10**6, 666_667, 10**6).epsilon_lower, 3)
    0.688
    """
    check_level(delta, confidence)
    alpha = 1.0 - confidence
    alpha_each = alpha / 2 if oriented else alpha / 4
    forward, backward = oriented_bounds(k_x, n_x, k_xp, n_xp, delta, alpha_each)
    p_hat, q_hat = k_x / n_x, k_xp / n_xp
    candidates: list[tuple[float, Direction, float, float]] = [
        (float(forward), "event, x over x'", p_hat, q_hat),
        (float(backward), "complement, x' over x", 1 - q_hat, 1 - p_hat),
    ]
    if not oriented:
        rev_forward, rev_backward = oriented_bounds(k_xp, n_xp, k_x, n_x, delta, alpha_each)
        candidates += [
            (float(rev_forward), "event, x' over x", q_hat, p_hat),
            (float(rev_backward), "complement, x over x'", 1 - p_hat, 1 - q_hat),
        ]
    lower, direction, num, den = max(candidates, key=lambda c: c[0])
    point = float(_log_ratio(num - delta, den))
    return EpsilonBound(max(lower, 0.0), direction, max(point, 0.0))
