"""Central reference mechanisms: a trusted curator adds noise calibrated to the global sensitivity.

Every party sends its input x_i (an integer in [0, max_input]) to the curator C, who
releases ``sum x_i + noise`` (Dwork, McSherry, Nissim, Smith 2006; eq. (1) of
Beimel–Nissim–Omri): the accuracy every distributed protocol is compared with, O(1/eps)
error with n messages, but no privacy at all towards C.

- :class:`CentralLaplace`: Lap(b), b = max_input/epsilon, variance 2 b^2 (or, with
  ``discrete=True``, the discrete Laplace with the same b, exactly epsilon-DP on Z,
  variance 2a/(1-a)^2 with a = e^{-1/b}).
- :class:`CentralGaussian`: N(0, sigma2) with sigma2 = max_input^2/(2 rho) (rho-zCDP,
  Bun–Steinke Prop. 1.6) or, with rho = 0, the analytic Gaussian sigma for
  (epsilon, delta) (Balle–Wang 2018).

Who sees what, and the claim (:meth:`privacy`)
----------------------------------------------
- A coalition containing C: ``None``: C receives every input in the clear. (In the
  central model the curator is *trusted*; the claim is about its output, not its view.)
- A coalition of parties only, with ``broadcast=True`` (the default): the parties see
  their own inputs and the released value, so their view is the output as seen by an
  outside observer: the mechanism's guarantee (epsilon, or (epsilon, delta) for the
  Gaussian). To audit the released output alone, audit coalition ``0`` against a
  neighbour ``j != 0``: party 0's view is its fixed input and the output (parties draw no
  randomness here).
- A coalition of parties with ``broadcast=False``: the parties receive nothing, so the
  view is independent of the others' inputs: Privacy(0).

Messages: n (inputs to C) plus n with ``broadcast`` (C sends the release to every party);
rounds 1 or 2. The threshold t plays no role (default n - 1).

Floating-point Laplace and Gaussian samples are reference mechanisms, not exactly DP
(Mironov 2012); ``discrete=True`` gives the exact one for the Laplace.

Examples
--------
>>> import privsim
>>> proto = CentralLaplace(epsilon=0.5)
>>> res = privsim.simulate(proto, [1] * 40 + [0] * 60, trials=4000, seed=3)
>>> res.messages, res.rounds, proto.noise_variance()
(200, 2, 8.0)
>>> bool(abs(res.error.var() / proto.noise_variance() - 1) < 0.15)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from privsim.mechanisms import noise as noise_lib
from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext
from privsim.protocols.base import Param, Privacy, check_rho_or_epsilon
from privsim.protocols.secure_sum import IntegerInputs

__all__ = ["CentralLaplace", "CentralGaussian"]


class _Central(IntegerInputs):
    """Parties -> curator; the curator releases the noisy sum (and, with broadcast, sends it back)."""

    has_curator = True
    broadcast = Param(True, type=bool, doc="the curator sends the released value to every party "
                                           "(so a coalition of parties sees the output)")

    def schedule(self, n: int, t: int) -> Schedule:
        rounds = [[(i, CURATOR) for i in range(n)]]
        if self.broadcast:
            rounds.append([(CURATOR, i) for i in range(n)])
        return Schedule(n, rounds, curator=True)

    async def party(self, ctx: PartyContext) -> None:
        ctx.send(CURATOR, ctx.input)
        await ctx.end_round()
        if self.broadcast:
            ctx.output((await ctx.end_round())[CURATOR])

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """Every party sends its input to the curator.

        >>> CentralLaplace().cohorts(3, 0)
        {'parties': range(0, 3)}
        """
        return {"parties": range(n)}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many parties at once."""
        cctx.send(CURATOR, cctx.input)
        await cctx.end_round()
        if self.broadcast:
            cctx.output((await cctx.end_round()).from_party(CURATOR))

    async def curator(self, ctx: PartyContext) -> None:
        released = self.release((await ctx.end_round()).total(), ctx)
        ctx.output(released)
        if self.broadcast:
            for i in range(ctx.n):
                ctx.send(i, released)
            await ctx.end_round()

    def release(self, total: np.ndarray, ctx: PartyContext) -> np.ndarray:
        """The noisy sum, one per trial (the curator's only random step)."""
        raise NotImplementedError

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[CURATOR], dtype=float)

    def mechanism_privacy(self) -> Privacy:
        """The guarantee of the released value."""
        raise NotImplementedError

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        if CURATOR in coalition:
            return None  # C sees every input
        return self.mechanism_privacy() if self.broadcast else Privacy(0.0)

    def public_privacy(self, n: int, t: int) -> Privacy | None:
        """The outside observer reads C's release: the mechanism's guarantee."""
        return self.mechanism_privacy()


