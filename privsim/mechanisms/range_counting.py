"""Private orthogonal range counting on [B]^d with Private CountSketches (Pagh & Sejer, section 4).

Dyadic components. Per dimension, level k in {0, .., L-1}, L = log2 B, partitions [B]
into the B / 2^k intervals ``[i 2^k, (i+1) 2^k)`` (section 4.1). The full-domain level
k = L is *not* a component, as in the paper: there are L^d components (one per level
vector ``(k_1, .., k_d)``), each a partition of [B]^d into dyadic boxes; a query
interval decomposes into at most two intervals per level, so at most 2L per dimension
and at most (2 log2 B)^d boxes per query, at most 2^d from each component. (With the
full-domain level a full-range side would cost one interval instead of two, but there
would be (L+1)^d components and the noise variance would grow by ((L+1)/L)^d.)

Each component holds a Private CountSketch of the vector of its boxes' point counts
(independent hashes and noise per component). A point update touches one box per
component, so one cell per row of each of the L^d sketches: the whole collection has
l2-sensitivity ``sqrt(r L^d)`` for updates of one point by at most 1.

Static (``T=None``), Theorem D.2: every cell gets N(0, s^2) once, with

    s^2 = r L^d / (2 rho)                                   (Gaussian mechanism, Def. A.3)

Dynamic (``T`` a power of two >= 2), Theorem 4.3: the counters are continually released
with the Gaussian binary tree mechanism over T steps, through FastGaMe (section 3). The
tree's strategy matrix turns sensitivity Delta into sqrt(h+2)/2 * Delta (appendix B), so
with h = log2 T the node variance is

    s_node^2 = r L^d (h + 2) / (8 rho) = s^2 (h + 2) / 4,   (section 2 scaled by Delta^2)

and every released counter carries noise of variance (h + 1) s_node^2 =
s^2 (h + 1)(h + 2) / 4: the "tree factor" of the dynamic version. (The calibration needs
h >= 1: at T = 1 the formula would give s^2 / 2, half the noise a single release needs.)

A query answer is the sum of the box estimates ``median_i s_i(box) (CS_i[h_i(box)] + noise)``;
each is unbiased, so the answer is unbiased.

Which counters a query reads depends on the query box and the hash functions only, never
on the points, and every counter read at step t carries its tree release at step t, so the
answers are a post-processing of the tree releases: no data-dependent refresh (contrast
:mod:`privsim.mechanisms.join`'s lazy option).

Trials: ``trials=R`` runs R independent structures at once (own hashes and noise from one
``seed``; points, deltas and answers get a leading trial axis). The continual noise then
comes from a :class:`~privsim.mechanisms.tree.FastGaMe` over all counters, read in
lockstep: O(counters) per query step instead of O(boxes rows).
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import _checks
from privsim.mechanisms._counter_noise import CounterNoise, _ContinualSketch, counter_noise, sketch_scale
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.continual_kinds import TREE, sketch_noise_kind
from privsim.mechanisms.hashing import _spawn_seeds
from privsim.mechanisms.sketch import SketchHashes, _scatter_add, _trial_count
from privsim.mechanisms.tree import tree_height

__all__ = ["RangeCounter", "dyadic_intervals", "dyadic_boxes"]

_MAX_KEY_BITS = 60  # box keys sum_j index_j B^j < B^d must stay distinct mod 2**61 - 1
_CHUNK_CELLS = 1 << 20  # hashed (component, row, point) triples per update chunk


def _levels_of(B: int) -> int:
    """log2 B for a power of two B >= 2, else ParameterError."""
    b = _checks.integer("B", B, 2, 1 << _MAX_KEY_BITS)
    if b & (b - 1):
        raise ParameterError(f"B must be a power of two in [2, 2**{_MAX_KEY_BITS}] (got {b})")
    return b.bit_length() - 1


def dyadic_intervals(lo: int, hi: int, B: int) -> list[tuple[int, int]]:
    """Decompose ``[lo, hi)`` into dyadic intervals of levels 0..log2(B)-1.

    An interval ``(k, i)`` is ``[i 2^k, (i+1) 2^k)``. Greedy from the left: each level
    is used at most twice, so there are at most ``2 log2 B`` intervals (section 4.1).

    Parameters
    ----------
    lo, hi:
        Integers with ``0 <= lo <= hi <= B``.
    B:
        The domain size, a power of two >= 2.

    Returns
    -------
    list of (level, index)
        Disjoint intervals whose union is ``[lo, hi)``, left to right.

    Examples
    --------
    >>> dyadic_intervals(1, 7, 8)
    [(0, 1), (1, 1), (1, 2), (0, 6)]
    >>> dyadic_intervals(0, 8, 8)
    [(2, 0), (2, 1)]
    """
    L = _levels_of(B)
    lo, hi = _checks.integer("lo", lo, 0, B), _checks.integer("hi", hi, 0, B)
    if lo > hi:
        raise InputError(f"lo must be <= hi (got lo={lo}, hi={hi})")
    out: list[tuple[int, int]] = []
    while lo < hi:
        k = L - 1 if lo == 0 else min(L - 1, (lo & -lo).bit_length() - 1)
        while lo + (1 << k) > hi:
            k -= 1
        out.append((k, lo >> k))
        lo += 1 << k
    return out


def dyadic_boxes(lo: ArrayLike, hi: ArrayLike, B: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Decompose the box ``prod_j [lo_j, hi_j)`` into dyadic boxes.

    The product of the per-dimension decompositions of :func:`dyadic_intervals`: at most
    ``(2 log2 B)^d`` disjoint boxes, at most ``2^d`` per component (level vector).

    Parameters
    ----------
    lo, hi:
        Integer arrays of length d with ``0 <= lo <= hi <= B``.
    B:
        The domain size per dimension, a power of two >= 2.

    Returns
    -------
    (levels, indices)
        Two int64 arrays of shape ``(m, d)``: box ``q`` is
        ``prod_j [indices[q, j] 2^levels[q, j], (indices[q, j] + 1) 2^levels[q, j])``.

    Examples
    --------
    >>> levels, indices = dyadic_boxes([0, 1], [2, 3], B=4)
    >>> levels.tolist(), indices.tolist()
    ([[1, 0], [1, 0]], [[0, 1], [0, 2]])
    """
    lo_a, hi_a = np.atleast_1d(np.asarray(lo)), np.atleast_1d(np.asarray(hi))
    if lo_a.ndim != 1 or lo_a.shape != hi_a.shape:
        raise InputError(
            f"lo and hi must be integer arrays of one length d (got shapes {lo_a.shape}, {hi_a.shape})"
        )
    per_dim = [dyadic_intervals(a, b, B) for a, b in zip(lo_a.tolist(), hi_a.tolist(), strict=True)]
    boxes = list(itertools.product(*per_dim))
    arr = np.array(boxes, dtype=np.int64).reshape(len(boxes), lo_a.shape[0], 2)
    return arr[:, :, 0].copy(), arr[:, :, 1].copy()


