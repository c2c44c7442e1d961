"""Gaussian binary tree noise for continual release: the reference tree and FastGaMe.

Pagh & Sejer, "A Fast Gaussian Mechanism under Continual Observation, with Applications"
(2026), sections 2-3 and appendix C. Over T = 2^h time steps, a complete binary tree has
one independent N(0, s^2) noise per node; the noise released at step t is the sum over
the root-to-leaf path of leaf b(t) = bin(t - 1), the h-bit label (h + 1 nodes, the root
included). Hence (section 2 and Theorem 3.1)

    Var nu_t = (h + 1) s^2,     Cov(nu_t1, nu_t2) = (m + 1) s^2,

m the length of the longest common prefix of b(t1) and b(t2).

:class:`GaussianTree` samples node noises lazily and sums the path: O(log T) per value.
:class:`FastGaMe` returns values with the same joint distribution in O(1) per value by
keeping only prefix sums along the last active path (section 3, Algorithm 1).

Level convention (the paper's, appendix C.1): levels 0..h, level 0 is the root and has
its own noise, P_j = S_t(j) = sum of the node noises at levels 0..j, so Var P_j =
(j + 1) s^2. The prefix sums form a Gaussian random walk started at the fictitious level
-1 with P_-1 = 0; we never need that level because the first query samples P_0 (the
root) and P_h, and level 0 is never invalidated afterwards, so it is the sentinel below
every bridge.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import ParameterError
from privsim.mechanisms._checks import integer, integer_values, positive
from privsim.mechanisms._seeding import SeedLike, as_generator
from privsim.mechanisms._slots import SlotTable

__all__ = [
    "GaussianTree",
    "FastGaMe",
    "tree_height",
    "common_prefix_length",
    "tree_covariance",
]

#: Largest supported tree height: levels 0..h must fit in the bits of an int64.
MAX_HEIGHT = 62
_MAX_COORDS = 1 << 62
_F = TypeVar("_F", float, NDArray[np.float64])
_I = int | NDArray[np.int64]
_NORMAL_BLOCK = 1024


def tree_height(T: int, *, minimum: int = 1) -> int:
    """Return h = log2(T), refusing a T that is not a power of two.

    Parameters
    ----------
    T:
        Number of time steps, a power of two in ``minimum .. 2**62``.
    minimum:
        Smallest allowed T (a power of two).

    Returns
    -------
    int
        The tree height h, so that T = 2^h.

    Raises
    ------
    ParameterError
        If T is not an integer power of two in the allowed range.

    Examples
    --------
    >>> tree_height(1024)
    10
    >>> tree_height(1000)
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: T must be a power of two: 1, 2, 4, ..., 2**62 (got 1000)
    """
    allowed = f"T must be a power of two: {', '.join(str(minimum << i) for i in range(3))}, ..., 2**62"
    try:
        T = integer("T", T, minimum, 1 << MAX_HEIGHT)
    except ParameterError:
        raise ParameterError(f"{allowed} (got {T!r})") from None
    if T & (T - 1):
        raise ParameterError(f"{allowed} (got {T})")
    return T.bit_length() - 1


def common_prefix_length(t1: int, t2: int, h: int) -> int:
    """Length m of the longest common prefix of the h-bit labels bin(t1 - 1), bin(t2 - 1).

    The two root-to-leaf paths share the nodes at levels 0..m, so
    Cov(nu_t1, nu_t2) = (m + 1) s^2 (Theorem 3.1).

    Parameters
    ----------
    t1, t2:
        Time steps in 1..2^h.
    h:
        Tree height.

    Returns
    -------
    int
        m in 0..h (h exactly when t1 == t2).

    Examples
    --------
    >>> common_prefix_length(19, 24, 5)  # 10010 and 10111, the paper's Figure 3
    2
    """
    return h - ((t1 - 1) ^ (t2 - 1)).bit_length()


def tree_covariance(times: ArrayLike, T: int, sigma2: float) -> NDArray[np.float64]:
    """Exact covariance matrix of the tree noise at the given time steps.

    Parameters
    ----------
    times:
        Time steps in 1..T (any order, repeats allowed).
    T:
        Number of time steps, a power of two.
    sigma2:
        Node noise variance s^2.

    Returns
    -------
    numpy.ndarray
        ``C[i, j] = (m_ij + 1) * sigma2`` with m_ij the common-prefix length of the labels
        of ``times[i]`` and ``times[j]`` (Theorem 3.1).

    Examples
    --------
    >>> tree_covariance([1, 2, 3], 4, 1.0)
    array([[3., 2., 1.],
           [2., 3., 1.],
           [1., 1., 3.]])
    """
    h = tree_height(T)
    labels = np.asarray(times, dtype=np.int64) - 1
    m = h - _bit_length(labels[:, None] ^ labels[None, :])
    return (m + 1) * float(sigma2)


def _bit_length(x: NDArray[np.int64]) -> NDArray[np.int64]:
    """int.bit_length for an array of int64 values >= 0 (exact up to 2^63 - 1)."""
    e = np.frexp(x.astype(np.float64))[1].astype(np.int64)
    # Above 2^53 the float conversion may round x up to the next power of two, which makes
    # the exponent one too large; the shift test detects and undoes exactly that case.
    rounded_up = (x > 0) & ((x >> np.maximum(e - 1, 0)) == 0)
    return e - rounded_up


def _bridge(pa: _F, pc: _F, a: _I, m: _I, c: _I, s: float, z: _F) -> _F:
    """P_m drawn given P_a and P_c (a < m < c) from the standard normal(s) z.

    The prefix sums form a Gaussian random walk with step variance s^2, so given its
    values at a and c the value at m is a Brownian-bridge point (section 3; Alg. 1
    l.20-22): N(P_a + (m-a)/(c-a) (P_c - P_a), (m-a)(c-m)/(c-a) s^2). Works on floats
    and, elementwise, on arrays.
    """
    return pa + (m - a) / (c - a) * (pc - pa) + s * ((m - a) * (c - m) / (c - a)) ** 0.5 * z


class _TreeNoise(ABC):
    """Shared parameters, argument checks and the ``noise`` dispatch of the two trees."""

    T: int
    h: int
    sigma2: float
    k: int

    def __init__(self, T: int, sigma2: float, k: int = 1, seed: SeedLike = None) -> None:
        self.h = tree_height(T)
        self.T = 1 << self.h
        self.sigma2 = positive("sigma2", sigma2, scalar=True)
        self.k = integer("k", k, 1, _MAX_COORDS)
        self._sigma = math.sqrt(self.sigma2)
        self._rng = as_generator(seed)
        # Standard normals are taken from the generator in blocks and consumed in order,
        # by the scalar and the vectorized paths alike, so a scalar query costs a list
        # read instead of a ~2 us Generator call while the stream stays one sequence.
        self._block = np.zeros(0)
        self._block_list: list[float] = []
        self._block_pos = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(T={self.T}, sigma2={self.sigma2!r}, k={self.k})"

    @property
    def variance(self) -> float:
        """Variance of every released noise value, (h + 1) s^2 (section 2)."""
        return (self.h + 1) * self.sigma2

    def _normal1(self) -> float:
        if self._block_pos == len(self._block_list):
            self._block = self._rng.standard_normal(_NORMAL_BLOCK)
            self._block_list = self._block.tolist()
            self._block_pos = 0
        self._block_pos += 1
        return self._block_list[self._block_pos - 1]

    def _normals(self, n: int) -> NDArray[np.float64]:
        pos, have = self._block_pos, len(self._block_list)
        if n <= have - pos:
            self._block_pos = pos + n
            return self._block[pos : pos + n]
        out = np.concatenate([self._block[pos:], self._rng.standard_normal(n - (have - pos))])
        self._block_pos = have  # the next scalar draw starts a fresh block
        return out

    def noise(self, t: int, coords: ArrayLike | None = None) -> float | NDArray[np.float64]:
        """The noise at time step ``t`` for the given coordinates.

        Parameters
        ----------
        t:
            Time step, 1 <= t <= T.
        coords:
            Coordinates to release, integers in 0..k-1 (an int or an int array of any
            shape; repeats allowed). ``None`` means all k coordinates.

        Returns
        -------
        float or numpy.ndarray
            A float when ``coords`` is a single int, or when it is None and k == 1;
            otherwise an array shaped like ``coords`` (length k for None).

        Raises
        ------
        ParameterError
            If t is not in 1..T (or, for FastGaMe, is earlier than the last query of one
            of the coordinates).
        InputError
            If a coordinate is not an integer in 0..k-1.

        Examples
        --------
        >>> fg = FastGaMe(16, 1.0, k=4, seed=0)
        >>> fg.noise(3, [2, 0, 2]).shape, fg.noise(3).shape   # the repeat is one value
        ((3,), (4,))
        >>> bool(fg.noise(3, 2) == fg.noise(3)[2])
        True
        """
        if type(t) is not int or not 1 <= t <= self.T:  # the common case stays cheap
            t = integer("t", t, 1, self.T)
        if coords is None:
            if self.k == 1:
                return self._noise_one(0, t)
            keys = np.arange(self.k, dtype=np.int64)
        else:
            keys = integer_values("coords", coords, 0, self.k - 1)
            if keys.ndim == 0:
                return self._noise_one(int(keys), t)
        flat = keys.ravel()
        if flat.size == 0:
            return np.zeros(keys.shape)
        distinct, where = np.unique(flat, return_inverse=True)
        return self._noise_many(distinct, t)[where].reshape(keys.shape)

    @abstractmethod
    def _noise_one(self, coord: int, t: int) -> float: ...

    @abstractmethod
    def _noise_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.float64]:
        """Noise for sorted, distinct coordinates."""


class GaussianTree(_TreeNoise):
    """The Gaussian binary tree mechanism's noise, node by node (the O(log T) reference).

    Each node of the complete binary tree over T = 2^h leaves carries N(0, sigma2) noise,
    independently per coordinate; the noise at step t is the sum over the h + 1 nodes on
    the path from the root to leaf bin(t - 1) (Pagh & Sejer, section 2). Node noises are
    drawn the first time a query needs them and kept in a dict keyed by
    (coordinate, node), so memory grows with the nodes actually visited. Queries may come
    in any order.

    Parameters
    ----------
    T:
        Number of time steps, a power of two.
    sigma2:
        Node noise variance s^2 > 0.
    k:
        Number of independent coordinates.
    seed:
        None, an int, a numpy SeedSequence or a numpy Generator (standard normals are
        read from it in blocks of 1024).

    Raises
    ------
    ParameterError
        If T is not a power of two, sigma2 <= 0 or k < 1.

    Examples
    --------
    >>> tree = GaussianTree(8, 1.0, seed=1)
    >>> nu = tree.noise(3)
    >>> nu == tree.noise(3), tree.variance, tree.n_nodes
    (True, 4.0, 4)
    >>> math.isclose(tree.noise(4) - nu, tree.node_noise(0, 3, 3) - tree.node_noise(0, 3, 2))
    True
    """

    def __init__(self, T: int, sigma2: float, k: int = 1, seed: SeedLike = None) -> None:
        super().__init__(T, sigma2, k, seed)
        # Key: (coordinate, heap index of the node); the node at level j on the path to
        # leaf b has heap index 2^j + (b >> (h - j)), the root is 1.
        self._nodes: dict[tuple[int, int], float] = {}
        self._coords: set[int] = set()

    @property
    def n_nodes(self) -> int:
        """Number of node noises drawn so far (over all coordinates)."""
        return len(self._nodes)

    @property
    def n_materialized(self) -> int:
        """Number of distinct coordinates queried so far."""
        return len(self._coords)

    def node_noise(self, coord: int, level: int, prefix: int) -> float:
        """The noise of the node at ``level`` whose label prefix is ``prefix``.

        Parameters
        ----------
        coord:
            Coordinate in 0..k-1.
        level:
            0 (root) .. h (leaves).
        prefix:
            The first ``level`` bits of a leaf label, as an int in 0..2^level - 1.

        Returns
        -------
        float
            The node's N(0, sigma2) noise (drawn now if no query has needed it yet).

        Examples
        --------
        >>> tree = GaussianTree(4, 1.0, seed=0)
        >>> tree.noise(1) == sum(tree.node_noise(0, j, 0) for j in range(3))
        True
        """
        coord = integer("coord", coord, 0, self.k - 1)
        level = integer("level", level, 0, self.h)
        prefix = integer("prefix", prefix, 0, (1 << level) - 1)
        return self._node(coord, (1 << level) | prefix)

    def _node(self, coord: int, node: int) -> float:
        key = (coord, node)
        value = self._nodes.get(key)
        if value is None:
            value = self._sigma * self._normal1()
            self._nodes[key] = value
        return value

    def _noise_one(self, coord: int, t: int) -> float:
        self._coords.add(coord)
        leaf, h = t - 1, self.h
        # nu_t = sum_{j=0}^{h} eta_{b(t)<=j} (appendix C.1)
        return sum(self._node(coord, (1 << j) | (leaf >> (h - j))) for j in range(h + 1))

    def _noise_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.float64]:
        return np.array([self._noise_one(c, t) for c in coords.tolist()], dtype=np.float64)


class FastGaMe(_TreeNoise):
    """Binary-tree Gaussian noise in O(1) time per value (Pagh & Sejer, section 3).

    Same interface and the same joint distribution as :class:`GaussianTree`, but per
    coordinate it keeps only: the last query time l, a bitmask w of valid levels 0..h and
    the prefix sums P_0..P_h along the path to leaf bin(l - 1). A query at t > l with
    m = |LCP(bin(l-1), bin(t-1))|:

    1. if level m is not valid, draw P_m from the Brownian bridge between the nearest
       valid levels a < m < c:
       N(P_a + (m-a)/(c-a) (P_c - P_a), (m-a)(c-m)/(c-a) s^2)   (section 3, Alg. 1 l.19-22);
    2. P_h = P_m + N(0, (h - m) s^2), the fresh right subtree below the shared node
       (Alg. 1 l.25-26);
    3. invalidate levels m+1..h-1 (Alg. 1 l.27-30).

    The first query of a coordinate draws P_0 ~ N(0, s^2) (the root) and
    P_h = P_0 + N(0, h s^2); levels 0 and h then stay valid forever, so a and c exist.
    Predecessor and successor valid levels come from ``bit_length`` on masked words.

    Coordinates are materialized lazily: a coordinate costs memory only once queried,
    whatever k is. Many coordinates queried at one step go through a vectorized numpy
    path. Time only moves forward per coordinate: a query earlier than that coordinate's
    last query is refused; a repeated query at the same step returns the same value.

    Parameters
    ----------
    T:
        Number of time steps, a power of two (at most 2^62).
    sigma2:
        Node noise variance s^2 > 0.
    k:
        Number of independent coordinates (at most 2^62).
    seed:
        None, an int, a numpy SeedSequence or a numpy Generator (standard normals are
        read from it in blocks of 1024).

    Raises
    ------
    ParameterError
        If T is not a power of two, sigma2 <= 0 or k < 1.

    Examples
    --------
    >>> fg = FastGaMe(2**30, 1.0, seed=3)
    >>> nu = fg.noise(17)
    >>> nu == fg.noise(17), fg.variance
    (True, 31.0)
    >>> big = FastGaMe(2**20, 0.5, k=10**9, seed=4)
    >>> big.noise(5, np.array([3, 999_999_999, 3])).shape, big.n_materialized
    ((3,), 2)
    >>> big.noise(4, 3)
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: t=4 is before the last query (t=5) of coordinate 3; time only moves forward
    """

    def __init__(self, T: int, sigma2: float, k: int = 1, seed: SeedLike = None) -> None:
        super().__init__(T, sigma2, k, seed)
        self._table: SlotTable | None = SlotTable() if self.k > 1 else None
        self._size = 0
        self._last = np.zeros(0, dtype=np.int64)  # 0: not queried yet
        self._mask = np.zeros(0, dtype=np.int64)  # bit j set <=> P_j valid (w in the paper)
        self._P = np.zeros((0, self.h + 1), dtype=np.float64)
        self._sqrt_int = np.sqrt(np.arange(self.h + 1))  # sqrt(h - m), indexed by h - m
        self._sqrt_list: list[float] = self._sqrt_int.tolist()

    @property
    def n_materialized(self) -> int:
        """Number of coordinates that hold state (the distinct coordinates queried)."""
        return self._size

    @property
    def nbytes(self) -> int:
        """Bytes of per-coordinate state (grows with queried coordinates, not with k)."""
        table = self._table.nbytes if self._table is not None else 0
        return int(self._last.nbytes + self._mask.nbytes + self._P.nbytes + table)

    # -- state -----------------------------------------------------------------------
    def _grow(self, extra: int) -> None:
        need = self._size + extra
        if need > self._last.shape[0]:
            cap = max(need, 2 * self._last.shape[0], 4)
            self._last = np.concatenate([self._last, np.zeros(cap - self._last.shape[0], np.int64)])
            self._mask = np.concatenate([self._mask, np.zeros(cap - self._mask.shape[0], np.int64)])
            P = np.empty((cap, self.h + 1), dtype=np.float64)
            P[: self._size] = self._P[: self._size]
            self._P = P
        self._size = need

    def _slot_one(self, coord: int) -> int:
        if self._table is None:
            if self._size == 0:
                self._grow(1)
            return 0
        slot = self._table.get_or_insert_one(coord)
        if slot >= self._size:
            self._grow(1)
        return slot

    def _refuse_backwards(self, coord: int, last: int, t: int) -> None:
        raise ParameterError(
            f"t={t} is before the last query (t={last}) of coordinate {coord}; "
            "time only moves forward"
        )

    def prefix_sums(self, coords: ArrayLike | None = None) -> NDArray[np.float64]:
        """The stored prefix sums P_0..P_h of the given coordinates (NaN where invalid).

        An inspection hook for tests and teaching: row i holds P_j = S_l(j) for the valid
        levels j of the path to the last queried leaf of ``coords[i]`` and NaN where the
        validity bit w_j is 0 (or the coordinate was never queried). Draws nothing.

        Parameters
        ----------
        coords:
            An int or int array of coordinates; None means coordinate 0 when k == 1.

        Returns
        -------
        numpy.ndarray
            Shape ``(h + 1,)`` for a single coordinate, else ``(len(coords), h + 1)``.

        Examples
        --------
        >>> fg = FastGaMe(8, 1.0, seed=0)
        >>> _ = fg.noise(1); _ = fg.noise(3)   # LCP(000, 010) = 1: bridge between 0 and 3
        >>> np.isnan(fg.prefix_sums()).tolist()
        [False, False, True, False]
        """
        if coords is None and self.k != 1:
            raise ParameterError("coords is required when k > 1 (an int or int array in 0..k-1)")
        keys = integer_values("coords", 0 if coords is None else coords, 0, self.k - 1)
        flat = np.atleast_1d(keys).ravel()
        if self._table is None:
            slots = np.where(self._size > 0, np.zeros_like(flat), -1)
        else:
            slots = self._table.lookup(flat)
        out = np.full((flat.size, self.h + 1), np.nan)
        have = slots >= 0
        rows = self._P[slots[have]]
        valid = (self._mask[slots[have], None] >> np.arange(self.h + 1)) & 1
        out[have] = np.where(valid == 1, rows, np.nan)
        return out[0] if keys.ndim == 0 else out

    # -- one coordinate (plain Python ints; Alg. 1 line by line) ---------------------
    def _noise_one(self, coord: int, t: int) -> float:
        slot = self._slot_one(coord)
        h, s, row = self.h, self._sigma, self._P[slot]
        last = int(self._last[slot])
        if last == t:  # Alg. 1 l.12: same leaf, same value
            return float(row[h])
        if last > t:
            self._refuse_backwards(coord, last, t)
        if last == 0:  # Alg. 1 l.3-9: P_0 is the root's noise, P_h adds h more levels
            p0 = s * self._normal1()
            ph = p0 + s * self._sqrt_list[h] * self._normal1()
            row[0] = p0
            w = 1 | (1 << h)
        else:
            m = h - ((last - 1) ^ (t - 1)).bit_length()  # Alg. 1 l.16
            w = int(self._mask[slot])
            if (w >> m) & 1:
                pm = float(row[m])
            else:  # Alg. 1 l.18-23: Brownian bridge between a and c
                a = (w & ((1 << m) - 1)).bit_length() - 1
                above = (w >> (m + 1)) << (m + 1)
                c = (above & -above).bit_length() - 1
                pm = _bridge(float(row[a]), float(row[c]), a, m, c, s, self._normal1())
                row[m] = pm
            # Alg. 1 l.25-26: below level m the new path is a right subtree no earlier
            # query has entered, so its h - m node noises are fresh.
            ph = pm + s * self._sqrt_list[h - m] * self._normal1()
            w = (w & ((2 << m) - 1)) | (1 << m) | (1 << h)  # Alg. 1 l.27-30
        row[h] = ph
        self._mask[slot] = w
        self._last[slot] = t
        return ph

    # -- many coordinates at one step (the same steps, vectorized) -------------------
    def _slots_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.int64]:
        """Slots for ``coords``, allocating new ones only after the backwards check."""
        if self._table is None:  # k == 1: coords is [0]
            if self._size == 0:
                self._grow(1)
            slots = np.zeros(1, dtype=np.int64)
        else:
            slots = self._table.lookup(coords)
        known = slots >= 0
        late = np.flatnonzero(self._last[slots[known]] > t)
        if late.size:
            i = np.flatnonzero(known)[late[0]]
            self._refuse_backwards(int(coords[i]), int(self._last[slots[i]]), t)
        if not known.all():
            assert self._table is not None
            fresh = np.flatnonzero(~known)
            slots[fresh] = self._table.get_or_insert(coords[fresh])
            self._grow(fresh.size)
        return slots

    def _noise_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.float64]:
        slots = self._slots_many(coords, t)
        h, s = self.h, self._sigma
        # Flat indices into P: one gather of P[slot, level] is P.flat[slot*(h+1) + level],
        # several times cheaper in numpy than two-array fancy indexing.
        Pf = self._P.reshape(-1)
        row = slots * (h + 1)
        last = self._last[slots]
        out = np.empty(slots.shape[0], dtype=np.float64)

        same = last == t
        out[same] = Pf[row[same] + h]

        new = np.flatnonzero(last == 0)
        if new.size:  # Alg. 1 l.3-9
            p0 = s * self._normals(new.size)
            ph = p0 + s * self._sqrt_int[h] * self._normals(new.size)
            Pf[row[new]] = p0
            Pf[row[new] + h] = ph
            self._mask[slots[new]] = 1 | (1 << h)
            out[new] = ph

        adv = np.flatnonzero(~same & (last != 0))
        if adv.size:
            out[adv] = self._advance(slots[adv], row[adv], last[adv], t)
        self._last[slots] = t
        return out

    def _advance(self, slots: NDArray[np.int64], row: NDArray[np.int64], last: NDArray[np.int64],
                 t: int) -> NDArray[np.float64]:
        """Alg. 1 l.15-31 for coordinates whose last query was before t."""
        h, s, Pf = self.h, self._sigma, self._P.reshape(-1)
        m = h - _bit_length((last - 1) ^ (t - 1))
        w = self._mask[slots]
        pm = Pf[row + m]
        gap = np.flatnonzero(((w >> m) & 1) == 0)
        if gap.size:  # Brownian bridge between the valid levels a < m < c
            rg, mg, wg = row[gap], m[gap], w[gap]
            a = _bit_length(wg & ((1 << mg) - 1)) - 1
            above = (wg >> (mg + 1)) << (mg + 1)
            c = _bit_length(above & -above) - 1
            pm[gap] = _bridge(Pf[rg + a], Pf[rg + c], a, mg, c, s, self._normals(gap.size))
            Pf[rg + mg] = pm[gap]
        ph = pm + s * self._sqrt_int[h - m] * self._normals(slots.size)
        Pf[row + h] = ph
        self._mask[slots] = (w & ((2 << m) - 1)) | (1 << m) | (1 << h)
        return ph
