"""Statistics of a DP audit: from sampled views to a sound epsilon lower bound.

An audit samples a coalition's view under two neighbouring inputs ``x`` and ``x'``
(each view a 2-D float array, trials x features, with named columns). It spends one
part of the samples on *choosing* a distinguishing event S (the selection sample) and
the other, disjoint part on *estimating* ``p = Pr[S | x]`` and ``q = Pr[S | x']`` (the
estimation sample), in the spirit of DP-Sniper (Bichsel et al., S&P 2021) and StatDP
(Ding et al., CCS 2018). Because S is fixed before the estimation sample is drawn, the
one-sided Clopper–Pearson bounds on p and q are exact, and

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

Streaming: :func:`audit_batches` pulls batches from a callable, keeps the selection
sample (a bounded number of batches) only until the event is chosen, then counts event
hits one batch per input at a time (:class:`EventCounts`), so an audit of 10^6 trials
never holds 10^6 views.

Example (randomized response at eps = ln 2 on a one-bit view):

>>> rng = np.random.default_rng(np.random.SeedSequence(7))
>>> def batch(which: str, index: int) -> np.ndarray:
...     p_one = 2 / 3 if which == "x" else 1 / 3
...     return (rng.random((10_000, 1)) < p_one).astype(float)
>>> result = audit_batches(batch, 4, 16, ["z0"])
>>> result.event, result.direction
('z0 == 1', "x over x'")
>>> 0.6 < result.epsilon_lower < math.log(2) < result.epsilon_point + 0.05
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np
from scipy import optimize, special, stats

from privsim.errors import ParameterError

__all__ = [
    "DEFAULT_SELECT_FRACTION",
    "AuditStatsResult",
    "Direction",
    "EpsilonBound",
    "Event",
    "EventCounts",
    "LinearScore",
    "OutcomeSetEvent",
    "SelectionKind",
    "ThresholdEvent",
    "audit_batches",
    "choose_event",
    "result_from_counts",
    "clopper_pearson",
    "epsilon_lower_bound",
    "fit_logistic_score",
    "plan_split",
    "select_event",
]

Side = Literal["lower", "upper"]
Which = Literal["x", "xp"]
SelectionKind = Literal["auto", "discrete", "score", "column", "logistic"]
Direction = Literal[
    "event, x over x'",
    "complement, x' over x",
    "event, x' over x",
    "complement, x over x'",
]
ScoreFn = Callable[[np.ndarray], np.ndarray]

#: Share of the trials (per input) that :func:`plan_split` gives to event selection.
#: Measured on randomized response and the Laplace mechanism at 10^6 trials: 0.1 to
#: 0.3 all meet the power targets; 0.2 leaves room for harder, higher-dimensional views.
DEFAULT_SELECT_FRACTION = 0.2

# A discrete view is treated outcome by outcome only when the selection sample has at
# least this many rows per distinct outcome (both inputs pooled), so that per-outcome
# likelihood ratios are estimated, not guessed.
_MIN_ROWS_PER_OUTCOME = 20
_MAX_OUTCOMES = 4096
# Threshold events are searched over at most this many cuts (quantiles of the pooled
# selection scores); a finer grid only chases noise.
_MAX_CUTS = 4096
_GAP_CUTS = 256
# Cap on the selection criterion's z for the candidates' noise. The candidates are nested
# events (thresholds, prefixes of a ranking), so the supremum of their standardized noise
# grows only like sqrt(2 ln ln n) (Darling–Erdős), about 3 at the sample sizes of an
# audit, not like the Bonferroni z over thousands of candidates (4.2 for 8192): a larger
# z needlessly steers selection away from rare events where the loss is largest
# (Gaussian tails). Measured: 2.5 to 3.5 give the same power; 1.96 lets noise win.
_Z_SELECT_NESTED = 3.0
# In a discrete view, a column is dropped before outcomes are ranked unless the G-test
# of "the label (x or x') is independent of the column given the other columns" rejects
# at this level: irrelevant columns (other parties' bits) only add noisy outcomes.
_COLUMN_TEST_LEVEL = 1e-3


# --------------------------------------------------------------------------------------
# Clopper–Pearson and the epsilon bound


def clopper_pearson(k: int | np.ndarray, n: int | np.ndarray, alpha: float, side: Side) -> float | np.ndarray:
    """One-sided exact (Clopper–Pearson) confidence bound for a binomial proportion.

    Args:
        k: number of successes, ``0 <= k <= n`` (an int or an array, broadcast with n).
        n: number of trials, ``n >= 1``.
        alpha: error probability of the one-sided bound, ``0 < alpha < 1``.
        side: ``"lower"``: ``Pr[p < bound] <= alpha``; ``"upper"``: ``Pr[p > bound] <= alpha``.

    Returns:
        The bound, a float for scalar input, else an array. The lower bound for k = 0 is
        0 and the upper bound for k = n is 1.

    Raises:
        ParameterError: for k outside [0, n], n < 1, alpha outside (0, 1) or a bad side.

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
    if side == "lower":
        # Lower bound = alpha-quantile of Beta(k, n - k + 1) (Clopper & Pearson 1934).
        safe_k = np.where(k_arr > 0, k_arr, 1.0)
        bound = np.where(k_arr > 0, special.betaincinv(safe_k, n_arr - safe_k + 1, alpha), 0.0)
    elif side == "upper":
        # Upper bound = (1 - alpha)-quantile of Beta(k + 1, n - k); written through the
        # lower tail of the complement count so tiny alpha keeps its precision.
        miss = n_arr - k_arr
        safe_miss = np.where(miss > 0, miss, 1.0)
        lower_of_miss = special.betaincinv(safe_miss, n_arr - safe_miss + 1, alpha)
        bound = np.where(miss > 0, 1.0 - lower_of_miss, 1.0)
    else:
        raise ParameterError(f"side must be 'lower' or 'upper', got {side!r}")
    return float(bound) if bound.ndim == 0 else bound


