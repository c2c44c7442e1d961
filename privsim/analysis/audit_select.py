"""How a DP audit chooses its event: selectors that propose events on the selection sample.

The selection sample (views under x and x', disjoint from the estimation sample) is
the only data that may shape the event: whatever is done here, the Clopper–Pearson
bounds of :mod:`privsim.analysis.audit_bounds` on the estimation sample stay exact. The
selection follows DP-Sniper (Bichsel et al., S&P 2021) and StatDP (Ding et al., CCS
2018): a score or ranking is fitted on one part of the selection sample, the cut that
makes it an event is chosen on another.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import optimize, special, stats

from privsim.analysis.audit_bounds import _log_ratio, check_level, clopper_pearson, oriented_bounds
from privsim.analysis.audit_events import Event, LinearScore, OutcomeSetEvent, ScoreFn, ThresholdEvent, row_keys
from privsim.errors import ParameterError

__all__ = ["LOGISTIC_MAX_ROWS", "SelectionKind", "check_views", "fit_logistic_score", "resolve_kind", "select_event"]

SelectionKind = Literal["auto", "discrete", "score", "column", "logistic"]


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

    Parameters
    ----------
    views_x, views_xp:
        selection samples (rows x features) under x and x'.
    columns:
        the feature names.
    l2:
        ridge penalty on the standardized weights (not on the intercept).
    max_rows:
        at most this many rows per input are used (an even stride through each).

    Returns
    -------
    A :class:`LinearScore`.

    >>> rng = np.random.default_rng(np.random.SeedSequence(1))
    >>> vx = rng.normal(size=(2000, 2)) + [1.0, 0.0]
    >>> vxp = rng.normal(size=(2000, 2))
    >>> s = fit_logistic_score(vx, vxp, ["signal", "noise"])
    >>> s.columns[int(np.argmax(np.abs(s.weights)))]
    'signal'
    """
    views_x, views_xp = (views[:: max(1, -(-len(views) // max_rows))] for views in (views_x, views_xp))
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


def _selection_alpha(confidence: float, n_candidates: int, n_select: int, n_estimate: int,
                     z_select: float | None = None) -> float:
    """Per-bound error level of the selection criterion.

    The criterion is a lower bound meant to hold simultaneously for all candidate events
    (z_select: Bonferroni over the candidates and the two bounds, capped at
    ``_Z_SELECT_NESTED`` for nested families), widened by the width the final bound will
    have on the estimation sample, expressed in selection-sample units
    (z_final * sqrt(n_select / n_estimate)). Maximizing it instead of the raw ratio, or
    a per-event bound, keeps the noisiest (rarest) candidate from winning: over
    thousands of nested threshold events the largest standardized noise exceeds the
    1.96 of a single event. A given ``z_select`` stands instead (the pick among a few proposals).
    """
    alpha = 1.0 - confidence
    if z_select is None:
        z_select = min(stats.norm.isf(alpha / (2 * max(n_candidates, 1))), _Z_SELECT_NESTED)
    z_final = stats.norm.isf(alpha / 2)
    return float(stats.norm.sf(z_select + z_final * math.sqrt(n_select / n_estimate)))


def _selection_criterion(
    k_x: np.ndarray, n_x: int, k_xp: np.ndarray, n_xp: int, delta: float, alpha_each: float
) -> np.ndarray:
    """For each candidate S (likelier under x), a conservative forecast of its bound."""
    forward, backward = oriented_bounds(k_x, n_x, k_xp, n_xp, delta, alpha_each)
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
    hits_x, hits_xp = (s.size - np.searchsorted(np.sort(s), cuts, side="left") for s in (s_x, s_xp))  # #{s >= c}
    # The events {s >= c}, then {s < c}: the first best of all is that of the side with the
    # larger maximum ({s >= c} on a tie), and the first best of that side.
    best = _criterion_argmax(np.concatenate([hits_x, n_x - hits_x]), n_x,
                             np.concatenate([hits_xp, n_xp - hits_xp]), n_xp, delta, alpha_each)
    if best < cuts.size:
        return float(cuts[best]), ">="
    return float(cuts[best - cuts.size]), "<"


_ARGMAX_CHUNK = 128
# The counts at which the exact bounds are computed to bound every candidate's criterion from
# above: every count up to _GRID_DENSE, then a geometric grid of ratio 1 + _GRID_STEP.
_GRID_DENSE = 256
_GRID_STEP = 0.005


def _count_grid(n: int) -> np.ndarray:
    """The counts 0..n at which :func:`_bound_ceilings` reads exact bounds (sorted, 0 and n included)."""
    dense = np.arange(min(n, _GRID_DENSE) + 1, dtype=float)
    if n <= _GRID_DENSE:
        return dense
    steps = math.ceil(math.log(n / _GRID_DENSE) / math.log1p(_GRID_STEP))
    return np.union1d(dense, np.round(np.geomspace(_GRID_DENSE, n, steps + 1)))


@functools.lru_cache(maxsize=16)
def _grid_bounds(n: int, alpha: float, side: Literal["lower", "upper"]) -> tuple[np.ndarray, np.ndarray]:
    """The grid of counts of n trials and the Clopper–Pearson bounds at them (read-only;
    kept: an audit cuts many scores on rows of one size, mostly at one level, the
    criterion's z being capped for a large family)."""
    grid = _count_grid(n)
    bounds = np.asarray(clopper_pearson(grid, n, alpha, side))
    grid.flags.writeable = bounds.flags.writeable = False
    return grid, bounds


def _bound_ceilings(k_x: np.ndarray, n_x: int, k_xp: np.ndarray, n_xp: int,
                    alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """At little cost, an upper bound of each Clopper–Pearson lower bound of p (k_x of n_x)
    and a lower bound of each upper bound of q (k_xp of n_xp); counts may be fractional.

    A lower bound is below the rate and an upper one above. Both bounds also grow with
    the count, so where there are more counts than grid points, the bounds at the grid
    counts next above k_x (for p) and next below k_xp (for q) bound them as well, within
    a ratio 1 + _GRID_STEP of the counts: far closer than the rates for a rare event.
    """
    p_up, q_down = k_x / n_x, k_xp / n_xp
    if k_x.size > 2 * _count_grid(max(n_x, n_xp)).size:
        grid_x, lower = _grid_bounds(n_x, alpha, "lower")
        grid_xp, upper = _grid_bounds(n_xp, alpha, "upper")
        p_up = np.minimum(p_up, lower[np.searchsorted(grid_x, k_x, side="left")])
        q_down = np.maximum(q_down, upper[np.searchsorted(grid_xp, k_xp, side="right") - 1])
    return p_up, q_down


def _pruned_argmax(ceiling: np.ndarray, exact: Callable[[np.ndarray], np.ndarray]) -> tuple[int, float]:
    """The first index of the maximum of ``exact(indices)`` over all candidates, and that maximum,
    given a ``ceiling`` at or above every candidate's exact value (-inf and 0 if there are none).

    The candidates are valued exactly in decreasing order of their ceilings, in chunks,
    until the next ceiling is below the best value found: those never valued cannot equal
    it, so the first index of the maximum is the one over all candidates.
    """
    # A margin for rounding (the ceilings are computed along other paths, or at other counts).
    ceiling = ceiling + 1e-9 * (1.0 + np.abs(np.where(np.isfinite(ceiling), ceiling, 0.0)))
    order = np.argsort(-ceiling, kind="stable")
    best_value, best_index = -math.inf, None
    for start in range(0, order.size, _ARGMAX_CHUNK):
        chunk = order[start:start + _ARGMAX_CHUNK]
        if best_index is not None and ceiling[chunk[0]] < best_value:
            break
        values = exact(chunk)
        top = float(values.max())
        if best_index is None or top > best_value:
            best_value, best_index = top, int(chunk[values == top].min())
        elif top == best_value:
            best_index = min(best_index, int(chunk[values == top].min()))
    return (0, -math.inf) if best_index is None else (best_index, best_value)


def _criterion_argmax(k_x: np.ndarray, n_x: int, k_xp: np.ndarray, n_xp: int, delta: float,
                      alpha_each: float) -> int:
    """``np.argmax(_selection_criterion(k_x, n_x, k_xp, n_xp, delta, alpha_each))``, the same
    index, with the exact bounds computed only where they can reach the maximum
    (:func:`_pruned_argmax` over the ceilings of :func:`_bound_ceilings`; the
    incomplete-beta inverse was most of the cost of cutting a threshold on 2^17 rows,
    over 8000 candidates)."""
    k_x, k_xp = np.asarray(k_x, dtype=float), np.asarray(k_xp, dtype=float)
    p_up, q_down = _bound_ceilings(k_x, n_x, k_xp, n_xp, alpha_each)
    ceiling = np.maximum(_log_ratio(p_up - delta, q_down), _log_ratio(1.0 - q_down - delta, 1.0 - p_up))
    return _pruned_argmax(ceiling, lambda chunk: _selection_criterion(k_x[chunk], n_x, k_xp[chunk], n_xp, delta,
                                                                      alpha_each))[0]


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
        _, first, group = np.unique(row_keys(self.outcomes[:, kept]), return_index=True, return_inverse=True)
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
            _, group = np.unique(row_keys(self.outcomes[:, others]), return_inverse=True)
            group = group.ravel()
        else:
            group = np.zeros(len(self.outcomes), dtype=np.intp)
        row_total = self.hits_x + self.hits_xp
        group_total = np.bincount(group, weights=row_total)
        statistic = 0.0
        labels = 0  # per group, how many of the two labels are seen in it
        for hits in (self.hits_x, self.hits_xp):
            group_hits = np.bincount(group, weights=hits)
            labels = labels + (group_hits > 0)
            expected = row_total * group_hits[group] / group_total[group]
            present = hits > 0
            statistic += 2.0 * float(np.sum(hits[present] * np.log(hits[present] / expected[present])))
        dof = int(np.sum((np.bincount(group) - 1) * (labels - 1)))
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
    _, inverse = np.unique(row_keys(rows), return_inverse=True)
    inverse = inverse.ravel()
    in_s = np.bincount(inverse, weights=mask.astype(float))
    total = np.bincount(inverse)
    return bool(np.all((in_s == 0) | (in_s == total)))


def _reduced_event(outcomes: np.ndarray, mask: np.ndarray, names: Sequence[str], indices: Sequence[int],
                   moduli: Sequence[int] = ()) -> OutcomeSetEvent:
    """The event "one of the rows of ``outcomes`` that ``mask`` selects" (columns named ``names``,
    at ``indices`` in the view, with ``moduli`` if any), on the columns membership depends on:
    each one it does not depend on (on the seen rows) is dropped, greedily.

    This turns "the 2 outcomes of (z3, z5) with z3 = 1" into "z3 == 1", which reads
    better and also covers outcomes the selection sample happened not to see.
    """
    kept = list(range(outcomes.shape[1]))
    for column in range(outcomes.shape[1]):
        trial = [c for c in kept if c != column]
        if _is_function_of(outcomes[:, trial], mask):
            kept = trial
    chosen = frozenset(tuple(float(v) for v in row) for row in outcomes[mask][:, kept])
    return OutcomeSetEvent(tuple(names[c] for c in kept), tuple(indices[c] for c in kept), chosen,
                           moduli=tuple(moduli[c] for c in kept) if moduli else ())


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


def _positions(table: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The index of each of ``values`` in ``table`` (sorted, distinct); ``table.size`` where it is absent."""
    codes = np.searchsorted(table, values)
    found = codes < table.size
    found[found] = table[codes[found]] == values[found]
    return np.where(found, codes, table.size)


def _best_prefix(hits_x: np.ndarray, hits_xp: np.ndarray, cells_x: np.ndarray, n_x: int, cells_xp: np.ndarray,
                 n_xp: int, delta: float, confidence: float, n_estimate: int) -> np.ndarray | None:
    """The cells with the largest likelihood ratios (a mask), as many as the selection criterion prefers.

    The cells are ranked by a smoothed log ratio of their hits on the ranking half; the
    prefix of that ranking is chosen on the cut half, whose ``n_x`` and ``n_xp`` rows fall
    in the cells ``cells_x`` and ``cells_xp`` (rows in no cell left out). None where every
    cell has the same ratio.
    """
    # Ordering statistic only (the cut is chosen by the bound): smoothed log ratio.
    log_ratio = np.log((hits_x + 0.5) / (hits_x.sum() + 1)) - np.log((hits_xp + 0.5) / (hits_xp.sum() + 1))
    order = np.argsort(-log_ratio, kind="stable")
    sorted_ratio = log_ratio[order]
    # Cut only between different ratios, so tied cells are kept together.
    ends = np.flatnonzero(sorted_ratio[:-1] > sorted_ratio[1:])
    if ends.size == 0:
        return None
    rank_of = np.empty(order.size, dtype=np.intp)
    rank_of[order] = np.arange(order.size)
    prefix = [np.cumsum(np.bincount(rank_of[cells], minlength=order.size))[ends] for cells in (cells_x, cells_xp)]
    alpha_each = _selection_alpha(confidence, ends.size, min(n_x, n_xp), n_estimate)
    criterion = _selection_criterion(prefix[0], n_x, prefix[1], n_xp, delta, alpha_each)
    mask = np.zeros(order.size, dtype=bool)
    mask[order[: ends[int(np.argmax(criterion))] + 1]] = True
    return mask


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
    # Rows whose outcome the ranking half never saw fall outside every prefix (the table's
    # outcomes are sorted by their keys).
    keys = row_keys(table.outcomes)
    found = [f[f < keys.size] for f in (_positions(keys, row_keys(v[:, relevant])) for v in (cut_x, cut_xp))]
    mask = _best_prefix(table.hits_x, table.hits_xp, found[0], len(cut_x), found[1], len(cut_xp), delta, confidence,
                        n_estimate)
    if mask is None:  # one ratio class: no event separates x from x'
        mask = np.ones(len(table.outcomes), dtype=bool)
    return _reduced_event(table.outcomes, mask, [columns[i] for i in relevant], relevant)


def check_views(views: np.ndarray, columns: Sequence[str], label: str) -> np.ndarray:
    """The views as a float array, checked: 2-D, one column per name, at least one row.

    Raises
    ------
    ParameterError
        Naming the input (``label``) and the shape that was wrong.

    >>> check_views([[1, 0]], ["a", "b"], "x").dtype
    dtype('float64')
    """
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
    seen = np.unique(row_keys(views_x[:0]))
    for chunk in _chunks(views_x, views_xp):
        seen = np.union1d(seen, row_keys(chunk))
        if seen.size > limit:  # settled without sorting the whole sample
            return False
    return True


def resolve_kind(
    views_x: np.ndarray, views_xp: np.ndarray, score: ScoreFn | None, kind: SelectionKind
) -> SelectionKind:
    """The kind :func:`select_event` uses for ``kind="auto"``: the view's shape decides.

    ``"discrete"`` for integer views with few outcomes, else ``"score"`` when a score is
    given, ``"column"`` when one column varies, ``"logistic"`` otherwise.

    >>> resolve_kind(np.zeros((40, 1)), np.ones((40, 1)), None, "auto")
    'discrete'
    """
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

    Parameters
    ----------
    views_x, views_xp:
        selection samples (rows x features) under x and x'.
    columns:
        the feature names (one per column).
    score:
        optional callable ``views -> 1-D array`` (e.g. the protocol's own
        log-likelihood ratio); thresholded when the view is not discrete.
    kind:
        ``"auto"``: ``"discrete"`` if every value is an integer and the sample
        has few distinct rows (at most 4096, and 20 pooled rows per outcome),
        else ``"score"`` if a score is given, else ``"column"`` if only one column
        varies, else ``"logistic"``. ``"discrete"``: the set of outcomes with the
        largest estimated likelihood ratios, cut where the bound is best, reduced
        to the columns it depends on. ``"score"``, ``"column"``, ``"logistic"``: a
        threshold event ``{s >= c}`` or ``{s < c}`` on the given score, the single
        varying column, or a logistic-regression score (:func:`fit_logistic_score`).
    delta, confidence:
        the level the bound will be computed at.
    n_estimate:
        trials per input the event will be estimated on (default: as
        many as in the selection sample).

    Returns
    -------
    An :class:`OutcomeSetEvent` or a :class:`ThresholdEvent`.

    Raises
    ------
    ParameterError
        for mis-shaped views, non-finite values, a ``"score"`` kind
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
    check_level(delta, confidence)
    views_x = check_views(views_x, columns, "x")
    views_xp = check_views(views_xp, columns, "x'")
    if not all(np.isfinite(chunk).all() for chunk in _chunks(views_x, views_xp)):
        raise ParameterError("views must be finite (no nan or inf) to select an event")
    if n_estimate is None:
        n_estimate = min(len(views_x), len(views_xp))
    if n_estimate < 1:
        raise ParameterError(f"n_estimate must be at least 1, got {n_estimate}")
    chosen = resolve_kind(views_x, views_xp, score, kind)
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
