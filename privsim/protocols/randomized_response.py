"""Randomized response (Beimel–Nissim–Omri, Section 3; Warner 1965), local and distributed.

Each party p_i sends z_i = flip_a(x_i): x_i with probability 1/2 + a, 1 - x_i otherwise,
with a = eps/(4 + 2 eps). The curator publishes k = sum z_i and everyone computes
f = (k - (1/2 - a) n)/(2a), an unbiased estimate of sum x_i with
Var f = n (1/4 - a^2)/(4 a^2). The exact privacy loss of one party's message is
ln((1/2 + a)/(1/2 - a)) = ln(1 + eps) <= eps, whatever the coalition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext
from privsim.protocols.base import AuditScoreContext, Param, Privacy, Protocol

__all__ = ["RandomizedResponse", "RandomizedResponseDistributed"]


class _RRMath(Protocol):
    # At most 1e15: the flip probability 1/(2 + eps) must stay well above the resolution
    # 2^-53 of rng.random(), or flips never happen and the simulated loss is infinite.
    epsilon = Param(1.0, gt=0, le=1e15, doc="privacy parameter eps of each party's message")

    @property
    def a(self) -> float:
        """The bias a = eps/(4 + 2 eps): a party keeps its bit with probability 1/2 + a."""
        return 1.0 / (4.0 / self.epsilon + 2.0)  # = eps/(4 + 2 eps), without inf/inf at eps near 1e308

    def flip(self, ctx: PartyContext) -> np.ndarray:
        """flip_a(x) for every trial: x with probability 1/2 + a, else 1 - x (booleans)."""
        keep = ctx.rng.random() < 0.5 + self.a
        return keep == (ctx.input == 1)

    def debias(self, k: Any, n: int) -> np.ndarray:
        """The estimator f = (k - (1/2 - a) n)/(2a)."""
        return (np.asarray(k, dtype=float) - (0.5 - self.a) * n) / (2 * self.a)

    def variance(self, n: int) -> float:
        """Var f = n (1/4 - a^2)/(4 a^2)."""
        return n * (0.25 - self.a ** 2) / (4 * self.a ** 2)

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
        # The neighbour's own flipped bit is the whole of what the view says about x_j.
        idx = ctx.index("msg", round=1, sender=ctx.neighbor, receiver=self._collector, element=None)
        if idx is None:
            return None
        return lambda views: views[:, idx]

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        # Every party's only message is eps-LDP, so any coalition not holding the party is
        # eps-DP towards it (the paper's (n, eps) guarantee); the exact loss is ln(1 + eps).
        return Privacy(self.epsilon)


class RandomizedResponse(_RRMath):
    """Local, non-interactive randomized response: parties -> curator C, one round, n messages.

    Examples
    --------
    >>> import privsim
    >>> rr = RandomizedResponse(epsilon=1.0)
    >>> res = privsim.simulate(rr, [1] * 60 + [0] * 40, trials=2000, seed=2)
    >>> res.messages, res.rounds
    (100, 1)
    >>> bool(abs(res.estimate.mean() - 60) < 5 * (rr.variance(100) / 2000) ** 0.5)
    True
    """

    name = "randomized-response"
    has_curator = True
    _collector = CURATOR

    def schedule(self, n: int, t: int) -> Schedule:
        return Schedule.star_to(n, CURATOR)

    async def party(self, ctx: PartyContext) -> None:
        ctx.send(CURATOR, self.flip(ctx))
        await ctx.end_round()

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """Every party sends its flip to the curator.

        >>> RandomizedResponse().cohorts(4, 0)
        {'parties': range(0, 4)}
        """
        return {"parties": range(n)}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many parties at once."""
        await self.party(cctx)  # type: ignore[arg-type]  # the same steps: flip reads only rng and input

    async def curator(self, ctx: PartyContext) -> None:
        ctx.output((await ctx.end_round()).total())  # k = sum z_i

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return self.debias(outputs[CURATOR], n)


class RandomizedResponseDistributed(_RRMath):
    """Randomized response as a 2-round distributed protocol with p_1 (party 0) as curator.

    Round 1: parties 1..n-1 send z_i to party 0. Round 2: party 0 sends k = z_0 + sum z_i
    back to every party. 2(n - 1) messages; no secure channels needed, private against
    coalitions of any size (each message is eps-LDP).

    Examples
    --------
    >>> import privsim
    >>> res = privsim.simulate(RandomizedResponseDistributed(epsilon=1.0), [0, 1] * 8, trials=10, seed=1)
    >>> res.messages, res.rounds
    (30, 2)
    """

    name = "randomized-response-distributed"
    _collector = 0

    def schedule(self, n: int, t: int) -> Schedule:
        return Schedule(n, [[(i, 0) for i in range(1, n)], [(0, i) for i in range(1, n)]])

    async def party(self, ctx: PartyContext) -> None:
        z = self.flip(ctx)
        if ctx.id == 0:
            inbox = await ctx.end_round()
            k = z.astype(np.int64) + (inbox.total() if inbox else 0)
            for i in range(1, ctx.n):
                ctx.send(i, k)
            await ctx.end_round()
        else:
            ctx.send(0, z)
            await ctx.end_round()
            k = (await ctx.end_round())[0]
        ctx.output(k)

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """Parties 1..n-1, who send their flip to party 0 (who collects, alone).

        >>> RandomizedResponseDistributed().cohorts(5, 0)
        {'senders': range(1, 5)}
        """
        return {"senders": range(1, n)}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many senders at once."""
        cctx.send(0, self.flip(cctx))  # type: ignore[arg-type]  # flip reads only rng and input
        await cctx.end_round()
        cctx.output((await cctx.end_round()).from_party(0))

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return self.debias(outputs[0], n)
