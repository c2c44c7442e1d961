"""CountSketch and Private CountSketch (Pagh & Sejer 2026, section 1.2).

A CountSketch with r rows and width b keeps, per row i, the table
``CS_i(x)_j = sum_{a: h_i(a) = j} s_i(a) x_a`` (buckets ``h_i`` 2-wise independent, signs
``s_i`` 4-wise independent, see :mod:`privsim.mechanisms.hashing`). A point estimate is
``median_i s_i(a) CS_i(x)[h_i(a)]`` and an inner product estimate is
``median_i <CS_i(x), CS_i(y)>`` for two sketches with the same hash functions.

A Private CountSketch adds independent ``N(0, sigma2)`` noise to every cell. Changing one
key's count by at most 1 changes one cell per row by at most 1, so the table has
l2-sensitivity ``sqrt(r)`` and the Gaussian mechanism gives
``rho = r / (2 sigma2)``-zCDP (section 1.2; Definition A.3) for one release of the table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import _checks
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.hashing import BucketHash, SignHash, _OfPolynomial, _spawn_seeds

__all__ = ["SketchHashes", "CountSketch", "PrivateCountSketch"]


class SketchHashes(_OfPolynomial):
    """The bucket and sign functions of a CountSketch, one independent pair per row.

    Two sketches give meaningful inner products only if they hold equal
    ``SketchHashes``: pass ``hashes=`` (or the same ``seed``) to share them.

    Parameters
    ----------
    shape:
        The rows: an int, or a tuple such as ``(components, rows)`` for a family of
        sketches that share nothing (as in :class:`~privsim.mechanisms.range_counting.RangeCounter`).
    width:
        Buckets per row, an integer in ``[1, 2**32]``.
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator.

    Examples
    --------
    >>> hs = SketchHashes(3, 8, seed=1)
    >>> buckets, signs = hs([10, 20])
    >>> buckets.shape, signs.shape
    ((3, 2), (3, 2))
    >>> hs == SketchHashes(3, 8, seed=1), hs == SketchHashes(3, 8, seed=2)
    (True, False)
    """

    def __init__(self, shape: int | Sequence[int], width: int, seed: SeedLike = None) -> None:
        bucket_seed, sign_seed = _spawn_seeds(seed, 2)
        self.buckets = BucketHash(shape, width, bucket_seed)  # 2-wise: collisions 1/width
        self.signs = SignHash(shape, sign_seed)  # 4-wise: exact inner-product variance

    @property
    def shape(self) -> tuple[int, ...]:
        """The batch shape of the rows."""
        return self.buckets.shape

    @property
    def width(self) -> int:
        """Buckets per row."""
        return self.buckets.width

    def __call__(self, keys: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.int8]]:
        """Buckets and signs of ``keys``, each of shape ``(*shape, n)`` for n keys.

        Keys broadcast against rows as in :meth:`~privsim.mechanisms.hashing.PolynomialHash.__call__`.
        """
        return self.buckets(keys), self.signs(keys)


def _keys_and_deltas(keys: ArrayLike, deltas: ArrayLike) -> tuple[NDArray, NDArray[np.float64]]:
    """Keys as a 1-D integer array and deltas broadcast to it, finite floats."""
    k = np.asarray(keys)
    if k.size == 0:  # [] comes out float64
        k = k.astype(np.int64)
    if k.dtype == np.bool_ or not np.issubdtype(k.dtype, np.integer):
        raise InputError(f"keys must be integers (got dtype {k.dtype})")
    k = k.ravel()
    try:
        d = np.broadcast_to(np.asarray(deltas, dtype=np.float64), np.shape(keys)).ravel()
    except (TypeError, ValueError):
        raise InputError(
            f"deltas must be a number or an array of numbers shaped like keys {np.shape(keys)}"
        ) from None
    if not np.all(np.isfinite(d)):
        raise InputError("deltas must be finite numbers")
    return k, d


def _trial_count(trials: int | None) -> int | None:
    """``trials`` checked: None (one instance, no trial axis) or an int >= 1."""
    return None if trials is None else _checks.integer("trials", trials, 1)


def _scatter_add(table: NDArray[np.float64], flat: NDArray[np.intp], weights: NDArray) -> None:
    """``table.flat[flat] += weights`` with repeats summed (bincount for dense batches)."""
    flat, weights = flat.ravel(), np.asarray(weights, dtype=np.float64).ravel()
    if 8 * flat.size >= table.size:
        table += np.bincount(flat, weights=weights, minlength=table.size).reshape(table.shape)
    else:
        np.add.at(table.reshape(-1), flat, weights)


class _TableShape:
    """The ``rows`` and ``width`` of a CountSketch's table, or of each of several tables."""

    _rows: int
    _width: int

    @property
    def rows(self) -> int:
        """Rows r of each CountSketch (odd in a JoinSizeEstimator; per component in a RangeCounter)."""
        return self._rows

    @property
    def width(self) -> int:
        """Buckets per row b."""
        return self._width


