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
from abc import abstractmethod
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import ParameterError
from privsim.mechanisms._checks import integer, integer_values, positive
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.calibration import tree_rho, tree_sigma2
from privsim.mechanisms.noise_source import (
    MAX_HEIGHT,
    NoiseSource,
    StateTable,
    _GeneratorDraws,
    _refuse_backwards,
    tree_height,
)
from privsim.parties.rng import TrialRNG

__all__ = [
    "GaussianTree",
    "FastGaMe",
    "LaplaceTree",
    "LaplaceFastGaMe",
    "tree_height",
    "common_prefix_length",
    "tree_covariance",
    "MAX_HEIGHT",
]

_F = TypeVar("_F", float, NDArray[np.float64])
_I = int | NDArray[np.int64]
_Row = list[float] | NDArray[np.float64]  # one coordinate's prefix sums, a list or a table row


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


def _floats(levels: _I, like: NDArray[np.int64]) -> NDArray[np.float64]:
    """Level differences as one float per coordinate (a scalar when all coordinates agree)."""
    return np.broadcast_to(np.asarray(levels, dtype=np.float64), like.shape)


def _bridge(pa: _F, pc: _F, a: _I, m: _I, c: _I, s: float, z: _F) -> _F:
    """P_m drawn given P_a and P_c (a < m < c) from the standard normal(s) z.

    The prefix sums form a Gaussian random walk with step variance s^2, so given its
    values at a and c the value at m is a Brownian-bridge point (section 3; Alg. 1
    l.20-22): N(P_a + (m-a)/(c-a) (P_c - P_a), (m-a)(c-m)/(c-a) s^2). Works on floats
    and, elementwise, on arrays.
    """
    return pa + (m - a) / (c - a) * (pc - pa) + s * ((m - a) * (c - m) / (c - a)) ** 0.5 * z


def _shared_level(w: int, last: int, t: int, h: int) -> tuple[int, int, int, int]:
    """Algorithm 1's bookkeeping of a read at t after one at l = ``last`` with validity mask w.

    Returns m = |LCP(bin(l - 1), bin(t - 1))| (Alg. 1 l.16); the valid levels a < m < c
    nearest to m for the bridge, or a = c = m when level m is valid (l.18-23); and the new
    mask: levels 0..m as they were, m and h valid, m+1..h-1 not (l.27-30).

    Examples
    --------
    >>> _shared_level(0b10001, 1, 5, 4)   # after t = 1: leaves 0000 and 0100 share levels 0..1
    (1, 0, 4, 19)
    """
    m = h - ((last - 1) ^ (t - 1)).bit_length()
    new_w = (w & ((2 << m) - 1)) | (1 << m) | (1 << h)
    if (w >> m) & 1:
        return m, m, m, new_w
    above = (w >> (m + 1)) << (m + 1)
    return m, (w & ((1 << m) - 1)).bit_length() - 1, (above & -above).bit_length() - 1, new_w


def _levels(w: int, h: int) -> list[int]:
    """The valid levels below h of the mask w, ascending (the stack of :meth:`_LazyTree._walk`).

    With h = 0 the root is both the bottom of the stack and the leaf: [0] once queried.
    """
    return [j for j in range(max(h, 1)) if (w >> j) & 1]


def _mask(levels: list[int], h: int) -> int:
    """The mask w of the valid levels below h and of level h (0 before the first query)."""
    return sum(map((1).__lshift__, levels)) | (1 << h) if levels else 0


class _Tree(NoiseSource):
    """Parameters shared by the four trees: T = 2^h and the node noise's scale."""

    h: int

    def __init__(self, T: int, k: int, seed: SeedLike | TrialRNG, *, trials: bool) -> None:
        self.h = tree_height(T)
        super().__init__(1 << self.h, k, seed, trials=trials)

    @property
    @abstractmethod
    def node_variance(self) -> float:
        """Variance of one node's noise."""

    @property
    def variance(self) -> float:
        """Variance of every released noise value, (h + 1) times the node variance (section 2)."""
        return (self.h + 1) * self.node_variance


