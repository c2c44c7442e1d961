"""The events of a DP audit: sets S of views, decided row by row, and their hit counts.

An event names the columns it looks at and its rule (:meth:`Event.describe`), so that
what an audit certifies is readable: ``"msg r1 3->C == 1"``, ``"y >= 0.97"``,
``"(output 0, msg r2 7->0) in {(0, 1), (1, 0)}"``. :class:`EventCounts` accumulates the
hits of one fixed event over estimation batches (and merges the counts of workers).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from privsim.analysis.audit_bounds import EpsilonBound, epsilon_lower_bound
from privsim.errors import ParameterError

__all__ = ["Event", "EventCounts", "LinearScore", "OutcomeSetEvent", "ScoreFn", "ThresholdEvent", "row_keys"]

ScoreFn = Callable[[np.ndarray], np.ndarray]



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
_OPS = {">=": operator.ge, "<": operator.lt, "<=": operator.le, ">": operator.gt}


@dataclass(frozen=True, eq=False)
class ThresholdEvent:
    """The event ``{value <op> cut}`` on one column or on a score of the whole view.

    Parameters
    ----------
    cut:
        the threshold.
    op:
        one of ``">="``, ``"<"``, ``"<="``, ``">"``.
    column:
        index of the thresholded column in the view (when ``score`` is None).
    name:
        what is thresholded, for :meth:`describe` (a column name or ``"score"``).
    score:
        a callable ``views -> 1-D array``; when given, it is thresholded instead
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
        return self.holds(self.values(views))

    def holds(self, values: np.ndarray) -> np.ndarray:
        """Boolean array: does each of ``values`` (from :meth:`values`) satisfy ``value <op> cut``?

        Lets a caller that needs the values too compute them once.

        Examples
        --------
        >>> ThresholdEvent(1.0, "<", column=0).holds(np.array([0.5, 1.0])).tolist()
        [True, False]
        """
        return _OPS[self.op](values, self.cut)

    def complement(self) -> ThresholdEvent:
        """The same threshold with the opposite strict/non-strict comparison."""
        return ThresholdEvent(self.cut, _COMPLEMENT_OP[self.op], self.column, self.name, self.score)

    def describe(self) -> str:
        """E.g. ``"y >= 0.97"`` or ``"logistic score (+1.4*z3 ...) < -0.2"``."""
        label = self.name
        if self.score is not None and hasattr(self.score, "describe"):
            label = self.score.describe()
        return f"{label} {self.op} {self.cut:.6g}"


def row_keys(rows: np.ndarray) -> np.ndarray:
    """One opaque, sortable key per row (rows hashed by their bytes).

    >>> keys = row_keys(np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0]]))
    >>> bool(keys[0] == keys[1]), bool(keys[0] == keys[2])
    (True, False)
    """
    # + 0.0 maps -0.0 to 0.0 so that equal floats have equal bytes.
    rows = np.ascontiguousarray(np.asarray(rows, dtype=np.float64) + 0.0)
    return rows.view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()


def _features(views: np.ndarray, indices: Sequence[int], moduli: Sequence[int]) -> np.ndarray:
    """Columns ``indices`` of every row, as floats, taken mod ``moduli[k]`` where that is > 0."""
    out = np.asarray(views[:, list(indices)], dtype=float)
    for k, m in enumerate(moduli):
        if m:
            out[:, k] = np.mod(out[:, k], m)
    return out


def _names(names: Sequence[str], sep: str = ", ", shown: int = 4) -> str:
    """The first ``shown`` of ``names``, then how many more: ``"a, b, c, d, ... 2 more"``."""
    names = list(names)
    return sep.join(names[:shown] + ([f"... {len(names) - shown} more"] if len(names) > shown else []))


def _fmt(value: float) -> str:
    return f"{int(value)}" if float(value).is_integer() else f"{value:.6g}"


