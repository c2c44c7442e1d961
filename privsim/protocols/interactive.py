"""An interactive local protocol: adaptive private median search by randomized response.

The local model's interactive protocols (Beimel–Nissim–Omri, Section 2) run in rounds:
in round j the curator C sends each party p_i a query q_{i,j}, and p_i answers with
A_i(x_i, q_{i,1}, ..., q_{i,j}, r_i). C has no input and is deterministic; parties talk
only to C.

:class:`InteractiveRR` searches for the median of inputs x_i in {0, ..., D - 1}
(D = ``domain``, a power of two) in l = log2 D query rounds, a binary search whose every
query depends on the answers before it:

- C keeps an interval [lo, hi) (initially [0, D)) and, in round j, sends every party the
  threshold theta_j = (lo + hi)/2.
- p_i answers z_i = flip_a(1[x_i >= theta_j]): the true bit with probability 1/2 + a,
  a = eps_j/(4 + 2 eps_j), eps_j = eps/l (randomized response, Section 3).
- C forms the unbiased count c_j = (sum z_i - (1/2 - a) n)/(2a) of #{i : x_i >= theta_j}
  and sets lo = theta_j if c_j >= n/2, else hi = theta_j.

After l rounds hi = lo + 1 and C publishes lo. With exact counts this is the upper median
max{v : #{i : x_i >= v} >= n/2}, the true value. Given theta_j (a function of earlier
rounds only), c_j is unbiased with Var c_j = n (1/4 - a^2)/(4 a^2), as for one-round
randomized response.

**Privacy.** Each answer is eps/l-differentially private (its exact loss is
ln(1 + eps/l)), and a party's l answers compose to eps (its whole transcript with C; the
queries do not depend on its input, and adaptive composition allows them to depend on
the others' answers). So every coalition, C included, gets eps-DP towards each party
outside it: eps is split evenly across the l rounds.

**Cost.** Each query round is two network rounds (queries C -> parties, then answers
parties -> C): 2n messages per query round, 2 n l messages and 2l network rounds in
total; a query is log2 D bits, an answer 1 bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.context import PartyContext
from privsim.protocols.base import Param, Privacy, Protocol, _check_domain
from privsim.protocols.randomized_response import RandomizedResponse

__all__ = ["InteractiveRR"]


class InteractiveRR(Protocol):
    """Adaptive median search in the local model: l = log2(domain) rounds of query and answer.

    Examples
    --------
    >>> import privsim
    >>> proto = InteractiveRR(epsilon=2.0, domain=8)
    >>> proto.query_rounds, proto.message_count(100)
    (3, 600)
    >>> res = privsim.simulate(proto, n=100, trials=20, seed=1)
    >>> res.messages, res.rounds, int(res.true_value[0])
    (600, 6, 2)
    >>> [(r, s, d) for r, s, d, _ in res.view("0").messages]
    [(1, 'C', 0), (2, 0, 'C'), (3, 'C', 0), (4, 0, 'C'), (5, 'C', 0), (6, 0, 'C')]
    """

    name = "interactive-rr"
    has_curator = True
    input_values = None  # integers in [0, domain), checked in validate_inputs
    epsilon = Param(1.0, gt=0, doc="each party's total eps, split evenly over the l query rounds")
    domain = Param(16, type=int, ge=2, power_of_two=True, doc="inputs lie in 0..domain-1; l = log2(domain)")

    @property
    def query_rounds(self) -> int:
        """l = log2(domain), the number of query/answer rounds."""
        return self.domain.bit_length() - 1

    @property
    def round_epsilon(self) -> float:
        """eps/l, the privacy parameter of each answer."""
        return self.epsilon / self.query_rounds

    @property
    def rr(self) -> RandomizedResponse:
        """Randomized response with eps/l: its bias a, estimator and variance serve every round."""
        return RandomizedResponse(epsilon=self.round_epsilon)

    def message_count(self, n: int) -> int:
        """2 n l: a query and an answer per party per query round."""
        return 2 * n * self.query_rounds

    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        return _check_domain(inputs, (inputs < 0) | (inputs >= self.domain), f"0..{self.domain - 1}")

    def default_inputs(self, n: int) -> np.ndarray:
        """A skewed fixed input: x_i = floor(D (i/n)^1.5), so the median sits near 0.35 D.

        >>> InteractiveRR(domain=8).default_inputs(8).tolist()
        [0, 0, 1, 1, 2, 3, 5, 6]
        """
        i = np.arange(n)
        return np.floor(self.domain * (i / n) ** 1.5).astype(np.int64)

    def schedule(self, n: int, t: int) -> Schedule:
        queries = [(CURATOR, i) for i in range(n)]
        answers = [(i, CURATOR) for i in range(n)]
        return Schedule(n, [queries, answers] * self.query_rounds, curator=True)

    async def party(self, ctx: PartyContext) -> None:
        keep_p = 0.5 + self.rr.a
        for _ in range(self.query_rounds):
            theta = (await ctx.end_round())[CURATOR]  # the query: this round's threshold
            keep = ctx.rng.random() < keep_p
            ctx.send(CURATOR, keep == (ctx.input >= theta))  # flip_a(1[x_i >= theta])
            await ctx.end_round()

    async def curator(self, ctx: PartyContext) -> None:
        n, rr = ctx.n, self.rr
        lo = ctx.zeros(dtype=np.int64)
        hi = ctx.full(self.domain, dtype=np.int64)
        for _ in range(self.query_rounds):
            theta = (lo + hi) // 2
            for i in range(n):
                ctx.send(i, theta, bits=self.query_rounds)  # a threshold in [0, D): log2 D bits
            await ctx.end_round()
            count = rr.debias((await ctx.end_round()).total(), n)  # unbiased #{x_i >= theta}
            up = count >= n / 2
            lo, hi = np.where(up, theta, lo), np.where(up, hi, theta)
        ctx.output(lo)

    def estimate(self, outputs: dict[int | str, Any], n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[CURATOR], dtype=np.float64)

    def true_value(self, inputs: np.ndarray) -> np.ndarray:
        """The upper median max{v : #{i : x_i >= v} >= n/2}, per trial."""
        x = np.sort(inputs.reshape(inputs.shape[0], -1), axis=1)
        n = x.shape[1]
        # #{x_i >= v} >= n/2 iff v <= the ceil(n/2)-th largest value
        return x[:, n - (n + 1) // 2].astype(np.float64)

    def count_variance(self, n: int) -> float:
        """Var c_j = n (1/4 - a^2)/(4 a^2) of each round's count, given its threshold."""
        return self.rr.variance(n)

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        # l answers of eps/l each compose to eps (exact loss l ln(1 + eps/l) <= eps).
        return Privacy(self.epsilon)
