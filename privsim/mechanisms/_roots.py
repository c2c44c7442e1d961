"""A root-finder for claims: it returns the side of the bracket on which the guarantee holds.

Calibrations and accountants invert a monotone map (delta of epsilon, epsilon of sigma, ...)
with a bracketing root-finder. The root it returns is only within its tolerance of the
true one, and may sit on either side; a claimed epsilon just below the true one, where
delta(epsilon) is steep, can carry a delta well above the target (docs/architecture.md,
"claims are promises"). :func:`safe_root` checks the returned point and, if the guarantee
fails there, moves it towards the safe end of the bracket until it holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from scipy import optimize

__all__ = ["doubled_root", "safe_root", "smallest_epsilon"]


def safe_root(excess: Callable[[float], float], lo: float, hi: float, *, safe: Literal["lo", "hi"],
              xtol: float = 2e-12, rtol: float = 8.9e-16) -> float:
    """A root of a monotone ``excess`` in [lo, hi] at which ``excess <= 0`` (the guarantee holds).

    Parameters
    ----------
    excess:
        A monotone function; the guarantee holds at x iff excess(x) <= 0.
    lo, hi:
        The bracket, lo < hi; ``excess`` at the ``safe`` end must be <= 0.
    safe:
        ``"hi"`` if the guarantee holds above the root (e.g. delta(epsilon) - target,
        which decreases), ``"lo"`` if below it.
    xtol, rtol:
        Tolerances of the root (passed to :func:`scipy.optimize.brentq`).

    Returns
    -------
    float
        x within about the tolerance of the root, with excess(x) <= 0.

    Raises
    ------
    ValueError
        If excess at the safe end is > 0 (no safe side in the bracket).

    Examples
    --------
    >>> x = safe_root(lambda e: 1.0 - e, 0.0, 3.0, safe="hi")  # holds for e >= 1
    >>> x >= 1.0, abs(x - 1.0) < 1e-9
    (True, True)
    >>> safe_root(lambda e: e - 1.0, 0.0, 3.0, safe="lo") <= 1.0
    True
    """
    end, other = (hi, lo) if safe == "hi" else (lo, hi)
    if not excess(end) <= 0.0:
        raise ValueError(f"safe_root: the guarantee fails at the safe end {end!r} of the bracket")
    if excess(other) <= 0.0:
        return other  # the guarantee holds on the whole bracket
    x = float(optimize.brentq(excess, lo, hi, xtol=xtol, rtol=rtol))
    step = max(xtol, rtol * abs(x), math.ulp(x) if x else 5e-324)
    while not excess(x) <= 0.0:
        x = min(hi, x + step) if safe == "hi" else max(lo, x - step)
        if x == end:
            return end
        step *= 2.0
    return x


def doubled_root(excess: Callable[[float], float], lo: float, hi: float, *, safe: Literal["lo", "hi"],
                 keep_lo: bool = False, xtol: float = 2e-12, rtol: float = 8.9e-16) -> float:
    """:func:`safe_root` once ``hi`` has doubled (``lo`` following it unless ``keep_lo``) past the root."""
    sign = 1.0 if safe == "hi" else -1.0  # excess(lo) > 0 with safe="hi", < 0 with safe="lo"
    while sign * excess(hi) > 0.0:
        lo, hi = (lo if keep_lo else hi), 2.0 * hi
    return safe_root(excess, lo, hi, safe=safe, xtol=xtol, rtol=rtol)


def smallest_epsilon(delta_of: Callable[[float], float], delta: float, cap: float, *, beyond: float | None = None,
                     tol: float = 1e-10) -> float:
    """The smallest epsilon in [0, cap] with delta_of(epsilon) <= delta (delta_of decreases), else ``beyond`` (cap)."""
    if delta_of(0.0) <= delta:
        return 0.0
    if delta_of(cap) > delta:
        return cap if beyond is None else beyond
    return safe_root(lambda e: delta_of(e) - delta, 0.0, cap, safe="hi", xtol=tol, rtol=tol)