class EpsilonBound(NamedTuple):
    """The result of :func:`epsilon_lower_bound` (unpacks as a 3-tuple).

    Attributes:
        epsilon_lower: the certified lower bound on epsilon (0.0 when nothing is certified).
        direction: which inequality attains it, e.g. ``"event, x over x'"`` for
            ``Pr[S | x] <= e^eps Pr[S | x'] + delta`` or ``"complement, x' over x"`` for
            ``Pr[not S | x'] <= e^eps Pr[not S | x] + delta``.
        epsilon_point: the plug-in estimate ``ln((p_hat - delta) / q_hat)`` for that
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


def _oriented_bounds(
    k_x: np.ndarray | int,
    n_x: int,
    k_xp: np.ndarray | int,
    n_xp: int,
    delta: float,
    alpha_each: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower bounds for "event, x over x'" and "complement, x' over x".

    Both need only p >= p_lo and q <= q_hi: the Clopper–Pearson bounds of a complement
    are 1 minus those of the event (1 - q >= 1 - q_hi, 1 - p <= 1 - p_lo), so the two
    directions share two one-sided intervals and a union bound over those two suffices.
    """
    p_lo = clopper_pearson(k_x, n_x, alpha_each, "lower")
    q_hi = clopper_pearson(k_xp, n_xp, alpha_each, "upper")
    forward = _log_ratio(np.asarray(p_lo) - delta, q_hi)  # Pr[S|x] <= e^eps Pr[S|x'] + delta
    backward = _log_ratio(1.0 - np.asarray(q_hi) - delta, 1.0 - np.asarray(p_lo))
    return forward, backward


def _check_level(delta: float, confidence: float) -> None:
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

    Args:
        k_x, n_x: hits and trials under x.
        k_xp, n_xp: hits and trials under x'.
        delta: the delta of the (epsilon, delta) claim being tested, ``0 <= delta < 1``.
        confidence: probability that the returned bound is valid.
        oriented: False (default): all four inequalities (S and its complement, x over
            x' and x' over x) are considered; they need the four bounds p_lo, p_hi,
            q_lo, q_hi, each at ``alpha / 4``. True: only "event, x over x'" and
            "complement, x' over x"; both need just p_lo and q_hi, each at
            ``alpha / 2``. Either is sound for any S fixed in advance; True is tighter
            when S was chosen (on other samples) as the event likelier under x, and
            useless when S is in fact likelier under x'.

    Returns:
        An :class:`EpsilonBound` ``(epsilon_lower, direction, epsilon_point)``.

    Raises:
        ParameterError: for a delta or confidence out of range or impossible counts.

    >>> b = epsilon_lower_bound(666_667, 10**6, 333_333, 10**6, oriented=True)
    >>> round(b.epsilon_lower, 3), b.direction, round(b.epsilon_point, 3)
    (0.689, "event, x over x'", 0.693)
    >>> round(epsilon_lower_bound(333_333, 10**6, 666_667, 10**6).epsilon_lower, 3)
    0.688
    """
    _check_level(delta, confidence)
    alpha = 1.0 - confidence
    alpha_each = alpha / 2 if oriented else alpha / 4
    forward, backward = _oriented_bounds(k_x, n_x, k_xp, n_xp, delta, alpha_each)
    p_hat, q_hat = k_x / n_x, k_xp / n_xp
    candidates: list[tuple[float, Direction, float, float]] = [
        (float(forward), "event, x over x'", p_hat, q_hat),
        (float(backward), "complement, x' over x", 1 - q_hat, 1 - p_hat),
    ]
    if not oriented:
        rev_forward, rev_backward = _oriented_bounds(k_xp, n_xp, k_x, n_x, delta, alpha_each)
        candidates += [
            (float(rev_forward), "event, x' over x", q_hat, p_hat),
            (float(rev_backward), "complement, x over x'", 1 - p_hat, 1 - q_hat),
        ]
    lower, direction, num, den = max(candidates, key=lambda c: c[0])
    point = float(_log_ratio(num - delta, den))
    return EpsilonBound(max(lower, 0.0), direction, max(point, 0.0))


# --------------------------------------------------------------------------------------
# Events


@runtime_checkable
class Event(Protocol):
    """A set S of views, decided row by row.

    >>> isinstance(ThresholdEvent(0.5, ">=", column=0, name="y"), Event)
    True
    """

    def contains(self, views: np.ndarray) -> np.ndarray:
        """Boolean array (one entry per row of ``views``): is the view in S?"""
        ...

    def complement(self) -> Event:
        """The event "not S"."""
        ...

    def describe(self) -> str:
        """A human-readable description of S, e.g. ``"y >= 0.97"``."""
        ...


_COMPLEMENT_OP = {">=": "<", "<": ">=", "<=": ">", ">": "<="}


@dataclass(frozen=True, eq=False)
class ThresholdEvent:
    """The event ``{value <op> cut}`` on one column or on a score of the whole view.

    Args:
        cut: the threshold.
        op: one of ``">="``, ``"<"``, ``"<="``, ``">"``.
        column: index of the thresholded column in the view (when ``score`` is None).
        name: what is thresholded, for :meth:`describe` (a column name or ``"score"``).
        score: a callable ``views -> 1-D array``; when given, it is thresholded instead
            of a column.

    >>> e = ThresholdEvent(1.0, ">=", column=0, name="y")
    >>> e.contains(np.array([[0.5], [1.0], [2.0]])).tolist(), e.describe()
    ([False, True, True], 'y >= 1')
    >>> e.complement().describe()
    'y < 1'
    """

    cut: float
    op: Literal[">=", "<", "<=", ">"] = ">="
    column: int | None = None
    name: str = "score"
    score: ScoreFn | None = None

    def __post_init__(self) -> None:
        if self.op not in _COMPLEMENT_OP:
            raise ParameterError(f"op must be one of >=, <, <=, >; got {self.op!r}")
        if (self.column is None) == (self.score is None):
            raise ParameterError("a ThresholdEvent needs exactly one of column and score")

    def values(self, views: np.ndarray) -> np.ndarray:
        """The thresholded value of every row (the column, or the score).

        >>> ThresholdEvent(0.0, column=1, name="b").values(np.array([[1.0, 2.0]])).tolist()
        [2.0]
        """
        if self.score is not None:
            values = np.asarray(self.score(views), dtype=float)
            if values.shape != (views.shape[0],):
                raise ParameterError(
                    f"score must return one value per row, shape ({views.shape[0]},); got {values.shape}"
                )
            return values
        return np.asarray(views[:, self.column], dtype=float)

    def contains(self, views: np.ndarray) -> np.ndarray:
        """Boolean array: does each row satisfy ``value <op> cut``? (See the class.)"""
        values = self.values(views)
        if self.op == ">=":
            return values >= self.cut
        if self.op == "<":
            return values < self.cut
        if self.op == "<=":
            return values <= self.cut
        return values > self.cut

    def complement(self) -> ThresholdEvent:
        """The same threshold with the opposite strict/non-strict comparison."""
        return ThresholdEvent(self.cut, _COMPLEMENT_OP[self.op], self.column, self.name, self.score)

    def describe(self) -> str:
        """E.g. ``"y >= 0.97"`` or ``"logistic score (+1.4*z3 ...) < -0.2"``."""
        label = self.name
        if self.score is not None and hasattr(self.score, "describe"):
            label = self.score.describe()
        return f"{label} {self.op} {self.cut:.6g}"


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One opaque, sortable key per row (rows hashed by their bytes)."""
    # + 0.0 maps -0.0 to 0.0 so that equal floats have equal bytes.
    rows = np.ascontiguousarray(np.asarray(rows, dtype=np.float64) + 0.0)
    return rows.view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()