class CountSketch(_TableShape):
    """A (non-private) CountSketch with ``rows`` independent rows of ``width`` buckets.

    Parameters
    ----------
    rows:
        Number of rows r >= 1 (the paper's t or k). Medians over an odd number of rows
        are what the join-size analysis assumes (Theorem 5.1); point estimates accept any r.
    width:
        Buckets per row b, an integer in ``[1, 2**32]``.
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator. Sketches built with
        the same seed, rows and width have the same hash functions.
    hashes:
        Hash functions to share with another sketch (``other.hashes``); overrides the
        hash part of ``seed``.

    Raises
    ------
    ParameterError
        If rows or width is out of range, or ``hashes`` does not match them.

    Examples
    --------
    >>> cs = CountSketch(rows=5, width=64, seed=1)
    >>> cs.update([3, 3, 7], [1.0, 2.0, 5.0])
    >>> cs.estimate([3, 7]).tolist()
    [3.0, 5.0]
    >>> other = CountSketch(rows=5, width=64, seed=1)
    >>> other.update([3], [2.0])
    >>> cs.inner(other)
    6.0
    """

    def __init__(
        self, rows: int, width: int, seed: SeedLike = None, *, hashes: SketchHashes | None = None
    ) -> None:
        self._rows = _checks.integer("rows", rows, 1)
        self._width = _checks.integer("width", width, 1, 1 << 32)
        hash_seed, self._noise_seed = _spawn_seeds(seed, 2)
        if hashes is None:
            hashes = SketchHashes(self._rows, self._width, hash_seed)
        elif not isinstance(hashes, SketchHashes) or (hashes.shape, hashes.width) != (
            (self._rows,),
            self._width,
        ):
            raise ParameterError(
                f"hashes must be the SketchHashes of a sketch with rows={self._rows} and "
                f"width={self._width} (got {hashes!r})"
            )
        self._hashes = hashes
        self._counts = np.zeros((self._rows, self._width), dtype=np.float64)
        self._row_offsets = (np.arange(self._rows, dtype=np.intp) * self._width)[:, None]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rows={self._rows}, width={self._width})"

    @property
    def words(self) -> int:
        """Cells held, r * b (the space the paper counts)."""
        return self._rows * self._width

    @property
    def hashes(self) -> SketchHashes:
        """The hash functions, to share with another sketch via ``hashes=``."""
        return self._hashes

    @property
    def table(self) -> NDArray[np.float64]:
        """The released table, shape ``(rows, width)``, read-only."""
        view = self._release().view()
        view.flags.writeable = False
        return view

    def _release(self) -> NDArray[np.float64]:
        """The table that estimates are computed from (noisy for a private sketch)."""
        return self._counts

    def update(self, keys: ArrayLike, deltas: ArrayLike = 1.0) -> None:
        """Add ``deltas`` to the counts of ``keys`` (vectorized; repeated keys add up).

        Parameters
        ----------
        keys:
            Integer keys, any shape (see :mod:`~privsim.mechanisms.hashing` for the domain).
        deltas:
            A number or an array shaped like ``keys``.

        Raises
        ------
        InputError
            If keys are not integers or deltas are not finite numbers shaped like keys.

        Examples
        --------
        >>> cs = CountSketch(rows=3, width=32, seed=0)
        >>> cs.update([4, 4, 9], [1.0, 1.0, -2.0])
        >>> cs.update([9], 2.0)  # cancels key 9
        >>> cs.estimate([4, 9]).tolist()
        [2.0, 0.0]
        """
        k, d = _keys_and_deltas(keys, deltas)
        buckets, signs = self._hashes(k)  # (rows, n)
        _scatter_add(self._counts, buckets + self._row_offsets, signs * d)

    def row_estimates(self, keys: ArrayLike) -> NDArray[np.float64]:
        """Each row's estimate ``s_i(a) CS_i[h_i(a)]``, shape ``(rows, *keys.shape)``.

        Rows are independent, so this is r independent single-row estimates.

        Examples
        --------
        >>> cs = CountSketch(3, 16, seed=0)
        >>> cs.update([1], [4.0])
        >>> cs.row_estimates([1]).ravel().tolist()
        [4.0, 4.0, 4.0]
        """
        k = np.asarray(keys)
        buckets, signs = self._hashes(k.ravel())
        values = np.take_along_axis(self._release(), buckets, axis=1) * signs
        return values.reshape((self._rows, *k.shape))

    def estimate(self, keys: ArrayLike) -> NDArray[np.float64]:
        """Point estimates ``median_i s_i(a) CS_i[h_i(a)]``, shaped like ``keys``.

        Parameters
        ----------
        keys:
            Integer keys, any shape.

        Returns
        -------
        numpy.ndarray
            One estimate per key (a 0-d array for a scalar key).

        Examples
        --------
        >>> cs = CountSketch(3, 16, seed=0)
        >>> cs.update([5, 6], [2.0, -1.0])
        >>> cs.estimate([5, 6, 7]).tolist()
        [2.0, -1.0, 0.0]
        """
        return np.median(self.row_estimates(keys), axis=0)

    def _check_shared(self, other: CountSketch) -> None:
        if not isinstance(other, CountSketch):
            raise ParameterError(f"other must be a CountSketch or PrivateCountSketch (got {other!r})")
        if other.hashes != self._hashes:
            raise ParameterError(
                "other must share this sketch's hash functions (same rows, width and seed, "
                "or hashes=this.hashes); inner products of differently hashed sketches are meaningless"
            )

    def row_inner(self, other: CountSketch) -> NDArray[np.float64]:
        """Each row's inner product ``<CS_i(x), CS_i(y)>``, shape ``(rows,)``.

        Raises
        ------
        ParameterError
            If ``other`` does not share this sketch's hash functions.

        Examples
        --------
        >>> a, b = CountSketch(3, 16, seed=0), CountSketch(3, 16, seed=0)
        >>> a.update([1], [2.0]); b.update([1], [3.0])
        >>> a.row_inner(b).tolist()
        [6.0, 6.0, 6.0]
        """
        self._check_shared(other)
        return np.einsum("ij,ij->i", self._release(), other._release())

    def inner(self, other: CountSketch) -> float:
        """The inner product estimate ``median_i <CS_i(x), CS_i(y)>`` (section 5).

        Raises
        ------
        ParameterError
            If ``other`` does not share this sketch's hash functions.

        Examples
        --------
        >>> a, b = CountSketch(3, 16, seed=0), CountSketch(3, 16, seed=0)
        >>> a.update([1, 2], [2.0, 1.0]); b.update([1], [3.0])
        >>> a.inner(b) in (6.0, 9.0, 3.0)
        True
        """
        return float(np.median(self.row_inner(other)))