class CentralLaplace(_Central):
    """The central Laplace mechanism: C releases sum + Lap(max_input/epsilon) (or its discrete twin).

    Examples
    --------
    >>> CentralLaplace(epsilon=2.0).noise_variance()
    0.5
    >>> CentralLaplace(epsilon=1.0).privacy(["C"], 10, 9) is None, CentralLaplace().privacy([0, 3], 10, 9)
    (True, Privacy(epsilon=1.0, delta=0.0))
    """

    name = "central-laplace"
    epsilon = Param(1.0, gt=0, doc="privacy parameter eps of the released sum")
    discrete = Param(False, type=bool, doc="discrete Laplace noise (exactly eps-DP on the integers)")

    @property
    def b(self) -> float:
        """The scale b = max_input/epsilon."""
        return noise_lib.laplace_scale(self.max_input, self.epsilon)

    def noise_variance(self) -> float:
        """2 b^2, or 2a/(1-a)^2 (a = e^{-1/b}) for the discrete Laplace."""
        if self.discrete:
            return float(noise_lib.discrete_laplace_variance(self.b))
        return float(noise_lib.laplace_variance(self.max_input, self.epsilon))

    def release(self, total: np.ndarray, ctx: PartyContext) -> np.ndarray:
        mechanism = noise_lib.discrete_laplace_mechanism if self.discrete else noise_lib.laplace_mechanism
        return mechanism(total, self.max_input, self.epsilon, ctx.rng, size=())

    def mechanism_privacy(self) -> Privacy:
        return Privacy(self.epsilon)


class CentralGaussian(_Central):
    """The central Gaussian mechanism: C releases sum + N(0, sigma2), sigma2 for rho-zCDP or (eps, delta).

    Examples
    --------
    >>> CentralGaussian(rho=0.5).noise_variance()
    1.0
    >>> round(CentralGaussian(epsilon=1.0, delta=1e-5).noise_variance() ** 0.5, 3)
    3.731
    """

    name = "central-gaussian"
    rho = Param(0.0, ge=0, doc="zCDP parameter; 0 = calibrate to (epsilon, delta) instead")
    epsilon = Param(1.0, gt=0, doc="privacy parameter eps (used when rho = 0)")
    delta = Param(1e-6, gt=0, lt=1, doc="delta of the (epsilon, delta) guarantee")

    def validate(self) -> None:
        super().validate()
        check_rho_or_epsilon(self)

    @property
    def _target(self) -> dict[str, float]:
        # The calibration target of the noise: rho-zCDP, or (epsilon, delta) when rho = 0.
        return {"rho": self.rho} if self.rho > 0 else {"epsilon": self.epsilon, "delta": self.delta}

    def noise_variance(self) -> float:
        """sigma2 = max_input^2/(2 rho), or the analytic Gaussian variance for (epsilon, delta)."""
        return float(noise_lib.gaussian_variance(self.max_input, **self._target))

    def release(self, total: np.ndarray, ctx: PartyContext) -> np.ndarray:
        return noise_lib.gaussian_mechanism(total, self.max_input, rng=ctx.rng, size=(), **self._target)

    def mechanism_privacy(self) -> Privacy:
        # Exactly a Gaussian mechanism with mu = max_input / sigma ([BW18] Thm 8): its whole
        # delta(epsilon) curve, reported at this delta; the calibration target beside it.
        exact = Privacy.gaussian(self.max_input / math.sqrt(self.noise_variance()), delta=self.delta)
        return exact.with_paper(Privacy.zcdp(self.rho, self.delta) if self.rho > 0
                                else Privacy(self.epsilon, self.delta))

