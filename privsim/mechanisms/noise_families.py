"""Noise families for distributed sums: sampler, share variance, tail bound and privacy map in one object.

A distributed sum (:mod:`privsim.protocols.secure_sum`, :mod:`privsim.protocols.ck_sum`)
lets every party add one *share* of the noise; with m = n - t shares making the full
central noise, any n - t honest parties already hold it. A :class:`NoiseFamily` answers
every question such a protocol asks of its noise, for any m:

- :meth:`~NoiseFamily.share`: one party's share (a party's trial rng or a Generator);
- :meth:`~NoiseFamily.shares_variance`: the variance of a sum of ``count`` shares;
- :meth:`~NoiseFamily.tail_bound`: B with Pr[|sum of count shares| > B] <= 2^-f, from
  which the protocol chooses its modulus (the sum wraps with probability <= 2^-f);
- :meth:`~NoiseFamily.privacy`: the claim towards a view that holds the input sum plus
  the sum of ``honest`` shares it does not know (the privacy map; where claims are made
  and checked: docs/architecture.md, "Claims and verdicts"), with the family's
  blanket claim (that of exactly m shares: a coalition of t) as ``paper`` where they
  differ. Extra honest shares are independent noise on top of m of them, so any claim
  for m shares also holds for more (post-processing).

``integer`` says whether shares are integers (they then live in Z_q with no rounding);
real shares travel in fixed point. :func:`noise_family` builds a family from a
protocol's parameters; :data:`FAMILIES` names them (room for more: subclass
:class:`NoiseFamily` and add a builder).

Examples
--------
>>> fam = noise_family("gaussian", sensitivity=1, epsilon=1.0, delta=1e-6, rho=0.5)
>>> fam.shares_variance(m=4, count=8)    # sigma2 = 1, two units of noise
2.0
>>> round(fam.privacy(honest=4, m=4).mu, 6), round(fam.privacy(honest=8, m=4).mu, 6)
(1.0, 0.707107)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, ClassVar

import numpy as np

from privsim.errors import ParameterError
from privsim.mechanisms import _checks, noise
from privsim.mechanisms._lazy import on_use
from privsim.privacy import Privacy

# imported on first use: they bring scipy.stats and scipy.optimize, which a party drawing
# Laplace or Gaussian shares never needs
integer_noise = on_use("privsim.mechanisms.integer_noise")
exact_integer = on_use("privsim.mechanisms.exact_integer")
accounting = on_use("privsim.mechanisms.accounting")

__all__ = [
    "FAMILIES",
    "DiscreteGaussianShares",
    "DiscreteLaplaceShares",
    "GaussianShares",
    "LaplaceShares",
    "NoNoise",
    "NoiseFamily",
    "SkellamShares",
    "noise_family",
]

#: The assumption under which the claims of real-valued (fixed-point) families hold.
REAL_VALUED = ("the real-valued mechanism: the fixed-point rounding of each share is not accounted for "
               "(floating-point noise is not exactly DP, Mironov 2012)")


def _honest(honest: int, m: int) -> bool:
    """Whether a view facing ``honest`` unknown shares still holds a full unit of noise (m shares)."""
    return honest >= m >= 1


class NoiseFamily:
    """The interface of a noise family (see the module docstring); subclasses are frozen dataclasses.

    Class attributes
    ----------------
    name:
        The ``noise=`` value that selects it.
    integer:
        Whether shares are integers (no fixed point needed).

    Examples
    --------
    >>> NoNoise().privacy(honest=3, m=2) is None
    True
    """

    name: ClassVar[str] = ""
    integer: ClassVar[bool] = True

    def share(self, rng: Any, m: int, size: Any = ()) -> np.ndarray:
        """One party's share when m shares make the central noise (trial axis first with a trial rng)."""
        raise NotImplementedError

    def shares_variance(self, m: int, count: int) -> float:
        """The exact variance of the sum of ``count`` shares."""
        raise NotImplementedError

    def tail_bound(self, m: int, count: int, failure_log2: int) -> float:
        """B with Pr[|sum of count shares| > B] <= 2^-failure_log2 (in noise units, no fixed point)."""
        raise NotImplementedError

    def privacy(self, honest: int, m: int) -> Privacy | None:
        """The claim towards a view of the sum plus ``honest`` unknown shares (None: no claim)."""
        raise NotImplementedError


