"""Typed privacy claims: pure epsilon, (epsilon, delta), rho-zCDP, or exactly Gaussian.

A claim names its measure, as an OpenDP measurement names its output measure, so that a
verdict compares like with like: :meth:`Privacy.epsilon_at` is the epsilon the claim
implies at any delta (or ``None`` where it implies nothing), and the audit compares its
lower bound, computed at one delta, with that value at the same delta
(docs/architecture.md, "Claims and verdicts"). Every conversion between measures lives
here; the formulas themselves are in :mod:`privsim.mechanisms.accounting`.

What each measure implies at a delta (all tight for the measure, that is, attained by
some mechanism satisfying it):

- **pure** epsilon_0: the privacy region of every epsilon_0-DP mechanism lies inside that
  of binary randomized response (Kairouz, Oh & Viswanath, "The Composition Theorem for
  Differential Privacy", ICML 2015, Theorem 2.4), so delta(eps) <= (e^eps_0 - e^eps) /
  (1 + e^eps_0) for 0 <= eps <= eps_0, and eps(delta) = ln(e^eps_0 - delta (1 + e^eps_0)).
- **approx** (epsilon_0, delta_0): dominated by the canonical (eps_0, delta_0) mechanism of
  the same theorem: delta(eps) <= delta_0 + (1 - delta_0)(e^eps_0 - e^eps)/(1 + e^eps_0).
  Below delta_0 it implies nothing.
- **zcdp** rho: the conversion of Canonne, Kamath & Steinke (NeurIPS 2020, Prop. 12),
  valid for every rho-zCDP mechanism; at delta = 0 it implies nothing finite.
- **gaussian** mu: exactly the Gaussian mechanism with sensitivity / sigma = mu, whose
  delta(eps) is Balle & Wang's (ICML 2018, Theorem 8); at delta = 0 nothing finite.

Examples
--------
>>> Privacy(1.0)
Privacy(epsilon=1.0, delta=0.0)
>>> Privacy(1.0).measure, round(Privacy(1.0).epsilon_at(0.1), 4)
('pure', 0.8529)
>>> Privacy(1.2, 0.1).epsilon_at(0.0) is None
True
>>> c = Privacy.gaussian(1.0, delta=1e-5)
>>> c.measure, round(c.epsilon, 4), round(c.rho, 3)
('gaussian', 4.3772, 0.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from privsim.errors import ParameterError
from privsim.mechanisms._lazy import on_use

__all__ = ["DEFAULT_DELTA", "MEASURES", "Privacy", "as_claim", "judge"]

#: The delta at which a zCDP or Gaussian claim is reported (and audited, when the audit is
#: given no delta) unless the protocol names one.
DEFAULT_DELTA = 1e-6
#: The measures a claim can have.
MEASURES = ("pure", "approx", "zcdp", "gaussian")


# Imported on first use: the formulas need scipy, which a command that only parses its
# arguments (or refuses them) should not pay for at start-up.
_accounting = on_use("privsim.mechanisms.accounting")
_roots = on_use("privsim.mechanisms._roots")


def _check(name: str, value: Any, *, lo: float = 0.0, hi: float = math.inf, open_lo: bool = False,
           open_hi: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"claim: {name} must be a number (got {value!r})") from None
    if not math.isfinite(v) or v < lo or (open_lo and v == lo) or v > hi or (open_hi and v == hi):
        left, right = ("(" if open_lo else "["), (")" if open_hi else "]")
        raise ParameterError(f"claim: {name} must be in {left}{lo:g}, {hi:g}{right} (got {value!r})")
    return v


@dataclass(frozen=True)
class Privacy:
    """A privacy claim for one coalition's view, with its measure.

    ``Privacy(epsilon)`` is pure epsilon-DP and ``Privacy(epsilon, delta)`` is
    (epsilon, delta)-DP, as in every protocol written so far; :meth:`zcdp` and
    :meth:`gaussian` build the other two measures. ``epsilon`` and ``delta`` are always
    set: for a zCDP or Gaussian claim they are the claim's value at its reference delta
    (:data:`DEFAULT_DELTA` unless given), so code that reads only ``epsilon`` still reads
    a true statement.

    Attributes
    ----------
    epsilon, delta:
        The claim at its reference delta (for pure and approx claims: the claim itself).
    rho:
        The zCDP parameter (zcdp claims; also set for gaussian claims, which are
        mu^2/2-zCDP), else ``None``.
    mu:
        Sensitivity over noise standard deviation (gaussian claims), else ``None``.
    paper:
        The paper's own claim for the same view where it differs from this one, else ``None``.
    assumption:
        The assumption under which the claim holds, in one sentence ("" for none).

    Examples
    --------
    >>> Privacy.zcdp(0.5).measure, round(Privacy.zcdp(0.5).epsilon, 4)
    ('zcdp', 5.2215)
    >>> Privacy(1.0, 1e-6).with_paper(Privacy(1.0)).paper
    Privacy(epsilon=1.0, delta=0.0)
    """

    epsilon: float
    delta: float = 0.0
    rho: float | None = field(default=None, compare=False, repr=False)
    mu: float | None = field(default=None, compare=False, repr=False)
    paper: Privacy | None = field(default=None, compare=False, repr=False)
    assumption: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check("epsilon", self.epsilon))
        object.__setattr__(self, "delta", _check("delta", self.delta, hi=1.0, open_hi=True))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def zcdp(cls, rho: float, delta: float | None = None) -> Privacy:
        """A rho-zCDP claim, reported at ``delta`` (default :data:`DEFAULT_DELTA`).

        >>> round(Privacy.zcdp(0.01, delta=1e-6).epsilon, 4)
        0.6217
        """
        rho = _check("rho", rho, open_lo=True)
        ref = DEFAULT_DELTA if delta is None else _check("delta", delta, open_lo=True, hi=1.0, open_hi=True)
        return cls(_accounting.zcdp_to_approx_dp_tight(rho, ref), ref, rho=rho)

    @classmethod
    def gaussian(cls, mu: float, delta: float | None = None) -> Privacy:
        """Exactly the Gaussian mechanism with ``mu`` = sensitivity / sigma.

        ``mu = 0`` (no sensitivity left, e.g. a view independent of the neighbour) is
        allowed and means 0-DP.

        >>> round(Privacy.gaussian(0.5, delta=1e-6).epsilon, 4)
        2.2541
        """
        mu = _check("mu", mu)
        ref = DEFAULT_DELTA if delta is None else _check("delta", delta, open_lo=True, hi=1.0, open_hi=True)
        if mu == 0.0:
            return cls(0.0, 0.0)
        return cls(_accounting.gaussian_epsilon(1.0 / mu, ref), ref, rho=mu * mu / 2.0, mu=mu)

    def with_paper(self, paper: Privacy | None) -> Privacy:
        """This claim with the paper's own claim attached, kept only where its epsilon at the
        same delta differs (the paper states one point of what privsim claims as a curve)."""
        same = paper is None or (paper.delta == self.delta and math.isclose(paper.epsilon, self.epsilon,
                                                                           rel_tol=1e-9, abs_tol=1e-12))
        return replace(self, paper=None if same else paper)

    def assuming(self, assumption: str) -> Privacy:
        """This claim, holding only under ``assumption`` (one sentence, shown with it)."""
        return replace(self, assumption=str(assumption))

    # ------------------------------------------------------------------ measure
    @property
    def measure(self) -> str:
        """``"pure"``, ``"approx"``, ``"zcdp"`` or ``"gaussian"``."""
        if self.mu is not None:
            return "gaussian"
        if self.rho is not None:
            return "zcdp"
        return "pure" if self.delta == 0.0 else "approx"

    def epsilon_at(self, delta: float) -> float | None:
        """The smallest epsilon this claim implies at ``delta``, or ``None`` if it implies none.

        >>> Privacy(1.0).epsilon_at(0.0), Privacy(1.0, 1e-3).epsilon_at(1e-3)
        (1.0, 1.0)
        >>> Privacy(1.0, 1e-3).epsilon_at(1e-4) is None, Privacy.zcdp(0.1).epsilon_at(0.0) is None
        (True, True)
        """
        delta = _check("delta", delta, hi=1.0)
        measure = self.measure
        if measure in ("pure", "approx"):
            if delta < self.delta:
                return None
            # [KOV15] Thm 2.4: the canonical (eps0, delta0) mechanism dominates the claim.
            e0 = math.exp(self.epsilon)
            inner = e0 - (delta - self.delta) * (1.0 + e0) / (1.0 - self.delta)
            return math.log(inner) if inner > 1.0 else 0.0
        if delta == 0.0:
            return None
        if delta >= 1.0:
            return 0.0
        if measure == "gaussian":
            return _accounting.gaussian_epsilon(1.0 / self.mu, delta)  # [BW18] Thm 8, exact
        return _accounting.zcdp_to_approx_dp_tight(self.rho, delta)  # [CKS20] Prop. 12

    def delta_at(self, epsilon: float) -> float:
        """The smallest delta at which this claim implies ``epsilon``.

        >>> Privacy(1.0).delta_at(1.0), round(Privacy(1.0).delta_at(0.0), 4)
        (0.0, 0.4621)
        >>> round(Privacy.gaussian(1.0).delta_at(1.0), 4)
        0.1269
        >>> Privacy.zcdp(1e-6).delta_at(0.1)  # below 1e-323: the smallest positive float, a safe upper bound
        5e-324
        """
        epsilon = _check("epsilon", epsilon)
        measure = self.measure
        if measure in ("pure", "approx"):
            e0 = math.exp(self.epsilon)
            return self.delta + (1.0 - self.delta) * max(0.0, e0 - math.exp(epsilon)) / (1.0 + e0)
        if measure == "gaussian":
            return _accounting.gaussian_delta(1.0 / self.mu, epsilon)
        # zCDP: epsilon_at is decreasing in delta; invert it on a log scale.
        if self.epsilon_at(1.0 - 1e-15) >= epsilon:
            return 1.0
        f = lambda log_d: self.epsilon_at(math.exp(log_d)) - epsilon  # noqa: E731
        lo, tiny = -1.0, math.ulp(0.0)
        while f(lo) <= 0.0:
            if lo <= math.log(tiny):  # the true delta is below every positive float: round it up to one
                return tiny
            lo = max(2.0 * lo, math.log(tiny))
        # the claimed delta must not sit below the true one: the safe side is the larger delta
        return math.exp(_roots.safe_root(f, lo, math.log1p(-1e-15), safe="hi", xtol=1e-12))

    def to_dict(self) -> dict[str, Any]:
        """The claim for JSON: measure, its values, and the assumption and paper claim if any.

        >>> Privacy.zcdp(0.5, delta=1e-6).to_dict()["measure"]
        'zcdp'
        """
        optional = {"rho": self.rho, "mu": self.mu, "assumption": self.assumption or None}  # kept where set
        return {"measure": self.measure, "epsilon": self.epsilon, "delta": self.delta,
                **{k: v for k, v in optional.items() if v is not None}}

    def describe(self) -> str:
        """One short line, e.g. ``(1, 1e-06)-DP`` or ``0.01-zCDP``.

        >>> Privacy(1.0).describe(), Privacy.zcdp(0.01).describe()
        ('1-DP', '0.01-zCDP')
        """
        measure = self.measure
        if measure == "pure":
            return f"{self.epsilon:.4g}-DP"
        if measure == "approx":
            return f"({self.epsilon:.4g}, {self.delta:.3g})-DP"
        if measure == "zcdp":
            return f"{self.rho:.4g}-zCDP"
        return f"Gaussian, mu = {self.mu:.4g} (({self.epsilon:.4g}, {self.delta:.3g})-DP)"


def as_claim(value: Any, where: str = "privacy()") -> Privacy | None:
    """Check what a protocol's ``privacy`` returned: a :class:`Privacy` or ``None``.

    Raises :class:`~privsim.errors.ParameterError` naming ``where`` for anything else (a
    bare float is the usual slip).

    >>> as_claim(None) is None, as_claim(Privacy(1.0)).epsilon
    (True, 1.0)
    >>> as_claim(1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.errors.ParameterError: privacy() must return a Privacy claim or None (got 1.0); ...
    """
    if value is None or isinstance(value, Privacy):
        return value
    hint = f"; write Privacy({value!r})" if isinstance(value, (int, float)) else ""
    raise ParameterError(f"{where} must return a Privacy claim or None (got {value!r}){hint}")


def judge(claim: Privacy | None, epsilon_lower: float, delta: float, *, own: bool = True) -> tuple[bool | None, str]:
    """Whether a lower bound at ``delta`` contradicts ``claim``, and why, in one sentence.

    ``violated`` compares like with like: the bound, computed at ``delta``, against the
    epsilon the claim implies at that same delta. ``None`` when the claim implies nothing
    there (an (epsilon, delta_0) claim audited at delta < delta_0, or a zCDP claim at
    delta = 0); ``False`` with no claim at all. ``own=False`` says the claim is not the
    coalition's own but the one towards ``public`` it is judged against.

    >>> judge(Privacy(1.2, 0.1), 0.9, 0.1)[0], judge(Privacy(1.2, 0.1), 0.9, 0.0)[0] is None
    (False, True)
    >>> judge(Privacy(1.0, 1e-5), 1.2, 1e-5)
    (True, 'epsilon_lower 1.2 > 1, what (1, 1e-05)-DP implies at delta = 1e-05')
    """
    if claim is None:
        return False, "the protocol claims nothing for this coalition or towards public: nothing to violate"
    whose = "" if own else "no claim for this coalition; judged against the claim towards public: "
    implied = claim.epsilon_at(delta)
    if implied is None:
        floor = f"delta >= {claim.delta:g}" if claim.delta else "delta > 0"
        return None, f"{whose}{claim.describe()} implies no epsilon at delta = {delta:g} (audit at {floor})"
    violated = epsilon_lower > implied
    sign = ">" if violated else "<="
    return violated, (f"{whose}epsilon_lower {epsilon_lower:.4g} {sign} {implied:.4g}, "
                      f"what {claim.describe()} implies at delta = {delta:g}")
