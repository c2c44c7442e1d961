"""GAP-TR_{kappa,tau} from any SUM approximation (Beimel–Nissim–Omri, Section 2).

GAP-TR_{kappa,tau}(x) is 0 when SUM(x) <= kappa and 1 when SUM(x) >= kappa + tau; inside
the gap (kappa < SUM(x) < kappa + tau) either answer is correct. The paper's reduction
turns any (gamma, tau/2)-approximation y of SUM into a (gamma, 0)-approximation of
GAP-TR: output 0 iff y <= kappa + tau/2, else 1. It is pure post-processing of the base
protocol's output, so the base's messages, rounds, views and privacy claim are unchanged.

:class:`GapThreshold` wraps a registered SUM protocol (``base``, e.g.
``randomized-response`` or ``secure-sum``): every parameter it does not declare itself
(``base``, ``kappa``, ``tau``) is passed to the base, e.g. ``--param base=secure-sum
--param epsilon=0.5``. The schedule, the party and curator routines and the privacy claim
are the base's, and so are what it publishes and its claim to the public; only the estimate is
post-processed.

**True value and error rate.** ``true_value`` is GAP-TR of the exact sum: 1 if
SUM >= kappa + tau, 0 if SUM <= kappa, and, inside the gap where GAP-TR is undefined, the
same rule applied to the exact sum (1 iff SUM > kappa + tau/2), so it is always 0 or 1.
The CLI's ``abs_error_mean`` is then the fraction of trials whose answer differs from it;
when the inputs lie outside the gap this is exactly the GAP-TR error rate.
:meth:`GapThreshold.error_rate` counts errors only on trials outside the gap (NaN if
there are none). An answer is wrong only if |y - SUM| >= tau/2, so the error rate is at
most Pr[|y - SUM| >= tau/2] of the base, trial by trial.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privsim.errors import ParameterError
from privsim.network.schedule import Schedule
from privsim.parties.context import PartyContext
from privsim.protocols.base import AuditScoreContext, Param, Privacy, Protocol

__all__ = ["GapThreshold", "sum_protocols"]


def sum_protocols(registry: Any) -> list[str]:
    """The registered protocols that estimate SUM(x) of one number per party: those that keep
    the base class's ``true_value`` (the sum), ``input_shape`` (a scalar) and ``series``
    (one release), other than gap-threshold itself. Streams and window statistics are not SUMs.

    >>> from privsim.protocols import REGISTRY
    >>> "secure-sum" in sum_protocols(REGISTRY), "continual-sum" in sum_protocols(REGISTRY)
    (True, False)
    """
    return sorted(k for k, cls in registry.items() if k != GapThreshold.name and cls.true_value is Protocol.true_value
                  and cls.input_shape is Protocol.input_shape and cls.series is Protocol.series)


class GapThreshold(Protocol):
    """GAP-TR_{kappa,tau} by thresholding a SUM protocol's estimate at kappa + tau/2.

    ``kappa`` defaults to floor(n/4) and ``tau`` to floor(n/2); the default inputs put
    kappa + tau ones first (true value 1, at the upper edge of the gap).

    Examples
    --------
    >>> import privsim
    >>> gap = GapThreshold(base="randomized-response", epsilon=1.0, kappa=10, tau=60)
    >>> gap.parameters["epsilon"], gap.has_curator
    (1.0, True)
    >>> res = privsim.simulate(gap, [1] * 70 + [0] * 30, trials=500, seed=3)
    >>> res.messages, int(res.true_value[0])
    (100, 1)
    >>> gap.error_rate(res) < 0.05
    True
    """

    name = "gap-threshold"
    base = Param("randomized-response", type=str, doc="the registered SUM protocol to threshold")
    kappa = Param(None, ge=0, doc="lower end of the gap (default floor(n/4))")
    tau = Param(None, gt=0, doc="width of the gap (default floor(n/2))")

    def __init__(self, **params: Any) -> None:
        from privsim.protocols import REGISTRY  # the registry imports this module lazily

        own = {k: v for k, v in params.items() if k in type(self).params}
        super().__init__(**own)
        bases = sum_protocols(REGISTRY)
        if self.base not in bases:
            raise ParameterError(f"base must be a registered SUM protocol (allowed: {', '.join(bases)}; "
                                 f"got {self.base!r})")
        cls = REGISTRY[self.base]
        inner = {k: v for k, v in params.items() if k not in own}
        unknown = sorted(set(inner) - set(cls.params))
        if unknown:
            allowed = ", ".join([*type(self).params, *cls.params])
            raise ParameterError(f"unknown parameter {unknown[0]!r} for gap-threshold with base {self.base} "
                                 f"(allowed: {allowed})")
        self.inner: Protocol = cls(**inner)
        # The wrapper runs the base's parties, so it has the base's roles and input domain.
        self.has_curator = self.inner.has_curator  # type: ignore[misc]
        self.input_values = self.inner.input_values  # type: ignore[misc]
        self.input_dtype = self.inner.input_dtype  # type: ignore[misc]

    @property
    def parameters(self) -> dict[str, Any]:
        """This wrapper's parameters followed by the base protocol's."""
        return {**{k: getattr(self, k) for k in self.params}, **self.inner.parameters}

    def __repr__(self) -> str:
        return (f"GapThreshold(base={self.base!r}, kappa={self.kappa!r}, tau={self.tau!r}, "
                f"inner={self.inner!r})")

    def gap(self, n: int) -> tuple[float, float]:
        """(kappa, tau) for n parties (the defaults floor(n/4), floor(n/2) when not given)."""
        kappa = float(n // 4) if self.kappa is None else float(self.kappa)
        tau = float(max(1, n // 2)) if self.tau is None else float(self.tau)
        return kappa, tau

    def threshold(self, n: int) -> float:
        """kappa + tau/2: the reduction answers 0 iff the SUM estimate is at most this."""
        kappa, tau = self.gap(n)
        return kappa + tau / 2

    # ------------------------------------------------------------------ delegated to the base
    def default_t(self, n: int) -> int:
        return self.inner.default_t(n)

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        self.inner.check_setting(n, t)
        kappa, tau = self.gap(n)
        if kappa + tau > n:
            raise ParameterError(f"kappa + tau must be <= n = {n} (the paper's 0 <= kappa <= n - tau; "
                                 f"got kappa = {kappa:g}, tau = {tau:g})")

    def input_shape(self) -> tuple[int, ...]:
        return self.inner.input_shape()

    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        return self.inner.validate_inputs(inputs)

    def default_inputs(self, n: int) -> np.ndarray:
        """The first kappa + tau parties hold 1 (true value 1, the upper edge of the gap)."""
        kappa, tau = self.gap(n)
        return (np.arange(n) < min(n, int(np.ceil(kappa + tau)))).astype(self.input_dtype)

    def schedule(self, n: int, t: int) -> Schedule:
        return self.inner.schedule(n, t)

    async def party(self, ctx: PartyContext) -> None:
        await self.inner.party(ctx)

    async def curator(self, ctx: PartyContext) -> None:
        await self.inner.curator(ctx)

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        # Post-processing of the base's output: the base's claim, coalition by coalition.
        return self.inner.privacy(coalition, n, t)

    def publishes(self, n: int, t: int) -> tuple[int | str, ...]:
        # The parties are the base's, and so are their outputs: the public sees what the base
        # publishes (the default, every party's output, would claim the empty coalition's
        # Privacy(0) for a released sum).
        return self.inner.publishes(n, t)

    def public_privacy(self, n: int, t: int) -> Privacy | None:
        return self.inner.public_privacy(n, t)

    def precomputed(self, n: int, t: int) -> dict[str, Any]:
        return self.inner.precomputed(n, t)

    def adopt_precomputed(self, n: int, t: int, values: dict[str, Any]) -> None:
        self.inner.adopt_precomputed(n, t, values)

    def round_stages(self, n: int, t: int) -> list[str] | None:
        return self.inner.round_stages(n, t)

    def run_counts(self, outputs: dict[int | str, Any], n: int, t: int) -> dict[str, np.ndarray] | None:
        return self.inner.run_counts(outputs, n, t)

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
        # The views are the base's, so its score reads them as well (any score keeps the audit sound).
        return self.inner.make_audit_score(ctx.columns, ctx.coalition, ctx.neighbor, ctx.n, ctx.t, ctx.x,
                                           ctx.x_prime)

    # ------------------------------------------------------------------ the reduction
    def sum_estimate(self, outputs: dict[int | str, Any], n: int, t: int) -> np.ndarray:
        """y, the base protocol's SUM estimate."""
        return np.asarray(self.inner.estimate(outputs, n, t), dtype=np.float64)

    def estimate(self, outputs: dict[int | str, Any], n: int, t: int) -> np.ndarray:
        # Section 2: g(x) = 0 if y <= kappa + tau/2, and 1 otherwise.
        return (self.sum_estimate(outputs, n, t) > self.threshold(n)).astype(np.int64)

    def true_value(self, inputs: np.ndarray) -> np.ndarray:
        """GAP-TR of the exact sum (inside the gap: 1 iff SUM > kappa + tau/2; see the module)."""
        total = np.asarray(self.inner.true_value(inputs), dtype=np.float64)
        return (total > self.threshold(inputs.shape[1])).astype(np.int64)

    def in_gap(self, inputs: np.ndarray) -> np.ndarray:
        """Per trial: whether kappa < SUM < kappa + tau, where GAP-TR is undefined."""
        kappa, tau = self.gap(inputs.shape[1])
        total = np.asarray(self.inner.true_value(inputs), dtype=np.float64)
        return (total > kappa) & (total < kappa + tau)

    def error_rate(self, result: Any) -> float:
        """The fraction of trials outside the gap whose answer is wrong (NaN if none is outside).

        ``result`` is a :class:`~privsim.SimulationResult` of this protocol.
        """
        outside = ~np.broadcast_to(self.in_gap(result.inputs), np.shape(result.estimate))
        if not outside.any():
            return float("nan")
        wrong = np.asarray(result.estimate) != np.asarray(result.true_value)
        return float(wrong[outside].mean())