@dataclass(frozen=True)
class NoNoise(NoiseFamily):
    """No noise: the exact sum, no claim for any view that sees it.

    >>> NoNoise().share(np.random.default_rng(0), 3).item(), NoNoise().tail_bound(3, 5, 40)
    (0, 0.0)
    """

    name: ClassVar[str] = "none"

    def share(self, rng: Any, m: int, size: Any = ()) -> np.ndarray:
        return np.zeros(size, dtype=np.int64)  # draws nothing: the parties' streams are untouched

    def shares_variance(self, m: int, count: int) -> float:
        return 0.0

    def tail_bound(self, m: int, count: int, failure_log2: int) -> float:
        return 0.0

    def privacy(self, honest: int, m: int) -> Privacy | None:
        return None


@dataclass(frozen=True)
class LaplaceShares(NoiseFamily):
    """Gamma(1/m, b) - Gamma(1/m, b) per party; m shares are exactly Lap(b), epsilon-DP for b = D/epsilon.

    >>> LaplaceShares(b=1.0, epsilon=1.0).shares_variance(8, 10)
    2.5
    """

    b: float
    epsilon: float
    name: ClassVar[str] = "laplace"
    integer: ClassVar[bool] = False
    # the law's functions in :mod:`~privsim.mechanisms.noise` (DiscreteLaplaceShares names its own)
    _share = staticmethod(noise.laplace_share)
    _shares_variance = staticmethod(noise.laplace_shares_variance)
    _tail_bound = staticmethod(noise.laplace_tail_bound)

    def share(self, rng: Any, m: int, size: Any = ()) -> np.ndarray:
        return self._share(rng, self.b, m, size=size)

    def shares_variance(self, m: int, count: int) -> float:
        return float(self._shares_variance(self.b, m, count))

    def tail_bound(self, m: int, count: int, failure_log2: int) -> float:
        return float(self._tail_bound(self.b, m, count, failure_log2))

    def privacy(self, honest: int, m: int) -> Privacy | None:
        # Lap(b) (DLap(b)) from any m honest shares; more shares are post-processing (infinite divisibility).
        assumption = "" if self.integer else REAL_VALUED  # integer shares: exactly epsilon-DP on Z
        return Privacy(self.epsilon, assumption=assumption) if _honest(honest, m) else None


@dataclass(frozen=True)
class DiscreteLaplaceShares(LaplaceShares):
    """Polya(1/m) - Polya(1/m) per party; m shares are exactly DLap(b): epsilon-DP on Z for b = D/epsilon.

    >>> DiscreteLaplaceShares(b=1.0, epsilon=1.0).tail_bound(1, 1, 40)
    28.0
    """

    name: ClassVar[str] = "discrete-laplace"
    integer: ClassVar[bool] = True
    _share = staticmethod(noise.discrete_laplace_share)
    _shares_variance = staticmethod(noise.discrete_laplace_shares_variance)
    _tail_bound = staticmethod(noise.discrete_laplace_tail_bound)


@dataclass(frozen=True)
class GaussianShares(NoiseFamily):
    """N(0, sigma2/m) per party: a view facing k honest shares holds exactly N(0, sigma2 k/m).

    Its claim is therefore exactly the Gaussian mechanism with mu = D / sqrt(sigma2 k/m)
    (Balle & Wang 2018), reported at ``delta``; the blanket claim of the calibration
    (rho-zCDP, or (epsilon, delta) by the analytic Gaussian) rides along as ``paper``.

    >>> g = GaussianShares(sigma2=4.0, sensitivity=1.0, delta=1e-6, blanket=Privacy.zcdp(0.125))
    >>> g.privacy(honest=3, m=3).mu, g.privacy(honest=12, m=3).mu, g.privacy(2, 3) is None
    (0.5, 0.25, True)
    """

    sigma2: float
    sensitivity: float
    delta: float
    blanket: Privacy
    name: ClassVar[str] = "gaussian"
    integer: ClassVar[bool] = False

    def share(self, rng: Any, m: int, size: Any = ()) -> np.ndarray:
        return noise.gaussian_share(rng, self.sigma2, m, size=size)

    def shares_variance(self, m: int, count: int) -> float:
        return float(noise.gaussian_shares_variance(self.sigma2, m, count))

    def tail_bound(self, m: int, count: int, failure_log2: int) -> float:
        return noise.gaussian_tail_bound(self.sigma2, m, count, failure_log2)

    def privacy(self, honest: int, m: int) -> Privacy | None:
        if not _honest(honest, m):
            return None
        residual_sd = math.sqrt(self.shares_variance(m, honest))  # the honest shares' sum, exactly
        claim = Privacy.gaussian(self.sensitivity / residual_sd, delta=self.delta)
        return claim.with_paper(self.blanket).assuming(REAL_VALUED)


