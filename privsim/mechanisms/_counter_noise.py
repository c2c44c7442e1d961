"""Tree noise for the sketch counters of the continual mechanisms, with or without a trial axis.

The continual sketches (:class:`~privsim.mechanisms.join.JoinSizeEstimator`,
:class:`~privsim.mechanisms.range_counting.RangeCounter` with ``T``) release every counter
they read through the Gaussian binary tree mechanism over T steps (Pagh & Sejer, sections
2-3): counter c read at step t carries the tree noise nu_t(c), independent across
counters, with ``Cov(nu_t1(c), nu_t2(c)) = (m + 1) s^2`` (Theorem 3.1). All of them get
that noise from :func:`counter_noise`, the one place where it is built:

- ``sparse=True`` (one instance that reads a few counters at a time, each at its own
  steps: range queries, the lazy join): a :class:`~privsim.mechanisms.tree.FastGaMe` over
  the counters, O(1) per counter read;
- otherwise (every counter is read at every step that reads any, or ``trials=R``
  instances at once): a :class:`TrialTree`, which samples every counter of every trial
  with one control path and one shared covariance, one standard normal per counter and
  read (several times cheaper per value than FastGaMe's per-counter bookkeeping). Its
  draws are standard normals of shape ``(R, counters)`` from one Generator, trial-major,
  so a chunk of trials depends on that Generator alone (the protocols seed one per
  seeding block of trials: batch-invariant, docs/architecture.md, "Trials and seeds").

A read of a subset of counters from a :class:`TrialTree` draws all counters' noise at that
step and returns the subset: the values read have the tree's joint law (marginals of a
tree release at more steps), at O(counters) per step.

``kind="blt"`` replaces the tree by buffered linear Toeplitz noise
(:class:`~privsim.mechanisms.BLTNoise`, one lazy coordinate per counter of every trial,
``k = (trials or 1) * cells``, reshaped per step): same interface, exact law, slower per
value. :func:`sketch_scale` calibrates either kind to a sketch's rho (``calibration``
chooses the tree's node variance, :mod:`privsim.mechanisms.calibration`) and
:func:`sketch_stream_rho` gives the party-level rho of either (docs/architecture.md,
"Claims and verdicts").
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from privsim.errors import ParameterError
from privsim.mechanisms._checks import integer, positive
from privsim.mechanisms._seeding import SeedLike, as_generator
from privsim.mechanisms.blt import optimize_blt
from privsim.mechanisms.calibration import check_calibration, tree_sensitivity2
from privsim.mechanisms.continual import make_noise, noise_scale
from privsim.mechanisms.noise_source import NoiseSource
from privsim.mechanisms.tree import FastGaMe, tree_height

__all__ = ["SKETCH_NOISE_KINDS", "CounterNoise", "TrialTree", "check_sketch_noise", "counter_noise",
           "sketch_scale", "sketch_stream_rho"]

#: The noise sources the continual sketches take (their claims are zCDP: no Laplace tree).
SKETCH_NOISE_KINDS: tuple[str, ...] = ("tree", "blt")


def check_sketch_noise(noise: str, calibration: str = "paper") -> None:
    """Refuse a noise source or calibration the continual sketches do not support.

    Parameters
    ----------
    noise:
        ``"tree"`` or ``"blt"``.
    calibration:
        ``"paper"`` or ``"exact"``; ``"exact"`` only with ``noise="tree"``.

    Raises
    ------
    ParameterError
        Naming the field, the value and what is allowed.

    Examples
    --------
    >>> check_sketch_noise("blt", "exact")
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: calibration must be paper with noise=blt (got 'exact'); BLT's rho is always exact
    """
    if noise not in SKETCH_NOISE_KINDS:
        raise ParameterError(f"noise must be one of {', '.join(SKETCH_NOISE_KINDS)} (got {noise!r}); "
                             "the sketches' claims are zCDP, so laplace-tree is not offered")
    check_calibration(calibration)
    if noise == "blt" and calibration != "paper":
        raise ParameterError(f"calibration must be paper with noise=blt (got {calibration!r}); "
                             "BLT's rho is always exact")


def sketch_scale(noise: str, T: int, rho: float, sensitivity2: float, calibration: str = "paper") -> float:
    """The scale that makes a sketch's counters over T steps rho-zCDP for one update.

    One update moves every counter it touches by at most 1 (squared l2 norm over the
    counters <= ``sensitivity2``), so the tree over the counters is a tree with
    Delta^2 = sensitivity2 (Theorems 4.3, 5.6) and BLT likewise (its rho is
    Delta^2 sum c_i^2 / (2 s^2), :mod:`privsim.mechanisms.blt`).

    Parameters
    ----------
    noise, calibration:
        As for :func:`check_sketch_noise`.
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
        For a refused combination (:func:`check_sketch_noise`) or a bad T or rho.

    Examples
    --------
    >>> round(sketch_scale("tree", 16, 1.0, 3.0), 12)     # 3 (4 + 2) / 8
    2.25
    """
    check_sketch_noise(noise, calibration)
    return noise_scale(noise, T, rho=rho, sensitivity=math.sqrt(sensitivity2), calibration=calibration)


def sketch_stream_rho(noise: str, T: int, rho: float, change: float, calibration: str = "paper") -> float:
    """zCDP of a sketch's releases towards one party's stream, for a source calibrated to ``rho``.

    The party may move mass at most ``change`` per sketch row at every one of the T steps.

    - tree: the bound of :func:`~privsim.protocols.continual_sum.stream_rho`,
      ||R v||^2 <= change^2 Delta^2 T^2 / 2 is over the node variance: with
      ``calibration="exact"`` the node variance c_h Delta^2/(2 rho) is the paper's for
      rho' = rho (h + 2)/(4 c_h), so the claim is stream_rho(rho').
    - blt: every entry of C is positive, so for the counters v_c of one row,
      sum_c ||C v_c||^2 <= sum_c ||C |v_c| ||^2 <= ||C sum_c |v_c| ||^2 <= change^2 ||C 1||^2
      (cross terms are >= 0, and 0 <= sum_c |v_c| <= change at every step); over the rows
      this is change^2 stream2 / sensitivity2 times the event's divergence:
      rho change^2 ||C 1||^2 / max_tau ||C e_tau||^2 (:mod:`privsim.mechanisms.blt`).

    Parameters
    ----------
    noise, calibration:
        As for :func:`check_sketch_noise`.
    T:
        Time steps of the mechanism, a power of two >= 2.
    rho:
        The event-level rho the source is calibrated to.
    change:
        Largest mass per row and step, in units of one update.

    Returns
    -------
    float

    Examples
    --------
    >>> sketch_stream_rho("tree", 64, 1.0, 1.0)        # stream_rho(1.0, 64)
    1024.0
    """
    check_sketch_noise(noise, calibration)
    change = positive("change", change, scalar=True)
    if noise == "blt":
        params = optimize_blt(T)
        return rho * change**2 * params.stream2(T) / params.sensitivity2(T)
    h = tree_height(T, minimum=2)
    if calibration == "exact":
        rho = rho * (h + 2) / (4.0 * tree_sensitivity2(h))  # the paper's rho at the exact node variance
    # stream_rho's bound (mechanisms do not import protocols): ||R v||^2 / ||R e||^2 = (T^2/2) / ((h+2)/4)
    return rho * change**2 * 2.0 * T * T / (h + 2)


class TrialTree:
    """Binary-tree noise for an array of counters that are all read at the same steps.

    The noise read at step t is the prefix sum P_h of the node noises on the path to leaf
    bin(t - 1) (Pagh & Sejer, section 2). With every counter read at the same steps, the
    conditional law of the prefix sums P_0..P_h of the active path given all earlier
    reads is Gaussian with a covariance S that does not depend on the counter (nor on the
    values read) and a mean that is linear in them. So one (h + 1) x (h + 1) matrix S is
    kept for all counters, and per counter only the means mu_0..mu_h (a Kalman filter).
    A read at t after a read at l:

    1. m = |LCP(bin(l - 1), bin(t - 1))|; the new path keeps levels 0..m and has fresh
       levels below: P'_j = P_m + (sum of j - m fresh N(0, s^2) nodes) for j > m, so
       mu'_j = mu_m and S'_ij = S_mm + (min(i, j) - m) s^2 there (Theorem 3.1);
    2. the read value is P'_h = mu'_h + sqrt(S'_hh) Z, one standard normal Z per counter;
    3. conditioning on it: mu'' = mu' + S'_{., h} / sqrt(S'_hh) * Z and
       S'' = S' - S'_{., h} S'_{h, .} / S'_hh.

    One standard normal per counter and read (FastGaMe's Algorithm 1 draws up to two: it
    keeps P_m as a sample, where this keeps it as a mean and a shared variance), and h + 2
    array updates. The joint law of the values read is exactly that of
    :class:`~privsim.mechanisms.tree.GaussianTree`.

    Parameters
    ----------
    T:
        Number of time steps, a power of two.
    sigma2:
        Node variance s^2 > 0.
    shape:
        Shape of the counter array, e.g. ``(trials, counters)``.
    seed:
        None, an int >= 0, a SeedSequence or a Generator (every draw has ``shape``).

    Raises
    ------
    ParameterError
        If T is not a power of two or sigma2 <= 0.

    Examples
    --------
    >>> tree = TrialTree(8, 1.0, (2, 3), seed=1)
    >>> a = tree.noise(1)
    >>> a.shape, bool((tree.noise(1) == a).all()), tree.variance
    ((2, 3), True, 4.0)
    """

    def __init__(self, T: int, sigma2: float, shape: tuple[int, ...], seed: SeedLike = None) -> None:
        self.h = tree_height(T)
        self.T = 1 << self.h
        self.sigma2 = float(sigma2)
        if not (self.sigma2 > 0 and math.isfinite(self.sigma2)):
            raise ParameterError(f"sigma2 must be a finite number > 0 (got {sigma2!r})")
        self._shape = tuple(int(v) for v in shape)
        self._rng = as_generator(seed)
        h = self.h
        self._mu = np.zeros((h + 1, *self._shape))  # E[P_j | reads so far], per counter
        # Before any read the "path" is the root's ancestor: P_j is a sum of j + 1 nodes.
        levels = np.arange(h + 1)
        self._S = (np.minimum.outer(levels, levels) + 1) * self.sigma2  # Cov(P_i, P_j)
        self._z = np.empty(self._shape)  # buffer for the standard normals of one read
        self._last = 0

    @property
    def variance(self) -> float:
        """Variance of every released value, (h + 1) s^2 (section 2)."""
        return (self.h + 1) * self.sigma2

    def noise(self, t: int) -> NDArray[np.float64]:
        """The noise of every counter at step ``t`` (read-only; a repeat returns the same values).

        Raises
        ------
        ParameterError
            If t is not in 1..T or is before the last query.
        """
        t = integer("t", t, 1, self.T)
        if t == self._last:  # same leaf, same value
            return self._read()
        if t < self._last:
            raise ParameterError(f"t must be >= {self._last}, the last query (got {t}); tree noise only moves forward")
        h, mu = self.h, self._mu
        if self._last:
            m = h - ((self._last - 1) ^ (t - 1)).bit_length()  # levels 0..m are shared (Alg. 1 l.16)
            S = self._S.copy()
            below = np.arange(m + 1, h + 1)
            S[below, :] = S[m, :]  # P'_j = P_m + fresh nodes: same covariance with the levels above m
            S[:, below] = S[:, m][:, None]
            S[np.ix_(below, below)] = S[m, m] + (np.minimum.outer(below, below) - m) * self.sigma2
            mu[m + 1 :] = mu[m]
        else:
            S = self._S
        gain = S[:, h] / math.sqrt(S[h, h])  # Cov(P'_j, Z): the read's effect on each level
        z = self._rng.standard_normal(out=self._z)
        for j in range(h + 1):
            if gain[j] != 0.0:
                mu[j] += gain[j] * z  # mu'' = mu' + S'_{j,h} / sqrt(S'_hh) Z; mu''_h is the read value
        self._S = S - np.outer(gain, gain)
        self._last = t
        return self._read()

    def _read(self) -> NDArray[np.float64]:
        view = self._mu[self.h].view()
        view.flags.writeable = False
        return view


class CounterNoise:
    """The tree (or BLT) noise of ``cells`` counters per trial, read by flat counter index.

    Built by :func:`counter_noise`; :meth:`at` is all the mechanisms call.
    """

    def __init__(self, T: int, sigma2: float, cells: int, trials: int | None, sparse: bool,
                 seed: SeedLike, kind: str = "tree") -> None:
        self.trials = trials
        self.cells = cells
        self.kind = kind
        if sparse and trials is not None:
            raise ParameterError("sparse: counters read at their own steps need one instance (trials=None)")
        check_sketch_noise(kind)
        self._blt: NoiseSource | None = None
        if kind == "blt":  # one lazy coordinate per counter of every trial, trial-major
            self._fast, self._tree = None, None
            self._blt = make_noise("blt", T, sigma2, k=(1 if trials is None else trials) * cells, seed=seed)
        elif sparse:
            self._fast: FastGaMe | None = FastGaMe(T, sigma2, k=cells, seed=seed)
            self._tree: TrialTree | None = None
        else:
            self._fast = None
            self._tree = TrialTree(T, sigma2, (1 if trials is None else trials, cells), seed=seed)
        source = next(src for src in (self._blt, self._fast, self._tree) if src is not None)
        self._source: NoiseSource | TrialTree = source

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
        if self._blt is not None:
            return self._blt.variance_at(t)
        return self.variance

    def at(self, t: int, cells: NDArray[np.intp] | None = None) -> NDArray[np.float64]:
        """Noise at step ``t``: shape ``(R, cells)`` for all counters, else shaped like ``cells``.

        ``cells`` is an integer array ``(R, m)`` of counter indices (R = 1 without a trial
        axis; repeats are one counter). Without a trial axis only the counters named are
        queried with ``sparse`` (FastGaMe, O(m)); otherwise every counter is (O(cells) per step).
        """
        if self._blt is not None:
            return self._blt_at(t, cells)
        if self._fast is not None:
            if cells is None:
                return np.atleast_1d(np.asarray(self._fast.noise(t), dtype=np.float64))[None, :]
            return np.asarray(self._fast.noise(t, cells.reshape(-1)), dtype=np.float64).reshape(cells.shape)
        assert self._tree is not None
        full = self._tree.noise(t)
        return full if cells is None else np.take_along_axis(full, cells, axis=1)

    def _blt_at(self, t: int, cells: NDArray[np.intp] | None) -> NDArray[np.float64]:
        assert self._blt is not None
        R = 1 if self.trials is None else self.trials
        if cells is None:
            return np.asarray(self._blt.noise(t), dtype=np.float64).reshape(R, self.cells)
        flat = cells + (np.arange(cells.shape[0], dtype=np.intp) * self.cells)[:, None]  # trial-major
        return np.asarray(self._blt.noise(t, flat.reshape(-1)), dtype=np.float64).reshape(cells.shape)


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
        One sketch whose reads name a few counters, each counter at its own steps
        (FastGaMe); otherwise (the default) each read step reads every counter (TrialTree).
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
