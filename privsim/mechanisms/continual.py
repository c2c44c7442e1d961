"""Continual counting under rho-zCDP with the Gaussian binary tree (FastGaMe noise).

Pagh & Sejer (2026), section 2 and appendix B: over T = 2^h steps, releasing the running
sums A(t) = sum_{t_i <= t} x_i plus binary-tree noise with node variance

    s^2 = (h + 2) / (8 rho) * Delta^2

is rho-zCDP when every update has l2 norm at most Delta. (The strategy matrix R of
appendix B has l2 sensitivity sqrt(h + 2) / 2, so rho = (h + 2) / (8 s^2) by the
Gaussian mechanism's zCDP bound, Definition A.3; the released values are
post-processing.) Every released value then has Var = (h + 1) s^2.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms._checks import integer, integer_values, positive
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.tree import FastGaMe, tree_height

__all__ = ["ContinualCounter", "continual_sigma2"]


def continual_sigma2(T: int, rho: float, sensitivity: float = 1.0) -> float:
    """Node variance that makes the Gaussian tree over T steps rho-zCDP.

    Parameters
    ----------
    T:
        Number of time steps, a power of two >= 2.
    rho:
        zCDP budget, > 0.
    sensitivity:
        l2 bound Delta on one update.

    Returns
    -------
    float
        s^2 = (log2 T + 2) / (8 rho) * Delta^2 (Pagh & Sejer, appendix B).

    Raises
    ------
    ParameterError
        If T is not a power of two >= 2 (for T = 1 there is no sibling and the
        appendix-B sensitivity sqrt(h + 2)/2 does not hold), or rho, Delta <= 0.

    Examples
    --------
    >>> continual_sigma2(1024, 0.5)
    3.0
    """
    h = tree_height(T, minimum=2)
    rho = positive("rho", rho, scalar=True)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    return (h + 2) / (8.0 * rho) * sensitivity**2  # appendix B: rho = (h+2)/(8 s^2)


class ContinualCounter:
    """Running sums of k-dimensional updates, released with FastGaMe noise (rho-zCDP).

    Updates come with non-decreasing time steps; ``query(t)`` releases the sum of all
    updates with time <= t plus the tree noise of step t, for the requested
    coordinates. Once step t has been queried no update at t is accepted (section 1.2:
    "once a time step has been queried, updates are only possible after that
    timestamp"), and time never goes back. Several updates per step are fine; each one
    is a separate element of the data set and must have l2 norm <= ``sensitivity``.

    The guarantee: the whole sequence of releases (any number of queries, any
    coordinates) is rho-zCDP with respect to adding or removing one update.

    Parameters
    ----------
    T:
        Number of time steps, a power of two >= 2.
    rho:
        zCDP budget, > 0.
    k:
        Dimension of the updates.
    sensitivity:
        l2 bound Delta on one update (updates above it are refused).
    seed:
        None, an int, a numpy SeedSequence or a numpy Generator.

    Attributes
    ----------
    h:
        log2 T.
    sigma2:
        Node variance (h + 2) / (8 rho) * Delta^2.
    variance:
        Variance of every released value, (h + 1) * sigma2.

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
        rho: float,
        k: int = 1,
        sensitivity: float = 1.0,
        seed: SeedLike = None,
    ) -> None:
        self.sigma2 = continual_sigma2(T, rho, sensitivity)
        self.rho = float(rho)
        self.sensitivity = float(sensitivity)
        #: The FastGaMe instance that supplies the noise (read it, do not query it).
        self.noise = FastGaMe(T, self.sigma2, k=k, seed=seed)
        self.T, self.h, self.k = self.noise.T, self.noise.h, self.noise.k
        self._sum = np.zeros(self.k, dtype=np.float64)
        self._last_update = 0
        self._last_query = 0

    def __repr__(self) -> str:
        return (f"ContinualCounter(T={self.T}, rho={self.rho!r}, k={self.k}, "
                f"sensitivity={self.sensitivity!r})")

    @property
    def variance(self) -> float:
        """Variance of every released value, (h + 1) s^2 (section 2)."""
        return (self.h + 1) * self.sigma2

    @property
    def error_sd(self) -> float:
        """Standard deviation of every released value's error, sqrt((h + 1) s^2)."""
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
        norm = float(np.sqrt(np.sum(values * values)))
        if not math.isfinite(norm) or norm > self.sensitivity * (1 + 1e-12):
            raise InputError(
                f"x must be finite with l2 norm <= sensitivity = {self.sensitivity} "
                f"(got norm {norm:.6g}); split the update or raise the sensitivity")
        if keys is None:
            self._sum += values
        else:
            self._sum[keys] += values
        self._last_update = t

    def _update_values(
        self, x: ArrayLike, coords: ArrayLike | None
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
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
            return values, None
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
