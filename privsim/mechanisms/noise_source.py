"""The noise-source interface of continual release, and what its implementations share.

A noise source over T steps and k coordinates answers ``noise(t, coords)`` with the
correlated noise the release at step t adds to the given coordinates (docs/architecture.md,
mechanisms). The implementations: the binary tree node by node (:class:`GaussianTree`,
:class:`LaplaceTree`), lazily in O(1) per value (:class:`FastGaMe`,
:class:`LaplaceFastGaMe`), and buffered linear Toeplitz noise (:class:`BLTNoise`).
:func:`~privsim.mechanisms.continual.continual_noise` builds a calibrated one by name.

What they share lives here: the horizon check, the argument checks and the dispatch of
``noise``, the per-coordinate state of the lazy sources (:class:`StateTable`), and the
random draws, taken either from one numpy Generator (coordinates share the stream, in
query order) or from a party's :class:`~privsim.parties.rng.TrialRNG` (coordinates are
the trials, each trial's draws from its own block stream, so a protocol's releases are
the same however its trials are split into batches).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import ParameterError
from privsim.mechanisms._checks import integer, integer_values
from privsim.mechanisms._seeding import SeedLike, as_generator
from privsim.mechanisms._slots import SlotTable
from privsim.parties.rng import TrialRNG

__all__ = ["NoiseSource", "StateTable"]

#: Largest supported tree height: levels 0..h must fit in the bits of an int64.
MAX_HEIGHT = 62
MAX_COORDS = 1 << 62
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


class _GeneratorDraws:
    """Draws from one Generator; standard normals in blocks, consumed in order.

    A scalar query then costs a list read instead of a ~2 us Generator call, while the
    scalar and the vectorized paths still read one sequence: the Generator's normals in
    the order they were drawn, however a block is split between the paths.

    Attributes
    ----------
    block, pos:
        The current block as a list and the index of its next unread normal. A loop that
        reads normals by index (FastGaMe's scalar path) takes them, calls :meth:`refill`
        when fewer remain than a step needs, and stores the index it reached in ``pos``.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self._block = np.zeros(0)
        self.block: list[float] = []
        self.pos = 0

    def refill(self, pos: int) -> tuple[list[float], int]:
        """A fresh block with the unread rest (from ``pos``) in front; returns ``(block, 0)``."""
        self._block = np.concatenate([self._block[pos:], self.rng.standard_normal(_NORMAL_BLOCK)])
        self.block, self.pos = self._block.tolist(), 0
        return self.block, 0

    def normal1(self) -> float:
        if self.pos == len(self.block):
            self.refill(self.pos)
        self.pos += 1
        return self.block[self.pos - 1]

    def normals(self, n: int, width: int = 0) -> NDArray[np.float64]:
        """n standard normals, or an (n, width) array of them."""
        size = n * max(width, 1)
        pos, have = self.pos, len(self.block)
        if size <= have - pos:
            self.pos = pos + size
            out = self._block[pos : pos + size]
        elif pos == have:  # nothing left in the block: no copy
            out = self.rng.standard_normal(size)
        else:
            out = np.concatenate([self._block[pos:], self.rng.standard_normal(size - (have - pos))])
            self.pos = have  # the next scalar draw starts a fresh block
        return out.reshape(n, width) if width else out

    def gamma(self, shape: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.rng.gamma(shape)

    def gamma1(self, shape: float) -> float:
        return float(self.rng.gamma(shape))

    def beta1(self, a: float, b: float) -> float:
        return float(self.rng.beta(a, b))

    def beta(self, a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.rng.beta(a, b)


class _TrialDraws:
    """Draws from a party's TrialRNG: the source's coordinates are the trials.

    Every call draws one value per trial from the trial's own block stream, so it needs all
    trials at once (a protocol queries every coordinate at every step).
    """

    def __init__(self, rng: TrialRNG) -> None:
        self.rng = rng
        self.lanes = rng.trials

    def _check(self, n: int) -> None:
        if n != self.lanes:
            raise ParameterError(f"coords: a source driven by a TrialRNG is queried for all "
                                 f"{self.lanes} trials at once (got {n})")

    def normal1(self) -> float:
        self._check(1)
        return float(self.rng.standard_normal()[0])

    def normals(self, n: int, width: int = 0) -> NDArray[np.float64]:
        self._check(n)
        return self.rng.standard_normal(width) if width else self.rng.standard_normal()

    def gamma(self, shape: NDArray[np.float64]) -> NDArray[np.float64]:
        self._check(len(shape))
        return self.rng.gamma(np.asarray(shape, dtype=np.float64))

    def gamma1(self, shape: float) -> float:
        return float(self.gamma(np.array([shape]))[0])

    def beta1(self, a: float, b: float) -> float:
        return float(self.beta(np.array([a], dtype=np.float64), np.array([b], dtype=np.float64))[0])

    def beta(self, a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        self._check(len(a))
        return self.rng.beta(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


class NoiseSource(ABC):
    """Correlated noise for continual release: ``noise(t, coords)`` for 1 <= t <= T.

    Subclasses implement ``_noise_one`` (one coordinate, plain Python) and ``_noise_many``
    (sorted distinct coordinates, numpy) and say the variance of a released value.

    Attributes
    ----------
    T, k:
        Horizon and number of independent coordinates.
    kind:
        ``"tree"``, ``"laplace-tree"`` or ``"blt"``: the name :func:`continual_noise` takes.

    Examples
    --------
    >>> from privsim.mechanisms import continual_noise
    >>> sources = [continual_noise(kind, 64, rho=1.0, epsilon=1.0) for kind in ("tree", "blt", "laplace-tree")]
    >>> [isinstance(s, NoiseSource) and s.kind for s in sources]
    ['tree', 'blt', 'laplace-tree']
    """

    T: int
    k: int
    kind: str = ""

    def __init__(self, T: int, k: int, seed: SeedLike | TrialRNG, *, trials: bool = True) -> None:
        self.T = T
        self.k = integer("k", k, 1, MAX_COORDS)
        if isinstance(seed, TrialRNG):
            if not trials:
                raise ParameterError(f"seed: {type(self).__name__} takes a Generator or an int "
                                     "(only the lazy sources run on a TrialRNG)")
            if seed.trials != self.k:
                raise ParameterError(f"k must equal the TrialRNG's trials ({seed.trials}) (got {self.k})")
            self._draws: _GeneratorDraws | _TrialDraws = _TrialDraws(seed)
        else:
            self._draws = _GeneratorDraws(as_generator(seed))

    @property
    def _rng(self) -> np.random.Generator:
        assert isinstance(self._draws, _GeneratorDraws)
        return self._draws.rng

    def _normal1(self) -> float:
        return self._draws.normal1()

    def _normals(self, n: int) -> NDArray[np.float64]:
        return self._draws.normals(n)

    @property
    @abstractmethod
    def variance(self) -> float:
        """The largest variance of a released value (over t)."""

    def variance_at(self, t: int) -> float:
        """Variance of the value released at step ``t`` (the same at every t for trees).

        Parameters
        ----------
        t:
            Time step, 1..T.

        Returns
        -------
        float

        Examples
        --------
        >>> from privsim.mechanisms import FastGaMe
        >>> FastGaMe(8, 1.0).variance_at(3)
        4.0
        """
        integer("t", t, 1, self.T)
        return self.variance

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
            If t is not in 1..T (or, for the lazy sources, is earlier than the last query
            of one of the coordinates).
        InputError
            If a coordinate is not an integer in 0..k-1.

        Examples
        --------
        >>> from privsim.mechanisms import FastGaMe
        >>> fg = FastGaMe(16, 1.0, k=4, seed=0)
        >>> fg.noise(3, [2, 0, 2]).shape, fg.noise(3).shape   # the repeat is one value
        ((3,), (4,))
        >>> bool(fg.noise(3, 2) == fg.noise(3)[2])
        True
        """
        if type(t) is not int or not 1 <= t <= self.T:  # the common case stays cheap
            t = integer("t", t, 1, self.T)
        if coords is None:
            return self._noise_one(0, t) if self.k == 1 else self._noise_all(t)
        keys = integer_values("coords", coords, 0, self.k - 1)
        if keys.ndim == 0:
            return self._noise_one(int(keys), t)
        if keys.size == 0:
            return np.zeros(keys.shape)
        distinct, where = np.unique(keys.ravel(), return_inverse=True)
        noise = self._noise_all(t) if distinct.size == self.k > 1 else self._noise_many(distinct, t)
        return noise[where].reshape(keys.shape)

    @abstractmethod
    def _noise_one(self, coord: int, t: int) -> float: ...

    @abstractmethod
    def _noise_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.float64]:
        """Noise for sorted, distinct coordinates."""

    def _noise_all(self, t: int) -> NDArray[np.float64]:
        """Noise for every coordinate, 0..k-1 (a fresh array)."""
        return self._noise_many(np.arange(self.k, dtype=np.int64), t)


def _refuse_backwards(coord: int, last: int, t: int) -> None:
    raise ParameterError(
        f"t={t} is before the last query (t={last}) of coordinate {coord}; time only moves forward"
    )


class StateTable:
    """Per-coordinate state of a lazy source: last query time, a bitmask and ``width`` floats.

    Only queried coordinates hold state (a :class:`SlotTable` maps a coordinate to its row
    when k > 1); rows grow by doubling. Time only moves forward per coordinate.

    Examples
    --------
    >>> state = StateTable(10**9, 3)
    >>> state.slots(np.array([5, 10**8]), 4).tolist(), state.size
    ([0, 1], 2)
    """

    def __init__(self, k: int, width: int) -> None:
        self.table: SlotTable | None = SlotTable() if k > 1 else None
        # True while coordinate i sits in row i for every stored i (the stored keys are
        # 0..size-1): then rows need no hash lookup (a protocol's trials, a dense counter).
        self.identity = True
        self.width = width
        self.size = 0
        self.last = np.zeros(0, dtype=np.int64)  # 0: not queried yet
        self.mask = np.zeros(0, dtype=np.int64)
        self.data = np.zeros((0, width), dtype=np.float64)

    @property
    def nbytes(self) -> int:
        """Bytes held (grows with the queried coordinates, not with k)."""
        table = self.table.nbytes if self.table is not None else 0
        return int(self.last.nbytes + self.mask.nbytes + self.data.nbytes + table)

    def grow(self, extra: int) -> None:
        need = self.size + extra
        if need > self.last.shape[0]:
            more = max(need, 2 * self.last.shape[0], 4) - self.last.shape[0]  # rows past size are all zeros
            self.last = np.pad(self.last, (0, more))
            self.mask = np.pad(self.mask, (0, more))
            self.data = np.pad(self.data, ((0, more), (0, 0)))
        self.size = need

    def slot(self, coord: int) -> int:
        """The row of ``coord``, allocated on first use."""
        if self.table is None:
            if self.size == 0:
                self.grow(1)
            return 0
        slot = self.table.get_or_insert_one(coord)
        if slot >= self.size:
            self.identity = self.identity and slot == coord
            self.grow(1)
        return slot

    def check_forward(self, coord: int, slot: int, t: int) -> int:
        """The last query time of ``slot``, refusing a ``t`` before it."""
        last = int(self.last[slot])
        if last > t:
            _refuse_backwards(coord, last, t)
        return last

    def slots(self, coords: NDArray[np.int64], t: int) -> NDArray[np.int64]:
        """Rows for sorted distinct ``coords``, allocating new ones only after the backwards check."""
        if self.table is None:  # k == 1: coords is [0]
            slots = np.array([self.slot(0)], dtype=np.int64)
        elif self.identity and coords[-1] < self.size:  # sorted: all stored, in their own rows
            slots = coords.copy()
        else:
            slots = self.table.lookup(coords)
        known = slots >= 0
        late = np.flatnonzero(self.last[slots[known]] > t)
        if late.size:
            i = np.flatnonzero(known)[late[0]]
            _refuse_backwards(int(coords[i]), int(self.last[slots[i]]), t)
        if not known.all():
            assert self.table is not None
            fresh = np.flatnonzero(~known)
            slots[fresh] = self.table.get_or_insert(coords[fresh])
            self.identity = self.identity and bool(np.array_equal(slots[fresh], coords[fresh]))
            self.grow(fresh.size)
        return slots

    def lookup(self, coords: NDArray[np.int64]) -> NDArray[np.int64]:
        """Rows of ``coords`` (-1 where never queried); allocates nothing."""
        if self.table is None:
            return np.where(self.size > 0, np.zeros_like(coords), -1)
        return self.table.lookup(coords)

