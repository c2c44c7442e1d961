"""Many weak messages: every party reports its bit ``rounds`` times by randomized response.

Run the audit (generic: no ``audit_score``) from the repository root::

    privsim audit --protocol examples/leaks/repeated_rr.py:RepeatedRR --n 2 \
        --coalition C --neighbor 1 --trials 1000000 --seed 1 --param rounds=20 --param round_epsilon=0.1

In each of ``rounds`` rounds every party sends the curator a fresh randomized response
of its bit: the bit with probability e^eps_r/(1 + e^eps_r), else its complement
(eps_r = ``round_epsilon``), so each message is exactly eps_r-DP. The curator publishes
the total number of ones. The claim is the sum of the rounds' epsilons, and it is exact:
the event "every one of the neighbour's reports equals 1" has likelihood ratio
e^(rounds eps_r). No single message says much (0.1 at the default), and the best events
are rare (their probability is about 0.525^17 for 17 of 20 reports at eps_r = 0.1),
which is what makes this view hard to audit at a given number of trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from privsim import CURATOR, Param, Privacy, Protocol, Schedule

__all__ = ["RepeatedRR"]


class RepeatedRR(Protocol):
    """Each party sends ``rounds`` independent eps_r-randomized responses of its bit to the curator.

    Examples
    --------
    >>> import privsim
    >>> res = privsim.simulate(RepeatedRR(rounds=3), [1, 0], trials=5, seed=1)
    >>> res.messages, res.rounds, res.view("C").to_array().shape
    (6, 3, (5, 7))
    >>> RepeatedRR().privacy(("C",), 2, 1).epsilon
    2.0
    """

    name = "repeated-rr"
    has_curator = True
    rounds = Param(20, type=int, ge=1, doc="number of randomized responses per party")
    round_epsilon = Param(0.1, gt=0, doc="the exact privacy loss of each response")

    @property
    def keep_p(self) -> float:
        """Probability that a response is the true bit: e^eps_r/(1 + e^eps_r)."""
        return 1.0 / (1.0 + math.exp(-self.round_epsilon))

    def schedule(self, n: int, t: int) -> Schedule:
        return Schedule(n, [[(i, CURATOR) for i in range(n)] for _ in range(self.rounds)], curator=True)

    async def party(self, ctx) -> None:  # noqa: ANN001 - a PartyContext
        for _ in range(self.rounds):
            keep = ctx.rng.random() < self.keep_p
            ctx.send(CURATOR, keep == (ctx.input == 1), bits=1)
            await ctx.end_round()

    async def curator(self, ctx) -> None:  # noqa: ANN001 - a PartyContext
        total = 0
        for _ in range(self.rounds):
            total = total + (await ctx.end_round()).total()
        ctx.output(total)

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        # E[total] = rounds (x (2 keep - 1) + n (1 - keep)) summed over parties.
        k = np.asarray(outputs[CURATOR], dtype=float) / self.rounds
        return (k - n * (1 - self.keep_p)) / (2 * self.keep_p - 1)

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        # Basic composition of `rounds` eps_r-DP messages; tight for randomized response.
        return Privacy(self.rounds * self.round_epsilon)
