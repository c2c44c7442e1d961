"""A deliberately leaky protocol, for checking that the audit catches a broken claim.

Randomized response in which every party also sends a second message that, with
probability ``leak`` (default 0.01), is its input in the clear and otherwise the
sentinel -1. The pattern stays oblivious (the second message is always sent); the
protocol still *claims* eps-DP, which is false: with probability ``leak`` the curator
learns x_j exactly, so the true loss is unbounded (delta >= leak).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.context import PartyContext
from privsim.protocols.base import AuditScoreContext, Param
from privsim.protocols.randomized_response import RandomizedResponse

__all__ = ["LeakyRR"]


class LeakyRR(RandomizedResponse):
    """Randomized response that leaks each input in the clear with probability ``leak``.

    Examples
    --------
    >>> import privsim
    >>> res = privsim.simulate(LeakyRR(leak=0.5), [1, 0, 1], trials=4, seed=1)
    >>> res.messages, sorted(set(res.view("C").to_array()[:, 3:6].ravel().tolist())) <= [-1.0, 0.0, 1.0]
    (6, True)
    """

    name = "leaky-rr"
    leak = Param(0.01, ge=0, le=1, doc="probability that a party sends its input in the clear")

    def schedule(self, n: int, t: int) -> Schedule:
        return Schedule(n, [[(i, CURATOR) for i in range(n)], [(i, CURATOR) for i in range(n)]], curator=True)

    async def party(self, ctx: PartyContext) -> None:
        ctx.send(CURATOR, self.flip(ctx))
        await ctx.end_round()
        clear = ctx.rng.random() < self.leak
        ctx.send(CURATOR, np.where(clear, ctx.input, -1))
        await ctx.end_round()

    async def curator(self, ctx: PartyContext) -> None:
        flipped = await ctx.end_round()
        await ctx.end_round()
        ctx.output(flipped.total())

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> None:
        return None  # let the audit find the leak on its own