def _fmt(value: float) -> str:
    return f"{int(value)}" if float(value).is_integer() else f"{value:.6g}"


@dataclass(frozen=True, eq=False)
class OutcomeSetEvent:
    """The event "the view, restricted to some columns, is one of these outcomes".

    Args:
        columns: names of the columns the event looks at.
        indices: their indices in the view.
        outcomes: the set of outcome tuples (one value per listed column) in S.
        member: True: S = rows whose projection is in ``outcomes``; False: S = the rest.

    >>> e = OutcomeSetEvent(("z3",), (3,), frozenset({(1.0,)}))
    >>> views = np.array([[0, 0, 0, 1.0], [1, 1, 1, 0.0]])
    >>> e.contains(views).tolist(), e.describe(), e.complement().describe()
    ([True, False], 'z3 == 1', 'not (z3 == 1)')
    """

    columns: tuple[str, ...]
    indices: tuple[int, ...]
    outcomes: frozenset[tuple[float, ...]]
    member: bool = True
    _keys: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.columns) != len(self.indices):
            raise ParameterError("columns and indices must have the same length")
        if any(len(o) != len(self.indices) for o in self.outcomes):
            raise ParameterError("every outcome needs one value per column")
        table = np.array(sorted(self.outcomes), dtype=float).reshape(len(self.outcomes), -1)
        object.__setattr__(self, "_keys", np.sort(_row_keys(table)) if len(self.indices) else table)

    def contains(self, views: np.ndarray) -> np.ndarray:
        """Boolean array: is each row's projection in (or, if not member, out of) the set?"""
        if not self.indices:  # S is everything or nothing
            hit = np.full(views.shape[0], bool(self.outcomes))
        else:
            hit = np.isin(_row_keys(views[:, list(self.indices)]), self._keys)
        return hit if self.member else ~hit

    def complement(self) -> OutcomeSetEvent:
        """The same outcome set with membership negated."""
        return OutcomeSetEvent(self.columns, self.indices, self.outcomes, not self.member)

    def describe(self) -> str:
        """E.g. ``"z3 == 1"``, ``"(a, b) in {(0, 1), (1, 1)}"`` or ``"not (...)"``."""
        outcomes = sorted(self.outcomes)
        if not self.indices:
            text = "any view" if outcomes else "no view"
        elif len(self.indices) == 1:
            values = [_fmt(o[0]) for o in outcomes]
            name = self.columns[0]
            text = f"{name} == {values[0]}" if len(values) == 1 else f"{name} in {{{', '.join(values)}}}"
        else:
            shown = ["(" + ", ".join(_fmt(v) for v in o) + ")" for o in outcomes[:8]]
            more = f", ... ({len(outcomes)} outcomes)" if len(outcomes) > 8 else ""
            text = f"({', '.join(self.columns)}) in {{{', '.join(shown)}{more}}}"
        return text if self.member else f"not ({text})"


# --------------------------------------------------------------------------------------
# Scores


