"""Tree noise for the sketch counters of the continual mechanisms, with or without a trial axis.

The continual sketches (:class:`~privsim.mechanisms.join.JoinSizeEstimator`,
:class:`~privsim.mechanisms.range_counting.RangeCounter` with ``T``) release every counter
they read through the Gaussian binary tree mechanism over T steps (Pagh & Sejer, sections
2-3): counter c read at step t carries the tree noise nu_t(c), independent across
counters, with ``Cov(nu_t1(c), nu_t2(c)) = (m + 1) s^2`` (Theorem 3.1). All of them get
that noise from :func:`counter_noise`, the one place where it is built:

one :class:`~privsim.mechanisms.tree.FastGaMe` over the ``(trials or 1) * cells``
counters, trial-major. Where every step that reads any counter reads every counter (the
default, and always with ``trials=R``), FastGaMe keeps them in lockstep: Algorithm 1
with the bookkeeping shared, at most two standard normals per counter and read, O(1)
array operations per read whatever T, from one Generator, so a chunk of trials depends on that
Generator alone (the protocols seed one per seeding block of trials: batch-invariant,
docs/architecture.md, "Trials and seeds"); a read of a subset then draws all counters'
noise at that step and returns the subset (the values read have the tree's joint law:
marginals of a tree release at more steps). With ``sparse=True`` (one instance that reads a
few counters at a time, each at its own steps: range queries, the lazy join) FastGaMe
reads only the counters named, O(1) per counter read.

``kind="blt"`` replaces the tree by buffered linear Toeplitz noise
(:class:`~privsim.mechanisms.BLTNoise`, lazy per counter either way): same interface,
exact law, slower per value. :func:`sketch_scale` calibrates either kind to a sketch's rho (``calibration``
chooses the tree's node variance, :mod:`privsim.mechanisms.calibration`); the kind's
:meth:`~privsim.mechanisms.continual_kinds.ContinualNoise.stream_loss` gives the
party-level rho of either (docs/architecture.md, "Claims and verdicts").
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from privsim.errors import ParameterError
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.continual import noise_scale
from privsim.mechanisms.continual_kinds import sketch_noise_kind
from privsim.mechanisms.sketch import _TableShape

__all__ = ["CounterNoise", "counter_noise", "sketch_scale"]

def sketch_scale(noise: str, T: int, rho: float, sensitivity2: float, calibration: str = "paper") -> float:
    """The scale that makes a sketch's counters over T steps rho-zCDP for one update.

    One update moves every counter it touches by at most 1 (squared l2 norm over the
    counters <= ``sensitivity2``), so the tree over the counters is a tree with
    Delta^2 = sensitivity2 (Theorems 4.3, 5.6) and BLT likewise (its rho is
    Delta^2 sum c_i^2 / (2 s^2), :mod:`privsim.mechanisms.blt`).

    Parameters
    ----------
    noise, calibration:
        As for :func:`~privsim.mechanisms.continual_kinds.sketch_noise_kind`.
    T:
        Time steps, a power of two >= 2.
    rho:
        Event-level zCDP target, > 0.
    sensitivity2:
        Squared l2 sensitivity of one update over all counters (rows, or rows L^d).

    Returns
    -------
    float
        The tree's node variance, or the variance of BLT's z.

    Raises
    ------
    ParameterError
        For a refused combination (:func:`~privsim.mechanisms.continual_kinds.sketch_noise_kind`)
        or a bad T or rho.

    Examples
    --------
    >>> round(sketch_scale("tree", 16, 1.0, 3.0), 12)     # 3 (4 + 2) / 8
    2.25
    """
    sketch_noise_kind(noise, calibration)
    return noise_scale(noise, T, rho=rho, sensitivity=math.sqrt(sensitivity2), calibration=calibration)


class _ContinualSketch(_TableShape):
    """The read-only parameters of the continual sketches (JoinSizeEstimator, RangeCounter)."""

    _T: int | None
    _t: int
    _rho: float
    _trials: int | None
    _kind: str
    _calibration: str

    @property
    def T(self) -> int | None:
        """Number of update steps (None for a static RangeCounter)."""
        return self._T

    @property
    def t(self) -> int:
        """Update steps taken so far; estimates and queries answer for this step."""
        return self._t

    @property
    def rho(self) -> float:
        """zCDP parameter of the whole sequence of answers (under a JoinSizeEstimator's ``assumption``, if any)."""
        return self._rho

    @property
    def trials(self) -> int | None:
        """Number of instances run at once, or None (one, no trial axis)."""
        return self._trials

    @property
    def noise(self) -> str:
        """The counters' noise source under continual release, ``"tree"`` or ``"blt"``."""
        return self._kind

    @property
    def calibration(self) -> str:
        """The tree's node-variance rule under continual release, ``"paper"`` or ``"exact"``."""
        return self._calibration


class CounterNoise:
    """The tree (or BLT) noise of ``cells`` counters per trial, read by flat counter index.

    Built by :func:`counter_noise`; :meth:`at` is all the mechanisms call. One noise source
    over ``(trials or 1) * cells`` coordinates, trial-major.
    """

    def __init__(self, T: int, sigma2: float, cells: int, trials: int | None, sparse: bool,
                 seed: SeedLike, kind: str = "tree") -> None:
        if sparse and trials is not None:
            raise ParameterError("sparse: counters read at their own steps need one instance (trials=None)")
        source = sketch_noise_kind(kind)
        self.cells = cells
        self._R = 1 if trials is None else trials
        # Dense: a read of a subset reads all counters, so FastGaMe keeps them in lockstep (one
        # history for all counters). Sparse: one release of all, then reads name a few.
        self._dense = source.lockstep and not sparse
        self._source = source.source(T, sigma2, self._R * cells, seed, lockstep=not sparse)

    @property
    def variance(self) -> float:
        """The largest variance of a released counter: (h + 1) s^2 (tree), at t = T (BLT)."""
        return self._source.variance

    def variance_at(self, t: int) -> float:
        """The variance of a counter released at step t (the same at every t for the tree).

        Examples
        --------
        >>> noise = counter_noise(16, 1.0, 2, kind="blt")
        >>> noise.variance_at(1), noise.variance_at(16) == noise.variance
        (1.0, True)
        """
        return self._source.variance_at(t)

    def at(self, t: int, cells: NDArray[np.intp] | None = None) -> NDArray[np.float64]:
        """Noise at step ``t``: shape ``(R, cells)`` for all counters, else shaped like ``cells``.

        ``cells`` is an integer array ``(R, m)`` of counter indices (R = 1 without a trial
        axis; repeats are one counter). With ``sparse`` or BLT only the counters named are
        queried (O(m)); otherwise every counter is (O(cells) per step).
        """
        if cells is None or self._dense:
            full = np.asarray(self._source.noise(t), dtype=np.float64).reshape(self._R, self.cells)
            return full if cells is None else np.take_along_axis(full, cells, axis=1)
        flat = cells + (np.arange(cells.shape[0], dtype=np.intp) * self.cells)[:, None]  # trial-major
        return np.asarray(self._source.noise(t, flat.reshape(-1)), dtype=np.float64).reshape(cells.shape)


def counter_noise(T: int, sigma2: float, cells: int, *, trials: int | None = None, sparse: bool = False,
                  seed: SeedLike = None, kind: str = "tree") -> CounterNoise:
    """The binary-tree noise of the counters of ``trials`` continual sketches (or one).

    The one place the continual sketches build their noise.

    Parameters
    ----------
    T:
        Number of time steps, a power of two.
    sigma2:
        Node variance s^2 (tree) or the variance of z (BLT), e.g. :func:`sketch_scale`.
    cells:
        Counters per sketch.
    trials:
        None for one sketch, else the number of sketches vectorized.
    sparse:
        One sketch whose reads name a few counters, each counter at its own steps;
        otherwise (the default) each read step reads every counter (FastGaMe in lockstep).
        Ignored for BLT, which is lazy per counter either way.
    seed:
        None, an int >= 0, a SeedSequence or a Generator.
    kind:
        ``"tree"`` (the default) or ``"blt"``.

    Returns
    -------
    CounterNoise

    Examples
    --------
    >>> one = counter_noise(16, 1.0, cells=4, sparse=True, seed=0)
    >>> one.at(2, np.array([[3, 1]])).shape, counter_noise(16, 1.0, 4, trials=5, seed=0).at(2).shape
    ((1, 2), (5, 4))
    """
    return CounterNoise(T, sigma2, cells, trials, sparse, seed, kind)