def _integral(sensitivity: float) -> int | None:
    """The sensitivity as an integer D >= 1, or None (the exact laws need an integer shift)."""
    d = round(sensitivity)
    return int(d) if d >= 1 and math.isclose(d, sensitivity, rel_tol=0, abs_tol=1e-9) else None


def _exact_or_published(law: Any, sensitivity: float, published: Privacy | None, delta: float) -> Privacy:
    """The exact (epsilon, delta) claim of ``law`` with the published bound beside it; the published one
    if the exact computation (its tail and round-off bounds added) came out above it."""
    exact = exact_integer.exact_epsilon(law, _integral(sensitivity), delta)
    if published is not None and published.epsilon_at(delta) is not None and published.epsilon_at(delta) <= exact:
        return published
    return Privacy(exact, delta).with_paper(published)


@dataclass(frozen=True)
class DiscreteGaussianShares(NoiseFamily):
    """N_Z(0, s2) per party, s2 calibrated per m so that m shares meet the target.

    The sum of k shares is not a discrete Gaussian, but its law is computable
    (:func:`~privsim.mechanisms.exact_integer.ddg_sum_law`). With an (epsilon, delta) target
    (``epsilon > 0``) and an integer sensitivity, s2 is the smallest value whose m shares
    meet it exactly (the hockey-stick divergence of that law), and a view facing k >= m
    honest shares is claimed the exact epsilon of k shares at ``delta``; the published
    bound, [KLS21] Prop. 14's zCDP (:func:`~privsim.mechanisms.integer_noise.ddg_rho`, best
    over any j in [m, k] of the shares; it needs s2 >= 1/4), rides along as ``paper``.
    With a zCDP target (``epsilon = 0``, ``rho``) s2 and the claims follow [KLS21]'s bound,
    the only zCDP statement at hand. Shares are sampled exactly by Canonne-Kamath-Steinke's
    Algorithm 3.

    >>> d = DiscreteGaussianShares(rho=0.05, sensitivity=1.0, delta=1e-6)
    >>> round(d.privacy(honest=10, m=10).rho, 9), d.privacy(honest=40, m=10).rho < 0.05
    (0.05, True)
    >>> e = noise_family("discrete-gaussian", sensitivity=1, epsilon=1.0, delta=1e-6)
    >>> c = e.privacy(honest=10, m=10)
    >>> c.measure, c.epsilon <= 1.0 + 1e-8, round(c.paper.epsilon, 2)  # KLS21 on the same noise
    ('approx', True, 1.08)
    """

    rho: float
    sensitivity: float
    delta: float
    epsilon: float = 0.0
    name: ClassVar[str] = "discrete-gaussian"

    @property
    def exact(self) -> bool:
        """Whether s2 and the claims follow the sum's exact law ((epsilon, delta) target, integer D)."""
        return self.epsilon > 0 and _integral(self.sensitivity) is not None

    def local_sigma2(self, m: int) -> float:
        """The parameter s2 of each share for m shares per unit of noise."""
        published = _ddg_local_sigma2(self.rho, m, self.sensitivity)
        if not self.exact:
            return published
        exact = exact_integer.ddg_sigma2_for(self.epsilon, self.delta, m, _integral(self.sensitivity), published)
        return published if exact is None else exact

    def share(self, rng: Any, m: int, size: Any = ()) -> np.ndarray:
        return integer_noise.discrete_gaussian_sample(rng, self.local_sigma2(m), size=size)

    def shares_variance(self, m: int, count: int) -> float:
        return _checks.integer("count", count, 1) * integer_noise.discrete_gaussian_variance(self.local_sigma2(m))

    def tail_bound(self, m: int, count: int, failure_log2: int) -> float:
        return float(integer_noise.discrete_gaussian_tail_bound(self.local_sigma2(m), count, failure_log2))

    def privacy(self, honest: int, m: int) -> Privacy | None:
        if not _honest(honest, m):
            return None
        s2 = self.local_sigma2(m)
        published = None
        if s2 >= 0.25:  # [KLS21] Prop. 14; tau grows with the shares: the best over any j in [m, honest]
            best = min(integer_noise.ddg_rho(s2, j, self.sensitivity) for j in _ddg_counts(m, honest))
            published = Privacy.zcdp(best, delta=self.delta)
        if not self.exact:
            assert published is not None  # the zCDP calibration keeps s2 >= 1/4
            blanket = Privacy.zcdp(integer_noise.ddg_rho(s2, m, self.sensitivity), delta=self.delta)
            return published.with_paper(blanket)
        return _exact_or_published(exact_integer.ddg_sum_law(s2, honest), self.sensitivity, published, self.delta)