class _GaussianNodes(_Tree):
    kind = "tree"

    def __init__(self, T: int, sigma2: float, k: int, seed: SeedLike | TrialRNG, *, trials: bool) -> None:
        super().__init__(T, k, seed, trials=trials)
        self.sigma2 = positive("sigma2", sigma2, scalar=True)
        self._sigma = math.sqrt(self.sigma2)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(T={self.T}, sigma2={self.sigma2!r}, k={self.k})"

    @property
    def node_variance(self) -> float:
        return self.sigma2

    @classmethod
    def for_rho(cls, T: int, rho: float, k: int = 1, sensitivity: float = 1.0, seed: SeedLike = None,
                calibration: str = "paper") -> _GaussianNodes:
        """The tree with the node variance that makes its release rho-zCDP.

        Parameters
        ----------
        T, k, seed:
            As for the constructor.
        rho:
            zCDP budget.
        sensitivity:
            l2 bound on one update.
        calibration:
            ``"paper"`` ((h + 2) Delta^2/(8 rho)) or ``"exact"`` (the same rho exactly).

        Returns
        -------
        GaussianTree or FastGaMe

        Examples
        --------
        >>> FastGaMe.for_rho(1024, 0.5).sigma2, round(GaussianTree.for_rho(1024, 0.5, calibration="exact").rho(), 6)
        (3.0, 0.5)
        """
        return cls(T, tree_sigma2(T, rho, sensitivity, calibration), k=k, seed=seed)  # type: ignore[call-arg]

    def rho(self, sensitivity: float = 1.0) -> float:
        """The exact zCDP of the release for updates of l2 norm <= ``sensitivity``.

        Examples
        --------
        >>> round(FastGaMe(1024, 3.0).rho(), 4)    # the paper's s^2 for rho = 0.5
        0.2985
        """
        return tree_rho(self.T, self.sigma2, sensitivity)


class _LaplaceNodes(_Tree):
    kind = "laplace-tree"

    def __init__(self, T: int, scale: float, k: int, seed: SeedLike | TrialRNG, *, trials: bool) -> None:
        super().__init__(T, k, seed, trials=trials)
        self.scale = positive("scale", scale, scalar=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(T={self.T}, scale={self.scale!r}, k={self.k})"

    @property
    def node_variance(self) -> float:
        return 2.0 * self.scale**2  # Var Lap(b) = 2 b^2

    def epsilon(self, sensitivity: float = 1.0) -> float:
        """Pure DP of the release for updates of l1 norm <= ``sensitivity``.

        The release is L (R x + eta) with eta Laplace on the nodes; one update moves R x by
        (h + 2)/2 in l1 (appendix B's R: h + 2 nodes by 1/2 each), so the Laplace mechanism
        (Dwork et al. 2006) gives epsilon = (h + 2) Delta_1 / (2 b); L is post-processing.

        Examples
        --------
        >>> LaplaceFastGaMe(1024, 6.0).epsilon()
        1.0
        """
        return (self.h + 2) * positive("sensitivity", sensitivity, scalar=True) / (2.0 * self.scale)


# ---------------------------------------------------------------------------------------
# the reference trees: node by node
class _PathTree(_Tree):
    """Node noises drawn the first time a query needs them, kept in a dict (O(log T) per value)."""

    def __init__(self, T: int, k: int, seed: SeedLike | TrialRNG, *, trials: bool) -> None:
        super().__init__(T, k, seed, trials=trials)
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
            The node's noise (drawn now if no query has needed it yet).

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

    @abstractmethod
    def _draw_node(self) -> float: ...

    def _node(self, coord: int, node: int) -> float:
        key = (coord, node)
        value = self._nodes.get(key)
        if value is None:
            value = self._draw_node()
            self._nodes[key] = value
        return value

    def _noise_one(self, coord: int, t: int) -> float:
        self._coords.add(coord)
        leaf, h = t - 1, self.h
        # nu_t = sum_{j=0}^{h} eta_{b(t)<=j} (appendix C.1)
        return sum(self._node(coord, (1 << j) | (leaf >> (h - j))) for j in range(h + 1))

    def _noise_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.float64]:
        return np.array([self._noise_one(c, t) for c in coords.tolist()], dtype=np.float64)


class GaussianTree(_GaussianNodes, _PathTree):
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
        super().__init__(T, sigma2, k, seed, trials=False)

    def _draw_node(self) -> float:
        return self._sigma * self._normal1()


