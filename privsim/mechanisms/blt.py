"""Buffered linear Toeplitz (BLT) noise for continual counting, lazily sampled.

Dvijotham, McMahan, Pillutla, Steinke & Thakurta, "Efficient and Near-Optimal Noise
Generation for Streaming Differential Privacy" (FOCS 2024, arXiv:2404.16706), and
McMahan & Pillutla, "An Inversion Theorem for Buffered Linear Toeplitz (BLT) Matrices"
(2025). A factorization A = B C of the prefix-sum matrix A releases y = A x + B z,
z ~ N(0, s^2 I), which is the post-processing by B of C x + z: one update of l2 norm
Delta at step tau is rho-zCDP with rho = Delta^2 ||C e_tau||^2 / (2 s^2), exactly (B is
invertible), and the noise at step t has variance s^2 ||row t of B||^2.

The parameterization used here
------------------------------
C is lower-triangular Toeplitz with generating function

    C(x) = sum_j alpha_j / (1 - theta_j x),   alpha_j > 0, sum_j alpha_j = 1, 0 < theta_j < 1,

a BLT of degree d (c_0 = 1, c_i = sum_j (alpha_j theta_j) theta_j^(i-1): the paper's
BLT(theta, omega) with omega_j = alpha_j theta_j and no constant part), a rational
approximation of the square-root factor 1/sqrt(1 - x) (Fichtenberger, Henzinger and
Upadhyay's c_i = binom(2i, i)/4^i), which is such a sum over a continuum of theta
(the arcsine law's moments). Then B(x) = 1 / ((1 - x) C(x)) is again a sum of d geometric
sequences (the inversion theorem): C(x) has one real root between consecutive poles
1/theta_j, so B's decays are phi_0 = 1 and d - 1 values phi_j interlacing the theta_j,

    b_0 = 1,   b_i = sum_j beta_j phi_j^i  (i >= 1),   beta_j = -phi_j / ((1 - x_j) C'(x_j)),

x_j = 1/phi_j (residues; beta_0 = 1/C(1)). The d parameters theta and d - 1 free weights
alpha are chosen for each (T, d) by minimizing, with scipy's L-BFGS-B, the worst-case
variance times rho, (1/2) sum_{i<T} c_i^2 sum_{i<T} b_i^2, both sums in closed form
(geometric series); this is the "Opt-BLT" route of Dvijotham et al. (section 5), with
this parameterization of ours, not their published tables.

Lazy sampling
-------------
Per coordinate the state is X_l in R^d, X_j = sum_{s <= l} phi_j^(l-s) z_s, and the
release is n_t = z_t + sum_j beta_j (X_{t,j} - z_t) (b_0 = 1). Consecutive steps cost
O(d): X_t = phi X_{t-1} + z_t. A jump of k steps is exact in O(d^3), independent of k:

    X_t = phi^k X_l + phi W + z_t 1,   W ~ N(0, s^2 G(k - 1)),   G(n)_jk = sum_{i<n} (phi_j phi_k)^i,

W independent of z_t and X_l, G in closed form ((1 - p^n)/(1 - p)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from privsim.mechanisms._checks import integer, positive
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.noise_source import MAX_HEIGHT, NoiseSource, StateTable
from privsim.parties.rng import TrialRNG

__all__ = ["BLTParams", "BLTNoise", "optimize_blt", "write_blt_table", "sqrt_toeplitz_sums", "DEFAULT_BUFFERS"]

#: Buffers of the default BLT (within 0.1% of the square-root factorization at T = 2^10, 2% at 2^20).
DEFAULT_BUFFERS = 5
_MAX_T = 1 << MAX_HEIGHT


def _geom(log_p: NDArray[np.float64], n: float) -> NDArray[np.float64]:
    """sum_{i<n} p^i for p = exp(log_p) <= 1, without cancellation near p = 1."""
    return np.divide(np.expm1(n * log_p), np.expm1(log_p), out=np.full(log_p.shape, float(n)), where=log_p < 0)


def _geom_sum(log_p: NDArray[np.float64], T: int) -> NDArray[np.float64]:
    """sum_{n<T} sum_{i<n} p^i = (T - G(p, T)) / (1 - p), T(T-1)/2 at p = 1."""
    return np.divide(T - _geom(log_p, T), -np.expm1(log_p), out=np.full(log_p.shape, T * (T - 1) / 2.0),
                     where=log_p < 0)


def _pair(logs: NDArray[np.float64]) -> NDArray[np.float64]:
    return logs[:, None] + logs[None, :]


@dataclass(frozen=True)
class BLTParams:
    """A BLT factorization A = B C: C's decays and weights, and B's (derived).

    Attributes
    ----------
    q:
        1 - theta_j, C's decay complements (kept as complements for precision near 1).
    alpha:
        C's weights, positive, summing to 1.
    psi:
        1 - phi_j, B's decay complements; psi_0 = 0 (the decay-1 buffer).
    beta:
        B's weights: b_i = sum_j beta_j phi_j^i for i >= 1.

    Examples
    --------
    >>> p = BLTParams.from_c(np.array([0.5, 0.01]), np.array([0.6, 0.4]))
    >>> bool(abs(p.b(3).sum() - p.b(3)[0] - p.b(3)[1:].sum()) < 1e-12), p.b(1).tolist()
    (True, [1.0])
    """

    q: NDArray[np.float64]
    alpha: NDArray[np.float64]
    psi: NDArray[np.float64]
    beta: NDArray[np.float64]

    @classmethod
    def from_c(cls, q: NDArray[np.float64], alpha: NDArray[np.float64]) -> BLTParams:
        """B's buffers from C's, by the inversion theorem (module docstring)."""
        order = np.argsort(q)
        q, alpha = np.asarray(q, float)[order], np.asarray(alpha, float)[order]
        psi = np.concatenate([[0.0], _secular_roots(q, alpha)])
        theta, phi = 1.0 - q, 1.0 - psi
        beta = np.empty(psi.size)
        beta[0] = 1.0 / np.sum(alpha / q)  # residue at x = 1: 1/C(1)
        x = 1.0 / phi[1:]
        dC = np.sum(alpha * theta / (1.0 - theta * x[:, None]) ** 2, axis=1)  # C'(x_j)
        beta[1:] = -phi[1:] / ((1.0 - x) * dC)
        return cls(q, alpha, psi, beta)

    def c(self, n: int) -> NDArray[np.float64]:
        """C's first n Toeplitz coefficients (dense; for tests)."""
        return np.sum(self.alpha * np.exp(np.arange(n)[:, None] * np.log1p(-self.q)), axis=1)

    def b(self, n: int) -> NDArray[np.float64]:
        """B's first n Toeplitz coefficients (dense; for tests)."""
        out = np.sum(self.beta * np.exp(np.arange(n)[:, None] * np.log1p(-self.psi)), axis=1)
        out[0] = 1.0
        return out

    def sensitivity2(self, T: int) -> float:
        """max_tau ||C e_tau||^2 = sum_{i<T} c_i^2 (the first column is the longest; c_i > 0)."""
        return float(np.sum(np.outer(self.alpha, self.alpha) * _geom(_pair(np.log1p(-self.q)), T)))

    def stream2(self, T: int) -> float:
        """max over streams v with |v_s| <= 1 of ||C v||^2 = ||C 1||^2 (C >= 0), in O(T d).

        Every entry of C is positive, so the maximum of the convex ||C v||^2 over the box
        is at v = 1: sum_{t<=T} (sum_{i<t} c_i)^2, with sum_{i<t} c_i = sum_j alpha_j (1 - theta_j^t)/q_j.
        """
        t = np.arange(1, integer("T", T, 1, 1 << 26) + 1, dtype=np.float64)[:, None]
        partial = np.sum(self.alpha * -np.expm1(t * np.log1p(-self.q)) / self.q, axis=1)
        return float(np.sum(partial**2))

    def _w(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        log_phi = np.log1p(-self.psi)
        return self.beta * np.exp(log_phi), _pair(log_phi)  # b_i = sum (beta phi) phi^(i-1)

    def error2(self, t: int) -> float:
        """sum_{i<t} b_i^2: the variance at step t for s = 1."""
        w, lp = self._w()
        return 1.0 + float(np.sum(np.outer(w, w) * _geom(lp, t - 1)))

    def mean_error2(self, T: int) -> float:
        """(1/T) sum_{t<=T} sum_{i<t} b_i^2: the variance averaged over the T steps, s = 1."""
        w, lp = self._w()
        return 1.0 + float(np.sum(np.outer(w, w) * _geom_sum(lp, T))) / T


def _secular_roots(q: NDArray[np.float64], alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    """The d - 1 roots psi of sum_j alpha_j / (q_j - psi), one in each (q_j, q_{j+1}).

    C(1/phi) = sum alpha_j phi / (phi - theta_j) vanishes where this does (psi = 1 - phi);
    the function increases from -inf to +inf on each interval: Newton's method, kept inside
    a bracket that bisects (in log scale, the q span many decades) when a step leaves it.
    """
    lo, hi = q[:-1].copy(), q[1:].copy()
    psi = np.sqrt(lo * hi)
    for _ in range(60):
        diff = q - psi[:, None]
        f = np.sum(alpha / diff, axis=1)
        lo, hi = np.where(f < 0, psi, lo), np.where(f < 0, hi, psi)
        step = psi - f / np.sum(alpha / diff**2, axis=1)
        close = np.abs(step - psi) <= 1e-14 * psi  # converged: the bracket has shrunk onto psi
        new = np.where(close | ((step > lo) & (step < hi)), step, np.sqrt(lo * hi))
        if np.all(np.abs(new - psi) <= 1e-13 * psi):
            return new
        psi = new
    return psi


def _unpack(x: NDArray[np.float64], d: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    q = np.exp(-np.exp(x[:d]))  # in (0, 1)
    e = np.exp(x[d:] - x[d:].max())
    return q, e / e.sum()


def _loss(x: NDArray[np.float64], d: int, T: int) -> float:
    q, alpha = _unpack(x, d)
    if np.unique(q).size < d or q.min() <= 0.0:
        return 1e9
    p = BLTParams.from_c(q, alpha)
    value = p.sensitivity2(T) * p.error2(T)
    return math.log(value) if math.isfinite(value) and value > 0 else 1e9


def _start(T: int, d: int) -> NDArray[np.float64]:
    """Decays 1 - q, q log-spaced from 0.7 to 1/T, with the arcsine law's weights."""
    q0 = np.geomspace(0.7, 1.0 / T, d) if d > 1 else np.array([1.0 / math.sqrt(T)])
    a0 = np.sqrt(q0 / (1.0 - q0))
    return np.concatenate([np.log(-np.log(q0)), np.log(a0 / a0.sum())])


def _pack(params: BLTParams) -> NDArray[np.float64]:
    return np.concatenate([np.log(-np.log(params.q)), np.log(params.alpha)])


def _minimize(T: int, d: int, starts: list[NDArray[np.float64]]) -> BLTParams:
    method = "L-BFGS-B" if d > 1 else "Nelder-Mead"
    runs = [minimize(_loss, x0, args=(d, T), method=method) for x0 in starts]
    best = min(runs, key=lambda r: r.fun).x
    return BLTParams.from_c(*_unpack(best, d))


@cache
def optimize_blt(T: int, buffers: int = DEFAULT_BUFFERS) -> BLTParams:
    """BLT parameters minimizing the worst-case variance times rho over T steps.

    For T = 2^h and the default d the parameters come from the table in
    :mod:`privsim.mechanisms._blt_table`, which :func:`write_blt_table` produced by this
    same optimization (warm-started from 2^(h-1)); otherwise L-BFGS-B runs now on the
    closed-form objective (module docstring) from decays 1 - q with q log-spaced from 0.7
    to 1/T and the arcsine law's weights (a quadrature of 1/sqrt(1 - x)), a few seconds.
    The parameters only decide the noise's shape: the privacy of a source is computed
    from them exactly, whatever they are. Cached per (T, buffers).

    Parameters
    ----------
    T:
        Horizon, 2..2^62.
    buffers:
        d, the number of buffers (1..12).

    Returns
    -------
    BLTParams

    Examples
    --------
    >>> p = optimize_blt(1024)
    >>> round(p.sensitivity2(1024) * p.error2(1024) / 2, 2)      # square root: 5.35
    5.36
    """
    from privsim.mechanisms._blt_table import TABLE

    T = integer("T", T, 2, _MAX_T)
    d = integer("buffers", buffers, 1, 12)
    h = T.bit_length() - 1
    if T == 1 << h and (h, d) in TABLE:
        q, alpha = TABLE[(h, d)]
        return BLTParams.from_c(np.array(q), np.array(alpha))
    return _minimize(T, d, [_start(T, d)])


def write_blt_table(path: str, buffers: int = DEFAULT_BUFFERS, heights: range = range(1, MAX_HEIGHT + 1)) -> None:
    """Optimize the BLT for T = 2^h, h in ``heights``, and write the table module.

    Each height starts both from the default start and from the previous height's
    optimum, and keeps the better.

    Parameters
    ----------
    path:
        Where to write the Python module (``privsim/mechanisms/_blt_table.py``).
    buffers:
        d.
    heights:
        The exponents h.

    Examples
    --------
    >>> import tempfile, importlib.util
    >>> path = tempfile.mkstemp(suffix=".py")[1]
    >>> write_blt_table(path, buffers=2, heights=range(1, 3))
    >>> spec = importlib.util.spec_from_file_location("table", path)
    >>> table = importlib.util.module_from_spec(spec); spec.loader.exec_module(table)
    >>> sorted(table.TABLE)
    [(1, 2), (2, 2)]
    >>> import os; os.remove(path)
    """
    table, previous = {}, None
    for h in heights:
        starts = [_start(1 << h, buffers)] + ([_pack(previous)] if previous is not None else [])
        previous = _minimize(1 << h, buffers, starts)
        table[(h, buffers)] = (tuple(map(float, previous.q)), tuple(map(float, previous.alpha)))
    with open(path, "w") as out:
        out.write(_format_table(table))


def _format_table(table: dict[tuple[int, int], tuple[tuple[float, ...], tuple[float, ...]]]) -> str:
    """The table module's source: one key per block, at most three numbers per line."""
    def numbers(values: tuple[float, ...]) -> str:
        rows = [", ".join(repr(v) for v in values[i : i + 3]) for i in range(0, len(values), 3)]
        return "(\n" + "".join(f"            {row},\n" for row in rows) + "        )"

    body = "".join(f"    {key!r}: (\n        {numbers(q)},\n        {numbers(a)},\n    ),\n"
                   for key, (q, a) in table.items())
    return ('"""BLT parameters (q = 1 - theta, alpha) per (log2 T, buffers), written by\n'
            'privsim.mechanisms.blt.write_blt_table; regenerate rather than edit."""\n\n'
            "from __future__ import annotations\n\n__all__ = [\"TABLE\"]\n\n"
            "TABLE: dict[tuple[int, int], tuple[tuple[float, ...], tuple[float, ...]]] = {\n"
            + body + "}\n")


def sqrt_toeplitz_sums(T: int) -> tuple[float, float]:
    """(sum_{i<T} r_i^2, sum_{i<T} i r_i^2) for the square-root factor r_i = binom(2i, i)/4^i.

    Exact sums up to 2^20 terms, then the asymptotic expansion
    r_i^2 = (1/(pi i)) (1 - 1/(4i) + 1/(32 i^2) + O(i^-3)) for the rest (error < 1e-18).
    The square-root factorization A = R R has worst-case variance times rho
    (1/2) (sum r_i^2)^2 (Fichtenberger, Henzinger & Upadhyay 2023).

    Examples
    --------
    >>> round(sqrt_toeplitz_sums(1024)[0] ** 2 / 2, 3)
    5.355
    """
    from scipy.special import digamma, polygamma

    N = min(T, 1 << 20)
    i = np.arange(1, N)
    r2 = np.concatenate([[1.0], np.cumprod(1.0 - 1.0 / (2.0 * i))]) ** 2  # r_i = r_{i-1} (1 - 1/(2i))
    s0, s1 = float(r2.sum()), float((np.arange(N) * r2).sum())
    if T > N:
        h1 = digamma(T) - digamma(N)                   # sum_{N <= i < T} 1/i
        h2 = polygamma(1, N) - polygamma(1, T)         # sum 1/i^2
        h3 = (polygamma(2, T) - polygamma(2, N)) / 2   # sum 1/i^3
        s0 += (h1 - h2 / 4 + h3 / 32) / math.pi
        s1 += ((T - N) - h1 / 4 + h2 / 32) / math.pi
    return s0, s1


class BLTNoise(NoiseSource):
    """BLT noise n = B z for continual counting, any queried steps, O(d) per step.

    The FastGaMe interface (``noise(t, coords)``, forward-only per coordinate, lazy
    coordinates); the joint law of the values is exactly that of the dense B z,
    z ~ N(0, sigma2 I) (module docstring). A query that skips steps draws the buffers'
    state after the jump from its Gaussian law in closed form, O(d^3) whatever the gap.

    Parameters
    ----------
    T:
        Horizon, 1..2^62 (any integer).
    sigma2:
        Variance s^2 of z.
    k:
        Number of independent coordinates.
    seed:
        As for :class:`~privsim.mechanisms.FastGaMe`.
    buffers:
        d, when ``params`` is None: the parameters are :func:`optimize_blt` (T, d).
    params:
        A :class:`BLTParams` to use instead.

    Examples
    --------
    >>> blt = BLTNoise(1024, 1.0, k=3, seed=1)
    >>> blt.noise(5, [0, 2]).shape, round(blt.variance_at(1), 3), round(blt.rho(), 3)
    ((2,), 1.0, 1.636)
    """

    kind = "blt"

    def __init__(self, T: int, sigma2: float, k: int = 1, seed: SeedLike | TrialRNG = None, *,
                 buffers: int = DEFAULT_BUFFERS, params: BLTParams | None = None) -> None:
        super().__init__(integer("T", T, 1, _MAX_T), k, seed)
        self.sigma2 = positive("sigma2", sigma2, scalar=True)
        self._sigma = math.sqrt(self.sigma2)
        self.params = params if params is not None else optimize_blt(max(self.T, 2), buffers)
        self.d = self.params.psi.size
        self._log_phi = np.log1p(-self.params.psi)
        self._beta = self.params.beta
        self._phi_sigma = np.exp(self._log_phi) * self._sigma
        self._state = StateTable(self.k, self.d + 1)  # X_1..X_d, then the last value
        self._factors: dict[int, NDArray[np.float64]] = {}

    def __repr__(self) -> str:
        return f"BLTNoise(T={self.T}, sigma2={self.sigma2!r}, k={self.k}, buffers={self.d})"

    @property
    def n_materialized(self) -> int:
        """Number of coordinates that hold state."""
        return self._state.size

    @property
    def variance(self) -> float:
        """The largest variance of a released value: at t = T, s^2 sum_{i<T} b_i^2."""
        return self.variance_at(self.T)

    def variance_at(self, t: int) -> float:
        """Variance at step t, s^2 sum_{i<t} b_i^2 (grows with t).

        Examples
        --------
        >>> BLTNoise(16, 2.0, buffers=2).variance_at(1)
        2.0
        """
        return self.sigma2 * self.params.error2(integer("t", t, 1, self.T))

    @property
    def mean_variance(self) -> float:
        """The variance averaged over the steps 1..T."""
        return self.sigma2 * self.params.mean_error2(self.T)

    def rho(self, sensitivity: float = 1.0) -> float:
        """Exact zCDP for updates of l2 norm <= ``sensitivity``: Delta^2 sum_{i<T} c_i^2 / (2 s^2)."""
        sensitivity = positive("sensitivity", sensitivity, scalar=True)
        return self.params.sensitivity2(self.T) * sensitivity**2 / (2.0 * self.sigma2)

    def _factor(self, n: int) -> NDArray[np.float64]:
        """F with F F^T = G(n), from the correlation matrix (well scaled even when n ~ 2^62)."""
        F = self._factors.get(n)
        if F is None:
            G = _geom(_pair(self._log_phi), n)  # p = phi_i phi_j = 1 only at [0, 0] (psi_0 = 0)
            sd = np.sqrt(G.diagonal())
            S = G / np.outer(sd, sd)
            try:
                F = sd[:, None] * np.linalg.cholesky(S)
            except np.linalg.LinAlgError:  # singular (e.g. n = 1: all buffers equal)
                vals, vecs = np.linalg.eigh(S)
                F = sd[:, None] * vecs * np.sqrt(np.clip(vals, 0.0, None))
            if len(self._factors) > 256:
                self._factors.clear()
            self._factors[n] = F
        return F

    def _noise_one(self, coord: int, t: int) -> float:
        state, d = self._state, self.d
        slot = state.slot(coord)
        row = state.data[slot]
        last = state.check_forward(coord, slot, t)
        if last != t:  # the steps of _noise_many for one coordinate, in the same draw order
            gap = t - last
            X = row[:d] * np.exp(gap * self._log_phi)
            z = self._sigma * self._normal1()
            if gap > 1:
                X += self._phi_sigma * (self._factor(gap - 1) @ self._draws.normals(1, d)[0])
            row[d] = z + X @ self._beta
            row[:d] = X + z
            state.last[slot] = t
        return float(row[d])

    def _noise_many(self, coords: NDArray[np.int64], t: int) -> NDArray[np.float64]:
        state, d = self._state, self.d
        slots = state.slots(coords, t)
        last = state.last[slots]
        move = np.flatnonzero(last != t)
        if move.size:
            rows = slots[move]
            gap = t - last[move]  # k >= 1 steps; X_0 = 0 for a fresh coordinate
            X = state.data[rows, :d] * np.exp(gap[:, None] * self._log_phi)
            z = self._sigma * self._normals(move.size)
            for n in np.unique(gap[gap > 1]).tolist():  # the k - 1 skipped steps, one law per gap
                sel = np.flatnonzero(gap == n)
                X[sel] += self._phi_sigma * (self._draws.normals(sel.size, d) @ self._factor(n - 1).T)
            state.data[rows, d] = z + X @ self._beta  # n_t = z_t + beta . (X_t - z_t 1)
            state.data[rows, :d] = X + z[:, None]
            state.last[rows] = t
        return state.data[slots, d]
