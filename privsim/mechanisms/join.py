"""Continual private join size estimation (Pagh & Sejer 2026, section 5, Theorem 5.6).

Two relations R and S over one key domain have frequency vectors x and y; the join
size is ``J = <x, y>``. Both are summarized by CountSketches with the *same* hash
functions (k odd rows, width b) and *independent* Gaussian noise; the estimate is

    J~ = median_i <CS~_i(x), CS~_i(y)>                               (section 5.1)

Under continual observation over T steps every sketch counter is released through the
Gaussian binary tree mechanism (FastGaMe, section 3). One update changes one key of one
relation by at most 1, so one counter per row: l2-sensitivity sqrt(k), and

    sigma_node^2 = k (log2 T + 2) / (8 rho)                          (proof of Theorem 5.6)

makes the tree releases of all 2 k b counters, at every step, rho-zCDP.

Which counters a release reads (``refresh``)
--------------------------------------------
- ``"all"`` (the default): an estimate at step t reads every counter's tree release at
  step t. The steps read and the counters read do not depend on the data, so the
  estimates are a post-processing of the tree releases: **rho-zCDP**. Cost: O(k b) per
  estimate (the noise of 2 k b counters), O(k) per update.
- ``"touched"`` (the paper's lazy refresh): an update re-releases only the k counters it
  touches; the others keep the value of their last release. O(k) per update and
  estimate, but *which* counters were re-released depends on the keys, so the estimates
  are not a post-processing of the tree releases, and the proof of Theorem 5.6 does not
  cover them: a step with no update leaves the estimate unchanged (probability 1), a
  step with one update changes it (probability 1), an unbounded loss between these
  neighbours. The rho-zCDP claim holds only if which counters each update touches is
  public (:attr:`JoinSizeEstimator.assumption`).

Either way the counters in use are independent Gaussians of variance
``(log2 T + 1) sigma_node^2 < sigma_co^2 = k (log2 T + 2)^2 / (8 rho)``, so Lemma 5.2
applies with that sigma^2 (a single row has exactly

    Var Z_i = (||x||^2 ||y||^2 + <x,y>^2 - 2 sum_a x_a^2 y_a^2) / b
              + sigma^2 (||x||^2 + ||y||^2) + b sigma^4,

the CountSketch, sketch-noise and noise-noise terms of Lemma 5.2).

Trials. With ``trials=R`` the estimator runs R independent instances at once (own hashes,
own noise, all from ``seed``; every array gets a leading trial axis): the update and
estimate paths are numpy over (R, k, b), and the noise is a
:class:`~privsim.mechanisms.tree.FastGaMe` over all counters of all trials, read in
lockstep (Algorithm 1 with one history for all counters; see docs/architecture.md,
"Trials and seeds", for how the protocols seed it).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import _checks
from privsim.mechanisms._counter_noise import _ContinualSketch, counter_noise, sketch_scale
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.hashing import _spawn_seeds
from privsim.mechanisms.sketch import SketchHashes, _keys_and_deltas, _scatter_add, _trial_count
from privsim.mechanisms.tree import tree_height

__all__ = ["JoinSizeEstimator", "REFRESH_MODES", "TOUCHED_ASSUMPTION"]

_RELATIONS = {"R": 0, "S": 1}
#: With a trial axis, keys in [0, this) are hashed once into a table per trial (the per-step
#: polynomial evaluations on a few keys per trial cost more in numpy calls than in arithmetic).
_TABLE_KEYS = 1 << 10
#: The values of ``refresh``: every counter at every estimate, or the touched ones only.
REFRESH_MODES = ("all", "touched")
#: The assumption under which the lazy refresh (``refresh="touched"``) is rho-zCDP.
TOUCHED_ASSUMPTION = ("which sketch counters each update touches is public (the lazy refresh re-releases "
                      "only those, so the release reveals them; proof of Theorem 5.6 of Pagh & Sejer)")


class JoinSizeEstimator(_ContinualSketch):
    """The join size ``<x, y>`` of two dynamic relations, released continually under rho-zCDP.

    Parameters
    ----------
    T:
        Number of update steps, a power of two >= 2 (each :meth:`update` call is one step).
    rows:
        Sketch rows k, odd (the median analysis of Theorem 5.1 / Lemma 5.2 needs odd k;
        the paper's bounds take k >= 3).
    width:
        Buckets per row b, in ``[1, 2**32]``.
    rho:
        zCDP parameter > 0 for the whole sequence of estimates.
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator.
    refresh:
        ``"all"`` (default; rho-zCDP): every estimate reads every counter's tree release
        at its step. ``"touched"``: the paper's lazy refresh, rho-zCDP only under
        :data:`TOUCHED_ASSUMPTION` (see the module docstring).
    trials:
        None for one estimator, or R >= 1 independent estimators run at once (keys,
        deltas and answers get a leading axis of length R).
    noise:
        The counters' noise source: ``"tree"`` (the default, Theorem 5.6) or ``"blt"``
        (buffered linear Toeplitz noise, :mod:`privsim.mechanisms.blt`, its rho computed
        exactly; slower per counter read). Either is calibrated to ``rho``.
    calibration:
        The tree's node variance: ``"paper"`` (the default, k (log2 T + 2)/(8 rho), the
        outputs of earlier versions for a seed) or ``"exact"`` (the same rho exactly, less
        noise, :mod:`privsim.mechanisms.calibration`); BLT takes only ``"paper"``.

    Raises
    ------
    ParameterError
        If a parameter is out of range (e.g. an even number of rows), or for
        ``noise="laplace-tree"`` or ``noise="blt"`` with ``calibration="exact"``.

    Examples
    --------
    >>> js = JoinSizeEstimator(T=16, rows=3, width=64, rho=1e6, seed=1)
    >>> js.update("R", [1, 1, 2])          # step 1: R = {1, 1, 2}
    >>> js.update("S", [1, 2, 2, 3])       # step 2: S = {1, 2, 2, 3}
    >>> js.t, round(js.estimate())         # 2*1 + 1*2
    (2, 4)
    >>> abs(js.sigma2_node - 3 * (4 + 2) / (8 * 1e6)) < 1e-15  # k (log2 T + 2) / (8 rho)
    True
    >>> many = JoinSizeEstimator(T=4, rows=3, width=64, rho=1e6, seed=1, trials=2)
    >>> many.update("R", [[5], [6]]); many.update("S", [[5, 5], [5, 5]])
    >>> np.round(many.estimate()).tolist()
    [2.0, 0.0]
    """

    def __init__(self, T: int, rows: int, width: int, rho: float, seed: SeedLike = None, *,
                 refresh: str = "all", trials: int | None = None, noise: str = "tree",
                 calibration: str = "paper") -> None:
        self._h = tree_height(T, minimum=2)  # (h + 2)/(8 rho) needs h >= 1
        self._T = 1 << self._h
        self._rows = _checks.integer("rows", rows, 1)
        if self._rows % 2 == 0:
            raise ParameterError(f"rows must be an odd integer >= 1 (got {self._rows})")
        self._width = _checks.integer("width", width, 1, 1 << 32)
        self._rho = _checks.positive("rho", rho, scalar=True)
        if refresh not in REFRESH_MODES:
            raise ParameterError(f"refresh must be one of {', '.join(REFRESH_MODES)} (got {refresh!r})")
        self._refresh = refresh
        self._trials = _trial_count(trials)
        R = 1 if self._trials is None else self._trials
        # Theorem 5.6: sensitivity^2 = k, sigma_node^2 = k (log2 T + 2) / (8 rho) (paper's tree).
        self._kind, self._calibration = noise, calibration
        self._sigma2_node = sketch_scale(noise, self._T, self._rho, self._rows, calibration)
        hash_seed, noise_seed = _spawn_seeds(seed, 2)
        hash_shape = self._rows if self._trials is None else (self._trials, self._rows)
        self._hashes = SketchHashes(hash_shape, self._width, hash_seed)
        self._cells = self._rows * self._width
        # Counters 0..cells-1 of a trial are R's, cells..2 cells-1 are S's: independent noise.
        # The lazy refresh of one instance reads a few counters per step (FastGaMe); otherwise
        # every step that reads reads every counter of every trial (FastGaMe in lockstep).
        sparse = refresh == "touched" and self._trials is None
        self._noise = counter_noise(self._T, self._sigma2_node, 2 * self._cells, trials=self._trials,
                                    sparse=sparse, seed=noise_seed, kind=noise)
        self._counts = np.zeros((R, 2 * self._cells), dtype=np.float64)
        self._noisy = np.zeros((R, 2 * self._cells), dtype=np.float64)  # each counter as last released
        self._row_inner = np.zeros((R, self._rows), dtype=np.float64)  # <CS~_i(x), CS~_i(y)>
        self._row_offsets = (np.arange(self._rows, dtype=np.intp) * self._width)[:, None]
        self._t = 0
        self._read_at = 0  # the step whose release _row_inner holds
        self._table: tuple[NDArray[np.intp], NDArray[np.int8]] | None = None  # hashes of keys 0..size-1

    def __repr__(self) -> str:
        extra = "" if self._trials is None else f", trials={self._trials}"
        return (f"JoinSizeEstimator(T={self._T}, rows={self._rows}, width={self._width}, rho={self._rho!r}, "
                f"refresh={self._refresh!r}{extra})")

    @property
    def refresh(self) -> str:
        """``"all"`` or ``"touched"`` (see the module docstring)."""
        return self._refresh

    @property
    def assumption(self) -> str:
        """The assumption the rho-zCDP guarantee needs: "" for ``refresh="all"``."""
        return TOUCHED_ASSUMPTION if self._refresh == "touched" else ""

    @property
    def hashes(self) -> SketchHashes:
        """The hash functions both relations' sketches share (batch shape (trials, rows) with trials)."""
        return self._hashes

    @property
    def sigma2_node(self) -> float:
        """Tree node variance ``k (log2 T + 2) / (8 rho)`` (Theorem 5.6; exact: smaller); BLT: Var z."""
        return self._sigma2_node

    @property
    def sigma2(self) -> float:
        """Variance of the noise on each released counter, ``(log2 T + 1) sigma2_node`` for the tree.

        The sigma^2 with which Lemma 5.2 applies at every step (below the paper's
        ``sigma_co^2 = k (log2 T + 2)^2 / (8 rho)``). For BLT the variance grows with the
        step; this is its value at step T, the largest (:meth:`sigma2_at` for others).
        """
        return self._noise.variance

    def sigma2_at(self, t: int) -> float:
        """Variance of the noise on a counter released at step t (:attr:`sigma2` for the tree).

        Examples
        --------
        >>> js = JoinSizeEstimator(T=16, rows=1, width=4, rho=1.0, noise="blt")
        >>> js.sigma2_at(1) == js.sigma2_node, js.sigma2_at(16) == js.sigma2
        (True, True)
        """
        return self._noise.variance_at(t)

    @property
    def words(self) -> int:
        """Words of state: 2 k b counters and released values, and h + 3 per counter in FastGaMe."""
        return 2 * self._rows * self._width * (self._h + 5)

    def update(self, relation: str, keys: ArrayLike, deltas: ArrayLike = 1.0) -> None:
        """Change the frequencies of ``keys`` in one relation; one time step.

        O(k) work per key. With ``refresh="touched"`` the k touched counters also get
        their noise for the current step (Theorem 5.6), and the very first step releases
        every counter once (O(k b), the sketches' initial noise).

        Parameters
        ----------
        relation:
            ``"R"`` (frequency vector x) or ``"S"`` (frequency vector y).
        keys:
            Integer keys, any shape; with ``trials``, shape ``(trials, n)`` (n keys per trial).
        deltas:
            A number or numbers shaped like ``keys``, each in ``[-1, 1]`` (rho is for
            updates that change one frequency by at most 1). A key with delta 0 is no
            update (it touches nothing).

        Raises
        ------
        ParameterError
            If ``relation`` is not "R" or "S", or all T steps are used.
        InputError
            If keys are not integers, have the wrong shape, or a delta is outside [-1, 1].

        Examples
        --------
        >>> js = JoinSizeEstimator(T=8, rows=3, width=64, rho=1e9, seed=2)
        >>> js.update("R", [7, 7]); js.update("S", [7]); js.update("R", [7], -1)
        >>> js.t, round(js.estimate())
        (3, 1)
        """
        if relation not in _RELATIONS:
            raise ParameterError(f"relation must be 'R' or 'S' (got {relation!r})")
        which = _RELATIONS[relation]
        k, d = self._batch(keys, deltas)
        if not np.all(np.abs(d) <= 1.0):
            raise InputError("deltas must be numbers in [-1, 1]: rho is for updates of magnitude <= 1")
        if self._t >= self._T:
            raise ParameterError(f"T: all T={self._T} update steps are used; build with a larger T")
        self._t += 1
        buckets, signs = self._hash(k)  # (R, rows, n)
        trial_offsets = (np.arange(buckets.shape[0], dtype=np.intp) * self._counts.shape[1])[:, None, None]
        cells = buckets + self._row_offsets + which * self._cells + trial_offsets  # flat counter index
        _scatter_add(self._counts, cells, signs * d[:, None, :])
        if self._refresh == "touched":
            if self._t == 1:
                self._noisy = self._counts + self._noise.at(1)  # the sketches' initial release
            else:
                touched = np.broadcast_to(d[:, None, :] != 0, cells.shape)
                self._refresh_touched(which, cells, touched)

    def _batch(self, keys: ArrayLike, deltas: ArrayLike) -> tuple[NDArray, NDArray[np.float64]]:
        """Keys and deltas as (R, n) arrays (R = 1 without a trial axis)."""
        arr = np.asarray(keys)
        if self._trials is not None and (arr.ndim != 2 or arr.shape[0] != self._trials):
            raise InputError(f"keys must have shape (trials={self._trials}, n) (got shape {arr.shape})")
        k, d = _keys_and_deltas(arr, deltas)
        shape = (1, k.size) if self._trials is None else arr.shape
        return k.reshape(shape), d.reshape(shape)

    def _hash(self, keys: NDArray) -> tuple[NDArray[np.intp], NDArray[np.int8]]:
        """Buckets and signs of (R, n) keys, each (R, rows, n)."""
        if self._trials is None or keys.size == 0 or keys.min() < 0 or keys.max() >= _TABLE_KEYS:
            return self._hashes(keys[:, None, :])
        top = int(keys.max()) + 1
        if self._table is None or self._table[0].shape[-1] < top:
            self._table = self._hashes(np.arange(1 << (top - 1).bit_length()))  # (R, rows, size)
        where = keys[:, None, :]
        return tuple(np.take_along_axis(part, where, axis=2) for part in self._table)  # type: ignore[return-value]

    def _refresh_touched(self, which: int, cells: NDArray[np.intp], touched: NDArray[np.bool_]) -> None:
        """The lazy refresh: re-release the touched counters of one relation, keep the others."""
        if self._trials is None:  # O(k): FastGaMe queries the touched counters only
            hit = np.unique(cells[touched])
            new = self._counts[0, hit] + self._noise.at(self._t, hit[None, :])[0]
            change = new - self._noisy[0, hit]
            self._noisy[0, hit] = new
            partner = self._noisy[0, hit + (1 - 2 * which) * self._cells]
            rows = (hit - which * self._cells) // self._width
            if self._read_at:  # patch the row inner products (section 5.2), else computed on read
                self._row_inner[0] += np.bincount(rows, weights=change * partner, minlength=self._rows)
                self._read_at = self._t
            return
        mask = np.zeros(self._counts.shape, dtype=bool)
        np.put(mask, cells[touched], True)  # cells are flat indices into the (R, 2 k b) counters
        self._noisy = np.where(mask, self._counts + self._noise.at(self._t), self._noisy)
        self._read_at = 0

    def _read(self) -> NDArray[np.float64]:
        """The row inner products of the release at the current step, (R, rows)."""
        if self._t == 0 or self._read_at == self._t:
            return self._row_inner
        if self._refresh == "all":  # every counter's tree release at this step
            np.add(self._counts, self._noise.at(self._t), out=self._noisy)
        table = self._noisy.reshape(-1, 2, self._rows, self._width)
        self._row_inner = np.einsum("rij,rij->ri", table[:, 0], table[:, 1])
        self._read_at = self._t
        return self._row_inner

    def row_estimates(self) -> NDArray[np.float64]:
        """The k row estimates ``<CS~_i(x), CS~_i(y)>`` at the current step (zeros before step 1).

        Rows have independent hashes and noise: k independent single-row estimates.
        Shape ``(rows,)``, or ``(trials, rows)`` with a trial axis.

        Examples
        --------
        >>> js = JoinSizeEstimator(T=4, rows=3, width=64, rho=1e9, seed=0)
        >>> js.update("R", [5]); js.update("S", [5, 5])
        >>> np.round(js.row_estimates(), 2).tolist()
        [2.0, 2.0, 2.0]
        """
        inner = self._read()
        return inner[0].copy() if self._trials is None else inner.copy()

    def estimate(self) -> float | NDArray[np.float64]:
        """The private join size ``median_i <CS~_i(x), CS~_i(y)>`` at the current step.

        O(k b) with ``refresh="all"`` (the release of every counter at this step), O(k)
        with ``"touched"``. Before the first update the relations are empty and the answer
        is 0, which reveals nothing. A float, or shape ``(trials,)`` with a trial axis.

        Examples
        --------
        >>> js = JoinSizeEstimator(T=4, rows=3, width=64, rho=1e9, seed=0)
        >>> js.estimate()
        0.0
        """
        median = np.median(self._read(), axis=1)
        return float(median[0]) if self._trials is None else median