class LaplaceTree(_LaplaceNodes, _PathTree):
    """The binary tree with Laplace node noise, node by node (the reference for pure DP).

    As :class:`GaussianTree`, with every node's noise Lap(scale) (variance 2 scale^2).

    Parameters
    ----------
    T:
        Number of time steps, a power of two.
    scale:
        Laplace scale b > 0 of a node.
    k:
        Number of independent coordinates.
    seed:
        None, an int, a numpy SeedSequence or a numpy Generator.

    Examples
    --------
    >>> tree = LaplaceTree(8, 0.5, seed=1)
    >>> tree.noise(3) == sum(tree.node_noise(0, j, 2 >> (3 - j)) for j in range(4)), tree.variance
    (True, 2.0)
    """

    def __init__(self, T: int, scale: float, k: int = 1, seed: SeedLike = None) -> None:
        super().__init__(T, scale, k, seed, trials=False)

    def _draw_node(self) -> float:
        return float(self._rng.laplace(0.0, self.scale))


# ---------------------------------------------------------------------------------------
# the lazy trees: prefix sums along the last active path (section 3, Algorithm 1)
class _LazyTree(_Tree):
    """Algorithm 1's bookkeeping; subclasses say how a walk starts, bridges and extends.

    Per coordinate: the last query time l, the validity bitmask w over levels 0..h and
    ``parts`` random walks of prefix sums over the levels (one for Gaussian nodes; the
    positive and the negative Gamma parts for Laplace nodes), part p at columns
    p (h + 1) .. p (h + 1) + h of a row, in a :class:`StateTable` (or a :class:`_Lockstep`
    while every query reads all coordinates). A scalar query walks one coordinate in
    Python numbers (:meth:`_walk`): the row as a list and the valid levels below h as a
    stack instead of w (with T = 2^60, w and l are 61-bit ints, several times slower to
    shift and mask than small ones). With k = 1 that is the state itself; otherwise the
    row is copied out of the table and back.
    """

    parts = 1
    _lock: _Lockstep | None = None

    def __init__(self, T: int, k: int, seed: SeedLike | TrialRNG, *, trials: bool) -> None:
        super().__init__(T, k, seed, trials=trials)
        width = self.parts * (self.h + 1)
        self._state = StateTable(self.k, width)
        # k = 1: the one coordinate's row, valid levels below h (ascending) and last query
        self._row, self._levels, self._last = [0.0] * width, [], 0

    @property
    def n_materialized(self) -> int:
        """Number of coordinates that hold state (the distinct coordinates queried)."""
        if self.k == 1:
            return int(self._last > 0)
        return self.k if self._lock is not None else self._state.size

    @property
    def nbytes(self) -> int:
        """Bytes of per-coordinate state (grows with queried coordinates, not with k)."""
        if self.k == 1:
            return 8 * (len(self._row) + 2)
        return self._state.nbytes + (0 if self._lock is None else self._lock.P.nbytes)

    def noise_steps(self, times: ArrayLike, coord: int | None = None) -> NDArray[np.float64]:
        """The noise of one coordinate at many steps: ``noise(t, coord)`` for each t, in one call.

        The same values, from the same draws in the same order, as querying the steps one
        by one (so a seed gives the same stream whichever way it is read), at a fraction of
        the per-step cost: one loop over Algorithm 1 in Python numbers, with no per-step
        argument checks or calls into numpy.

        Parameters
        ----------
        times:
            Non-decreasing time steps in 1..T, none before the coordinate's last query
            (repeats give the same value again).
        coord:
            The coordinate, 0..k-1; None means 0 when k == 1.

        Returns
        -------
        numpy.ndarray
            One value per step, shape ``(len(times),)``.

        Raises
        ------
        ParameterError
            If ``coord`` is missing (k > 1) or not one int, or the steps are not a
            non-decreasing sequence or start before the coordinate's last query (nothing
            is drawn then).
        InputError
            If ``coord`` is not an integer in 0..k-1 or a step not one in 1..T.

        Examples
        --------
        >>> a, b = FastGaMe(2**40, 1.0, seed=5), FastGaMe(2**40, 1.0, seed=5)
        >>> steps = [3, 10, 10, 2**39]
        >>> a.noise_steps(steps).tolist() == [b.noise(t) for t in steps]
        True
        """
        if coord is None and self.k != 1:
            raise ParameterError("coord is required when k > 1 (an int in 0..k-1)")
        key = integer_values("coord", 0 if coord is None else coord, 0, self.k - 1)
        if key.ndim:
            raise ParameterError(f"coord must be one int (got shape {key.shape}); noise(t, coords) reads many")
        steps = np.asarray(times)
        steps = integer_values("times", steps if steps.size else steps.astype(np.int64), 1, self.T)
        if steps.ndim != 1 or (np.diff(steps) < 0).any():
            raise ParameterError(f"times must be a non-decreasing sequence of steps in 1..{self.T} (got shape "
                                 f"{steps.shape}{', decreasing somewhere' if steps.ndim == 1 else ''})")
        return np.array(self._steps(int(key), steps.tolist())) if steps.size else np.zeros(0)

    def _noise_one(self, coord: int, t: int) -> float:
        if self.k == 1:
            return self._steps(coord, [t])[0]
        # k > 1: one step on the table row and its mask as they are (cheaper than the
        # list and the stack of _steps for one step)
        state = self._unlocked()
        slot = state.slot(coord)
        row, w, last = state.data[slot], int(state.mask[slot]), state.check_forward(coord, slot, t)
        if t != last:
            if last == 0:  # Alg. 1 l.3-9
                self._start_one(row)
                w = 1 | (1 << self.h)
            else:
                m, a, c, w = _shared_level(w, last, t, self.h)  # Alg. 1 l.16-30
                if a != m:
                    self._bridge_one(row, a, m, c)
                self._tail_one(row, m)
            state.mask[slot], state.last[slot] = w, t
        return float(self._value(row, 0))

    def _steps(self, coord: int, times: list[int]) -> list[float]:
        """Noise of one coordinate at non-decreasing ``times``, walked by :meth:`_walk`.

        With k > 1 the row is copied from the table to a list and its mask w turned into the
        stack of levels, and back (O(valid levels) once a call).
        """
        if self.k == 1:
            if times[0] < self._last:
                _refuse_backwards(coord, self._last, times[0])
            values = self._walk(self._row, self._levels, self._last, times)
            self._last = times[-1]
            return values
        state, h = self._unlocked(), self.h
        slot = state.slot(coord)
        last = state.check_forward(coord, slot, times[0])
        row, levels = state.data[slot].tolist(), _levels(int(state.mask[slot]), h)
        values = self._walk(row, levels, last, times)
        state.data[slot], state.mask[slot], state.last[slot] = row, _mask(levels, h), times[-1]
        return values

    def _walk(self, row: _Row, levels: list[int], last: int, times: list[int]) -> list[float]:
        """Algorithm 1 for one coordinate from its row, valid levels below h and last query: the values.

        ``levels`` is w as a stack (ascending; level 0 stays at the bottom once queried):
        a query pops the levels above the shared one m, the lowest of which is c, and the
        level left on top is a (Alg. 1 l.16-30). ``row`` and ``levels`` are updated in place.
        """
        h, values = self.h, []
        for t in times:
            if t != last:  # Alg. 1 l.12: the same leaf gives the same value
                if last == 0:  # Alg. 1 l.3-9: the root, then h more levels
                    self._start_one(row)
                    levels.append(0)
                else:
                    m = h - ((last - 1) ^ (t - 1)).bit_length()  # Alg. 1 l.16
                    c = h
                    while levels[-1] > m:  # Alg. 1 l.27-30: the old path's levels below m leave
                        c = levels.pop()
                    if levels[-1] != m:  # Alg. 1 l.18-23: bridge between the valid levels a < m < c
                        self._bridge_one(row, levels[-1], m, c)
                        levels.append(m)
                    # Alg. 1 l.25-26: below level m the new path is a right subtree no earlier
                    # query has entered, so its h - m node noises are fresh.
                    self._tail_one(row, m)
                last = t
            values.append(self._value(row, 0))
        return values

    def _unlocked(self) -> StateTable:
        """The per-coordinate table, the lockstep walks moved into it first if in lockstep (coordinate i in row i)."""
        lock, state, k = self._lock, self._state, self.k
        if lock is not None:
            self._lock = None
            assert state.table is not None  # k > 1
            state.table.get_or_insert(np.arange(k, dtype=np.int64))  # the table is empty: rows 0..k-1
            state.grow(k)
            state.data[:k] = lock.P.T
            state.last[:k] = lock.last
            state.mask[:k] = lock.mask
        return state

    # -- the walk: how the noise at the levels is drawn ---------------------------------
    @abstractmethod
    def _value(self, flat: NDArray[np.float64], base: _I) -> _F:
        """The released value of the rows starting at ``base`` of the flat state."""

    @abstractmethod
    def _start_one(self, row: _Row) -> None:
        """First query: draw the walk at level 0 (the root) and at level h."""

    @abstractmethod
    def _bridge_one(self, row: _Row, a: int, m: int, c: int) -> None:
        """Draw the walk at level m given levels a < m < c."""

    @abstractmethod
    def _tail_one(self, row: _Row, m: int) -> None:
        """Draw level h given level m: the h - m fresh nodes below the shared node."""

    @abstractmethod
    def _start_many(self, flat: NDArray[np.float64], base: NDArray[np.int64]) -> None: ...

    @abstractmethod
    def _bridge_many(self, flat: NDArray[np.float64], base: NDArray[np.int64], a: NDArray[np.int64],
                     m: NDArray[np.int64], c: NDArray[np.int64]) -> None: ...

    @abstractmethod
    def _tail_many(self, flat: NDArray[np.float64], base: NDArray[np.int64], m: NDArray[np.int64]) -> None: ...

    # -- many coordinates at one step (the same steps, vectorized) ----------------------
    def _noise_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.float64]:
        if self.k == 1:  # coords is [0]: the scalar path's state
            return np.array(self._steps(0, [t]))
        state, h = self._unlocked(), self.h
        slots = state.slots(coords, t)
        # Flat indices into the state: one gather of data[slot, col] is
        # flat[slot * width + col], several times cheaper in numpy than two-array indexing.
        flat = state.data.reshape(-1)
        base = slots * state.width
        last = state.last[slots]
        new = np.flatnonzero(last == 0)
        if new.size:  # Alg. 1 l.3-9
            self._start_many(flat, base[new])
            state.mask[slots[new]] = 1 | (1 << h)
        adv = np.flatnonzero((last != t) & (last != 0))
        if adv.size:
            self._advance(flat, slots[adv], base[adv], last[adv], t)
        state.last[slots] = t
        return self._value(flat, base)

    def _advance(self, flat: NDArray[np.float64], slots: NDArray[np.int64], base: NDArray[np.int64],
                 last: NDArray[np.int64], t: int) -> None:
        """Alg. 1 l.15-31 for coordinates whose last query was before t."""
        h = self.h
        w = self._state.mask[slots]
        if last.min() == last.max() and (w == w[0]).all():  # one history (a protocol's trials): scalar levels
            m, a_, c_, new_w = _shared_level(int(w[0]), int(last[0]), t, h)
            if a_ != m:
                self._bridge_many(flat, base, a_, m, c_)  # type: ignore[arg-type]
        else:
            m = h - _bit_length((last - 1) ^ (t - 1))
            new_w = (w & ((2 << m) - 1)) | (1 << m) | (1 << h)
            gap = np.flatnonzero(((w >> m) & 1) == 0)
            if gap.size:  # bridge between the valid levels a < m < c
                mg, wg = m[gap], w[gap]
                a = _bit_length(wg & ((1 << mg) - 1)) - 1
                above = (wg >> (mg + 1)) << (mg + 1)
                self._bridge_many(flat, base[gap], a, mg, _bit_length(above & -above) - 1)
        self._tail_many(flat, base, m)  # type: ignore[arg-type]
        self._state.mask[slots] = new_w