@dataclass(frozen=True, eq=False)
class OutcomeSetEvent:
    """The event "the view, restricted to some columns, is one of these outcomes".

    Parameters
    ----------
    columns:
        names of the columns the event looks at.
    indices:
        their indices in the view.
    outcomes:
        the set of outcome tuples (one value per listed column) in S.
    member:
        True: S = rows whose projection is in ``outcomes``; False: S = the rest.
    moduli:
        optional, one per column: a modulus m > 0 looks at the column mod m (its
        residue), 0 at the column itself; empty (the default) means no residues.

    >>> e = OutcomeSetEvent(("z3",), (3,), frozenset({(1.0,)}))
    >>> views = np.array([[0, 0, 0, 1.0], [1, 1, 1, 0.0]])
    >>> e.contains(views).tolist(), e.describe(), e.complement().describe()
    ([True, False], 'z3 == 1', 'not (z3 == 1)')
    >>> parity = OutcomeSetEvent(("y", "b"), (0, 1), frozenset({(0.0, 1.0), (1.0, 0.0)}), moduli=(2, 0))
    >>> parity.contains(np.array([[7.0, 0.0], [7.0, 1.0], [-2.0, 1.0]])).tolist(), parity.describe()
    ([True, False, True], '(y mod 2, b) in {(0, 1), (1, 0)}')
    """

    columns: tuple[str, ...]
    indices: tuple[int, ...]
    outcomes: frozenset[tuple[float, ...]]
    member: bool = True
    moduli: tuple[int, ...] = ()
    _keys: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.columns) != len(self.indices):
            raise ParameterError("columns and indices must have the same length")
        if any(len(o) != len(self.indices) for o in self.outcomes):
            raise ParameterError("every outcome needs one value per column")
        if self.moduli and (len(self.moduli) != len(self.indices) or min(self.moduli) < 0):
            raise ParameterError("moduli must give one modulus >= 0 per column (0: the column itself)")
        table = np.array(sorted(self.outcomes), dtype=float).reshape(len(self.outcomes), -1)
        object.__setattr__(self, "_keys", np.sort(row_keys(table)) if len(self.indices) else table)

    def contains(self, views: np.ndarray) -> np.ndarray:
        """Boolean array: is each row's projection in (or, if not member, out of) the set?"""
        if not self.indices:  # S is everything or nothing
            hit = np.full(views.shape[0], bool(self.outcomes))
        else:
            hit = np.isin(row_keys(self.project(views)), self._keys)
        return hit if self.member else ~hit

    def project(self, views: np.ndarray) -> np.ndarray:
        """The looked-at columns of every row (residues where a modulus is set)."""
        return _features(views, self.indices, self.moduli)

    def labels(self) -> tuple[str, ...]:
        """The looked-at columns' names, e.g. ``("y mod 2", "b")``."""
        moduli = self.moduli or (0,) * len(self.columns)
        return tuple(f"{c} mod {m}" if m else c for c, m in zip(self.columns, moduli))

    def complement(self) -> OutcomeSetEvent:
        """The same outcome set with membership negated."""
        return OutcomeSetEvent(self.columns, self.indices, self.outcomes, not self.member, self.moduli)

    def describe(self) -> str:
        """E.g. ``"z3 == 1"``, ``"(a, b) in {(0, 1), (1, 1)}"`` or ``"not (...)"``."""
        outcomes = sorted(self.outcomes)
        if not self.indices:
            text = "any view" if outcomes else "no view"
        elif len(self.indices) == 1:
            values = [_fmt(o[0]) for o in outcomes]
            name = self.labels()[0]
            text = f"{name} == {values[0]}" if len(values) == 1 else f"{name} in {{{', '.join(values)}}}"
        else:
            shown = ["(" + ", ".join(_fmt(v) for v in o) + ")" for o in outcomes[:8]]
            more = f", ... ({len(outcomes)} outcomes)" if len(outcomes) > 8 else ""
            text = f"({', '.join(self.labels())}) in {{{', '.join(shown)}{more}}}"
        return text if self.member else f"not ({text})"



@dataclass(frozen=True, eq=False)
class LinearScore:
    """A linear score ``sum_i w_i (v_i - mean_i) / scale_i + b`` of some view columns.

    Produced by :func:`fit_logistic_score` (then it is the fitted log-odds of "x"
    against "x'"), usable as the ``score`` of a :class:`ThresholdEvent`.

    Parameters
    ----------
    columns:
        names of the columns used.
    indices:
        their indices in the view.
    mean, scale:
        the standardization of each used column.
    weights:
        one weight per used column (on the standardized scale).
    intercept:
        the constant b.

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
        return f"logistic score ({_names([f'{self.weights[i]:+.3g}*{self.columns[i]}' for i in order], ' ')})"


class EventCounts:

    """Streaming hit counts of a fixed event under x and x' (mergeable across workers).

    Parameters
    ----------
    event:
        the event S, fixed before any counted batch was drawn.

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
        made: list[int] = []
        for views in (batch_views_x, batch_views_xp):
            made += [0, 0] if views is None else [int(np.count_nonzero(self.event.contains(views))), views.shape[0]]
        self.add_totals(made)

    def merge(self, other: EventCounts) -> EventCounts:
        """Add another worker's counts of the same event into these; returns self."""
        if other.event is not self.event:
            raise ParameterError("only counts of the same event object can be merged")
        return self.add_totals(other.totals)

    @property
    def totals(self) -> tuple[int, int, int, int]:
        """``(hits_x, trials_x, hits_xp, trials_xp)``: what a worker sends back (not the event)."""
        return self.hits_x, self.trials_x, self.hits_xp, self.trials_xp

    def add_totals(self, totals: tuple[int, int, int, int]) -> EventCounts:
        """Add counts of this event made elsewhere (a worker's :attr:`totals`); returns self.

        >>> counts = EventCounts(ThresholdEvent(1.0, ">=", column=0, name="y"))
        >>> counts.add_totals((3, 10, 1, 10)).add_totals((2, 5, 0, 5)).totals
        (5, 15, 1, 15)
        """
        hits_x, trials_x, hits_xp, trials_xp = (int(v) for v in totals)
        self.hits_x += hits_x
        self.trials_x += trials_x
        self.hits_xp += hits_xp
        self.trials_xp += trials_xp
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