@dataclass(frozen=True)
class SkellamShares(NoiseFamily):
    """Sk(mu/m) per party: k honest shares are exactly Sk(mu k/m) (closed under summation, [AKL21]).

    With an integer sensitivity the claim is the exact epsilon at ``delta`` of Sk(mu k/m)
    (:func:`~privsim.mechanisms.exact_integer.skellam_law`), and the builder calibrates mu
    to it; [AKL21] Theorem 3.5's Renyi bound at integer orders
    (:func:`~privsim.mechanisms.integer_noise.skellam_epsilon`) for the same noise rides
    along as ``paper`` (and is the claim for a non-integer sensitivity).

    >>> s = SkellamShares(mu=1000.0, sensitivity=1.0, delta=1e-6)
    >>> round(s.privacy(5, 5).epsilon, 3), round(s.privacy(5, 5).paper.epsilon, 3)
    (0.116, 0.127)
    >>> s.privacy(10, 5).epsilon < s.privacy(5, 5).epsilon
    True
    """

    mu: float
    sensitivity: float
    delta: float
    name: ClassVar[str] = "skellam"

    @property
    def exact(self) -> bool:
        """Whether the claims follow Sk's exact law (an integer sensitivity)."""
        return _integral(self.sensitivity) is not None

    def share(self, rng: Any, m: int, size: Any = ()) -> np.ndarray:
        return integer_noise.skellam_share(rng, self.mu / _checks.integer("m", m, 1), size=size)

    def shares_variance(self, m: int, count: int) -> float:
        return self.mu * _checks.integer("count", count, 1) / _checks.integer("m", m, 1)

    def tail_bound(self, m: int, count: int, failure_log2: int) -> float:
        return float(integer_noise.skellam_tail_bound(self.shares_variance(m, count), failure_log2))

    def privacy(self, honest: int, m: int) -> Privacy | None:
        if not _honest(honest, m):
            return None
        variance = self.shares_variance(m, honest)
        published = Privacy(integer_noise.skellam_epsilon(variance, self.delta, self.sensitivity), self.delta)
        if not self.exact:
            return published
        return _exact_or_published(exact_integer.skellam_law(variance), self.sensitivity, published, self.delta)