class _Lockstep:
    """Algorithm 1 for k coordinates that every query reads together: one history, k walks.

    Read at the same steps, the coordinates share the last query time and the validity
    mask, so the bookkeeping (m, a, c, w; :func:`_shared_level`) is done once on Python
    ints, and each draw of Algorithm 1 is one numpy expression over k values: level j of
    every coordinate is row j of P, contiguous. A read costs O(1) array operations of
    length k whatever h (at most two normals per value), and the state is Algorithm 1's
    own, so the switch to the per-coordinate table (:meth:`_LazyTree._unlocked`) draws
    nothing.
    """

    def __init__(self, h: int, sigma: float, k: int) -> None:
        self.h, self.sigma, self.k = h, sigma, k
        self.P = np.zeros((h + 1, k))  # P[j, i]: the prefix sum at level j of coordinate i
        self.last = self.mask = 0

    def read(self, t: int, normals: Callable[[int], NDArray[np.float64]]) -> NDArray[np.float64]:
        """The noise of every coordinate at step t (row h of P: copy it before the next read)."""
        h, P, s, k = self.h, self.P, self.sigma, self.k
        if t == self.last:  # Alg. 1 l.12: same leaf, same value
            return P[h]
        if t < self.last:
            _refuse_backwards(0, self.last, t)
        if self.last == 0:  # Alg. 1 l.3-9: the root, then h more levels
            P[0] = s * normals(k)
            m, self.mask = 0, 1 | (1 << h)
        else:
            m, a, c, self.mask = _shared_level(self.mask, self.last, t, h)
            if a != m:  # Alg. 1 l.18-23
                P[m] = _bridge(P[a], P[c], a, m, c, s, normals(k))
        np.add(P[m], s * math.sqrt(h - m) * normals(k), out=P[h])  # Alg. 1 l.25-26 (l.3-9 with m = 0)
        self.last = t
        return P[h]


