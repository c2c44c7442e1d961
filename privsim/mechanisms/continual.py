"""Continual counting: running sums released with correlated noise (rho-zCDP or pure DP).

Pagh & Sejer (2026), section 2 and appendix B: over T = 2^h steps, releasing the running
sums A(t) = sum_{t_i <= t} x_i plus binary-tree noise with node variance

    s^2 = (h + 2) / (8 rho) * Delta^2

is rho-zCDP when every update has l2 norm at most Delta. (The strategy matrix R of
appendix B has l2 sensitivity sqrt(h + 2) / 2, so rho = (h + 2) / (8 s^2) by the
Gaussian mechanism's zCDP bound, Definition A.3; the released values are
post-processing.) Every released value then has Var = (h + 1) s^2. That bound is loose;
``calibration="exact"`` spends the same rho exactly with a smaller s^2
(:mod:`privsim.mechanisms.calibration`).

The noise is one of three sources (:func:`continual_noise`, ``noise=`` of
:class:`ContinualCounter`): ``"tree"`` (FastGaMe), ``"blt"`` (buffered linear Toeplitz,
:mod:`privsim.mechanisms.blt`, exact rho from its sensitivity) and ``"laplace-tree"``
(the tree with Laplace nodes, epsilon-DP, :class:`~privsim.mechanisms.LaplaceFastGaMe`):
each a :class:`~privsim.mechanisms.continual_kinds.ContinualNoise` (sampler, calibration,
privacy map), named by :func:`~privsim.mechanisms.continual_kinds.noise_kind`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms._checks import integer, integer_values, positive
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.blt import DEFAULT_BUFFERS
from privsim.mechanisms.calibration import check_calibration, tree_sigma2
from privsim.mechanisms.continual_kinds import NOISE_KINDS, noise_kind
from privsim.mechanisms.noise_source import NoiseSource
from privsim.mechanisms.tree import tree_height
from privsim.parties.rng import TrialRNG

__all__ = ["ContinualCounter", "continual_sigma2", "continual_noise", "make_noise", "noise_scale",
           "NOISE_KINDS"]

def continual_sigma2(T: int, rho: float, sensitivity: float = 1.0, calibration: str = "paper") -> float:
    """Node variance that makes the Gaussian tree over T steps rho-zCDP (the name scripts use).

    The same function as :func:`~privsim.mechanisms.calibration.tree_sigma2` (parameters,
    returns and errors there): (log2 T + 2) Delta^2 / (8 rho) (Pagh & Sejer, appendix B) by
    default, the exact node variance with ``calibration="exact"``.

    Examples
    --------
    >>> continual_sigma2(1024, 0.5)
    3.0
    """
    return tree_sigma2(T, rho, sensitivity, calibration)


def noise_scale(kind: str, T: int, *, rho: float | None = None, epsilon: float | None = None,
                sensitivity: float = 1.0, calibration: str = "paper", buffers: int = DEFAULT_BUFFERS) -> float:
    """The noise scale that makes a source over T steps rho-zCDP (Gaussian) or epsilon-DP (Laplace).

    Parameters
    ----------
    kind:
        ``"tree"``, ``"blt"`` or ``"laplace-tree"``.
    T:
        Number of time steps, a power of two >= 2.
    rho:
        zCDP budget (``"tree"``, ``"blt"``).
    epsilon:
        Pure-DP budget (``"laplace-tree"``).
    sensitivity:
        Bound Delta on one update: l2 for the Gaussian sources, l1 for Laplace.
    calibration:
        For ``"tree"``: ``"paper"`` or ``"exact"``; BLT is always exact (its rho is computed
        from its sensitivity), the Laplace tree always classical.
    buffers:
        BLT buffers d.

    Returns
    -------
    float
        Node variance s^2 (tree), the variance of z (BLT), or the Laplace scale b.

    Raises
    ------
    ParameterError
        For an unknown kind or calibration, a missing or non-positive budget, a bad T.

    Examples
    --------
    >>> noise_scale("tree", 1024, rho=0.5), noise_scale("laplace-tree", 1024, epsilon=1.0)
    (3.0, 6.0)
    """
    tree_height(T, minimum=2)
    check_calibration(calibration)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    source = noise_kind(kind, calibration)
    name, budget = ("epsilon", epsilon) if source.pure else ("rho", rho)
    budget = positive(name, budget if budget is not None else math.nan, scalar=True)
    return source.scale(T, budget, sensitivity, buffers=buffers)


def make_noise(kind: str, T: int, scale: float, k: int = 1, seed: SeedLike | TrialRNG = None, *,
                 buffers: int = DEFAULT_BUFFERS) -> NoiseSource:
    """The lazy noise source ``kind`` with the given scale (see :func:`noise_scale`).

    Parameters
    ----------
    kind:
        ``"tree"`` (:class:`~privsim.mechanisms.FastGaMe`), ``"blt"``
        (:class:`~privsim.mechanisms.BLTNoise`) or ``"laplace-tree"``
        (:class:`~privsim.mechanisms.LaplaceFastGaMe`).
    T, k, seed:
        Horizon, coordinates and randomness (a TrialRNG makes the coordinates the trials).
    scale:
        s^2 or the Laplace scale b.
    buffers:
        BLT buffers d.

    Returns
    -------
    NoiseSource

    Examples
    --------
    >>> make_noise("laplace-tree", 16, 2.0).variance      # (h + 1) 2 b^2
    40.0
    """
    return noise_kind(kind).source(T, scale, k=k, seed=seed, buffers=buffers)


def continual_noise(kind: str = "tree", T: int = 1024, *, rho: float | None = None,
                    epsilon: float | None = None, sensitivity: float = 1.0, k: int = 1,
                    seed: SeedLike | TrialRNG = None, calibration: str = "paper",
                    buffers: int = DEFAULT_BUFFERS) -> NoiseSource:
    """A noise source calibrated to a privacy budget: :func:`make_noise` of :func:`noise_scale`.

    Parameters
    ----------
    kind, T, rho, epsilon, sensitivity, calibration, buffers:
        As for :func:`noise_scale`.
    k, seed:
        As for :func:`make_noise`.

    Returns
    -------
    NoiseSource

    Examples
    --------
    >>> paper = continual_noise("tree", 1024, rho=0.5)
    >>> exact = continual_noise("tree", 1024, rho=0.5, calibration="exact")
    >>> paper.variance * 0.5, round(exact.variance * 0.5, 2), round(exact.rho(), 6)
    (16.5, 9.85, 0.5)
    """
    scale = noise_scale(kind, T, rho=rho, epsilon=epsilon, sensitivity=sensitivity,
                        calibration=calibration, buffers=buffers)
    return make_noise(kind, T, scale, k=k, seed=seed, buffers=buffers)


class ContinualCounter:
    """Running sums of k-dimensional updates, released with lazy correlated noise (rho-zCDP or pure DP).

    Updates come with non-decreasing time steps; ``query(t)`` releases the sum of all
    updates with time <= t plus the tree noise of step t, for the requested
    coordinates. Once step t has been queried no update at t is accepted (section 1.2:
    "once a time step has been queried, updates are only possible after that
    timestamp"), and time never goes back. Several updates per step are fine; each one
    is a separate element of the data set and must have l2 norm <= ``sensitivity``.

    The guarantee: the whole sequence of releases (any number of queries, any
    coordinates) is rho-zCDP (epsilon-DP for ``noise="laplace-tree"``) with respect to
    adding or removing one update.

    Parameters
    ----------
    T:
        Number of time steps, a power of two >= 2.
    rho:
        zCDP budget, > 0 (None with ``noise="laplace-tree"``).
    k:
        Dimension of the updates.
    sensitivity:
        Bound Delta on one update, l2 (l1 for ``"laplace-tree"``); updates above it are refused.
    seed:
        None, an int, a numpy SeedSequence or a numpy Generator.
    noise:
        ``"tree"`` (FastGaMe, the default), ``"blt"`` or ``"laplace-tree"`` (see
        :func:`continual_noise`).
    calibration:
        ``"paper"`` (the default: s^2 = (h + 2) Delta^2/(8 rho), the outputs of earlier
        versions for a seed) or ``"exact"`` (the same rho exactly, less noise); tree only.
    epsilon:
        Pure-DP budget for ``"laplace-tree"``.
    buffers:
        BLT buffers d.

    Attributes
    ----------
    h:
        log2 T.
    sigma2:
        Node variance ((h + 2) / (8 rho) * Delta^2 for the paper's tree; the variance of z
        for BLT; 2 b^2 for Laplace nodes).
    variance:
        Largest variance of a released value ((h + 1) * sigma2 for the trees).

    Raises
    ------
    ParameterError
        For a T that is not a power of two >= 2, or rho, sensitivity <= 0, or k < 1.

    Examples
    --------
    >>> counter = ContinualCounter(1024, rho=0.5, seed=1)
    >>> counter.h, counter.sigma2, counter.variance
    (10, 3.0, 33.0)
    >>> counter.update(1, 1.0); counter.update(3, 1.0)
    >>> released = counter.query(3)      # 2.0 plus N(0, 33) noise
    >>> released == counter.query(3), round(counter.error_sd, 3)
    (True, 5.745)
    >>> counter.update(3, 1.0)
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: update at t=3 is too late: step 3 was released, updates need t >= 4
    """

    def __init__(
        self,
        T: int,
        rho: float | None = None,
        k: int = 1,
        sensitivity: float = 1.0,
        seed: SeedLike = None,
        *,
        noise: str = "tree",
        calibration: str = "paper",
        epsilon: float | None = None,
        buffers: int = DEFAULT_BUFFERS,
    ) -> None:
        scale = noise_scale(noise, T, rho=rho, epsilon=epsilon, sensitivity=sensitivity,
                            calibration=calibration, buffers=buffers)
        self.kind, self.calibration = noise, calibration
        self._kind = noise_kind(noise, calibration)
        self.rho = None if self._kind.pure else float(rho)  # type: ignore[arg-type]
        self.epsilon = float(epsilon) if self._kind.pure else None  # type: ignore[arg-type]
        self.sensitivity = float(sensitivity)
        #: The noise source (read it, do not query it).
        self.noise = self._kind.source(T, scale, k=k, seed=seed, buffers=buffers)
        self.sigma2 = self._kind.sigma2(scale)
        self.T, self.k = self.noise.T, self.noise.k
        self.h = tree_height(self.T)
        self._sum = np.zeros(self.k, dtype=np.float64)
        self._last_update = 0
        self._last_query = 0

    def __repr__(self) -> str:
        budget = f"epsilon={self.epsilon!r}" if self.rho is None else f"rho={self.rho!r}"
        return (f"ContinualCounter(T={self.T}, {budget}, k={self.k}, "
                f"sensitivity={self.sensitivity!r}, noise={self.kind!r})")

    @property
    def variance(self) -> float:
        """Largest variance of a released value: (h + 1) s^2 for the trees (section 2)."""
        return self.noise.variance

    @property
    def error_sd(self) -> float:
        """Standard deviation of the released values' error (the largest, for BLT)."""
        return math.sqrt(self.variance)

    def update(self, t: int, x: ArrayLike, coords: ArrayLike | None = None) -> None:
        """Add the update ``x`` at time step ``t``.

        Parameters
        ----------
        t:
            Time step in 1..T, at least the last update's and after the last query's.
        x:
            The update: a number when k == 1, else a length-k vector; with ``coords``,
            the values of those coordinates (the others are 0). Its l2 norm must be at
            most ``sensitivity``.
        coords:
            Optional distinct coordinates for a sparse update.

        Raises
        ------
        ParameterError
            If t is out of range, earlier than the last update, or not after the last
            query.
        InputError
            If x has the wrong shape, is not finite, or has l2 norm above the sensitivity.

        Examples
        --------
        >>> c = ContinualCounter(8, rho=1.0, k=3, seed=0)
        >>> c.update(2, [0.6, 0.0, 0.8]); c.update(2, [1.0], coords=[1])
        >>> c.true_sum().tolist()
        [0.6, 1.0, 0.8]
        """
        t = integer("t", t, 1, self.T)
        if t < self._last_update:
            raise ParameterError(
                f"t must be >= {self._last_update}, the time of the last update (got {t})")
        if t <= self._last_query:
            raise ParameterError(
                f"update at t={t} is too late: step {self._last_query} was released, "
                f"updates need t >= {self._last_query + 1}")
        values, keys = self._update_values(x, coords)
        pure = self._kind.pure  # the Laplace mechanism bounds the l1 norm
        norm = float(np.sum(np.abs(values)) if pure else np.sqrt(np.sum(values * values)))
        if not math.isfinite(norm) or norm > self.sensitivity * (1 + 1e-12):
            raise InputError(
                f"x must be finite with {'l1' if pure else 'l2'} norm <= sensitivity = {self.sensitivity} "
                f"(got norm {norm:.6g}); split the update or raise the sensitivity")
        self._sum[keys] += values
        self._last_update = t

    def _update_values(
        self, x: ArrayLike, coords: ArrayLike | None
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | slice]:
        try:
            values = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"x must be numeric (got {x!r})") from None
        if coords is None:
            if values.ndim == 0 and self.k == 1:
                values = values.reshape(1)
            if values.shape != (self.k,):
                raise InputError(
                    f"x must be a number (k = 1) or a vector of length k = {self.k} "
                    f"(got shape {values.shape})")
            return values, slice(None)
        keys = np.atleast_1d(integer_values("coords", coords, 0, self.k - 1)).ravel()
        if np.unique(keys).size != keys.size:
            raise InputError("coords of one update must be distinct")
        values = np.broadcast_to(values, keys.shape) if values.ndim == 0 else values.ravel()
        if values.shape != keys.shape:
            raise InputError(
                f"x must have one value per coordinate ({keys.size}) (got shape {np.shape(x)})")
        return values, keys

    def true_sum(self) -> NDArray[np.float64]:
        """The exact (non-private) running sum of all updates so far, for checking.

        Returns
        -------
        numpy.ndarray
            A length-k copy of the running sum.

        Examples
        --------
        >>> c = ContinualCounter(4, rho=1.0, seed=0); c.update(1, 0.5)
        >>> c.true_sum().tolist()
        [0.5]
        """
        return self._sum.copy()

    def query(self, t: int, coords: ArrayLike | None = None) -> float | NDArray[np.float64]:
        """Release the noisy running sum at time step ``t``.

        Parameters
        ----------
        t:
            Time step in 1..T, not before the last update nor the last query.
        coords:
            Coordinates to release (int or int array); None means all k.

        Returns
        -------
        float or numpy.ndarray
            A(t) + nu_t: a float when k == 1 (or ``coords`` is an int), else an array
            shaped like ``coords``. A repeated query at the same step gives the same value.

        Raises
        ------
        ParameterError
            If t is out of range or earlier than the last update or query.

        Examples
        --------
        >>> c = ContinualCounter(16, rho=2.0, k=4, seed=5)
        >>> c.update(1, [1.0, 0.0, 0.0, 0.0])
        >>> c.query(2, [0, 3]).shape, c.noise.n_materialized
        ((2,), 2)
        """
        t = integer("t", t, 1, self.T)
        if t < self._last_update:
            raise ParameterError(
                f"t must be >= {self._last_update}, the time of the last update (got {t}); "
                "the counter only releases the current sum")
        if t < self._last_query:
            raise ParameterError(
                f"t must be >= {self._last_query}, the time of the last query (got {t}); "
                "continual release only moves forward in time")
        nu = self.noise.noise(t, coords)
        self._last_query = t
        if coords is None:
            return float(nu + self._sum[0]) if self.k == 1 else nu + self._sum
        keys = integer_values("coords", coords, 0, self.k - 1)
        return float(nu + self._sum[int(keys)]) if keys.ndim == 0 else nu + self._sum[keys]