def _ddg_counts(m: int, honest: int) -> range:
    """The share counts j in [m, honest] worth trying (tau only grows, so a few near m and honest)."""
    return range(m, honest + 1) if honest - m <= 64 else range(m, honest + 1, max(1, (honest - m) // 64))


@lru_cache(maxsize=256)
def _ddg_local_sigma2(rho: float, m: int, sensitivity: float) -> float:
    """A root-finding per (rho, m, D), cached: every party of every run asks."""
    return integer_noise.ddg_sigma_for_rho(rho, m, sensitivity)


def _skellam_mu(c: _Calibration) -> float:
    """The smallest mu meeting (epsilon, delta): exactly for an integer D, else by [AKL21]'s bound."""
    published = integer_noise.skellam_variance_for(c.epsilon, c.delta, c.sensitivity)
    D = _integral(c.sensitivity)
    exact = None if D is None else exact_integer.skellam_mu_for(c.epsilon, c.delta, D, published)
    return published if exact is None else min(exact, published)


# ------------------------------------------------------------------------------ builders


@dataclass(frozen=True)
class _Calibration:
    """What a protocol says about its noise: the target guarantee and the sensitivity."""

    sensitivity: float
    epsilon: float
    delta: float
    rho: float

    @cached_property
    def gaussian_sigma2(self) -> float:
        if self.rho > 0:
            return float(noise.gaussian_variance(self.sensitivity, rho=self.rho))  # Bun-Steinke Prop. 1.6
        return float(noise.gaussian_variance(self.sensitivity, epsilon=self.epsilon, delta=self.delta))  # [BW18]

    @cached_property
    def gaussian_blanket(self) -> Privacy:
        return Privacy.zcdp(self.rho, delta=self.delta) if self.rho > 0 else Privacy(self.epsilon, self.delta)

    @cached_property
    def zcdp_rho(self) -> float:
        """rho, or the largest rho-zCDP that implies (epsilon, delta) ([CKS20] conversion)."""
        return self.rho if self.rho > 0 else accounting.approx_dp_to_zcdp(self.epsilon, self.delta, tight=True)


_BUILDERS: dict[str, Callable[[_Calibration], NoiseFamily]] = {
    "none": lambda c: NoNoise(),
    "laplace": lambda c: LaplaceShares(b=noise.laplace_scale(c.sensitivity, c.epsilon), epsilon=c.epsilon),
    "gaussian": lambda c: GaussianShares(sigma2=c.gaussian_sigma2, sensitivity=c.sensitivity, delta=c.delta,
                                         blanket=c.gaussian_blanket),
    "discrete-laplace": lambda c: DiscreteLaplaceShares(b=noise.laplace_scale(c.sensitivity, c.epsilon),
                                                        epsilon=c.epsilon),
    "discrete-gaussian": lambda c: DiscreteGaussianShares(rho=c.zcdp_rho, sensitivity=c.sensitivity,
                                                          delta=c.delta, epsilon=0.0 if c.rho > 0 else c.epsilon),
    "skellam": lambda c: SkellamShares(mu=_skellam_mu(c), sensitivity=c.sensitivity, delta=c.delta),
}

#: The noise families by ``noise=`` name.
FAMILIES: tuple[str, ...] = tuple(_BUILDERS)

#: The families whose calibration reads ``rho`` (the others refuse rho > 0).
ZCDP_FAMILIES = ("gaussian", "discrete-gaussian")


def noise_family(name: str, *, sensitivity: float, epsilon: float, delta: float, rho: float = 0.0) -> NoiseFamily:
    """Build the family ``name`` calibrated to epsilon (Laplace kinds), or rho / (epsilon, delta).

    - laplace, discrete-laplace: scale b = D/epsilon (epsilon-DP);
    - gaussian: sigma2 = D^2/(2 rho), or the analytic Gaussian for (epsilon, delta) when rho = 0;
    - discrete-gaussian: per-share s2 meeting rho by [KLS21] Prop. 14, or for (epsilon, delta)
      the smallest s2 whose m shares meet it exactly (their sum's law; integer D);
    - skellam: the smallest variance mu meeting (epsilon, delta) exactly (integer D; else
      by [AKL21]'s bound).

    Parameters
    ----------
    name:
        One of :data:`FAMILIES`.
    sensitivity:
        The sum's sensitivity D > 0.
    epsilon, delta, rho:
        The target guarantee (see above).

    Returns
    -------
    NoiseFamily

    Raises
    ------
    ParameterError
        For an unknown name, or rho > 0 with a family that does not read it.

    Examples
    --------
    >>> noise_family("laplace", sensitivity=2, epsilon=0.5, delta=1e-6)
    LaplaceShares(b=4.0, epsilon=0.5)
    """
    if name not in _BUILDERS:
        raise ParameterError(f"noise must be one of {', '.join(FAMILIES)} (got {name!r})")
    if rho > 0 and name not in ZCDP_FAMILIES:
        raise ParameterError(f"rho applies only to noise={' or noise='.join(ZCDP_FAMILIES)} (got noise={name})")
    return _BUILDERS[name](_Calibration(float(sensitivity), float(epsilon), float(delta), float(rho)))