class FastGaMe(_GaussianNodes, _LazyTree):
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
    whatever k is. One coordinate at a time is Algorithm 1 in Python numbers (with k = 1
    the state itself is a list and two ints); :meth:`noise_steps` reads many steps of one
    coordinate in one call, the same values as one query per step. Many coordinates
    queried at one step go through a vectorized numpy path. While every query reads all
    k coordinates (k > 1), they move in lockstep (:class:`_Lockstep`): one history, so
    the bookkeeping is done once and each draw is one array operation over the k
    values, the same draws as the per-coordinate path; the first query of a subset moves
    the state to the per-coordinate table. Time only moves forward per coordinate: a
    query earlier than that coordinate's last query is refused; a repeated query at the
    same step returns the same value.

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
        read from it in blocks of 1024); or a party's TrialRNG, with k its trials, for a
        protocol that queries every trial at every step.
    lockstep:
        False to keep every query on the per-coordinate path (for a source that reads all
        coordinates once, then a few at a time: a switch would draw every state at once).

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

    def __init__(self, T: int, sigma2: float, k: int = 1, seed: SeedLike | TrialRNG = None, *,
                 lockstep: bool = True) -> None:
        super().__init__(T, sigma2, k, seed, trials=True)
        self._lockstep = bool(lockstep)
        self._sqrt_int = np.sqrt(np.arange(self.h + 1))  # sqrt(h - m), indexed by h - m
        self._tail_sd = [self._sigma * r for r in self._sqrt_int.tolist()]  # sd of P_h - P_m, by h - m
        # The scalar path reads the normals by index from a Generator's block; a TrialRNG
        # is read a draw at a time (the party's next draws follow the noise's).
        self._blocks = self._draws if isinstance(self._draws, _GeneratorDraws) else None
        self._fast_scalar = self._blocks is not None and self.k == 1

    def prefix_sums(self, coords: ArrayLike | None = None) -> NDArray[np.float64]:
        """The stored prefix sums P_0..P_h of the given coordinates (NaN where invalid).

        An inspection hook for tests and teaching: row i holds P_j = S_l(j) for the valid
        levels j of the path to the last queried leaf of ``coords[i]`` and NaN where the
        validity bit w_j is 0 (or the coordinate was never queried). Draws nothing, but from
        a source in lockstep (which it switches to the per-coordinate state, as a subset would).

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
        if self.k == 1:
            have = np.full(flat.size, self._last > 0)
            rows = np.tile(self._row, (int(have.sum()), 1))
            masks = np.full(rows.shape[0], _mask(self._levels, self.h), dtype=np.int64)
        else:
            state = self._unlocked()
            slots = state.lookup(flat)
            have = slots >= 0
            rows, masks = state.data[slots[have]], state.mask[slots[have]]
        out = np.full((flat.size, self.h + 1), np.nan)
        valid = (masks[:, None] >> np.arange(self.h + 1)) & 1
        out[have] = np.where(valid == 1, rows, np.nan)
        return out[0] if keys.ndim == 0 else out

    def _noise_all(self, t: int) -> NDArray[np.float64]:
        if self._lock is None:
            if self._state.size or not self._lockstep:  # Algorithm 1 per coordinate
                return self._noise_many(np.arange(self.k, dtype=np.int64), t)
            self._lock = _Lockstep(self.h, self._sigma, self.k)
        return self._lock.read(t, self._draws.normals).copy()

    def _value(self, flat: NDArray[np.float64], base: _I) -> _F:
        return flat[base + self.h]

    def _noise_one(self, coord: int, t: int) -> float:
        # One step of _walk (below) with the state read from self: with T = 2^60 the
        # calls, lists and loop of a walk of one step cost half as much as the step.
        last, draws = self._last, self._blocks
        if not self._fast_scalar or last == 0:
            return _LazyTree._noise_one(self, coord, t)
        assert draws is not None
        if t <= last:
            if t < last:
                _refuse_backwards(coord, last, t)
            return self._row[self.h]  # Alg. 1 l.12
        h, row, levels, z, i = self.h, self._row, self._levels, draws.block, draws.pos
        if i + 2 > len(z):
            z, i = draws.refill(i)
        m = h - ((last - 1) ^ (t - 1)).bit_length()  # Alg. 1 l.16
        c = h
        while levels[-1] > m:  # Alg. 1 l.27-30
            c = levels.pop()
        a = levels[-1]
        if a != m:  # Alg. 1 l.18-23, _bridge written out
            pa, left = row[a], m - a
            row[m] = pa + left / (c - a) * (row[c] - pa) + self._sigma * (left * (c - m) / (c - a)) ** 0.5 * z[i]
            levels.append(m)
            i += 1
        row[h] = value = row[m] + self._tail_sd[h - m] * z[i]  # Alg. 1 l.25-26
        draws.pos, self._last = i + 1, t
        return value

    def _walk(self, row: _Row, levels: list[int], last: int, times: list[int]) -> list[float]:
        # _LazyTree._walk with the steps written out and the normals read from the
        # Generator's block by index: the calls cost more than the arithmetic of a step
        # (per value, noise_steps takes 0.8-0.9 of the one-step _noise_one above, bench_fastgame).
        draws = self._blocks
        if draws is None:
            return super()._walk(row, levels, last, times)
        if last == 0:  # Alg. 1 l.3-9, as in _LazyTree._walk
            self._start_one(row)
            levels.append(0)
            last = times[0]
        h, s, tail_sd, values = self.h, self._sigma, self._tail_sd, []
        append, z, i, leaf = values.append, draws.block, draws.pos, last - 1
        for t in times:
            b = t - 1
            if b != leaf:
                if i + 2 > len(z):  # a step reads at most two normals
                    z, i = draws.refill(i)
                m = h - (leaf ^ b).bit_length()
                c = h
                while levels[-1] > m:
                    c = levels.pop()
                a = levels[-1]
                if a != m:  # _bridge, written out
                    pa, left = row[a], m - a
                    row[m] = pa + left / (c - a) * (row[c] - pa) + s * (left * (c - m) / (c - a)) ** 0.5 * z[i]
                    levels.append(m)
                    i += 1
                row[h] = row[m] + tail_sd[h - m] * z[i]
                i += 1
                leaf = b
            append(row[h])
        draws.pos = i
        return values

    def _start_one(self, row: _Row) -> None:
        row[0] = self._sigma * self._normal1()  # the root, then the h levels below it
        self._tail_one(row, 0)

    def _bridge_one(self, row: _Row, a: int, m: int, c: int) -> None:
        row[m] = _bridge(row[a], row[c], a, m, c, self._sigma, self._normal1())

    def _tail_one(self, row: _Row, m: int) -> None:
        row[self.h] = row[m] + self._tail_sd[self.h - m] * self._normal1()

    def _start_many(self, flat: NDArray[np.float64], base: NDArray[np.int64]) -> None:
        flat[base] = self._sigma * self._normals(base.size)
        self._tail_many(flat, base, np.zeros(base.size, dtype=np.int64))

    def _bridge_many(self, flat: NDArray[np.float64], base: NDArray[np.int64], a: NDArray[np.int64],
                     m: NDArray[np.int64], c: NDArray[np.int64]) -> None:
        flat[base + m] = _bridge(flat[base + a], flat[base + c], a, m, c, self._sigma, self._normals(base.size))

    def _tail_many(self, flat: NDArray[np.float64], base: NDArray[np.int64], m: NDArray[np.int64]) -> None:
        h = self.h
        flat[base + h] = flat[base + m] + self._sigma * self._sqrt_int[h - m] * self._normals(base.size)


class LaplaceFastGaMe(_LaplaceNodes, _LazyTree):
    """Binary-tree Laplace noise in O(1) time per value: FastGaMe for pure DP.

    The same joint law as :class:`LaplaceTree`. A Lap(b) node is E+ - E- with E+, E-
    independent Exp(b) = Gamma(1, b), so the prefix sums along a path are the difference
    of two Gamma random walks, Pos_j - Neg_j, each a sum of j + 1 Gamma(1, b) steps. This
    source keeps both walks per level and replaces FastGaMe's two Gaussian steps by their
    exact Gamma analogues:

    - bridge: given the walk at levels a < m < c, Pos_m - Pos_a = (Pos_c - Pos_a) Y with
      Y ~ Beta(m - a, c - m), independent of the rest (for independent Gamma(alpha) and
      Gamma(beta), X / (X + Y) ~ Beta(alpha, beta) is independent of X + Y); the same for
      Neg with its own Beta;
    - tail: Pos_h = Pos_m + Gamma(h - m, b), Neg_h = Neg_m + Gamma(h - m, b): the fresh
      nodes below the shared one.

    Four O(1) draws per query, whatever T. Calibration: epsilon = (h + 2) Delta_1 / (2 b)
    (:meth:`epsilon`).

    Parameters
    ----------
    T:
        Number of time steps, a power of two (at most 2^62).
    scale:
        Laplace scale b > 0 of a node.
    k:
        Number of independent coordinates.
    seed:
        As for :class:`FastGaMe`.

    Examples
    --------
    >>> lap = LaplaceFastGaMe(2**40, 1.0, k=3, seed=2)
    >>> lap.noise(7, [0, 2]).shape, lap.variance        # (h + 1) 2 b^2
    ((2,), 82.0)
    """

    parts = 2

    def __init__(self, T: int, scale: float, k: int = 1, seed: SeedLike | TrialRNG = None) -> None:
        super().__init__(T, scale, k, seed, trials=True)
        self._neg = self.h + 1  # column offset of the negative walk

    def _value(self, flat: NDArray[np.float64], base: _I) -> _F:
        return flat[base + self.h] - flat[base + self._neg + self.h]

    def _gammas(self, shape: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.scale * self._draws.gamma(shape)

    # one coordinate: the same draws as the vectorized path, with Python floats
    def _start_one(self, row: _Row) -> None:
        b, h, neg, gamma1 = self.scale, self.h, self._neg, self._draws.gamma1
        row[0], row[neg] = b * gamma1(1.0), b * gamma1(1.0)  # the root's two Exp(b) halves
        if h:
            self._tail_one(row, 0)

    def _bridge_one(self, row: _Row, a: int, m: int, c: int) -> None:
        for part in (0, self._neg):
            lo = row[part + a]
            row[part + m] = lo + (row[part + c] - lo) * self._draws.beta1(m - a, c - m)

    def _tail_one(self, row: _Row, m: int) -> None:
        h, b = self.h, self.scale
        for part in (0, self._neg):
            row[part + h] = row[part + m] + b * self._draws.gamma1(float(h - m))

    def _start_many(self, flat: NDArray[np.float64], base: NDArray[np.int64]) -> None:
        ones = np.ones(base.size)
        for part in (base, base + self._neg):  # Pos_0, Neg_0: the root's two Exp(b) halves
            flat[part] = self._gammas(ones)
        if self.h:
            self._tail_many(flat, base, np.zeros(base.size, dtype=np.int64))

    def _bridge_many(self, flat: NDArray[np.float64], base: NDArray[np.int64], a: NDArray[np.int64],
                     m: NDArray[np.int64], c: NDArray[np.int64]) -> None:
        for part in (base, base + self._neg):
            lo, hi = flat[part + a], flat[part + c]
            flat[part + m] = lo + (hi - lo) * self._draws.beta(_floats(m - a, base), _floats(c - m, base))

    def _tail_many(self, flat: NDArray[np.float64], base: NDArray[np.int64], m: NDArray[np.int64]) -> None:
        h = self.h
        for part in (base, base + self._neg):
            flat[part + h] = flat[part + m] + self._gammas(_floats(h - m, base))
