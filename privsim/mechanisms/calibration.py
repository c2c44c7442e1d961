"""Calibration of the Gaussian binary tree: the paper's node variance and the exact one.

Over T = 2^h steps the tree releases y = A x + nu, nu = L eta, eta ~ N(0, s^2 I) on the
2T - 1 nodes, L the leaves-by-nodes path matrix (docs/architecture.md, mechanisms). One
update of l2 norm <= Delta at step tau moves the mean by Delta m_tau, m_tau the indicator
of t >= tau, so the release is exactly

    rho = Delta^2 / (2 s^2) * c_h,    c_h = max_tau m_tau^T (L L^T)^-1 m_tau

zCDP (the Gaussian mechanism's divergence, Pagh & Sejer Def. A.3, maximized over
neighbours). The paper (appendix B) bounds c_h by ||R e_tau||^2 = (h + 2)/4 for its
factorization L R = A, which gives s^2 = (h + 2) Delta^2 / (8 rho) (``calibration="paper"``).
The bound is loose: c_h / ((h + 2)/4) is 0.89 at h = 1 and 0.60 at h = 10. With
``calibration="exact"`` the node variance is s^2 = c_h Delta^2 / (2 rho): the same rho,
exactly, with less noise.

Computing c_h without a dense inverse
-------------------------------------
m^T (L L^T)^-1 m is the least squared norm of node values z whose path sums equal m.
For a subtree of height j and any target f on its leaves, Q_j(f + u 1) is a quadratic
A + 2 B u + a_j u^2 in a constant shift u, with a_j = Q_j(1) and
1/a_j = 1 + 1/(2 a_{j-1}), a_0 = 1. Minimizing over the root's value of a subtree whose
two children have (A_p, B_p) and (A_s, B_s) gives

    A = A_p + A_s - (B_p + B_s)^2 / (1 + 2a),   B = (B_p + B_s) / (1 + 2a),   a = a_{j-1}.

Along the path of tau's leaf the child off the path is all zeros (A_s = B_s = 0, when
tau's leaf is in the right child) or all ones (A_s = B_s = a, left child), and the leaf
itself has A = B = 1; so :func:`step_form` is O(h) for one tau. The maximum over the 2^h
leaves is a maximum over bit strings of a sum of terms that depend on the history only
through B in [0, 1]: a backward recursion over levels keeps the upper envelope of the
quadratics in B that are best for some B (:func:`tree_sensitivity2`), exact up to
rounding, O(h) envelopes of a handful of quadratics each; every T up to 2^62 takes
milliseconds. Tests compare it with dense linear algebra for T <= 2^12.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from privsim.errors import ParameterError
from privsim.mechanisms._checks import integer, positive
from privsim.mechanisms.noise_source import MAX_HEIGHT, tree_height

__all__ = [
    "CALIBRATIONS",
    "Calibration",
    "check_calibration",
    "step_form",
    "tree_sensitivity2",
    "tree_sigma2",
    "tree_rho",
]

Calibration = Literal["paper", "exact"]
#: The node-variance rules of the Gaussian tree.
CALIBRATIONS: tuple[str, ...] = ("paper", "exact")


def check_calibration(calibration: str) -> str:
    """Return ``calibration`` if it is ``"paper"`` or ``"exact"``, else raise.

    Parameters
    ----------
    calibration:
        The requested rule.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        Naming the field and the allowed values.

    Examples
    --------
    >>> check_calibration("exact")
    'exact'
    """
    if calibration not in CALIBRATIONS:
        raise ParameterError(f"calibration must be one of {', '.join(CALIBRATIONS)} (got {calibration!r})")
    return calibration


def _a(h: int) -> list[float]:
    """a_0..a_h: Q_j(1), the least squared node norm of a constant 1 on 2^j leaves."""
    a = [1.0]
    for _ in range(h):
        a.append(2 * a[-1] / (1 + 2 * a[-1]))  # 1/a_j = 1 + 1/(2 a_{j-1})
    return a


def step_form(T: int, tau: int) -> float:
    """m_tau^T (L L^T)^-1 m_tau for the tree over T steps, node variance 1, in O(log T).

    Parameters
    ----------
    T:
        Number of steps, a power of two in 1..2^62.
    tau:
        The step of the update, 1..T (m_tau is the indicator of t >= tau).

    Returns
    -------
    float
        Twice the zCDP divergence of an update at ``tau`` for s^2 = Delta = 1.

    Examples
    --------
    >>> round(step_form(2, 1), 12), round(step_form(2, 2), 12)     # both 2/3
    (0.666666666667, 0.666666666667)
    """
    h = tree_height(T)
    tau = integer("tau", tau, 1, 1 << h)
    A = B = 1.0  # the leaf of tau carries 1
    for j, aj in enumerate(_a(h)[:h]):  # aj = a_j: the sibling has height j
        s = aj if ((tau - 1) >> j) & 1 == 0 else 0.0  # the sibling is all ones or all zeros
        Bs = B + s
        A, B = A + s - Bs * Bs / (1 + 2 * aj), Bs / (1 + 2 * aj)
    return A


def _envelope(quads: NDArray[np.float64]) -> NDArray[np.float64]:
    """The quadratics (rows q2, q1, q0) that are maximal somewhere on B in [0, 1].

    On each interval between consecutive crossing points of two quadratics the order of
    all of them is fixed, so testing the crossings and the midpoints between them finds
    every quadratic on the upper envelope.
    """
    quads = np.unique(np.round(quads, 14), axis=0)
    if len(quads) == 1:
        return quads
    i, j = np.triu_indices(len(quads), 1)
    a, b, c = (quads[i] - quads[j]).T  # crossings: a B^2 + b B + c = 0
    disc = b * b - 4 * a * c
    with np.errstate(divide="ignore", invalid="ignore"):
        sq = np.sqrt(np.where(disc >= 0, disc, np.nan))
        quad_roots = np.concatenate([(-b + sq) / (2 * a), (-b - sq) / (2 * a)])
        lin_roots = np.where((a == 0) & (b != 0), -c / b, np.nan)
    roots = np.concatenate([quad_roots[np.isfinite(quad_roots)], lin_roots[np.isfinite(lin_roots)]])
    pts = np.unique(np.concatenate([[0.0, 1.0], roots[(roots > 0) & (roots < 1)]]))
    test = np.concatenate([pts, (pts[1:] + pts[:-1]) / 2])
    values = quads[:, :1] * test**2 + quads[:, 1:2] * test + quads[:, 2:]
    best = values.max(axis=0)
    keep = (values >= best - 1e-12 * np.maximum(1.0, np.abs(best))).any(axis=1)
    return quads[keep]


@cache
def tree_sensitivity2(h: int) -> float:
    """c_h = max_tau m_tau^T (L L^T)^-1 m_tau: the exact squared sensitivity of the tree.

    A backward recursion over levels (module docstring): V_h = 0 and
    V_{j-1}(B) = max over the sibling s in {0, a} of s - (B + s)^2/(1 + 2a) +
    V_j((B + s)/(1 + 2a)), a = a_{j-1}, each V_j the upper envelope of a few quadratics;
    c_h = 1 + V_0(1).

    Parameters
    ----------
    h:
        Tree height, 0..62.

    Returns
    -------
    float
        c_h (1 at h = 0; (h + 2)/4 is the paper's bound on it).

    Examples
    --------
    >>> round(tree_sensitivity2(1), 6), round(tree_sensitivity2(10), 6)
    (0.666667, 1.790783)
    """
    h = integer("h", h, 0, MAX_HEIGHT)
    V = np.zeros((1, 3))  # V_h(B) = 0
    for a in reversed(_a(h)[:h]):  # a = a_{j-1} for j = h..1
        k = 1.0 / (1 + 2 * a)
        new = []
        for s in (0.0, a):
            # g(B) = s - k u^2 + V(k u), u = B + s, for every quadratic V = (q2, q1, q0)
            g2 = V[:, 0] * k * k - k
            g1 = 2 * s * g2 + V[:, 1] * k
            g0 = s + g2 * s * s + V[:, 1] * k * s + V[:, 2]
            new.append(np.column_stack([g2, g1, g0]))
        V = _envelope(np.concatenate(new))
    return 1.0 + float((V[:, 0] + V[:, 1] + V[:, 2]).max())


def tree_sigma2(T: int, rho: float, sensitivity: float = 1.0, calibration: str = "paper") -> float:
    """Node variance that makes the Gaussian tree over T steps rho-zCDP.

    Parameters
    ----------
    T:
        Number of time steps, a power of two >= 2.
    rho:
        zCDP budget, > 0.
    sensitivity:
        l2 bound Delta on one update.
    calibration:
        ``"paper"``: s^2 = (h + 2) Delta^2 / (8 rho) (appendix B, an upper bound on the
        divergence); ``"exact"``: s^2 = c_h Delta^2 / (2 rho), the release exactly rho-zCDP.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If T is not a power of two >= 2, rho or Delta <= 0, or the calibration is unknown.

    Examples
    --------
    >>> tree_sigma2(1024, 0.5), round(tree_sigma2(1024, 0.5, calibration="exact"), 4)
    (3.0, 1.7908)
    """
    h = tree_height(T, minimum=2)
    rho = positive("rho", rho, scalar=True)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    if check_calibration(calibration) == "paper":
        return (h + 2) / (8.0 * rho) * sensitivity**2  # appendix B: rho = (h+2)/(8 s^2)
    return tree_sensitivity2(h) / (2.0 * rho) * sensitivity**2


def tree_rho(T: int, sigma2: float, sensitivity: float = 1.0) -> float:
    """The exact zCDP of the Gaussian tree with node variance ``sigma2`` (either calibration).

    Parameters
    ----------
    T:
        Number of time steps, a power of two.
    sigma2:
        Node variance s^2 > 0.
    sensitivity:
        l2 bound Delta on one update.

    Returns
    -------
    float
        c_h Delta^2 / (2 s^2).

    Examples
    --------
    >>> round(tree_rho(1024, 3.0), 4)    # the paper's s^2 for rho = 0.5 spends only 0.2985
    0.2985
    """
    h = tree_height(T)
    sigma2 = positive("sigma2", sigma2, scalar=True)
    sensitivity = positive("sensitivity", sensitivity, scalar=True)
    return tree_sensitivity2(h) * sensitivity**2 / (2.0 * sigma2)

