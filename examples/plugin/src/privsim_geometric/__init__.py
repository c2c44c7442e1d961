"""An example privsim plugin: each party sends its bit plus two-sided geometric noise to the curator.

The noise G1 - G2 (G1, G2 independent Geometric(1 - e^{-eps}) on {1, 2, ...}) has
P(k) proportional to e^{-eps |k|} on the integers: the discrete Laplace mechanism, exactly
eps-DP for a bit (sensitivity 1), and integer messages.
"""

from __future__ import annotations

import math

import numpy as np

from privsim import CURATOR, Param, Privacy, Protocol, Schedule

__all__ = ["GeometricSum"]


class GeometricSum(Protocol):
    """Parties -> curator: x_i + (G1 - G2); the curator publishes the sum.

    Examples
    --------
    >>> import privsim
    >>> res = privsim.simulate(GeometricSum(epsilon=1.0), [0, 1] * 5, trials=4000, seed=1)
    >>> res.messages, bool(abs(res.estimate.mean() - 5) < 0.3)
    (10, True)
    """

    name = "geometric-sum"
    has_curator = True
    epsilon = Param(1.0, gt=0, doc="privacy of each party's message")

    def schedule(self, n: int, t: int) -> Schedule:
        return Schedule(n, [[(i, CURATOR) for i in range(n)]], curator=True)

    async def party(self, ctx) -> None:  # noqa: ANN001 - a PartyContext
        p = -math.expm1(-self.epsilon)  # 1 - e^{-eps}
        noise = ctx.rng.geometric(p) - ctx.rng.geometric(p)
        ctx.send(CURATOR, ctx.input + noise)
        await ctx.end_round()

    async def curator(self, ctx) -> None:  # noqa: ANN001
        ctx.output((await ctx.end_round()).total())

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[CURATOR], dtype=float)

    def variance(self, n: int) -> float:
        """Var of the estimate: n * 2a/(1-a)^2 with a = e^{-eps} (two-sided geometric)."""
        a = math.exp(-self.epsilon)
        return n * 2 * a / (1 - a) ** 2

    def privacy(self, coalition, n: int, t: int) -> Privacy:  # noqa: ANN001
        return Privacy(self.epsilon)  # every message is eps-DP on its own, whoever colludes
