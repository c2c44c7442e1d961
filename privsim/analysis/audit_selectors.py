"""Candidate events chosen honestly: several selectors propose, a held-out part of the selection picks.

The selection sample (views under x and x', disjoint from the estimation sample) is cut
in two halves per input. On the first (the *proposal* half), each selector proposes its
best event; on the second (the *held-out* half), the proposals compete on the selection
criterion of :mod:`privsim.analysis.audit_select`. The best and those the held-out half
cannot tell from it after the split's cost (a runner-up's forecast at its share of the
confidence within :data:`_Z_CARRY` standard errors of the best's at the whole, at most
:data:`MAX_CARRIED` in all) go on to estimation, where the confidence is split between them
(:func:`~privsim.analysis.audit.best_of`); the view rule's, if carried, is chosen again on
the whole selection sample. No estimation view is ever looked at, so the Clopper–Pearson
bounds on the estimation sample are exactly as sound as with one selector. The selectors
(:data:`SELECTORS`):

- ``"view"``: the rule chosen by the view's shape (:func:`~privsim.analysis.audit_select.select_event`:
  per-outcome likelihood ratios for small discrete views, the protocol's score where it
  gives one, a threshold on the one varying column, or a logistic score);
- ``"naive-bayes"``: the sum over columns of per-column histogram log-likelihood ratios,
  the optimal test when messages are independent given the input (many weak messages);
- ``"logistic-lr"``: a logistic-regression score (as the view rule fits it, but on the
  whole proposal half), cut as a log-likelihood ratio (below): the right family for
  views whose log-likelihood ratio is linear, such as many weak messages;
- ``"pairs"``: the joint per-outcome likelihood ratio of the best pair of low-cardinality
  columns, residues mod 2 of integer columns included, with no marginal screen: a column
  that is independent of the input on its own (a parity bit) can matter jointly;
- ``"trees"``: gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier) on
  the columns and the residues of integer columns mod 2, 3 and 4, for interactions in
  continuous or high-cardinality views;
- ``"derived"``: one event on a derived binary feature (:mod:`privsim.analysis.audit_derived`):
  atoms, bits, parities of up to 4 bits, sums of 2 to 4 members' shares (mod 2^k and plain), magnitudes.

A score-based proposal (naive Bayes, logistic, trees) is calibrated on the proposal half's second
half (a logistic fit of the label on the score, so it reads as a log-likelihood ratio
L) and cut where a smoothed forecast of the final bound is best: under a calibrated L,
Pr[S | x'] = E_x[e^-L; S], so the rare tail events where the loss of many weak messages
lives are forecast from the x rows too, not only from the few x' rows that fall there.
The held-out pick forecasts every threshold proposal so (the view rule's included),
with the thresholded value calibrated on the held-out half, unless a test on the tail
that holds the event finds the score overconfident there (:func:`_smoothed_forecast`).

A selector runs only where it can win (the rule is in its docstring): all but the view
rule see the distinct varying columns (:func:`_distinct_columns`); logistic-lr needs 2
of them, trees 2 features, pairs 2 low-cardinality or integer columns. The tree
ensembles are small and fitted on a capped number of rows, because every tree is paid
for again on each row it scores.

Every event stays readable: it names its columns and its rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from privsim.analysis.audit_bounds import _log_ratio, check_level, clopper_pearson
from privsim.analysis.audit_derived import FAMILIES, propose_derived
from privsim.analysis.audit_events import Event, OutcomeSetEvent, ScoreFn, ThresholdEvent, _features, _names
from privsim.analysis.audit_select import (
    SelectionKind,
    _best_prefix,
    _bound_ceilings,
    _candidate_cuts,
    _halves,
    _positions,
    _pruned_argmax,
    _reduced_event,
    _selection_alpha,
    _selection_criterion,
    _varying_columns,
    check_views,
    fit_logistic_score,
    resolve_kind,
    select_event,
)
from privsim.errors import ParameterError

__all__ = ["MAX_CARRIED", "SELECTORS", "BinnedScore", "Candidate", "CalibratedScore", "TreeScore", "choose_event",
           "choose_events", "parse_selectors", "searched_families"]

#: The selectors, in order of preference on ties.
SELECTORS = ("view", "naive-bayes", "logistic-lr", "pairs", "trees", "derived")

# Naive Bayes: at most this many bins per column (exact values when there are no more
# distinct ones, else pooled quantiles), and a column enters the sum only if its own
# G-test of "independent of the label" rejects at this level: a column that carries
# nothing alone adds nothing to a sum of marginal ratios but noise.
_NB_BINS = 64
_NB_COLUMN_LEVEL = 0.01
_NB_SPAN_ROWS = 4096
# Pairs: columns with at most this many distinct values (and residues mod 2), at most
# this many of them (the first ones), so at most 2016 pairs.
_PAIR_MAX_VALUES = 16
_PAIR_MAX_COLUMNS = 64
# Trees: features and rows per input for the fit, and the small moduli of residues. The
# ensemble is small (at most _TREE_MAX_ITER trees of _TREE_LEAVES leaves, a high learning
# rate, early stopping) because every tree is paid for again on every row it scores: the
# held-out half, and, if the trees win, every estimation trial.
_TREE_MAX_FEATURES = 512
_TREE_MAX_ROWS = 1 << 14
_TREE_MAX_ITER = 40
_TREE_LEAVES = 15
_TREE_LEARNING_RATE = 0.25
_TREE_MODULI = (2, 3, 4)
# The pick among proposals: one standard error of the held-out half on top of the final
# bound's width. There are a handful of proposals, not thousands of nested cuts, so the
# guard of a nested family (3 standard errors, :mod:`audit_select`) would only steer the
# pick away from the rare events where the loss of many weak messages lives.
_Z_PICK = 1.0
# Forecasts within this of the best count as a tie (the earlier selector wins).
_PICK_TIE = 0.005
#: At most this many proposals are carried into estimation (see :func:`_pick`): each
#: costs one more count of every estimation batch and splits the confidence once more.
MAX_CARRIED = 3
# A proposal is carried beside the best when its forecast at its share of the confidence
# is within this many standard errors of the difference from the best's at the whole (a
# one-sided 2.3% test of "cannot beat the best by more than the split costs").
_Z_CARRY = 2.0
# A calibrated score's smoothed forecast of an event's rare side stands unless the
# held-out count on a tail around it (with at least _CALIBRATION_ROWS rows of that side)
# is this improbable (Poisson upper tail) under the score's estimate.
_CALIBRATION_LEVEL = 0.05
_CALIBRATION_ROWS = 25


def parse_selectors(value: str | Sequence[str] | None, field: str = "selectors") -> tuple[str, ...] | None:
    """The selectors named by ``value`` (comma-separated text, or a list), checked.

    Parameters
    ----------
    value:
        ``"view,pairs"``, ``["view", "pairs"]``, or None (all of :data:`SELECTORS`).
    field:
        The name the error message gives the value (a flag, a scenario key).

    Returns
    -------
    tuple or None
        The names, in the given order without repeats; None for None.

    Raises
    ------
    ParameterError
        For an unknown name, an empty list, or a list without ``"view"`` (the rule
        that also judges small discrete views on its own).

    Examples
    --------
    >>> parse_selectors("view, pairs")
    ('view', 'pairs')
    >>> parse_selectors(None) is None
    True
    """
    if value is None:
        return None
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v).strip() for v in value]
    names = list(dict.fromkeys(name for name in names if name))
    unknown = [name for name in names if name not in SELECTORS]
    if unknown or "view" not in names:
        what = f"unknown {', '.join(map(repr, unknown))}" if unknown else "'view' is missing"
        raise ParameterError(f"{field}: {what}; give a comma-separated list of {', '.join(SELECTORS)} "
                             "that includes view")
    return tuple(names)


def searched_families(selectors: str | Sequence[str] | None) -> list[str]:
    """The families of events ``selectors`` search: the selectors' names, with
    ``"derived"`` spelled out as its families (:data:`~privsim.analysis.audit_derived.FAMILIES`).

    >>> searched_families("view,derived")
    ['view', 'atoms', 'bits', 'parities', 'shares', 'magnitudes']
    """
    names = parse_selectors(selectors) or SELECTORS
    return [family for name in names for family in (FAMILIES if name == "derived" else (name,))]


# --------------------------------------------------------------------------------------
# Scores the selectors propose (thresholded by ThresholdEvent)


@dataclass(frozen=True, eq=False)
class BinnedScore:
    """A sum over columns of per-bin weights: a naive-Bayes log-likelihood ratio.

    Parameters
    ----------
    columns, indices:
        The columns summed over (names and indices in the view).
    edges:
        Per column, the sorted bin edges (a value v is in bin ``searchsorted(edges, v, "right")``).
    weights:
        Per column, one weight per bin (``len(edges) + 1``): the estimated
        ``ln(Pr[bin | x] / Pr[bin | x'])``.

    Examples
    --------
    >>> s = BinnedScore(("a", "b"), (0, 1), (np.array([0.5]), np.array([0.5])),
    ...                 (np.array([-0.1, 0.1]), np.array([-0.2, 0.2])))
    >>> s(np.array([[1.0, 1.0], [0.0, 1.0]])).round(3).tolist(), s.describe()
    ([0.3, 0.1], 'naive-Bayes log-likelihood ratio over (a, b)')
    """

    columns: tuple[str, ...]
    indices: tuple[int, ...]
    edges: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...]

    def __call__(self, views: np.ndarray) -> np.ndarray:
        """The score of every row of ``views``."""
        total = np.zeros(views.shape[0])
        for index, edges, weights in zip(self.indices, self.edges, self.weights):
            total += weights[np.searchsorted(edges, views[:, index], side="right")]
        return total

    def describe(self) -> str:
        """``"naive-Bayes log-likelihood ratio over (a, b, ...)"``, naming the columns."""
        return f"naive-Bayes log-likelihood ratio over ({_names(self.columns)})"


@dataclass(frozen=True, eq=False)
class TreeScore:
    """The log-odds of gradient-boosted trees fitted to tell x (label 1) from x' (label 0).

    Parameters
    ----------
    model:
        A fitted :class:`sklearn.ensemble.HistGradientBoostingClassifier`.
    indices, moduli:
        The features: column ``indices[k]`` of the view, taken mod ``moduli[k]`` where
        that is > 0 (a residue), else as it is.
    names:
        The features' names (``"y"``, ``"y mod 2"``), for :meth:`describe`.
    used:
        The features the trees split on (all of them where the fitted model does not
        show which): :meth:`describe` names them, and scoring computes only them.

    Examples
    --------
    >>> from sklearn.ensemble import HistGradientBoostingClassifier
    >>> v = np.array([[0.0, 3.0], [1.0, 4.0]] * 20)
    >>> model = HistGradientBoostingClassifier(max_iter=2, min_samples_leaf=1).fit(v[:, 1:] % 2, v[:, 0])
    >>> s = TreeScore(model, (1,), (2,), ("y mod 2",), (0,))
    >>> s(v).shape, s.describe()
    ((40,), 'boosted-trees log-odds of (y mod 2)')
    """

    model: Any
    indices: tuple[int, ...]
    moduli: tuple[int, ...]
    names: tuple[str, ...]
    used: tuple[int, ...]
    _tables: _TreeTables | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_tables", _TreeTables.of(self.model, self.indices, self.moduli))

    def __call__(self, views: np.ndarray) -> np.ndarray:
        """The fitted log-odds of every row of ``views``.

        Only the features the trees split on are computed: the others are columns of
        zeros that no tree reads, in a column-major array whose untouched pages are
        never written. (Gathering hundreds of residue columns took some 30 times as long
        as the trees' own prediction: the cost of the trees' event on every estimation
        trial of a wide view, such as shuffle-sum's 109 columns.)
        """
        if self._tables is not None:
            return self._tables(views)
        design = np.zeros((len(views), len(self.indices)), order="F")
        for k in self.used:
            design[:, k] = _features(views, self.indices[k:k + 1], self.moduli[k:k + 1])[:, 0]
        with _one_thread():
            return np.asarray(self.model.decision_function(design), dtype=float)

    def describe(self) -> str:
        """``"boosted-trees log-odds of (y mod 2, b, ...)"``: the features split on."""
        return f"boosted-trees log-odds of ({_names([self.names[i] for i in self.used])})"


class _TreeTables:
    """A fitted tree ensemble's log-odds as table look-ups: the same numbers as its own
    prediction, several times faster on the many rows of the estimation sample.

    A tree's leaf is a function of where each feature it splits on lies among that
    tree's thresholds (a row goes left where its value is ``<=`` the node's threshold),
    so a tree of at most ``_TREE_LEAVES`` leaves is a table over at most 2^14 cells,
    filled by walking the tree once per cell on a value of the cell (its upper end).
    A row's cell comes from one ``searchsorted`` per feature over all the trees'
    thresholds of it and a small look-up per tree; the leaf values are summed onto the
    baseline in the trees' order, as scikit-learn sums them, so the result is the
    model's ``decision_function`` bit for bit (tests compare them). :meth:`of` returns
    None (the caller predicts with the model) for a layout it does not know: a
    multi-class model, categorical splits, or another scikit-learn's private attributes.
    """

    def __init__(self, baseline: float, features: list[tuple[int, int, int, np.ndarray]],
                 trees: list[tuple[list[tuple[int, np.ndarray]], np.ndarray]]) -> None:
        self.baseline = baseline
        self.features = features  # (slot, column, modulus, sorted thresholds), one per feature split on
        self.trees = trees  # per tree: (slot, offsets of each global interval into the tree's cells), leaf values
        # A residue feature's interval, as a table over the residues of its column mod the
        # lcm of that column's moduli: one np.mod per column and a look-up per feature in
        # place of a np.mod and a searchsorted per feature (the same intervals: below).
        periods: dict[int, int] = {}
        for _, column, modulus, _ in features:
            if modulus:
                periods[column] = math.lcm(periods.get(column, 1), modulus)
        self.tables = [np.searchsorted(thresholds, np.arange(periods[column]) % modulus, side="left")
                       if modulus else None for _, column, modulus, thresholds in features]

    @classmethod
    def of(cls, model: Any, indices: Sequence[int], moduli: Sequence[int]) -> _TreeTables | None:
        try:
            if len(model._predictors[0]) != 1 or np.size(model._baseline_prediction) != 1:
                return None
            baseline = float(np.ravel(model._baseline_prediction)[0])
            all_nodes = [tree.nodes for trees in model._predictors for tree in trees]
            for nodes in all_nodes:
                _ = nodes["feature_idx"], nodes["num_threshold"], nodes["left"], nodes["right"], nodes["value"]
                if np.any(nodes["is_categorical"][~nodes["is_leaf"].astype(bool)]):
                    return None
        except (AttributeError, KeyError, ValueError, IndexError, TypeError):  # pragma: no cover - another layout
            return None
        inner = [nodes[~nodes["is_leaf"].astype(bool)] for nodes in all_nodes]
        splits = np.concatenate(inner)
        thresholds = {int(f): np.unique(splits["num_threshold"][splits["feature_idx"] == f])
                      for f in np.unique(splits["feature_idx"])}
        slot = {f: k for k, f in enumerate(thresholds)}  # (the features in increasing order, as np.unique gives them)
        features = [(slot[f], int(indices[f]), int(moduli[f]), thresholds[f]) for f in thresholds]
        trees = []
        for nodes, split in zip(all_nodes, inner):
            own = [int(f) for f in np.unique(split["feature_idx"])]
            local = [np.unique(split["num_threshold"][split["feature_idx"] == f]) for f in own]
            sizes = [t.size + 1 for t in local]
            strides = np.cumprod([1] + sizes[:-1]).astype(np.int64)
            cells = int(np.prod(sizes)) if sizes else 1
            # A value in each of the tree's intervals: its upper end, or just above the last threshold.
            reps = [np.append(t, np.nextafter(t[-1], np.inf)) for t in local]
            grid = np.empty((cells, len(own)))
            for k, (rep, size, stride) in enumerate(zip(reps, sizes, strides)):
                grid[:, k] = rep[(np.arange(cells) // stride) % size]
            position = {f: k for k, f in enumerate(own)}
            node = np.zeros(cells, dtype=np.int64)
            rows = np.arange(cells)
            leaf = nodes["is_leaf"].astype(bool)
            feature_pos = np.array([position.get(int(f), 0) for f in nodes["feature_idx"]])
            while not leaf[node].all():
                value = grid[rows, feature_pos[node]]
                step = np.where(value <= nodes["num_threshold"][node], nodes["left"][node], nodes["right"][node])
                node = np.where(leaf[node], node, step.astype(np.int64))
            values = nodes["value"][node].astype(float)
            # Each global interval of a feature (between its thresholds over all trees) lies in one interval
            # of this tree's: the offset of that interval in the tree's cells.
            offsets = []
            for f, t, stride in zip(own, local, strides):
                upper = np.append(thresholds[f], np.nextafter(thresholds[f][-1], np.inf))
                offsets.append((slot[f], (np.searchsorted(t, upper, side="left") * stride).astype(np.int32)))
            trees.append((offsets, values))
        return cls(baseline, features, trees)

    def __call__(self, views: np.ndarray) -> np.ndarray:
        where = []
        residues: dict[int, np.ndarray | None] = {}
        for (_, column, modulus, thresholds), table in zip(self.features, self.tables):
            if table is not None:
                if column not in residues:
                    residues[column] = _integer_residues(views[:, column], len(table))
                if (r := residues[column]) is not None:
                    where.append(np.take(table, r))
                    continue
            where.append(_count_below(thresholds, _features(views, (column,), (modulus,))[:, 0]))
        raw = np.full(len(views), self.baseline)
        cell, part = np.empty(len(views), dtype=np.int32), np.empty(len(views), dtype=np.int32)
        for offsets, values in self.trees:
            cell[:] = 0
            for k, offset in offsets:
                cell += np.take(offset, where[k], out=part)
            raw += np.take(values, cell)
        return raw


# Up to this many thresholds, a value's interval is counted by comparisons (one pass over the
# rows per threshold) rather than found by np.searchsorted: 25x as fast for one threshold,
# 3x for twenty (32768 rows; the trees split a feature at a few thresholds, mostly).
_COMPARE_MAX = 24


def _count_below(thresholds: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.searchsorted(thresholds, values, side="left")`` (sorted thresholds): the number of
    thresholds below each value, nan counting as above them all, as np.searchsorted has it.

    >>> _count_below(np.array([1.0, 2.0]), np.array([0.5, 1.0, 1.5, 3.0, np.nan])).tolist()
    [0, 0, 1, 2, 2]
    """
    if thresholds.size > _COMPARE_MAX:
        return np.searchsorted(thresholds, values, side="left")
    # t < v is not (v <= t) for every v, nan included: count the thresholds at or above instead.
    at_or_above = np.zeros(values.shape, dtype=np.intp)
    for threshold in thresholds:
        at_or_above += values <= threshold
    return thresholds.size - at_or_above


def _integer_residues(column: np.ndarray, period: int) -> np.ndarray | None:
    """``column mod period`` as indices, if every value is an integer of int64's range (else None).

    For such a value v and m dividing ``period``, ``(v mod period) mod m`` is ``v mod m``
    exactly, as np.mod computes it on the float (exact for integers), so a table over
    ``range(period)`` gives the interval that a searchsorted of ``v mod m`` gives.

    >>> _integer_residues(np.array([5.0, -1.0, 12.0]), 12).tolist(), _integer_residues(np.array([0.5]), 12)
    ([5, 11, 0], None)
    """
    values = np.asarray(column, dtype=float)
    with np.errstate(invalid="ignore"):  # a value beyond int64 casts to garbage, and the check sees it
        index = values.astype(np.int64)
    if not (index == values).all():  # (a cast beyond int64's range gives -2^63, which no such value equals)
        return None
    return index % period


@dataclass(frozen=True, eq=False)
class CalibratedScore:
    """``slope * base(views) + intercept``: a score rescaled to read as a log-likelihood ratio.

    Examples
    --------
    >>> s = CalibratedScore(lambda v: v[:, 0], 2.0, -1.0)
    >>> s(np.array([[1.0], [0.0]])).tolist()
    [1.0, -1.0]
    """

    base: ScoreFn
    slope: float
    intercept: float

    def __call__(self, views: np.ndarray) -> np.ndarray:
        """The calibrated score of every row."""
        return self.slope * np.asarray(self.base(views), dtype=float) + self.intercept

    def describe(self) -> str:
        """The base score's description (calibration does not change which rows an event holds)."""
        describe = getattr(self.base, "describe", None)
        return describe() if describe is not None else "score"


def _one_thread() -> Any:
    """One OpenMP thread for the trees: on a shared machine, threads that spin while they
    wait for a busy core made a fit ten times slower; one thread also keeps workers from
    oversubscribing their cores."""
    import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime, so that the limit reaches it)
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="openmp")