class PrivateCountSketch(CountSketch):
    """A CountSketch whose cells carry independent N(0, sigma2) noise (section 1.2).

    Privacy: neighbouring inputs differ by at most 1 in one key's count (an update of one
    key by +-1). That moves one cell per row by at most 1, so the table has l2-sensitivity
    ``sqrt(rows)`` and releasing it is ``rho = rows / (2 sigma2)``-zCDP (Gaussian
    mechanism, Definition A.3). Every estimate is post-processing of that one release.

    The noise is drawn when the sketch is built; the first estimate (or ``table``,
    ``inner``) releases the table, after which :meth:`update` is refused: a second
    release with the same noise would reveal the change exactly. For updates interleaved
    with releases use the continual versions (``RangeCounter(T=...)``,
    :class:`~privsim.mechanisms.join.JoinSizeEstimator`).

    Parameters
    ----------
    rows:
        Number of rows r >= 1.
    width:
        Buckets per row b, an integer in ``[1, 2**32]``.
    sigma2:
        Noise variance per cell, > 0.
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator. The hash functions
        equal those of ``CountSketch(rows, width, seed)``; the noise comes from a separate
        stream of the same seed.
    hashes:
        Hash functions shared with another sketch (``other.hashes``), e.g. for join
        sizes: give the two sketches different seeds so their noise is independent.

    Raises
    ------
    ParameterError
        If a parameter is out of range.

    Examples
    --------
    >>> pcs = PrivateCountSketch.from_rho(rows=5, width=256, rho=10.0, seed=1)
    >>> pcs.sigma2, pcs.rho
    (0.25, 10.0)
    >>> pcs.update([42] * 100)
    >>> bool(abs(float(pcs.estimate(42)) - 100) < 3)
    True
    """

    def __init__(
        self,
        rows: int,
        width: int,
        sigma2: float,
        seed: SeedLike = None,
        *,
        hashes: SketchHashes | None = None,
    ) -> None:
        super().__init__(rows, width, seed, hashes=hashes)
        self._sigma2 = _checks.positive("sigma2", sigma2, scalar=True)
        rng = np.random.Generator(np.random.PCG64(self._noise_seed))
        self._noise = math.sqrt(self._sigma2) * rng.standard_normal((self._rows, self._width))
        self._released = False

    @classmethod
    def from_rho(
        cls,
        rows: int,
        width: int,
        rho: float,
        seed: SeedLike = None,
        *,
        hashes: SketchHashes | None = None,
    ) -> PrivateCountSketch:
        """The sketch whose release is ``rho``-zCDP: ``sigma2 = rows / (2 rho)``.

        Examples
        --------
        >>> PrivateCountSketch.from_rho(3, 8, rho=0.5, seed=0).sigma2
        3.0
        """
        r = _checks.integer("rows", rows, 1)
        rho = _checks.positive("rho", rho, scalar=True)
        return cls(r, width, r / (2.0 * rho), seed, hashes=hashes)  # rho = r / (2 sigma2)

    def __repr__(self) -> str:
        return f"PrivateCountSketch(rows={self._rows}, width={self._width}, sigma2={self._sigma2!r})"

    @property
    def sigma2(self) -> float:
        """Noise variance per cell."""
        return self._sigma2

    @property
    def rho(self) -> float:
        """The zCDP parameter of one release, ``rows / (2 sigma2)`` (section 1.2)."""
        return self._rows / (2.0 * self._sigma2)

    @property
    def released(self) -> bool:
        """Whether the noisy table has been released (updates are refused from then on)."""
        return self._released

    def _release(self) -> NDArray[np.float64]:
        self._released = True
        return self._counts + self._noise

    def update(self, keys: ArrayLike, deltas: ArrayLike = 1.0) -> None:
        """Add ``deltas`` to the counts of ``keys`` before the table is released.

        The privacy claim ``rho`` is for inputs that differ by at most 1 in one key's
        count; deltas of larger magnitude are accepted and count as several such steps.

        Raises
        ------
        ParameterError
            If the table was already released.
        InputError
            If keys are not integers or deltas are not finite numbers shaped like keys.

        Examples
        --------
        >>> pcs = PrivateCountSketch(3, 32, sigma2=1.0, seed=0)
        >>> pcs.update([1, 2, 2])
        >>> _ = pcs.estimate([2])
        >>> pcs.update([3])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        privsim.errors.ParameterError: update after release: a PrivateCountSketch is released once ...
        """
        if self._released:
            raise ParameterError(
                "update after release: a PrivateCountSketch is released once (its rho covers "
                "one release); use a new sketch, or a continual mechanism (RangeCounter with T=, "
                "JoinSizeEstimator)"
            )
        super().update(keys, deltas)

    def row_inner(self, other: CountSketch) -> NDArray[np.float64]:
        """Each row's inner product of the noisy tables, shape ``(rows,)``.

        With ``other is self`` this estimates the second moment ``||x||_2^2`` and the known
        noise bias ``E<nu_i, nu_i> = width * sigma2`` is subtracted. Two different private
        sketches must have independent noise (different seeds; share hashes via
        ``hashes=``), as in section 5.1.

        Raises
        ------
        ParameterError
            If ``other`` does not share the hash functions, or is a different private
            sketch with the same noise seed.

        Examples
        --------
        >>> a = PrivateCountSketch(3, 16, 1e-6, seed=1)
        >>> b = PrivateCountSketch(3, 16, 1e-6, seed=2, hashes=a.hashes)
        >>> a.update([7], [3.0]); b.update([7], [2.0])
        >>> np.round(a.row_inner(b), 1).tolist()
        [6.0, 6.0, 6.0]
        """
        self._check_shared(other)
        if other is self:
            return super().row_inner(self) - self._width * self._sigma2
        a, b = self._noise_seed, other._noise_seed  # equal seed sequences: the same noise
        if isinstance(other, PrivateCountSketch) and (a.entropy, a.spawn_key) == (b.entropy, b.spawn_key):
            raise ParameterError(
                "seed: the two private sketches have the same noise (same seed), so their inner "
                "product is biased; build them with different seeds and share hashes with hashes="
            )
        return super().row_inner(other)