@dataclass(frozen=True, eq=False)
class LinearScore:
    """A linear score ``sum_i w_i (v_i - mean_i) / scale_i + b`` of some view columns.

    Produced by :func:`fit_logistic_score` (then it is the fitted log-odds of "x"
    against "x'"), usable as the ``score`` of a :class:`ThresholdEvent`.

    Args:
        columns: names of the columns used.
        indices: their indices in the view.
        mean, scale: the standardization of each used column.
        weights: one weight per used column (on the standardized scale).
        intercept: the constant b.

    >>> s = LinearScore(("a",), (0,), np.array([1.0]), np.array([2.0]), np.array([3.0]), 0.5)
    >>> s(np.array([[3.0], [1.0]])).tolist(), s.describe()
    ([3.5, 0.5], 'logistic score (+3*a)')
    """

    columns: tuple[str, ...]
    indices: tuple[int, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    intercept: float

    def __call__(self, views: np.ndarray) -> np.ndarray:
        """The score of every row of ``views`` (a 1-D array)."""
        # Standardization folded into dense weights (zero on unused columns), so a batch
        # costs one matrix-vector product and no column gather.
        if not self.indices:
            return np.full(views.shape[0], self.intercept)
        raw_weights = self.weights / self.scale
        dense = np.zeros(max(self.indices) + 1)
        dense[list(self.indices)] = raw_weights
        offset = self.intercept - float(self.mean @ raw_weights)
        return views[:, : dense.size] @ dense + offset

    def describe(self) -> str:
        """The largest standardized weights, e.g. ``"logistic score (+1.4*z3 -0.02*z1 ...)"``."""
        order = np.argsort(-np.abs(self.weights), kind="stable")
        terms = [f"{self.weights[i]:+.3g}*{self.columns[i]}" for i in order[:4]]
        if len(order) > 4:
            terms.append(f"... {len(order) - 4} more")
        return f"logistic score ({' '.join(terms)})"


#: Rows per input used to fit the logistic score: more buys little for a linear score and
#: costs sequential time in the parent while parallel workers wait.
LOGISTIC_MAX_ROWS = 1 << 16


def fit_logistic_score(
    views_x: np.ndarray, views_xp: np.ndarray, columns: Sequence[str], l2: float = 1.0,
    max_rows: int = LOGISTIC_MAX_ROWS,
) -> LinearScore:
    """Fit an L2-regularized logistic regression of "x" (label 1) against "x'" (label 0).

    Columns that do not vary in the pooled sample are dropped; the others are
    standardized. The fit minimizes ``sum log(1 + exp(-y f)) + l2/2 |w|^2`` with L-BFGS
    (numpy and scipy only). The returned score is the fitted log-odds, so a high score
    means "looks like x".

    Args:
        views_x, views_xp: selection samples (rows x features) under x and x'.
        columns: the feature names.
        l2: ridge penalty on the standardized weights (not on the intercept).
        max_rows: at most this many rows per input are used (an even stride through each).

    Returns:
        A :class:`LinearScore`.

    >>> rng = np.random.default_rng(np.random.SeedSequence(1))
    >>> vx = rng.normal(size=(2000, 2)) + [1.0, 0.0]
    >>> vxp = rng.normal(size=(2000, 2))
    >>> s = fit_logistic_score(vx, vxp, ["signal", "noise"])
    >>> s.columns[int(np.argmax(np.abs(s.weights)))]
    'signal'
    """
    views_x = views_x[:: max(1, -(-len(views_x) // max_rows))]
    views_xp = views_xp[:: max(1, -(-len(views_xp) // max_rows))]
    # Standardized in place, without temporaries: the design is the only copy made.
    design = np.concatenate([views_x, views_xp])
    mean = design.mean(axis=0)
    design -= mean
    scale = np.sqrt(np.einsum("ij,ij->j", design, design) / len(design))
    keep = np.flatnonzero(scale > 0)
    if keep.size < design.shape[1]:
        design = design[:, keep]
    design /= scale[keep]
    labels = np.concatenate([np.ones(len(views_x)), -np.ones(len(views_xp))])

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        margin = labels * (design @ w + b)
        value = np.logaddexp(0.0, -margin).sum() + 0.5 * l2 * (w @ w)
        slope = -labels * special.expit(-margin)  # d/d f of log(1 + e^{-y f})
        grad = np.concatenate([design.T @ slope + l2 * w, [slope.sum()]])
        return float(value), grad

    fit = optimize.minimize(loss, np.zeros(keep.size + 1), jac=True, method="L-BFGS-B")
    return LinearScore(
        columns=tuple(columns[i] for i in keep),
        indices=tuple(int(i) for i in keep),
        mean=mean[keep],
        scale=scale[keep],
        weights=fit.x[:-1],
        intercept=float(fit.x[-1]),
    )


# --------------------------------------------------------------------------------------
# Event selection


def _selection_alpha(confidence: float, n_candidates: int, n_select: int, n_estimate: int) -> float:
    """Per-bound error level of the selection criterion.

    The criterion is a lower bound meant to hold simultaneously for all candidate events
    (z_select: Bonferroni over the candidates and the two bounds, capped at
    ``_Z_SELECT_NESTED`` for nested families), widened by the width the final bound will
    have on the estimation sample, expressed in selection-sample units
    (z_final * sqrt(n_select / n_estimate)). Maximizing it instead of the raw ratio, or
    a per-event bound, keeps the noisiest (rarest) candidate from winning: over
    thousands of nested threshold events the largest standardized noise exceeds the
    1.96 of a single event.
    """
    alpha = 1.0 - confidence
    z_select = min(stats.norm.isf(alpha / (2 * max(n_candidates, 1))), _Z_SELECT_NESTED)
    z_final = stats.norm.isf(alpha / 2)
    return float(stats.norm.sf(z_select + z_final * math.sqrt(n_select / n_estimate)))


def _selection_criterion(
    k_x: np.ndarray, n_x: int, k_xp: np.ndarray, n_xp: int, delta: float, alpha_each: float
) -> np.ndarray:
    """For each candidate S (likelier under x), a conservative forecast of its bound."""
    forward, backward = _oriented_bounds(k_x, n_x, k_xp, n_xp, delta, alpha_each)
    return np.maximum(forward, backward)


def _candidate_cuts(pooled: np.ndarray) -> np.ndarray:
    """Cuts c to try for {s >= c}: every distinct score, or quantiles plus the widest gaps.

    With many distinct scores a quantile grid is fine enough where the density is
    smooth; the widest gaps are added because a score driven by a discrete feature (a
    logistic score on bits) separates its classes at a gap the grid would straddle.
    """
    values = np.unique(pooled)
    if values.size > _MAX_CUTS:
        grid = np.quantile(pooled, np.linspace(0.0, 1.0, _MAX_CUTS), method="inverted_cdf")
        widest = np.argpartition(np.diff(values), -_GAP_CUTS)[-_GAP_CUTS:]
        values = np.union1d(grid, values[widest + 1])
    return values[1:]  # a cut at the minimum gives S = everything


def _select_threshold(
    s_x: np.ndarray, s_xp: np.ndarray, delta: float, confidence: float, n_estimate: int
) -> tuple[float, Literal[">=", "<"]]:
    """The cut c and side of the best event {s >= c} or {s < c} (oriented towards x)."""
    pooled = np.concatenate([s_x, s_xp])
    if not np.all(np.isfinite(pooled)):
        raise ParameterError("scores and views must be finite (no nan or inf)")
    cuts = _candidate_cuts(pooled)
    if cuts.size == 0:
        return float(pooled[0]), ">="
    n_x, n_xp = s_x.size, s_xp.size
    alpha_each = _selection_alpha(confidence, 2 * cuts.size, min(n_x, n_xp), n_estimate)
    hits_x = n_x - np.searchsorted(np.sort(s_x), cuts, side="left")  # #{s >= c}
    hits_xp = n_xp - np.searchsorted(np.sort(s_xp), cuts, side="left")
    upper = _selection_criterion(hits_x, n_x, hits_xp, n_xp, delta, alpha_each)
    lower = _selection_criterion(n_x - hits_x, n_x, n_xp - hits_xp, n_xp, delta, alpha_each)
    if upper.max() >= lower.max():
        return float(cuts[int(np.argmax(upper))]), ">="
    return float(cuts[int(np.argmax(lower))]), "<"


@dataclass(frozen=True, eq=False)
class _OutcomeTable:
    """Distinct outcomes (rows, over some columns) with their hit counts under x and x'."""

    outcomes: np.ndarray
    hits_x: np.ndarray
    hits_xp: np.ndarray

    @classmethod
    def of(cls, views_x: np.ndarray, views_xp: np.ndarray) -> _OutcomeTable:
        pooled = np.concatenate([views_x, views_xp])
        weights_x = np.concatenate([np.ones(len(views_x)), np.zeros(len(views_xp))])
        return cls(pooled, weights_x, 1.0 - weights_x).project(list(range(pooled.shape[1])))

    def project(self, kept: list[int]) -> _OutcomeTable:
        """The table of the outcomes restricted to the ``kept`` columns (counts merged)."""
        if not kept:
            return _OutcomeTable(
                self.outcomes[:1, :0], np.array([self.hits_x.sum()]), np.array([self.hits_xp.sum()])
            )
        _, first, group = np.unique(_row_keys(self.outcomes[:, kept]), return_index=True, return_inverse=True)
        group = group.ravel()
        return _OutcomeTable(
            self.outcomes[first][:, kept],
            np.bincount(group, weights=self.hits_x, minlength=first.size),
            np.bincount(group, weights=self.hits_xp, minlength=first.size),
        )

    def dependence_pvalue(self, column: int) -> float:
        """G-test p-value of "label independent of ``column`` given the other columns".

        The label is x or x'; the statistic is G = 2 sum N ln(N N_g / (N_c N_l)) over
        (group of the other columns, value of the column, label) cells, with
        sum_g (values_g - 1)(labels_g - 1) degrees of freedom (Agresti, ch. 6).
        """
        others = [c for c in range(self.outcomes.shape[1]) if c != column]
        if others:
            _, group = np.unique(_row_keys(self.outcomes[:, others]), return_inverse=True)
            group = group.ravel()
        else:
            group = np.zeros(len(self.outcomes), dtype=np.intp)
        row_total = self.hits_x + self.hits_xp
        group_total = np.bincount(group, weights=row_total)
        statistic = 0.0
        for hits in (self.hits_x, self.hits_xp):
            group_hits = np.bincount(group, weights=hits)
            expected = row_total * group_hits[group] / group_total[group]
            present = hits > 0
            statistic += 2.0 * float(np.sum(hits[present] * np.log(hits[present] / expected[present])))
        values = np.bincount(group)
        labels = (np.bincount(group, weights=self.hits_x) > 0).astype(int) + (
            np.bincount(group, weights=self.hits_xp) > 0
        )
        dof = int(np.sum((values - 1) * (labels - 1)))
        return 1.0 if dof == 0 else float(stats.chi2.sf(statistic, dof))


def _relevant_columns(table: _OutcomeTable) -> list[int]:
    """Backward elimination: drop the least dependent column while the G-test allows it."""
    kept = list(range(table.outcomes.shape[1]))
    while kept:
        projected = table.project(kept)
        pvalues = [projected.dependence_pvalue(i) for i in range(len(kept))]
        weakest = int(np.argmax(pvalues))
        if pvalues[weakest] <= _COLUMN_TEST_LEVEL:
            break
        kept.pop(weakest)
    return kept


def _is_function_of(rows: np.ndarray, mask: np.ndarray) -> bool:
    """Is membership (mask) constant on each group of equal rows?"""
    if rows.shape[1] == 0:
        return bool(mask.all() or not mask.any())
    _, inverse = np.unique(_row_keys(rows), return_inverse=True)
    inverse = inverse.ravel()
    in_s = np.bincount(inverse, weights=mask.astype(float))
    total = np.bincount(inverse)
    return bool(np.all((in_s == 0) | (in_s == total)))


def _reduce_columns(outcomes: np.ndarray, mask: np.ndarray) -> list[int]:
    """Drop, greedily, each column that membership does not depend on (on the seen rows).

    This turns "the 2 outcomes of (z3, z5) with z3 = 1" into "z3 == 1", which reads
    better and also covers outcomes the selection sample happened not to see.
    """
    kept = list(range(outcomes.shape[1]))
    for column in range(outcomes.shape[1]):
        trial = [c for c in kept if c != column]
        if _is_function_of(outcomes[:, trial], mask):
            kept = trial
    return kept


def _halves(views: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split a selection sample in two: one half fits or ranks, the other picks the cut.

    Choosing the cut on the rows that ranked the outcomes (or fitted the score) would
    favour the subsets whose noise the ranking fitted: a subset of the outcomes with
    ratio 2 then looks like ratio 2.2 and beats the whole, larger set.
    """
    if len(views) < 2:
        raise ParameterError("the selection sample needs at least 2 rows per input")
    middle = len(views) // 2
    return views[:middle], views[middle:]


def _match_rows(table_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each key in ``table_keys`` (distinct keys), or -1 where it is absent."""
    union, inverse = np.unique(np.concatenate([table_keys, keys]), return_inverse=True)
    inverse = inverse.ravel()
    position = np.full(union.size, -1)
    position[inverse[: table_keys.size]] = np.arange(table_keys.size)
    return position[inverse[table_keys.size :]]


def _select_outcome_set(
    views_x: np.ndarray,
    views_xp: np.ndarray,
    columns: Sequence[str],
    delta: float,
    confidence: float,
    n_estimate: int,
) -> OutcomeSetEvent:
    """The outcomes with the largest likelihood ratios, cut where the forecast bound is best.

    On the first half of the selection sample, outcomes are taken over the columns the
    label depends on (G-test backward elimination) and ranked by a smoothed likelihood
    ratio; on the second half, the prefix of that ranking that maximizes the selection
    criterion becomes the event.
    """
    (rank_x, cut_x), (rank_xp, cut_xp) = _halves(views_x), _halves(views_xp)
    full = _OutcomeTable.of(rank_x, rank_xp)
    relevant = _relevant_columns(full)
    table = full.project(relevant)
    # Ordering statistic only (the cut is chosen by the bound): smoothed log ratio.
    log_ratio = np.log((table.hits_x + 0.5) / (len(rank_x) + 1)) - np.log(
        (table.hits_xp + 0.5) / (len(rank_xp) + 1)
    )
    order = np.argsort(-log_ratio, kind="stable")
    sorted_ratio = log_ratio[order]
    # Cut only between different ratios, so tied outcomes are kept together.
    ends = np.flatnonzero(sorted_ratio[:-1] > sorted_ratio[1:])
    mask = np.ones(len(order), dtype=bool)  # one ratio class: no event separates x from x'
    if ends.size:
        rank_of = np.empty(len(order), dtype=np.intp)
        rank_of[order] = np.arange(len(order))
        prefix_hits = []
        for cut_views in (cut_x, cut_xp):
            found = _match_rows(_row_keys(table.outcomes), _row_keys(cut_views[:, relevant]))
            # Rows whose outcome the ranking half never saw fall outside every prefix.
            per_rank = np.bincount(rank_of[found[found >= 0]], minlength=len(order))
            prefix_hits.append(np.cumsum(per_rank)[ends])
        n_x, n_xp = len(cut_x), len(cut_xp)
        alpha_each = _selection_alpha(confidence, ends.size, min(n_x, n_xp), n_estimate)
        criterion = _selection_criterion(prefix_hits[0], n_x, prefix_hits[1], n_xp, delta, alpha_each)
        mask[:] = False
        mask[order[: ends[int(np.argmax(criterion))] + 1]] = True
    kept = _reduce_columns(table.outcomes, mask)
    chosen = {tuple(float(v) for v in row) for row in table.outcomes[mask][:, kept]}
    indices = tuple(relevant[c] for c in kept)
    return OutcomeSetEvent(tuple(columns[i] for i in indices), indices, frozenset(chosen))


def _check_views(views: np.ndarray, columns: Sequence[str], label: str) -> np.ndarray:
    views = np.asarray(views, dtype=float)
    if views.ndim != 2 or views.shape[1] != len(columns):
        raise ParameterError(
            f"views under {label} must be a 2-D array with {len(columns)} columns "
            f"(one per column name); got shape {views.shape}"
        )
    if views.shape[0] == 0:
        raise ParameterError(f"the selection sample under {label} is empty")
    return views


_CHUNK_ROWS = 16_384


def _chunks(*samples: np.ndarray) -> Iterator[np.ndarray]:
    """Row blocks of the samples, so that checks need no copy of a whole sample."""
    for views in samples:
        for start in range(0, len(views), _CHUNK_ROWS):
            yield views[start : start + _CHUNK_ROWS]


def _varying_columns(views_x: np.ndarray, views_xp: np.ndarray) -> np.ndarray:
    """Indices of the columns that take more than one value in the pooled sample."""
    low = np.minimum(views_x.min(axis=0), views_xp.min(axis=0))
    high = np.maximum(views_x.max(axis=0), views_xp.max(axis=0))
    return np.flatnonzero(low < high)


def _few_outcomes(views_x: np.ndarray, views_xp: np.ndarray) -> bool:
    """Integer-valued, at most 4096 distinct rows, and at least 20 rows per distinct row."""
    if not all(np.array_equal(chunk, np.round(chunk)) for chunk in _chunks(views_x, views_xp)):
        return False
    limit = min(_MAX_OUTCOMES, (len(views_x) + len(views_xp)) // _MIN_ROWS_PER_OUTCOME)
    seen = np.unique(_row_keys(views_x[:0]))
    for chunk in _chunks(views_x, views_xp):
        seen = np.union1d(seen, _row_keys(chunk))
        if seen.size > limit:  # settled without sorting the whole sample
            return False
    return True


def _resolve_kind(
    views_x: np.ndarray, views_xp: np.ndarray, score: ScoreFn | None, kind: SelectionKind
) -> SelectionKind:
    if kind != "auto":
        return kind
    varying = _varying_columns(views_x, views_xp)
    if varying.size == 0 or _few_outcomes(views_x, views_xp):
        return "discrete"
    if score is not None:
        return "score"
    return "column" if varying.size == 1 else "logistic"


def select_event(
    views_x: np.ndarray,
    views_xp: np.ndarray,
    columns: Sequence[str],
    score: ScoreFn | None = None,
    kind: SelectionKind = "auto",
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    n_estimate: int | None = None,
) -> Event:
    """Choose, on a selection sample, the event that best tells x from x'.

    The event S is oriented: it is the one estimated likelier under x (its complement,
    likelier under x', is covered by the "complement, x' over x" direction). Among the
    candidates, it maximizes the selection criterion ``max(ln((p_lo - delta)/q_hi),
    ln((1 - q_hi - delta)/(1 - p_lo)))`` computed on this sample with Clopper–Pearson
    bounds that hold simultaneously for all candidates (Bonferroni) and are widened by
    the width the estimation sample will add; so a rare event whose ratio is large by
    chance does not beat a frequent one whose ratio is large for a reason.

    Args:
        views_x, views_xp: selection samples (rows x features) under x and x'.
        columns: the feature names (one per column).
        score: optional callable ``views -> 1-D array`` (e.g. the protocol's own
            log-likelihood ratio); thresholded when the view is not discrete.
        kind: ``"auto"``: ``"discrete"`` if every value is an integer and the sample
            has few distinct rows (at most 4096, and 20 pooled rows per outcome),
            else ``"score"`` if a score is given, else ``"column"`` if only one column
            varies, else ``"logistic"``. ``"discrete"``: the set of outcomes with the
            largest estimated likelihood ratios, cut where the bound is best, reduced
            to the columns it depends on. ``"score"``, ``"column"``, ``"logistic"``: a
            threshold event ``{s >= c}`` or ``{s < c}`` on the given score, the single
            varying column, or a logistic-regression score (:func:`fit_logistic_score`).
        delta, confidence: the level the bound will be computed at.
        n_estimate: trials per input the event will be estimated on (default: as
            many as in the selection sample).

    Returns:
        An :class:`OutcomeSetEvent` or a :class:`ThresholdEvent`.

    Raises:
        ParameterError: for mis-shaped views, non-finite values, a ``"score"`` kind
            without a score or a ``"column"`` kind with other than one varying column.

    >>> rng = np.random.default_rng(np.random.SeedSequence(3))
    >>> vx = rng.laplace(1.0, 1.0, size=(20_000, 1))
    >>> vxp = rng.laplace(0.0, 1.0, size=(20_000, 1))
    >>> select_event(vx, vxp, ["y"]).describe()  # its complement y < 0.027 has ratio ~e
    'y >= 0.027263'
    >>> e = select_event(vx[:, :1] > 0.5, vxp[:, :1] > 0.5, ["bit"])
    >>> e.describe(), e.contains(np.array([[0.0], [1.0]])).tolist()
    ('bit == 1', [False, True])
    """
    _check_level(delta, confidence)
    views_x = _check_views(views_x, columns, "x")
    views_xp = _check_views(views_xp, columns, "x'")
    if not all(np.isfinite(chunk).all() for chunk in _chunks(views_x, views_xp)):
        raise ParameterError("views must be finite (no nan or inf) to select an event")
    if n_estimate is None:
        n_estimate = min(len(views_x), len(views_xp))
    if n_estimate < 1:
        raise ParameterError(f"n_estimate must be at least 1, got {n_estimate}")
    chosen = _resolve_kind(views_x, views_xp, score, kind)
    if chosen == "discrete":
        return _select_outcome_set(views_x, views_xp, columns, delta, confidence, n_estimate)
    if chosen == "score":
        if score is None:
            raise ParameterError("kind='score' needs a score callable")
        event = ThresholdEvent(0.0, ">=", name="score", score=score)
    elif chosen == "column":
        varying = _varying_columns(views_x, views_xp)
        if varying.size != 1:
            raise ParameterError(f"kind='column' needs exactly one varying column; {varying.size} vary")
        event = ThresholdEvent(0.0, ">=", column=int(varying[0]), name=columns[int(varying[0])])
    elif chosen == "logistic":
        # Fit on one half, cut on the other (see _halves).
        (fit_x, views_x), (fit_xp, views_xp) = _halves(views_x), _halves(views_xp)
        event = ThresholdEvent(0.0, ">=", score=fit_logistic_score(fit_x, fit_xp, columns))
    else:
        raise ParameterError(f"kind must be auto, discrete, score, column or logistic; got {kind!r}")
    cut, op = _select_threshold(event.values(views_x), event.values(views_xp), delta, confidence, n_estimate)
    return ThresholdEvent(cut, op, event.column, event.name, event.score)


# --------------------------------------------------------------------------------------
# Streaming estimation


class EventCounts:
    """Streaming hit counts of a fixed event under x and x' (mergeable across workers).

    Args:
        event: the event S, fixed before any counted batch was drawn.

    >>> counts = EventCounts(ThresholdEvent(1.0, ">=", column=0, name="y"))
    >>> counts.add(np.array([[2.0], [0.0]]), np.array([[0.0], [0.5]]))
    >>> counts.hits_x, counts.trials_x, counts.hits_xp, counts.trials_xp
    (1, 2, 0, 2)
    >>> counts.p_hat, counts.q_hat, counts.misses_x
    (0.5, 0.0, 1)
    """

    def __init__(self, event: Event) -> None:
        self.event = event
        self.hits_x = 0
        self.trials_x = 0
        self.hits_xp = 0
        self.trials_xp = 0

    def add(self, batch_views_x: np.ndarray | None, batch_views_xp: np.ndarray | None) -> None:
        """Count the hits of S in one batch under x and one under x' (either may be None)."""
        if batch_views_x is not None:
            self.hits_x += int(np.count_nonzero(self.event.contains(batch_views_x)))
            self.trials_x += int(batch_views_x.shape[0])
        if batch_views_xp is not None:
            self.hits_xp += int(np.count_nonzero(self.event.contains(batch_views_xp)))
            self.trials_xp += int(batch_views_xp.shape[0])

    def merge(self, other: EventCounts) -> EventCounts:
        """Add another worker's counts of the same event into these; returns self."""
        if other.event is not self.event:
            raise ParameterError("only counts of the same event object can be merged")
        self.hits_x += other.hits_x
        self.trials_x += other.trials_x
        self.hits_xp += other.hits_xp
        self.trials_xp += other.trials_xp
        return self

    @property
    def misses_x(self) -> int:
        """Hits of the complement under x."""
        return self.trials_x - self.hits_x

    @property
    def misses_xp(self) -> int:
        """Hits of the complement under x'."""
        return self.trials_xp - self.hits_xp

    @property
    def p_hat(self) -> float:
        """Estimated Pr[S | x]."""
        return self.hits_x / self.trials_x if self.trials_x else math.nan

    @property
    def q_hat(self) -> float:
        """Estimated Pr[S | x']."""
        return self.hits_xp / self.trials_xp if self.trials_xp else math.nan

    def bound(self, delta: float = 0.0, confidence: float = 0.95, *, oriented: bool = True) -> EpsilonBound:
        """:func:`epsilon_lower_bound` of these counts (oriented: S chosen likelier under x)."""
        if self.trials_x == 0 or self.trials_xp == 0:
            raise ParameterError("no trials counted under x or x'; add batches first")
        return epsilon_lower_bound(
            self.hits_x, self.trials_x, self.hits_xp, self.trials_xp, delta, confidence, oriented=oriented
        )


@dataclass(frozen=True)
class AuditStatsResult:
    """What an audit certifies.

    Attributes:
        epsilon_lower: lower bound on epsilon, valid with probability >= confidence.
        epsilon_point: plug-in estimate ``ln((p_hat - delta)/q_hat)`` (not a bound).
        confidence, delta: the level of the statement.
        event: description of the event E attaining the bound.
        direction: ``"x over x'"`` (``Pr[E|x] <= e^eps Pr[E|x'] + delta`` is what is
            tested) or ``"x' over x"``.
        p_hat, q_hat: estimated Pr[E | numerator input] and Pr[E | denominator input].
        p_lower, q_upper: their one-sided Clopper–Pearson bounds.
        trials: trials per input (selection plus estimation).
        trials_select, trials_estimate: trials per input spent on each part
            (for x; x' is the same when batches are equal-sized).
        selection: how the event was chosen (discrete, score, column or logistic).

    >>> r = AuditStatsResult(0.68, 0.69, 0.95, 0.0, "z3 == 1", "x over x'", 0.67, 0.33,
    ...                      0.66, 0.34, 10**6, 2 * 10**5, 8 * 10**5, "discrete")
    >>> r.epsilon_lower > 0.5
    True
    """

    epsilon_lower: float
    epsilon_point: float
    confidence: float
    delta: float
    event: str
    direction: str
    p_hat: float
    q_hat: float
    p_lower: float
    q_upper: float
    trials: int
    trials_select: int
    trials_estimate: int
    selection: str
    #: The event itself (for plots and re-use), when the result came from :func:`audit_batches`.
    event_object: Event | None = field(default=None, compare=False, repr=False)


def plan_split(n_batches: int, select_fraction: float = DEFAULT_SELECT_FRACTION) -> tuple[int, int]:
    """Split a number of batches (per input) into selection and estimation batches.

    Args:
        n_batches: batches per input, at least 2.
        select_fraction: share given to selection, in (0, 1).

    Returns:
        ``(n_batches_select, n_batches_estimate)``, each at least 1.

    >>> plan_split(50)
    (10, 40)
    """
    if n_batches < 2:
        raise ParameterError(f"an audit needs at least 2 batches per input, got {n_batches}")
    if not 0.0 < select_fraction < 1.0:
        raise ParameterError(f"select_fraction must be in (0, 1), got {select_fraction}")
    n_select = min(max(1, round(n_batches * select_fraction)), n_batches - 1)
    return n_select, n_batches - n_select


def _collect(sample_batch: Callable[[str, int], np.ndarray], which: Which, indices: range) -> np.ndarray:
    """The batches of one input, stacked into one array filled batch by batch."""
    first = np.asarray(sample_batch(which, indices[0]), dtype=float)
    if first.ndim != 2:
        raise ParameterError(f"sample_batch must return a 2-D array (trials x features); got {first.shape}")
    stacked = np.empty((first.shape[0] * len(indices), first.shape[1]))
    filled = 0
    for index in indices:
        batch = first if index == indices[0] else np.asarray(sample_batch(which, index), dtype=float)
        if filled + len(batch) > len(stacked) or batch.shape[1:] != stacked.shape[1:]:
            stacked = np.concatenate([stacked[:filled], batch])  # unequal batches: rare, so grow
        else:
            stacked[filled : filled + len(batch)] = batch
        filled += len(batch)
        del batch
    del first
    return stacked[:filled]


def audit_batches(
    sample_batch: Callable[[str, int], np.ndarray],
    n_batches_select: int,
    n_batches_estimate: int,
    columns: Sequence[str],
    score: ScoreFn | None = None,
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    kind: SelectionKind = "auto",
) -> AuditStatsResult:
    """Run the audit statistics over streamed batches of views.

    Batches ``0 .. n_batches_select - 1`` of each input form the selection sample, which
    chooses the event (:func:`select_event`) and is then dropped; batches
    ``n_batches_select .. n_batches_select + n_batches_estimate - 1`` are drawn one per
    input at a time and only counted (:class:`EventCounts`). Each ``(which, index)`` is
    requested exactly once. Memory: the selection sample, plus (for a logistic score) a
    standardized copy of its fitting half, plus one batch per input. The result holds at
    the stated confidence: the event is independent of the estimation batches, and the
    two oriented directions share the bounds p_lo and q_hi, each at
    ``(1 - confidence) / 2``.

    Args:
        sample_batch: ``sample_batch(which, index)`` returns the views of batch
            ``index`` under ``which`` (``"x"`` or ``"xp"``), a 2-D array with one column
            per name in ``columns``. Different indices must be independent draws.
        n_batches_select, n_batches_estimate: batches per input for each part (see
            :func:`plan_split`).
        columns: the view's column names.
        score: optional score callable, see :func:`select_event`.
        delta, confidence: the level of the statement.
        kind: how to choose the event, see :func:`select_event`.

    Returns:
        An :class:`AuditStatsResult`.

    Raises:
        ParameterError: for bad counts, levels or mis-shaped batches.

    >>> rng = np.random.default_rng(np.random.SeedSequence(5))
    >>> def batch(which: str, index: int) -> np.ndarray:
    ...     return rng.laplace(1.0 if which == "x" else 0.0, 1.0, size=(50_000, 1))
    >>> r = audit_batches(batch, 2, 8, ["y"])
    >>> r.selection, 0.9 < r.epsilon_lower <= 1.0
    ('column', True)
    """
    _check_level(delta, confidence)
    if n_batches_select < 1 or n_batches_estimate < 1:
        raise ParameterError(
            "n_batches_select and n_batches_estimate must be at least 1, got "
            f"{n_batches_select} and {n_batches_estimate}"
        )
    select_x = _collect(sample_batch, "x", range(n_batches_select))
    select_xp = _collect(sample_batch, "xp", range(n_batches_select))
    event, selection = choose_event(select_x, select_xp, columns, n_batches_select, n_batches_estimate, score,
                                    delta=delta, confidence=confidence, kind=kind)
    trials_select = select_x.shape[0]
    del select_x, select_xp  # the selection sample is not needed any more

    counts = EventCounts(event)
    for index in range(n_batches_select, n_batches_select + n_batches_estimate):
        batch_x = _check_views(sample_batch("x", index), columns, "x")
        batch_xp = _check_views(sample_batch("xp", index), columns, "x'")
        counts.add(batch_x, batch_xp)
        del batch_x, batch_xp
    return result_from_counts(counts, delta, confidence, trials_select, selection)


def choose_event(
    select_x: np.ndarray,
    select_xp: np.ndarray,
    columns: Sequence[str],
    n_batches_select: int,
    n_batches_estimate: int,
    score: ScoreFn | None = None,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    kind: SelectionKind = "auto",
) -> tuple[Event, str]:
    """Choose the event on the selection sample, as :func:`audit_batches` does.

    For drivers that compute the estimation counts elsewhere (e.g. in worker processes):
    choose here, count with :class:`EventCounts` per batch, merge, then
    :func:`result_from_counts`. Returns ``(event, selection kind)``.

    >>> rng = np.random.default_rng(1)
    >>> vx, vxp = rng.laplace(1, 1, (4000, 1)), rng.laplace(0, 1, (4000, 1))
    >>> event, kind = choose_event(vx, vxp, ["y"], 1, 4)
    >>> kind
    'column'
    """
    selection = _resolve_kind(
        _check_views(select_x, columns, "x"), _check_views(select_xp, columns, "x'"), score, kind
    )
    # Batches are assumed of one size, so the estimation sample is forecast from the first part.
    n_estimate = max(1, select_x.shape[0] * n_batches_estimate // n_batches_select)
    event = select_event(
        select_x,
        select_xp,
        columns,
        score,
        selection,
        delta=delta,
        confidence=confidence,
        n_estimate=n_estimate,
    )
    return event, selection


def result_from_counts(
    counts: EventCounts, delta: float, confidence: float, trials_select: int, selection: str
) -> AuditStatsResult:
    """Turn the final (merged) counts into the reported bound, event and direction.

    >>> counts = EventCounts(ThresholdEvent(0.5, ">=", column=0, name="z"))
    >>> counts.add(np.array([[1.0]] * 70 + [[0.0]] * 30), np.array([[1.0]] * 30 + [[0.0]] * 70))
    >>> r = result_from_counts(counts, 0.0, 0.95, 0, "column")
    >>> r.event, 0 < r.epsilon_lower < r.epsilon_point
    ('z >= 0.5', True)
    """
    bound = counts.bound(delta, confidence, oriented=True)
    alpha_each = (1.0 - confidence) / 2
    p_lo = clopper_pearson(counts.hits_x, counts.trials_x, alpha_each, "lower")
    q_hi = clopper_pearson(counts.hits_xp, counts.trials_xp, alpha_each, "upper")
    if bound.direction == "event, x over x'":
        event, direction = counts.event, "x over x'"
        p_hat, q_hat, p_lower, q_upper = counts.p_hat, counts.q_hat, p_lo, q_hi
    else:  # "complement, x' over x": E = not S, numerator x'
        event, direction = counts.event.complement(), "x' over x"
        p_hat, q_hat, p_lower, q_upper = 1 - counts.q_hat, 1 - counts.p_hat, 1 - q_hi, 1 - p_lo
    return AuditStatsResult(
        epsilon_lower=bound.epsilon_lower,
        epsilon_point=bound.epsilon_point,
        confidence=confidence,
        delta=delta,
        event=event.describe(),
        direction=direction,
        p_hat=float(p_hat),
        q_hat=float(q_hat),
        p_lower=float(p_lower),
        q_upper=float(q_upper),
        trials=trials_select + counts.trials_x,
        trials_select=trials_select,
        trials_estimate=counts.trials_x,
        selection=selection,
        event_object=event,
    )
