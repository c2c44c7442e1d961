"""Continual private join size estimation (Pagh & Sejer 2026, section 5, Theorem 5.6).

Two relations R and S over one key domain have frequency vectors x and y; the join
size is ``J = <x, y>``. Both are summarized by CountSketches with the *same* hash
functions (k odd rows, width b) and *independent* Gaussian noise; the estimate is

    J~ = median_i <CS~_i(x), CS~_i(y)>                               (section 5.1)

Under continual observation over T steps every sketch counter is released through the
Gaussian binary tree mechanism (FastGaMe, section 3). One update changes one key of one
relation by at most 1, so one counter per row: l2-sensitivity sqrt(k), and

    sigma_node^2 = k (log2 T + 2) / (8 rho)                          (proof of Theorem 5.6)

makes the whole sequence of estimates rho-zCDP. An update refreshes only the k touched
counters (their noise at the current step) and patches the k row inner products: O(k)
time. At any step the counters in use are independent Gaussians of variance
``(log2 T + 1) sigma_node^2 < sigma_co^2 = k (log2 T + 2)^2 / (8 rho)``, so Lemma 5.2
applies with that sigma^2 (a single row has exactly

    Var Z_i = (||x||^2 ||y||^2 + <x,y>^2 - 2 sum_a x_a^2 y_a^2) / b
              + sigma^2 (||x||^2 + ||y||^2) + b sigma^4,

the CountSketch, sketch-noise and noise-noise terms of Lemma 5.2).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import _checks
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.continual import continual_sigma2
from privsim.mechanisms.hashing import _spawn_seeds
from privsim.mechanisms.sketch import SketchHashes, _keys_and_deltas
from privsim.mechanisms.tree import FastGaMe, tree_height

__all__ = ["JoinSizeEstimator"]

_RELATIONS = {"R": 0, "S": 1}


class JoinSizeEstimator:
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

    Raises
    ------
    ParameterError
        If a parameter is out of range (e.g. an even number of rows).

    Examples
    --------
    >>> js = JoinSizeEstimator(T=16, rows=3, width=64, rho=1e6, seed=1)
    >>> js.update("R", [1, 1, 2])          # step 1: R = {1, 1, 2}
    >>> js.update("S", [1, 2, 2, 3])       # step 2: S = {1, 2, 2, 3}
    >>> js.t, round(js.estimate())         # 2*1 + 1*2
    (2, 4)
    >>> math.isclose(js.sigma2_node, 3 * (4 + 2) / (8 * 1e6))  # k (log2 T + 2) / (8 rho)
    True
    """

    def __init__(self, T: int, rows: int, width: int, rho: float, seed: SeedLike = None) -> None:
        self._h = tree_height(T, minimum=2)  # (h + 2)/(8 rho) needs h >= 1
        self._T = 1 << self._h
        self._rows = _checks.integer("rows", rows, 1)
        if self._rows % 2 == 0:
            raise ParameterError(f"rows must be an odd integer >= 1 (got {self._rows})")
        self._width = _checks.integer("width", width, 1, 1 << 32)
        self._rho = _checks.positive("rho", rho, scalar=True)
        # Theorem 5.6: sensitivity^2 = k, sigma_node^2 = k (log2 T + 2) / (8 rho).
        self._sigma2_node = continual_sigma2(self._T, self._rho, math.sqrt(self._rows))
        hash_seed, noise_seed = _spawn_seeds(seed, 2)
        self._hashes = SketchHashes(self._rows, self._width, hash_seed)
        cells = self._rows * self._width
        # Coordinates 0..cells-1 are R's counters, cells..2 cells-1 are S's: independent noise.
        self._tree = FastGaMe(self._T, self._sigma2_node, k=2 * cells, seed=noise_seed)
        self._counts = np.zeros((2, cells), dtype=np.float64)
        self._noisy = np.zeros((2, cells), dtype=np.float64)  # each counter as last released
        self._row_inner = np.zeros(self._rows, dtype=np.float64)  # <CS~_i(x), CS~_i(y)>
        self._row_offsets = (np.arange(self._rows, dtype=np.intp) * self._width)[:, None]
        self._t = 0

    def __repr__(self) -> str:
        return f"JoinSizeEstimator(T={self._T}, rows={self._rows}, width={self._width}, rho={self._rho!r})"

    @property
    def T(self) -> int:
        """Number of update steps."""
        return self._T

    @property
    def t(self) -> int:
        """Update steps taken so far; :meth:`estimate` answers for this step."""
        return self._t

    @property
    def rows(self) -> int:
        """Sketch rows k (odd)."""
        return self._rows

    @property
    def width(self) -> int:
        """Buckets per row b."""
        return self._width

    @property
    def rho(self) -> float:
        """zCDP parameter of the whole sequence of estimates."""
        return self._rho

    @property
    def hashes(self) -> SketchHashes:
        """The hash functions both relations' sketches share."""
        return self._hashes

    @property
    def sigma2_node(self) -> float:
        """Tree node variance ``k (log2 T + 2) / (8 rho)`` (Theorem 5.6)."""
        return self._sigma2_node

    @property
    def sigma2(self) -> float:
        """Variance of the noise on each released counter, ``(log2 T + 1) sigma2_node``.

        The sigma^2 with which Lemma 5.2 applies at every step (below the paper's
        ``sigma_co^2 = k (log2 T + 2)^2 / (8 rho)``).
        """
        return (self._h + 1) * self._sigma2_node

    @property
    def words(self) -> int:
        """Words of state: 2 k b counters and released values, and h + 3 per counter in FastGaMe."""
        return 2 * self._rows * self._width * (self._h + 5)

    def update(self, relation: str, keys: ArrayLike, deltas: ArrayLike = 1.0) -> None:
        """Change the frequencies of ``keys`` in one relation; one time step.

        O(k) work per key: the k touched counters get their noise for the current step
        and the k row inner products are patched (Theorem 5.6). The very first step also
        releases every counter once (O(k b), the sketches' initial noise).

        Parameters
        ----------
        relation:
            ``"R"`` (frequency vector x) or ``"S"`` (frequency vector y).
        keys:
            Integer keys, any shape.
        deltas:
            A number or numbers shaped like ``keys``, each in ``[-1, 1]`` (rho is for
            updates that change one frequency by at most 1).

        Raises
        ------
        ParameterError
            If ``relation`` is not "R" or "S", or all T steps are used.
        InputError
            If keys are not integers or a delta is outside [-1, 1].

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
        k, d = _keys_and_deltas(keys, deltas)
        if not np.all(np.abs(d) <= 1.0):
            raise InputError("deltas must be numbers in [-1, 1]: rho is for updates of magnitude <= 1")
        if self._t >= self._T:
            raise ParameterError(f"T: all T={self._T} update steps are used; build with a larger T")
        self._t += 1
        buckets, signs = self._hashes(k)  # (rows, n)
        cells = (buckets + self._row_offsets).ravel()
        np.add.at(self._counts[which], cells, (signs * d).ravel())
        if self._t == 1:
            self._release_all()
        else:
            self._refresh(which, np.unique(cells))

    def _release_all(self) -> None:
        """First step: release every counter at t = 1 and compute the row inner products."""
        noise = self._tree.noise(1, np.arange(self._counts.size, dtype=np.int64))
        self._noisy = self._counts + noise.reshape(self._counts.shape)
        x, y = (self._noisy[r].reshape(self._rows, self._width) for r in (0, 1))
        self._row_inner = np.einsum("ij,ij->i", x, y)

    def _refresh(self, which: int, cells: NDArray[np.intp]) -> None:
        """Re-release the touched counters of one relation and patch the row inner products."""
        coords = cells + which * self._counts.shape[1]
        new = self._counts[which, cells] + self._tree.noise(self._t, coords)
        change = new - self._noisy[which, cells]
        self._noisy[which, cells] = new
        partner = self._noisy[1 - which, cells]
        self._row_inner += np.bincount(cells // self._width, weights=change * partner, minlength=self._rows)

    def row_estimates(self) -> NDArray[np.float64]:
        """The k row estimates ``<CS~_i(x), CS~_i(y)>`` at the current step (zeros before step 1).

        Rows have independent hashes and noise: k independent single-row estimates.

        Examples
        --------
        >>> js = JoinSizeEstimator(T=4, rows=3, width=64, rho=1e9, seed=0)
        >>> js.update("R", [5]); js.update("S", [5, 5])
        >>> np.round(js.row_estimates(), 2).tolist()
        [2.0, 2.0, 2.0]
        """
        return self._row_inner.copy()

    def estimate(self) -> float:
        """The private join size ``median_i <CS~_i(x), CS~_i(y)>`` at the current step.

        O(k). Before the first update the relations are empty and the answer is 0, which
        reveals nothing.

        Examples
        --------
        >>> js = JoinSizeEstimator(T=4, rows=3, width=64, rho=1e9, seed=0)
        >>> js.estimate()
        0.0
        """
        return float(np.median(self._row_inner))