class RangeCounter(_ContinualSketch):
    """Private orthogonal range counts over ``[B]^d``, static or under continual observation.

    L^d dyadic components (L = log2 B, levels 0..L-1, no full-domain level; see the module
    docstring), one Private CountSketch of ``rows`` x ``width`` each. A query box is cut
    into at most (2L)^d dyadic boxes, each estimated by the median over rows of its
    sketch, and the estimates are summed: unbiased.

    Privacy is ``rho``-zCDP for point updates of magnitude <= 1, over the whole sequence
    of answers:

    * static (``T=None``): ``sigma2 = rows L^d / (2 rho)`` per cell (Theorem D.2). The
      first query releases the sketches; updates after it are refused.
    * dynamic (``T`` = number of update steps, a power of two >= 2): counters are released
      through FastGaMe with node variance ``sigma2 = rows L^d (log2 T + 2) / (8 rho)``,
      so each released counter has variance ``(log2 T + 1) sigma2`` (Theorem 4.3). Each
      call to :meth:`update` is one time step (it may carry many point updates, which the
      paper's model allows); queries may come any time and answer for the current step.

    Parameters
    ----------
    B:
        Side of the grid, a power of two >= 2 with ``B**d <= 2**60``.
    d:
        Dimension >= 1.
    rows:
        CountSketch rows r >= 1 per component (the paper's t).
    width:
        Buckets per row b (the paper's row size), in ``[1, 2**32]``.
    rho:
        zCDP parameter > 0 for the whole structure.
    T:
        None for the static structure, else the number of update steps (power of two >= 2).
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator.
    trials:
        None for one structure, or R >= 1 independent structures run at once.
    box:
        Optional ``(lo, hi)``: the only box that will be queried. Dynamic with ``trials``,
        the tree noise is then drawn for the counters that box reads (at most
        (2 log2 B)^d rows per trial) instead of all of them; other boxes are refused.
    noise:
        Dynamic only: the counters' noise source, ``"tree"`` (the default, Theorem 4.3) or
        ``"blt"`` (buffered linear Toeplitz noise, :mod:`privsim.mechanisms.blt`, its rho
        computed exactly; slower per counter read). Either is calibrated to ``rho``.
    calibration:
        Dynamic only: the tree's node variance, ``"paper"`` (the default, the outputs of
        earlier versions for a seed) or ``"exact"`` (the same rho exactly, less noise,
        :mod:`privsim.mechanisms.calibration`); BLT takes only ``"paper"``.

    Raises
    ------
    ParameterError
        If a parameter is out of range, or for ``noise="laplace-tree"``, ``noise="blt"``
        with ``calibration="exact"``, or either option away from its default without ``T``.

    Examples
    --------
    >>> rc = RangeCounter(B=1024, d=2, rows=3, width=64, rho=1e6, seed=1)
    >>> rc.update([[3, 5], [3, 6], [900, 2]])
    >>> round(rc.query([0, 0], [512, 1024]))
    2
    >>> rc.components, rc.max_boxes
    (100, 400)
    >>> dyn = RangeCounter(B=16, d=1, rows=3, width=32, rho=1e6, T=8, seed=2)
    >>> dyn.update([4]); dyn.update([9])
    >>> dyn.t, round(dyn.query(0, 16))
    (2, 2)
    >>> many = RangeCounter(B=16, d=1, rows=3, width=32, rho=1e6, T=8, seed=2, trials=2)
    >>> many.update([[[4], [5]], [[9], [9]]])
    >>> [round(v) for v in many.query(0, 8)]
    [2, 0]
    """

    def __init__(
        self,
        B: int,
        d: int,
        rows: int,
        width: int,
        rho: float,
        *,
        T: int | None = None,
        seed: SeedLike = None,
        trials: int | None = None,
        box: tuple[ArrayLike, ArrayLike] | None = None,
        noise: str = "tree",
        calibration: str = "paper",
    ) -> None:
        self._L = _levels_of(B)
        self._B = 1 << self._L
        self._d = _checks.integer("d", d, 1)
        if self._L * self._d > _MAX_KEY_BITS:
            raise ParameterError(
                f"B and d must satisfy B**d <= 2**{_MAX_KEY_BITS} (got B=2**{self._L}, d={self._d})"
            )
        self._rows = _checks.integer("rows", rows, 1)
        self._width = _checks.integer("width", width, 1, 1 << 32)
        self._rho = _checks.positive("rho", rho, scalar=True)
        self._C = self._L**self._d
        sensitivity2 = self._rows * self._C  # squared l2-sensitivity of one point update
        self._trials = _trial_count(trials)
        R = 1 if self._trials is None else self._trials
        hash_seed, noise_seed = _spawn_seeds(seed, 2)
        batch = (self._C, self._rows) if self._trials is None else (self._trials, self._C, self._rows)
        self._hashes = SketchHashes(batch, self._width, hash_seed)
        shape = (R, self._C, self._rows, self._width)
        self._counts = np.zeros(shape, dtype=np.float64)
        self._offsets = (np.arange(self._C * self._rows, dtype=np.intp) * self._width).reshape(
            self._C, self._rows, 1
        )
        # Level vector (k_1..k_d) of component c, c = ravel_multi_index(k, (L,)*d).
        self._levels = np.indices((self._L,) * self._d).reshape(self._d, -1).T.astype(np.int64)
        self._key_weights = self._B ** np.arange(self._d, dtype=np.int64)
        self._t = 0
        self._released = False
        self._box: tuple[tuple, NDArray, NDArray, NDArray] | None = None
        kind = sketch_noise_kind(noise, calibration)
        self._kind, self._calibration = noise, calibration
        if T is None:
            if kind is not TREE:
                raise ParameterError(f"noise and calibration need T (got noise={noise!r}, calibration="
                                     f"{calibration!r}); the static structure is one Gaussian release")
            self._T: int | None = None
            self._h = 0
            self._sigma2 = sensitivity2 / (2.0 * self._rho)  # Theorem D.2: s^2 = r L^d / (2 rho)
            self._noise = np.sqrt(self._sigma2) * np.random.default_rng(noise_seed).standard_normal(shape)
            self._tree: CounterNoise | None = None
        else:
            self._h = tree_height(T, minimum=2)
            self._T = 1 << self._h
            # Section 2 / appendix B with Delta^2 = r L^d: s_node^2 = Delta^2 (h + 2) / (8 rho)
            # (the paper's tree; exact or BLT: the scale that spends the same rho exactly).
            self._sigma2 = sketch_scale(noise, self._T, self._rho, sensitivity2, calibration)
            # One structure reads the few counters of a query (FastGaMe); R at once read every
            # counter (in lockstep), or with a declared box every counter the box reads.
            self._box = None if box is None or self._trials is None else self._box_cells(*box)
            cells = self._C * self._rows * self._width if self._box is None else self._box[2].shape[1]
            self._tree = counter_noise(self._T, self._sigma2, cells, trials=self._trials,
                                       sparse=self._trials is None, seed=noise_seed, kind=noise)

    def __repr__(self) -> str:
        kind = "static" if self._T is None else f"T={self._T}"
        extra = "" if self._trials is None else f", trials={self._trials}"
        return (
            f"RangeCounter(B={self._B}, d={self._d}, rows={self._rows}, width={self._width}, "
            f"rho={self._rho!r}, {kind}{extra})"
        )

    # -- parameters ----------------------------------------------------------------------
    @property
    def B(self) -> int:
        """Side of the grid [B]^d."""
        return self._B

    @property
    def d(self) -> int:
        """Dimension."""
        return self._d

    @property
    def levels(self) -> int:
        """Dyadic levels per dimension, L = log2 B (levels 0..L-1)."""
        return self._L

    @property
    def components(self) -> int:
        """Number of dyadic components, L^d, one Private CountSketch each."""
        return self._C

    @property
    def sigma2(self) -> float:
        """Variance of each Gaussian draw: per cell (static), per tree node or of BLT's z (dynamic)."""
        return self._sigma2

    @property
    def cell_variance(self) -> float:
        """Variance of the noise on one released counter: sigma2, or (log2 T + 1) sigma2.

        For BLT the variance grows with the step: this is its value at step T, the largest
        (:meth:`cell_variance_at` for others).
        """
        return self._sigma2 if self._tree is None else self._tree.variance

    def cell_variance_at(self, t: int) -> float:
        """Variance of the noise on a counter released at step t (:attr:`cell_variance` for the tree).

        Examples
        --------
        >>> rc = RangeCounter(B=4, d=1, rows=1, width=4, rho=1.0, T=8, noise="blt")
        >>> rc.cell_variance_at(1) == rc.sigma2, rc.cell_variance_at(8) == rc.cell_variance
        (True, True)
        """
        return self.cell_variance if self._tree is None else self._tree.variance_at(t)

    @property
    def max_boxes(self) -> int:
        """Most dyadic boxes a query is cut into, (2 log2 B)^d."""
        return (2 * self._L) ** self._d

    @property
    def words(self) -> int:
        """Words of state: L^d r b counters, plus, dynamic, h + 3 per counter for FastGaMe.

        FastGaMe keeps per materialized counter the last query time, the validity mask and
        h + 1 prefix sums; this counts every counter as materialized (the worst case, and
        the space bound of Theorem 4.3).
        """
        cells = self._counts[0].size
        return cells if self._T is None else cells * (self._h + 4)

    # -- updates and queries --------------------------------------------------------------
    def _points(self, points: ArrayLike, deltas: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Points as (R, n, d) and deltas as (R, n) (R = 1 without a trial axis)."""
        pts = np.asarray(points)
        if self._trials is None:
            if pts.ndim == 1:
                pts = pts[:, None] if self._d == 1 else pts[None, :]
            want = f"(n, {self._d})"
            pts = pts[None] if pts.ndim == 2 else pts
        else:
            want = f"(trials={self._trials}, n, {self._d})"
            if pts.ndim != 3 or pts.shape[0] != self._trials:
                pts = pts[None]  # refused below
        if pts.ndim != 3 or pts.shape[2] != self._d:
            raise InputError(f"points must have shape {want} (got shape {np.shape(points)})")
        pts = _checks.integer_values("points", pts, 0, self._B - 1)
        try:
            dl = np.broadcast_to(np.asarray(deltas, dtype=np.float64), pts.shape[:2])
        except (TypeError, ValueError):
            raise InputError(f"deltas must be a number or an array of {pts.shape[1]} numbers per trial") from None
        if not np.all(np.abs(dl) <= 1.0):
            raise InputError("deltas must be numbers in [-1, 1]: rho is for point updates of magnitude <= 1")
        return pts, dl

    def update(self, points: ArrayLike, deltas: ArrayLike = 1.0) -> None:
        """Insert (delta +1) or delete (delta -1) points; one time step when dynamic.

        Parameters
        ----------
        points:
            Integer array of shape ``(n, d)`` with entries in ``[0, B)`` (shape ``(n,)``
            when d = 1; shape ``(d,)`` for one point when d > 1); with ``trials``, shape
            ``(trials, n, d)``.
        deltas:
            A number or n numbers in ``[-1, 1]`` (per trial with ``trials``; a delta of 0
            is no update).

        Raises
        ------
        InputError
            If points lie outside the grid or a delta is outside [-1, 1].
        ParameterError
            Static: after the first query. Dynamic: after T update steps.

        Examples
        --------
        >>> rc = RangeCounter(B=64, d=2, rows=3, width=128, rho=1e9, T=4, seed=0)
        >>> rc.update([[1, 2], [3, 4]])          # step 1: two insertions
        >>> rc.update([[3, 4]], deltas=-1)       # step 2: one deletion
        >>> rc.t, round(rc.query([0, 0], [64, 64]))
        (2, 1)
        """
        pts, dl = self._points(points, deltas)
        if self._T is None and self._released:
            raise ParameterError(
                "T: a static RangeCounter (T=None) takes no updates after its first query; "
                "pass T=<number of update steps> for continual release"
            )
        if self._T is not None and self._t >= self._T:
            raise ParameterError(f"T: all T={self._T} update steps are used; build with a larger T")
        R = pts.shape[0]
        trial_offsets = (np.arange(R, dtype=np.intp) * self._counts[0].size).reshape(R, 1, 1, 1)
        chunk = max(1, _CHUNK_CELLS // (R * self._C * self._rows))
        for start in range(0, pts.shape[1], chunk):
            p, w = pts[:, start : start + chunk], dl[:, start : start + chunk]
            boxes = p[:, None, :, :] >> self._levels[None, :, None, :]  # (R, C, n, d): box per dimension
            keys = boxes @ self._key_weights  # (R, C, n)
            buckets, signs = self._hashes(keys[:, :, None, :])  # (R, C, rows, n)
            _scatter_add(self._counts, buckets + self._offsets + trial_offsets, signs * w[:, None, None, :])
        self._t += 1

    def _box_cells(self, lo: ArrayLike, hi: ArrayLike) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        """The counters a box reads: (lo, hi), signs (R, m, rows), cells (R, m rows) and, per
        (box, row) slot, the first slot of the trial that reads the same counter (R, m rows)."""
        levels, indices = dyadic_boxes(lo, hi, self._B)
        if levels.shape[1] != self._d:
            raise InputError(f"lo and hi must have length d={self._d} (got {levels.shape[1]})")
        R = self._counts.shape[0]
        comp = np.ravel_multi_index(tuple(levels.T), (self._L,) * self._d)
        keys = indices @ self._key_weights
        buckets, signs = self._hashes[..., comp, :](keys[None, :, None, None])  # (R, m, rows, 1)
        cells = (buckets + self._offsets[comp])[..., 0].reshape(R, -1)  # flat counter per (box, row)
        # Two pieces of one component may share a bucket: the same counter, so the same noise.
        order = np.argsort(cells, axis=1, kind="stable")
        ranked = np.take_along_axis(cells, order, axis=1)
        start = np.ones(ranked.shape, dtype=bool)
        start[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
        first = np.maximum.accumulate(np.where(start, np.arange(ranked.shape[1]), 0), axis=1)
        same = np.empty_like(order)
        np.put_along_axis(same, order, np.take_along_axis(order, first, axis=1), axis=1)
        bounds = tuple(np.atleast_1d(np.asarray(v)).tolist() for v in (lo, hi))
        return bounds, signs[..., 0], cells, same

    def _box_row_estimates(self, lo: ArrayLike, hi: ArrayLike) -> NDArray[np.float64]:
        """Row estimates ``s_i(q) * released counter``, shape (R, boxes, rows)."""
        if self._box is not None:
            bounds = tuple(np.atleast_1d(np.asarray(v)).tolist() for v in (lo, hi))
            if bounds != self._box[0]:
                raise InputError(f"lo, hi must be the declared box {self._box[0]} (got {bounds})")
            _, signs, cells, same = self._box
        else:
            _, signs, cells, same = self._box_cells(lo, hi)
        R = self._counts.shape[0]
        if signs.shape[1] == 0 or (self._T is not None and self._t == 0):
            # Empty box, or nothing updated yet: the answer 0 does not depend on the data.
            return np.zeros((R, 0, self._rows))
        values = np.take_along_axis(self._counts.reshape(R, -1), cells, axis=1)
        if self._tree is None:
            self._released = True
            values = values + np.take_along_axis(self._noise.reshape(R, -1), cells, axis=1)
        elif self._box is not None:  # the tree runs over the box's slots; a shared counter reads its first
            values = values + np.take_along_axis(self._tree.at(self._t), same, axis=1)
        else:
            values = values + self._tree.at(self._t, cells)  # the tree release at step t
        return signs * values.reshape(R, -1, self._rows)

    def query(self, lo: ArrayLike, hi: ArrayLike) -> float | NDArray[np.float64]:
        """The private count of points in the box ``prod_j [lo_j, hi_j)``.

        Sum over the dyadic decomposition (at most (2 log2 B)^d boxes) of each box's
        median-over-rows estimate; unbiased. Dynamic: answers for the current step t
        (0 before the first update, which reveals nothing).

        Parameters
        ----------
        lo, hi:
            Integer arrays of length d (or ints when d = 1), ``0 <= lo <= hi <= B``.

        Returns
        -------
        float or numpy.ndarray
            The answer; shape ``(trials,)`` with a trial axis.

        Raises
        ------
        InputError
            If the box is not inside the grid.

        Examples
        --------
        >>> rc = RangeCounter(B=16, d=1, rows=3, width=64, rho=1e9, seed=0)
        >>> rc.update([2, 3, 3, 12])
        >>> round(rc.query(0, 4)), round(rc.query(4, 4))
        (3, 0)
        """
        answer = np.median(self._box_row_estimates(lo, hi), axis=2).sum(axis=1)
        return float(answer[0]) if self._trials is None else answer

    def row_answers(self, lo: ArrayLike, hi: ArrayLike) -> NDArray[np.float64]:
        """The answer each row gives alone: the sum of that row's box estimates.

        Rows use independent hashes and noise, so these are ``rows`` independent
        single-row answers (post-processing of the same release as :meth:`query`).

        Examples
        --------
        >>> rc = RangeCounter(B=8, d=1, rows=3, width=256, rho=1e9, seed=0)
        >>> rc.update([1, 2, 6])
        >>> np.round(rc.row_answers(0, 4), 2).tolist()
        [2.0, 2.0, 2.0]
        """
        answers = self._box_row_estimates(lo, hi).sum(axis=1)  # (R, rows); zeros for no boxes
        return answers[0] if self._trials is None else answers