# --------------------------------------------------------------------------------------
# Cutting a calibrated score


def _calibrate(s_x: np.ndarray, s_xp: np.ndarray) -> tuple[float, float] | None:
    """Slope and intercept of a logistic fit of the label (x: 1) on the score; None if useless."""
    design = np.concatenate([s_x, s_xp])
    spread = float(design.std())
    if not math.isfinite(spread) or spread == 0.0:
        return None
    centre = float(design.mean())
    z = (design - centre) / spread
    labels = np.concatenate([np.ones(s_x.size), -np.ones(s_xp.size)])

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        margin = labels * (theta[0] * z + theta[1])
        slope = -labels * special.expit(-margin)
        return float(np.logaddexp(0.0, -margin).sum()), np.array([slope @ z, slope.sum()])

    a, b = optimize.minimize(loss, np.zeros(2), jac=True, method="L-BFGS-B").x
    if a <= 0:
        return None
    # Balanced labels: the fitted log-odds are the log-likelihood ratio (a prior of 1/2).
    return float(a / spread), float(b - a * centre / spread + math.log(s_xp.size / s_x.size))


def _smooth_cut(l_x: np.ndarray, l_xp: np.ndarray, delta: float, confidence: float,
                n_estimate: int) -> float | None:
    """The cut c of {L >= c} whose forecast bound is best, for a calibrated log-likelihood ratio L.

    Under a calibrated L, Pr[L >= c | x'] = E_x[e^-L; L >= c] and Pr[L < c | x] =
    E_x'[e^L; L < c]: the ratio of an event's two probabilities is forecast from the
    rows of the likelier input alone (weighted by e^-L), so a rare event's forecast does
    not rest on the handful of rows the other input puts there. The likelier input's
    probability is taken one standard error low (a guard against a rare cut that the
    cut rows happen to favour), and the forecast is the Clopper–Pearson bound these
    probabilities give on ``n_estimate`` trials. A miscalibrated L only costs power: the
    held-out pick (:func:`_pick`) judges every proposal by plain counts.
    """
    l_x, l_xp = np.clip(np.sort(l_x), -30, 30), np.clip(np.sort(l_xp), -30, 30)
    cuts = _candidate_cuts(np.concatenate([l_x, l_xp]))
    if cuts.size == 0:
        return None
    below_x, below_xp = (np.searchsorted(l_sorted, cuts, side="left") for l_sorted in (l_x, l_xp))  # rows with L < c
    # Suffix sums of e^-L over the x rows (L >= c), prefix sums of e^L over the x' rows (L < c).
    tail_x = np.concatenate([np.cumsum(np.exp(-l_x)[::-1])[::-1], [0.0]])[below_x]
    head_xp = np.concatenate([[0.0], np.cumsum(np.exp(l_xp))])[below_xp]
    alpha = (1.0 - confidence) / 2
    # Each cut's two events, interleaved (cut k: 2k forward, 2k + 1 backward), so that the
    # first maximum of the pair's forecasts is found at the first cut that has it.
    p_est, q_est = (np.column_stack(pair).ravel() for pair in zip(
        _forecast_rates(l_x.size - below_x, tail_x, l_x.size, n_estimate),
        _forecast_rates(below_xp, head_xp, l_xp.size, n_estimate)))
    p_up, q_down = _bound_ceilings(p_est, n_estimate, q_est, n_estimate, alpha)
    best, value = _pruned_argmax(_log_ratio(p_up - delta, q_down), lambda chunk: _log_ratio(
        clopper_pearson(p_est[chunk], n_estimate, alpha, "lower") - delta,
        clopper_pearson(q_est[chunk], n_estimate, alpha, "upper")))
    return float(cuts[best // 2]) if math.isfinite(value) else None


def _forecast_rates(hits: np.ndarray, weighted: np.ndarray, rows: int, n_estimate: int) -> tuple[np.ndarray, ...]:
    """The counts on ``n_estimate`` trials whose Clopper–Pearson bounds forecast an event,
    ln((p_lo - delta)/q_hi): of p = hits/rows (one standard error low) and of
    q = p * weighted/hits (the likelihood-ratio estimate of the ratio)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.maximum(hits - np.sqrt(hits), 0.0) / rows
        q = np.where(hits > 0, p * weighted / np.maximum(hits, 1), 0.0)
    return np.minimum(p, 1.0) * n_estimate, np.minimum(q, 1.0) * n_estimate


def _threshold_proposal(name: str, score: ScoreFn, cut_x: np.ndarray, cut_xp: np.ndarray,
                        p: _Proposal) -> tuple[str, ThresholdEvent] | None:
    """Calibrate ``score`` on the cut rows and cut it (see :func:`_smooth_cut`): selector ``name``'s proposal."""
    s_x, s_xp = np.asarray(score(cut_x), dtype=float), np.asarray(score(cut_xp), dtype=float)
    fit = _calibrate(s_x, s_xp)
    if fit is None:
        return None
    cut = _smooth_cut(fit[0] * s_x + fit[1], fit[0] * s_xp + fit[1], p.delta, p.confidence, p.n_estimate)
    return None if cut is None else (name, ThresholdEvent(cut, ">=", name="score", score=CalibratedScore(score, *fit)))


# --------------------------------------------------------------------------------------
# The selectors: each proposes one event from the proposal half (or None)


@dataclass(frozen=True)
class _Proposal:
    """The proposal half of the selection sample and the level the bound will be at.

    Every selector fits (or ranks) on one half of it and cuts on the other; the held-out
    half of the selection sample, which picks among the proposals, is not here.
    ``distinct``: the columns that vary, less those equal to an earlier one on every
    row (:func:`_distinct_columns`); the selectors other than the view rule use only these."""

    x: np.ndarray
    xp: np.ndarray
    columns: Sequence[str]
    score: ScoreFn | None
    delta: float
    confidence: float
    n_estimate: int
    distinct: tuple[int, ...]


def _distinct_columns(views_x: np.ndarray, views_xp: np.ndarray) -> tuple[int, ...]:
    """The columns that vary in the pooled sample, less each one equal to an earlier one on
    every row: a copy adds nothing to an event (a message that is also the output), and
    in a naive-Bayes sum it would count twice.

    >>> v = np.array([[0.0, 1.0, 1.0, 5.0], [0.0, 2.0, 2.0, 5.0]])
    >>> _distinct_columns(v, v)
    (1,)
    """
    out: list[int] = []
    for column in _varying_columns(views_x, views_xp):
        if not any(np.array_equal(views_x[:64, column], views_x[:64, kept])  # cheap first
                   and np.array_equal(views_x[:, column], views_x[:, kept])
                   and np.array_equal(views_xp[:, column], views_xp[:, kept]) for kept in out):
            out.append(int(column))
    return tuple(out)


def _propose_view(p: _Proposal) -> tuple[str, Event] | None:
    kind = resolve_kind(p.x, p.xp, p.score, "auto")
    return kind, select_event(p.x, p.xp, p.columns, p.score, kind, delta=p.delta, confidence=p.confidence,
                              n_estimate=p.n_estimate)


def _g_pvalue(counts_x: np.ndarray, counts_xp: np.ndarray) -> float:
    """Log p-value of the G-test of "the label is independent of the cell" (a 2 x cells table)."""
    seen = (counts_x + counts_xp) > 0
    cx, cxp = counts_x[seen], counts_xp[seen]
    if cx.size < 2:
        return 0.0
    total_x, total_xp = cx.sum(), cxp.sum()
    expected = (cx + cxp) / (total_x + total_xp)
    g = 0.0
    for observed, total in ((cx, total_x), (cxp, total_xp)):
        present = observed > 0
        g += 2.0 * float(np.sum(observed[present] * np.log(observed[present] / (expected[present] * total))))
    return float(stats.chi2.logsf(g, cx.size - 1))


def _bins(pooled: np.ndarray) -> np.ndarray:
    """Bin edges of one column: between distinct values when few, else at pooled quantiles."""
    values = np.unique(pooled)
    if values.size <= _NB_BINS:
        return (values[:-1] + values[1:]) / 2
    return np.unique(np.quantile(pooled, np.linspace(0, 1, _NB_BINS + 1)[1:-1]))


def _independent_columns(views: np.ndarray, columns: Sequence[int]) -> list[int]:
    """``columns`` less each one that is an affine function of the earlier ones (a
    published total of the messages before it), found by a QR decomposition of the
    centred first ``_NB_SPAN_ROWS`` rows: a zero on R's diagonal is a column in the span
    of the earlier ones (exactly, not by chance, on that many rows of a real view).

    >>> v = np.array([[0.0, 1.0, 1.0], [1.0, 1.0, 2.0], [1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    >>> _independent_columns(v, [0, 1, 2])
    [0, 1]
    """
    if len(columns) < 2:
        return list(columns)
    sample = views[:_NB_SPAN_ROWS, list(columns)]
    sample = sample - sample.mean(axis=0)
    diagonal = np.abs(np.diag(np.linalg.qr(sample, mode="r")))
    scale = np.linalg.norm(sample, axis=0)
    return [c for c, r, n in zip(columns, diagonal, scale) if r > 1e-9 * max(n, 1e-300)]


def _propose_naive_bayes(p: _Proposal) -> tuple[str, Event] | None:
    """Per-column histogram log-likelihood ratios summed (fitted on one half), cut on the other.

    Skipped (None) unless some column's own G-test rejects independence of the label
    (at ``_NB_COLUMN_LEVEL``): a sum of marginal ratios of such columns only is noise.
    A column that is an affine function of earlier ones (:func:`_independent_columns`,
    e.g. an output that totals the messages) is left out: its ratio would count their
    evidence a second time, and the sum, overconfident in its tails, would forecast
    rare events as far likelier under one input than they are.
    """
    (fit_x, cut_x), (fit_xp, cut_xp) = _halves(p.x), _halves(p.xp)
    kept: list[tuple[int, np.ndarray, np.ndarray]] = []
    for column in _independent_columns(fit_x, p.distinct):
        edges = _bins(np.concatenate([fit_x[:, column], fit_xp[:, column]]))
        size = edges.size + 1
        counts_x = np.bincount(np.searchsorted(edges, fit_x[:, column], side="right"), minlength=size)
        counts_xp = np.bincount(np.searchsorted(edges, fit_xp[:, column], side="right"), minlength=size)
        if _g_pvalue(counts_x, counts_xp) > math.log(_NB_COLUMN_LEVEL):
            continue
        # Add-1/2 smoothing: an empty bin gets a finite weight.
        weights = np.log((counts_x + 0.5) / (len(fit_x) + 0.5 * size)) - np.log(
            (counts_xp + 0.5) / (len(fit_xp) + 0.5 * size))
        kept.append((int(column), edges, weights))
    if not kept:
        return None
    score = BinnedScore(tuple(p.columns[c] for c, _, _ in kept), tuple(c for c, _, _ in kept),
                        tuple(e for _, e, _ in kept), tuple(w for _, _, w in kept))
    made = _threshold_proposal("naive-bayes", score, cut_x, cut_xp, p)
    if made is None or len(kept) > 1:
        return made
    return "naive-bayes", _as_outcomes(made[1], score, np.concatenate([fit_x, fit_xp]))


def _as_outcomes(event: ThresholdEvent, score: BinnedScore, pooled: np.ndarray) -> Event:
    """A threshold on one discrete column's weights, said as the set of its values it holds
    (``"z3 == 1"``); a column binned by quantiles keeps the threshold."""
    column = score.indices[0]
    values = np.unique(pooled[:, column])
    if values.size > _NB_BINS:
        return event
    inside = event.contains(np.repeat(values[:, None], pooled.shape[1], axis=1))
    return OutcomeSetEvent((score.columns[0],), (column,), frozenset((float(v),) for v in values[inside]))


def _propose_logistic(p: _Proposal) -> tuple[str, Event] | None:
    """A logistic score, fitted and cut on the whole proposal half: a linear score of a
    few columns hardly overfits, so it gets twice the rows (the pick stays on held-out rows).

    Skipped (None) unless at least 2 distinct columns vary: a logistic score of one
    column is monotone in it, so its events are the view rule's thresholds on that column.
    """
    if len(p.distinct) < 2:
        return None
    score = fit_logistic_score(p.x, p.xp, p.columns, max_rows=len(p.x))
    return _threshold_proposal("logistic-lr", score, p.x, p.xp, p)


def _low_cardinality(views_x: np.ndarray, views_xp: np.ndarray,
                     distinct: Sequence[int]) -> list[tuple[int, int, np.ndarray]]:
    """``(column, modulus, values)`` of the pair candidates among the ``distinct`` columns: those
    with few values, and residues mod 2 of the other integer ones (modulus 0: the column
    itself), with the sorted values (or residues) they take."""
    out: list[tuple[int, int, np.ndarray]] = []
    for column in distinct:
        pooled = np.concatenate([views_x[:, column], views_xp[:, column]])
        values = np.unique(pooled)
        if values.size <= _PAIR_MAX_VALUES:
            out.append((int(column), 0, values))
        elif np.array_equal(pooled, np.round(pooled)):
            out.append((int(column), 2, np.unique(np.mod(pooled, 2))))
    return out[:_PAIR_MAX_COLUMNS]


def _codes(views: np.ndarray, column: int, modulus: int, values: np.ndarray) -> np.ndarray:
    """The index of each row's value (or residue) in ``values``; ``values.size`` where it is absent."""
    return _positions(values, views[:, column] if not modulus else np.mod(views[:, column], modulus))


def _propose_pairs(p: _Proposal) -> tuple[str, Event] | None:
    """The best pair of low-cardinality columns (G-test on the ranking half), cut on the other.

    Skipped (None) unless at least 2 columns qualify (at most ``_PAIR_MAX_VALUES``
    values, or integer, taken mod 2): with fewer there is no pair.
    """
    (rank_x, cut_x), (rank_xp, cut_xp) = _halves(p.x), _halves(p.xp)
    candidates = _low_cardinality(rank_x, rank_xp, p.distinct)
    if len(candidates) < 2:
        return None
    values = [vals for _, _, vals in candidates]
    codes_x, codes_xp = ([_codes(views, c, m, vals) for c, m, vals in candidates] for views in (rank_x, rank_xp))
    best, best_pair = 0.0, None
    for a in range(len(candidates)):
        for b in range(a + 1, len(candidates)):
            cells = values[a].size * values[b].size
            counts_x = np.bincount(codes_x[a] * values[b].size + codes_x[b], minlength=cells)
            counts_xp = np.bincount(codes_xp[a] * values[b].size + codes_xp[b], minlength=cells)
            log_p = _g_pvalue(counts_x, counts_xp)
            if log_p < best:
                best, best_pair = log_p, ((candidates[a], candidates[b]), counts_x, counts_xp)
    event = None if best_pair is None else _pair_event(p, *best_pair, cut_x, cut_xp)
    return None if event is None else ("pairs", event)


def _pair_event(p: _Proposal, pair: tuple[tuple[int, int, np.ndarray], tuple[int, int, np.ndarray]],
                counts_x: np.ndarray, counts_xp: np.ndarray, cut_x: np.ndarray, cut_xp: np.ndarray
                ) -> OutcomeSetEvent | None:
    """The cells of the pair (two of :func:`_low_cardinality`'s candidates) with the largest
    likelihood ratios (ranked on the ranking half), as many as the selection criterion on
    the cut half prefers, reduced to the columns membership depends on."""
    (ca, ma, va), (cb, mb, vb) = pair
    cells = []
    for views in (cut_x, cut_xp):
        code_a, code_b = _codes(views, ca, ma, va), _codes(views, cb, mb, vb)
        known = (code_a < va.size) & (code_b < vb.size)
        cells.append(code_a[known] * vb.size + code_b[known])
    mask = _best_prefix(counts_x, counts_xp, cells[0], len(cut_x), cells[1], len(cut_xp), p.delta, p.confidence,
                        p.n_estimate)
    if mask is None:
        return None
    grid = np.array([(u, v) for u in va for v in vb], dtype=float)
    return _reduced_event(grid, mask, (p.columns[ca], p.columns[cb]), (ca, cb), (ma, mb))


def _tree_features(views_x: np.ndarray, views_xp: np.ndarray, columns: Sequence[str], distinct: Sequence[int]
                   ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]:
    """The ``distinct`` columns, then residues mod 2, 3, 4 of the integer ones with more than 2 values."""
    features = [(c, 0) for c in distinct]
    for c in distinct:
        pooled = np.concatenate([views_x[:, c], views_xp[:, c]])
        if np.array_equal(pooled, np.round(pooled)) and np.unique(pooled[:4096]).size > 2:
            features += [(c, m) for m in _TREE_MODULI]
    features = features[:_TREE_MAX_FEATURES]
    names = tuple(f"{columns[c]} mod {m}" if m else columns[c] for c, m in features)
    return tuple(c for c, _ in features), tuple(m for _, m in features), names


def _propose_trees(p: _Proposal) -> tuple[str, Event] | None:
    """Boosted trees, fitted on at most the first ``_TREE_MAX_ROWS`` rows per input of the
    fit half (the rows are independent trials, so the first ones are a fair subsample).

    Skipped (None) unless there are at least 2 features (varying columns and residues):
    a score of one feature is a function of one column, whose likelihood ratio the
    naive-Bayes histogram already estimates (and the view rule thresholds).
    """
    (fit_x, cut_x), (fit_xp, cut_xp) = _halves(p.x), _halves(p.xp)
    fit_x, fit_xp = fit_x[:_TREE_MAX_ROWS], fit_xp[:_TREE_MAX_ROWS]
    indices, moduli, names = _tree_features(fit_x, fit_xp, p.columns, p.distinct)
    if len(indices) < 2:
        return None
    from sklearn.ensemble import HistGradientBoostingClassifier  # not imported where trees cannot run

    design = np.concatenate([_features(fit_x, indices, moduli), _features(fit_xp, indices, moduli)])
    labels = np.concatenate([np.ones(len(fit_x)), np.zeros(len(fit_xp))])
    # A fixed random_state: the early-stopping split, hence the event, is a function of the
    # selection sample alone (identical under every executor).
    model = HistGradientBoostingClassifier(max_iter=_TREE_MAX_ITER, max_leaf_nodes=_TREE_LEAVES,
                                           learning_rate=_TREE_LEARNING_RATE, early_stopping=True,
                                           n_iter_no_change=3, random_state=0)
    with _one_thread():
        model.fit(design, labels)
    score = TreeScore(model, indices, moduli, names, _used_features(model, len(indices)))
    return _threshold_proposal("trees", score, cut_x, cut_xp, p)


def _used_features(model: Any, n_features: int) -> tuple[int, ...]:
    """The features the fitted trees split on, most used first (all, if the model hides them)."""
    try:
        used = np.concatenate([tree.nodes["feature_idx"][~tree.nodes["is_leaf"].astype(bool)]
                               for trees in model._predictors for tree in trees])
    except (AttributeError, KeyError, ValueError):  # pragma: no cover - another scikit-learn layout
        return tuple(range(n_features))
    counts = np.bincount(used.astype(int), minlength=n_features)
    order = np.argsort(-counts, kind="stable")
    return tuple(int(i) for i in order if counts[i] > 0) or tuple(range(n_features))


def _propose_derived(p: _Proposal) -> tuple[str, Event] | None:
    """The best event on a derived feature (:mod:`privsim.analysis.audit_derived`: atoms,
    bits, parities, shares, magnitudes), named by its family."""
    event = propose_derived(p.x, p.xp, p.columns, p.distinct, delta=p.delta, confidence=p.confidence,
                            n_estimate=p.n_estimate)
    return None if event is None else (event.family, event)


_PROPOSERS: dict[str, Callable[[_Proposal], tuple[str, Event] | None]] = {
    "view": _propose_view,
    "naive-bayes": _propose_naive_bayes,
    "logistic-lr": _propose_logistic,
    "pairs": _propose_pairs,
    "trees": _propose_trees,
    "derived": _propose_derived,
}


# --------------------------------------------------------------------------------------
# The pick


@dataclass(frozen=True)
class Candidate:
    """An event carried into estimation: what proposed it, and its held-out forecast.

    Attributes
    ----------
    event:
        The event, oriented likelier under x.
    selection:
        What proposed it (the view rule's kind, or a selector's name).
    forecast:
        Its forecast bound on the held-out half (``nan`` where nothing was forecast: one
        rule chose the only candidate).

    >>> Candidate(ThresholdEvent(0.0, ">=", column=0, name="y"), "column").selection
    'column'
    """

    event: Event
    selection: str
    forecast: float = math.nan


def _pick(proposals: list[tuple[str, str, Event]], hold_x: np.ndarray, hold_xp: np.ndarray, delta: float,
          confidence: float, n_estimate: int) -> list[tuple[str, Candidate]]:
    """The proposals carried into estimation, best forecast first, each with its selector's name.

    A forecast is the selection criterion on the held-out counts, with :data:`_Z_PICK`
    standard error on top of the final width (the level of
    :func:`~privsim.analysis.audit_select._selection_alpha`). For a threshold event, whose
    value is calibrated on the held-out half to a log-likelihood ratio L, the
    denominator may instead come from the likelier input's rows (Pr[S | x'] =
    E_x[e^-L; S]), with the numerator's relative error: rare events, where many weak
    messages leave their loss, are then judged on the ratio their many rows under the
    likelier input show, not on their few rows under the other one.

    The held-out half cannot tell apart proposals whose forecasts differ by less than
    its own noise (twenty weak messages: three score proposals within 0.1 of each
    other, any of which may be the best by 0.2 on the estimation sample). So the
    runners-up are carried too, at most :data:`MAX_CARRIED` in all, while each could
    plausibly beat the best *after the cost of the split*: the m-th proposal is carried
    when its forecast at the split level, 1 - (1 - confidence)/m, lies within
    :data:`_Z_CARRY` standard errors (those of the forecasts themselves, see
    :func:`_held_out_forecaster`) of the best's forecast at the whole confidence. Then the
    estimation sample decides among them with the confidence split
    (:func:`~privsim.analysis.audit.best_of`). A proposal that stands out, or whose
    runners-up could win only by less than the split costs, or that separates the
    held-out rows perfectly (no event forecasts more), is carried alone and keeps the
    whole confidence."""
    n_select = min(len(hold_x), len(hold_xp))
    alpha = _selection_alpha(confidence, 0, n_select, n_estimate, z_select=_Z_PICK)
    forecasters = [_held_out_forecaster(event, hold_x, hold_xp, delta, n_estimate) for _, _, event in proposals]
    judged = [forecast(alpha, confidence) for forecast in forecasters]
    values = [value for value, _ in judged]
    # Near-ties go to the first selector (the order of SELECTORS: the simpler, more
    # readable events first).
    first = next(k for k, v in enumerate(values) if v >= max(values) - _PICK_TIE)
    best_value, best_se = judged[first]
    carried = [first]
    # A leader that separates the held-out rows perfectly (all of one input's, none of the
    # other's) forecasts the most any event can: a runner-up could only tie, and carrying
    # it would cost the split (the lazy join's score: 0.26 at 10^6 trials with two more).
    in_x, in_xp = proposals[first][2].contains(hold_x), proposals[first][2].contains(hold_xp)
    separated = (in_x.all() and not in_xp.any()) or (in_xp.all() and not in_x.any())
    for k in sorted((k for k in range(len(proposals)) if k != first), key=lambda k: -values[k]):
        if separated or len(carried) == MAX_CARRIED or not (math.isfinite(values[k]) and values[k] > 0):
            break
        # The runner-up's forecast where its bound would be: at its share of the confidence.
        split = 1.0 - (1.0 - confidence) / (len(carried) + 1)
        at_split = forecasters[k](_selection_alpha(split, 0, n_select, n_estimate, z_select=_Z_PICK), split)[0]
        if at_split < best_value - _Z_CARRY * math.hypot(best_se, judged[k][1]):
            break
        carried.append(k)
    return [(proposals[k][0], Candidate(proposals[k][2], proposals[k][1], values[k])) for k in carried]


def _forecast_se(in_x: np.ndarray, in_xp: np.ndarray, delta: float) -> float:
    """Standard error of an event's plug-in log ratio on the held-out counts (delta method),
    in the direction its counts favour. Half a row is added to each count, so an event
    that no held-out row of one input falls in has the wide error of a single row."""
    n_x, n_xp = in_x.size, in_xp.size
    p = (np.count_nonzero(in_x) + 0.5) / (n_x + 1)
    q = (np.count_nonzero(in_xp) + 0.5) / (n_xp + 1)
    # Forward ln((p - delta)/q), backward ln((1 - q - delta)/(1 - p)): var ln(m) = var(m)/m^2.
    num_f, num_b = max(p - delta, 1e-300), max(1 - q - delta, 1e-300)
    if math.log(num_f / q) >= math.log(num_b / (1 - p)):
        return math.sqrt(p * (1 - p) / n_x / num_f**2 + (1 - q) / (n_xp * q))
    return math.sqrt(q * (1 - q) / n_xp / num_b**2 + p / (n_x * (1 - p)))


def _held_out_forecaster(event: Event, hold_x: np.ndarray, hold_xp: np.ndarray, delta: float,
                         n_estimate: int) -> Callable[[float, float], tuple[float, float]]:
    """``forecast(alpha, confidence)``: the selection criterion of ``event`` on the held-out
    half at that level (see :func:`_pick`), and the
    standard error of the estimate it rests on: of the plain counts' log ratio
    (:func:`_forecast_se`), or, where the smoothed forecast stands, of the smoothed one
    (:func:`_smoothed_se`: a rare event's few denominator rows do not make the forecast
    that never counts them look noisy).

    For a threshold event, its thresholded value (a column, or a score) is calibrated on
    these rows (:func:`_calibrate`, two parameters on the whole held-out half, oriented
    so that the event's side reads as "likelier under x"): every threshold proposal,
    the view rule's included, is then forecast the same way. The values and their
    calibration are computed once, whatever the number of levels asked.
    """
    fit = None
    if isinstance(event, ThresholdEvent):
        # The values once per row (a tree ensemble's score is the costly part of the pick).
        v_x, v_xp = event.values(hold_x), event.values(hold_xp)
        in_x, in_xp = event.holds(v_x), event.holds(v_xp)
        sign = 1.0 if event.op in (">=", ">") else -1.0
        fit = _calibrate(sign * v_x, sign * v_xp)
    else:
        in_x, in_xp = event.contains(hold_x), event.contains(hold_xp)
    se = _forecast_se(in_x, in_xp, delta)
    hits_x, hits_xp = int(np.count_nonzero(in_x)), int(np.count_nonzero(in_xp))

    def criterion(k_x: int, k_xp: int, alpha: float) -> float:  # of an event with these held-out counts
        return float(_selection_criterion(np.array(k_x), in_x.size, np.array(k_xp), in_xp.size, delta, alpha))

    if fit is None:
        return lambda alpha, confidence: (criterion(hits_x, hits_xp, alpha), se)
    l_x, l_xp = (np.clip(fit[0] * sign * v + fit[1], -30, 30) for v in (v_x, v_xp))
    # Per direction: the log-likelihood ratio oriented towards the numerator's input,
    # on the numerator's and the denominator's rows, and the event's side on each.
    sides = ((l_x, l_xp, in_x, in_xp), (-l_xp, -l_x, ~in_xp, ~in_x))

    def forecast(alpha: float, confidence: float) -> tuple[float, float]:
        plain = criterion(hits_x, hits_xp, alpha)
        # No final bound can put Pr[S | x'] below what no hit in n_estimate trials allows.
        floor = float(clopper_pearson(0, n_estimate, (1.0 - confidence) / 2, "upper"))
        smooth = [_smoothed_forecast(u_num, u_den, in_num, in_den, delta, alpha, floor)
                  for u_num, u_den, in_num, in_den in sides]
        if max(smooth) <= plain:
            return plain, se
        side = int(np.argmax(smooth))
        # Nor does any forecast exceed that of an event separating the held-out rows
        # perfectly (all of x's, none of x''s): beyond it these rows cannot rank events, and
        # such an event (a protocol's own score, say) must not lose to a smoothed estimate.
        ceiling = criterion(in_x.size, 0, alpha)
        return min(smooth[side], max(plain, ceiling)), _smoothed_se(sides[side][0], sides[side][2])

    return forecast


def _smoothed_se(u_num: np.ndarray, in_num: np.ndarray) -> float:
    """Standard error of a smoothed forecast's log ratio, ln p - ln(p mean_S e^-u) =
    -ln mean_S e^-u over the numerator's h rows in the event, with the numerator's own
    relative error beside it (the forecast inflates the denominator by it, see
    :func:`_smoothed_forecast`): sqrt((1 + CV^2) / h), CV that of e^-u on those rows.

    >>> round(_smoothed_se(np.zeros(100), np.ones(100, dtype=bool)), 3)
    0.1
    """
    weights = np.exp(-u_num[in_num])
    hits = max(weights.size, 1)
    cv2 = float(weights.var() / weights.mean() ** 2) if weights.size else 0.0
    return math.sqrt((1.0 + cv2) / hits)


def _smoothed_forecast(u_num: np.ndarray, u_den: np.ndarray, in_num: np.ndarray, in_den: np.ndarray,
                       delta: float, alpha: float, floor: float = 0.0) -> float:
    """ln((p_lo - delta)/q_hi) for an event whose denominator count is estimated from the
    numerator's rows, ``sum e^-u`` over those in the event (u: the calibrated
    log-likelihood ratio towards the numerator's input); -inf where that does not apply.

    The estimate's relative error is that of the numerator's count (it sums over the
    same rows). It stands only if the score is calibrated where the event lies: on the
    tail of u that holds the event and at least ``_CALIBRATION_ROWS`` denominator rows,
    the direct denominator count must not be improbably large for the estimate
    (Poisson upper tail below ``_CALIBRATION_LEVEL``). An overconfident score (one that
    weighs a column twice, say) underestimates its tails, and a test on the event's
    few denominator rows alone would hardly ever see it. The denominator's bound is at
    least ``floor`` (that of no hit in the estimation trials): an event the score says
    is all but impossible under one input is forecast no better than the estimation
    sample can certify, so the estimate cannot beat an event as good on plain counts.
    """
    hits, rows, other = int(np.count_nonzero(in_num)), u_num.size, u_den.size
    # Where the event holds enough denominator rows to be counted, the count is the
    # estimate: the smoothed one adds the calibration's model error (a linear fit over
    # a flat-tailed loss, as the Laplace mechanism's, over-forecasts its tail).
    if hits == 0 or np.count_nonzero(in_den) >= _CALIBRATION_ROWS:
        return -math.inf
    expected = float(np.exp(-u_num[in_num]).sum()) * other / rows
    # The broader tail: the event, or the event with the top _CALIBRATION_ROWS denominator rows.
    edge = np.partition(u_den, -_CALIBRATION_ROWS)[-_CALIBRATION_ROWS] if other >= _CALIBRATION_ROWS else -np.inf
    tail_num, tail_den = in_num | (u_num >= edge), in_den | (u_den >= edge)
    tail_expected = float(np.exp(-u_num[tail_num]).sum()) * other / rows
    if stats.poisson.sf(np.count_nonzero(tail_den) - 1, tail_expected) < _CALIBRATION_LEVEL:
        return -math.inf
    p_lo = float(clopper_pearson(hits, rows, alpha, "lower"))
    inflate = float(clopper_pearson(hits, rows, alpha, "upper")) * rows / hits
    q_hi = min(max(expected * inflate / other, floor), 1.0)
    return math.log((p_lo - delta) / q_hi) if p_lo > delta and q_hi > 0 else -math.inf


def choose_events(
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
    selectors: Sequence[str] | None = None,
) -> tuple[Candidate, ...]:
    """Choose the events to estimate on the selection sample: selectors propose, a held-out half picks.

    Parameters
    ----------
    select_x, select_xp:
        The selection sample under x and x' (rows x columns).
    columns:
        The column names.
    n_batches_select, n_batches_estimate:
        Batches per input of each part (the estimation sample's size is forecast from them).
    score:
        Optional score callable (e.g. the protocol's own likelihood ratio), used by the
        ``"view"`` selector.
    delta, confidence:
        The level the bound will be computed at.
    kind:
        ``"auto"``: the selectors compete as described in the module. Any other kind
        (``"discrete"``, ``"score"``, ``"column"``, ``"logistic"``) runs
        :func:`~privsim.analysis.audit_select.select_event` of that kind on the whole
        selection sample.
    selectors:
        Which of :data:`SELECTORS` compete (default: all), as :func:`parse_selectors`
        reads them (``"view,pairs"`` too). ``("view",)`` alone is the audit's former
        rule, on the whole selection sample (no held-out half is needed);
        so is a small discrete view (the view rule's ``"discrete"`` kind: per-outcome
        likelihood ratios over all columns, the optimal family).

    Returns
    -------
    tuple of Candidate
        The events carried into estimation (:func:`_pick`), best forecast first, each
        oriented likelier under x and named by what chose it (the view kind,
        ``"naive-bayes"``, ``"pairs"``, ``"trees"``, ...); one where a single rule
        chooses. The view rule's event, when carried, is chosen again on the whole
        selection sample, as the view rule alone chooses it: the audit with every
        selector then loses to the view rule alone only the split of the confidence.

    Raises
    ------
    ParameterError
        For mis-shaped or non-finite views, an unknown selector or a bad level.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> vx, vxp = rng.laplace(1, 1, (4000, 1)), rng.laplace(0, 1, (4000, 1))
    >>> (only,) = choose_events(vx, vxp, ["y"], 1, 4, selectors=("view",))
    >>> only.selection, only.event.describe()
    ('column', 'y >= 0.997971')
    """
    check_level(delta, confidence)
    select_x = check_views(select_x, columns, "x")
    select_xp = check_views(select_xp, columns, "x'")
    # Batches are assumed of one size, so the estimation sample is forecast from the first part.
    n_estimate = max(1, select_x.shape[0] * n_batches_estimate // n_batches_select)
    names = parse_selectors(selectors) or SELECTORS
    chosen = resolve_kind(select_x, select_xp, score, kind)
    # A small discrete view is judged outcome by outcome over all its columns: the family
    # of the Neyman-Pearson lemma itself, which no other selector can beat but by noise.
    if kind != "auto" or names == ("view",) or chosen == "discrete" or min(len(select_x), len(select_xp)) < 4:
        return (Candidate(select_event(select_x, select_xp, columns, score, chosen, delta=delta,
                                       confidence=confidence, n_estimate=n_estimate), chosen),)
    if not all(np.isfinite(part).all() for part in (select_x, select_xp)):
        raise ParameterError("views must be finite (no nan or inf) to select an event")
    (prop_x, hold_x), (prop_xp, hold_xp) = _halves(select_x), _halves(select_xp)
    proposal = _Proposal(prop_x, prop_xp, columns, score, delta, confidence, n_estimate,
                         _distinct_columns(prop_x, prop_xp))
    proposals = [(name, *made) for name, made in ((name, _PROPOSERS[name](proposal)) for name in names)
                 if made is not None]
    carried = _pick(proposals, hold_x, hold_xp, delta, confidence, n_estimate)
    # The view rule fitted on half the selection sample is only its stand-in in the pick.
    return tuple(replace(c, event=select_event(select_x, select_xp, columns, score, c.selection, delta=delta,
                                               confidence=confidence, n_estimate=n_estimate))
                 if name == "view" else c for name, c in carried)


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
    selectors: Sequence[str] | None = None,
) -> tuple[Event, str]:
    """The one event :func:`choose_events` forecasts best, and what chose it (same arguments).

    An audit estimates every candidate (:func:`~privsim.analysis.audit.audit`); this is
    for a caller that estimates one event at the whole confidence.

    >>> rng = np.random.default_rng(1)
    >>> vx, vxp = rng.laplace(1, 1, (4000, 1)), rng.laplace(0, 1, (4000, 1))
    >>> event, kind = choose_event(vx, vxp, ["y"], 1, 4, selectors=("view",))
    >>> kind, event.describe()
    ('column', 'y >= 0.997971')
    """
    best = choose_events(select_x, select_xp, columns, n_batches_select, n_batches_estimate, score, delta=delta,
                         confidence=confidence, kind=kind, selectors=selectors)[0]
    return best.event, best.selection
