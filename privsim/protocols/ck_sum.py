"""A message-efficient t-private modular sum near the Chor–Kushilevitz optimum of about n(t+1)/2 messages.

Chor and Kushilevitz ("A communication-privacy tradeoff for modular addition", IPL
1993) show that an oblivious t-private protocol for a sum mod q needs about n(t+1)/2
messages and that this is achievable (as Beimel–Nissim–Omri recall in Section 1). The
bound is a degree count: a party adjacent to at most t active channels is *lonely*, its
neighbours see everything it sends, so every party needs t+1 channels and there are at
least n(t+1)/2 of them. This module does not reproduce their paper's construction (we could
not consult it); it implements the following construction, whose t-privacy is proved
below, with every party adjacent to 2r >= t+1 channels.

The construction: a flow on a circulant graph
---------------------------------------------
Let r = ceil((t+1)/2). Parties 0..n-1 sit on a circle; party i is adjacent to
i +- 1, ..., i +- r (mod n): the Harary graph H_{2r,n}, n r channels (n >= 2r + 1).
Orient every channel from the lower to the higher *level*: with K levels (parameter
``levels``, default r + 1) and n' = K floor(n/K), party i < n' has level i mod K and the
s = n - n' remaining parties n'+j have levels K + j. Adjacent parties always have
different levels (two parties at circular distance <= r < K differ mod K; across the
wrap, parties n'-a and b are at distance s + a + b, and equal levels would need
a + b = K > r). Every party holds its secret (its input plus its noise share, see
:mod:`privsim.protocols.secure_sum`), adds the values it receives from its
lower-level neighbours, and splits the result into uniformly random additive shares mod
q, one per higher-level neighbour, sent in round level + 1. A party with no
higher-level neighbour (a *sink*) sends its whole running total to the *collector*
p_n (party n - 1, the highest level) instead. The collector's total is the sum of all
secrets.

Sinks: the level-(K-1) parties except n' - 1 when s > 0 (its neighbour n' is in the
tail), and party n - 1 when s > 0: floor(n/K) sinks in every case, one of which is the
collector. For n <= 2r the graph would be complete: there the parties use the complete
graph K_n with levels 0..n-1 (n(n-1)/2 channels, one sink).

Message count (closed form, checked against the schedule in the tests)
------------------------------------------------------------------------
    n >= 2r + 1:  messages = n r + floor(n/K) - 1      (+ n - 1 with broadcast)
    2 <= n <= 2r: messages = n(n-1)/2                   (+ n - 1 with broadcast)

With r = ceil((t+1)/2): for odd t, n r = n(t+1)/2 exactly; for even t, n r = n(t+1)/2 + n/2
(the circulant has even degree; an odd-degree Harary graph would save those n/2
messages at the price of a longer proof). The collection messages floor(n/K) - 1 trade
against rounds: K = r + 1 (default) gives at most 2r rounds; K = n gives exactly n r
messages in n rounds. In every case |messages - n(t+1)/2| <= n (without broadcast).

Rounds: a party at level l sends in round l + 1, so the flow takes max(level of a
sender) + 1 rounds: K rounds when K divides n (the level-(K-1) sinks send in round K),
K + s - 1 <= 2K - 2 otherwise (the collector has the top level K + s - 1); one more round
with ``broadcast`` (the collector sends the released value to all). With the default
K = r + 1 that is at most 2r rounds.

Theorem (t-privacy). For |T| <= t, T's view depends on the other parties' inputs (and
noise) only through their sum when T contains the collector or ``broadcast`` is on, and
not at all otherwise.

Proof. By the flow-privacy lemma of :mod:`privsim.protocols.secure_sum` (this protocol is
a flow: one node per party, final node = the collector, edges = the oriented channels
plus sink -> collector), it suffices that the circulant minus any set S of at most t
parties is connected (the extra sink -> collector edges only add connectivity). Take two
remaining parties u, v; the circle splits into two arcs between them, and since
|S| <= t <= 2r - 1 one arc holds at most r - 1 parties of S. Walking along that arc,
consecutive remaining parties are at most r apart, hence adjacent: u and v are
connected. (For n <= 2r the graph is complete.) The released value then carries the
honest parties' noise, at least the full central noise, so the privacy claim is the
same as for :class:`~privsim.protocols.secure_sum.SecureSum`.

Examples
--------
>>> import privsim
>>> proto = CKSum(noise="none")
>>> res = privsim.simulate(proto, [1, 0, 1, 1, 0, 1, 1, 0, 0, 1], trials=2, seed=1, t=3)
>>> res.estimate.tolist(), res.messages, CKSum.message_count(10, 3)
([6.0, 6.0], 22, 22)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from privsim.errors import ParameterError
from privsim.mechanisms.sharing import reconstruct, share
from privsim.network.schedule import Schedule
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext
from privsim.protocols.base import Param
from privsim.protocols.secure_sum import DistributedNoiseSum, modulus_bits

__all__ = ["CKPlan", "CKSum", "ck_plan", "half_degree"]


def half_degree(t: int) -> int:
    """r = ceil((t+1)/2): each party is adjacent to i +- 1..r, 2r >= t+1 channels.

    >>> [half_degree(t) for t in range(6)]
    [1, 1, 2, 2, 3, 3]
    """
    return (t + 2) // 2


@dataclass(frozen=True)
class CKPlan:
    """The communication plan of :class:`CKSum` for one (n, t, K).

    Attributes
    ----------
    level:
        The level of every party (the orientation: channels go up).
    out:
        Each party's receivers: its higher-level neighbours, or ``(collector,)`` for a
        sink other than the collector, or ``()`` for the collector.
    collector:
        The party that ends with the sum (n - 1).
    flow_rounds:
        The number of rounds of the flow (the collector's last receiving round).

    >>> p = ck_plan(6, 1, 0)
    >>> p.level, p.out[0], p.out[1], p.collector, p.flow_rounds
    ((0, 1, 0, 1, 0, 1), (1, 5), (5,), 5, 2)
    """

    n: int
    r: int
    levels: int
    level: tuple[int, ...]
    out: tuple[tuple[int, ...], ...]
    collector: int
    flow_rounds: int

    @property
    def send_round(self) -> tuple[int, ...]:
        """The round in which each party sends (level + 1; 0 for the collector, which never sends).

        >>> ck_plan(6, 1).send_round
        (1, 2, 1, 2, 1, 0)
        """
        return tuple(0 if i == self.collector else lv + 1 for i, lv in enumerate(self.level))

    def neighbours(self, i: int) -> list[int]:
        """The circulant (or complete) graph's neighbours of party i.

        >>> ck_plan(10, 3).neighbours(0)
        [1, 2, 8, 9]
        """
        if self.n <= 2 * self.r:
            return [j for j in range(self.n) if j != i]
        return sorted({(i + d) % self.n for d in range(-self.r, self.r + 1) if d})


@lru_cache(maxsize=64)
def ck_plan(n: int, t: int, levels: int = 0) -> CKPlan:
    """Build the :class:`CKPlan` for n parties, threshold t and K = ``levels`` (0 = r + 1).

    Raises ParameterError when K is outside [r + 1, n] (for n >= 2r + 1).

    >>> ck_plan(7, 3, 0).level   # r = 2, K = 3: 0 1 2 0 1 2 | tail 3
    (0, 1, 2, 0, 1, 2, 3)
    """
    r = half_degree(t)
    if n <= 2 * r:  # the circulant would be complete: use K_n with levels = ids
        k = n
        level = np.arange(n)
        nbrs = np.array([[j for j in range(n) if j != i] for i in range(n)], dtype=np.int64).reshape(n, n - 1)
    else:
        k = levels or r + 1
        if not r + 1 <= k <= n:
            raise ParameterError(f"levels must be 0 (= r + 1 = {r + 1}) or in [{r + 1}, n = {n}] for t = {t} "
                                 f"(got {levels})")
        main = k * (n // k)
        ids = np.arange(n)
        level = np.where(ids < main, ids % k, k + (ids - main))
        nbrs = np.sort((ids[:, None] + np.array([d for d in range(-r, r + 1) if d])) % n, axis=1)  # distinct: n > 2r
    collector = n - 1
    higher = level[nbrs] > level[:, None]  # each party's higher-level neighbours, ascending
    ups, ends = nbrs[higher].tolist(), np.cumsum(higher.sum(axis=1)).tolist()
    out = [tuple(ups[a:b]) or (collector,) for a, b in zip([0, *ends], ends)]  # a sink: to the collector
    out[collector] = ()
    flow_rounds = max((lv + 1 for lv, o in zip(level.tolist(), out) if o), default=0)
    return CKPlan(n=n, r=r, levels=k, level=tuple(level.tolist()), out=tuple(out), collector=collector,
                  flow_rounds=flow_rounds)


class CKSum(DistributedNoiseSum):
    """t-private sum with about n(t+1)/2 messages: a random-share flow on the Harary graph H_{2r,n}.

    Same noise options, modulus rule and privacy claims as
    :class:`~privsim.protocols.secure_sum.SecureSum`; the module docstring gives the
    construction, the message count and the proof of t-privacy. The released value is
    computed by the collector, party n - 1.

    Examples
    --------
    >>> import privsim
    >>> proto = CKSum(noise="discrete-laplace", epsilon=1.0)
    >>> res = privsim.simulate(proto, [1] * 40, trials=500, seed=2, t=3)
    >>> res.messages == 40 * 2 + 40 // 3 - 1
    True
    >>> bool(abs(res.error.mean()) < 0.5)
    True
    """

    name = "ck-sum"
    levels = Param(0, type=int, ge=0, doc="levels K of the orientation (0 = r + 1, r = ceil((t+1)/2)); "
                                          "more levels: fewer messages, more rounds")

    @staticmethod
    def message_count(n: int, t: int, levels: int = 0, broadcast: bool = False) -> int:
        """The closed form: n r + floor(n/K) - 1 for n >= 2r + 1, else n(n-1)/2; + n - 1 with broadcast.

        >>> CKSum.message_count(100, 3), CKSum.message_count(100, 3, levels=100)
        (232, 200)
        """
        r = half_degree(t)
        k = levels or r + 1
        flow = n * r + n // k - 1 if n >= 2 * r + 1 else n * (n - 1) // 2
        return flow + ((n - 1) if broadcast else 0)

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        ck_plan(n, t, self.levels)  # refuses a bad number of levels

    def plan(self, n: int, t: int) -> CKPlan:
        """The :class:`CKPlan` of a run."""
        return ck_plan(n, t, self.levels)

    def output_party(self, n: int, t: int) -> int:
        return n - 1

    def sees_output(self, coalition: Sequence[int | str], n: int, t: int) -> bool:
        return self.broadcast or (n - 1) in coalition

    def schedule(self, n: int, t: int) -> Schedule:
        plan = self.plan(n, t)
        senders = np.repeat(np.arange(n), [len(tos) for tos in plan.out])
        receivers = np.fromiter((j for tos in plan.out for j in tos), dtype=np.int64, count=len(senders))
        at = np.asarray(plan.level)[senders]  # a party sends in the round after its level's
        rounds: list = [(senders[at == lv], receivers[at == lv]) for lv in range(plan.flow_rounds)]
        if self.broadcast:
            others = np.delete(np.arange(n), plan.collector)
            rounds.append((np.full(n - 1, plan.collector), others))
        return Schedule(n, rounds)

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """The parties other than the collector, by level and number of higher-level neighbours.

        >>> CKSum().cohorts(9, 2)
        {'level 0, 4 out': [0, 3, 6], 'level 1, 2 out': [1, 4, 7], 'level 2, 1 out': [2, 5]}
        """
        plan, roles = self.plan(n, t), {}
        for i in range(n):
            if i != plan.collector:
                roles.setdefault(f"level {plan.level[i]}, {len(plan.out[i])} out", []).append(i)
        return roles

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many parties of one level and out-degree at once."""
        n, t, ids = cctx.n, cctx.t, cctx.ids
        plan = self.plan(n, t)
        q = self.modulus_for(n, t)
        bits = modulus_bits(q)
        level, outs = plan.level[int(ids[0])], np.array([plan.out[i] for i in ids.tolist()], dtype=np.int64)
        total = self.contribution(cctx, q)  # (R, k): each member's running total mod q
        for rnd in range(1, level + 2):
            if rnd == level + 1:
                parts = share(cctx.rng, total, q, outs.shape[1], size=())  # (R, k, out)
                for j in range(outs.shape[1]):
                    cctx.send_each(outs[:, j], parts[:, :, j], bits=bits)
            inbox = await cctx.end_round()
            if inbox:
                total = (total + inbox.sum_mod(q)) % q
        await self._release(cctx, None, q, bits, wait=plan.flow_rounds - level - 1)

    async def party(self, ctx: PartyContext) -> None:
        n, t, me = ctx.n, ctx.t, ctx.id
        plan = self.plan(n, t)
        q = self.modulus_for(n, t)
        bits = modulus_bits(q)
        received = [self.contribution(ctx, q)]
        last = plan.flow_rounds if me == plan.collector else plan.level[me] + 1
        for rnd in range(1, last + 1):
            if rnd == plan.level[me] + 1 and plan.out[me]:
                total = reconstruct(np.stack(received, axis=-1), q)
                parts = share(ctx.rng, total, q, len(plan.out[me]), size=())  # uniform, summing to total
                for k, j in enumerate(plan.out[me]):
                    ctx.send(j, parts[:, k], bits=bits)
            inbox = await ctx.end_round()
            received.extend(inbox.values())
        total = reconstruct(np.stack(received, axis=-1), q) if me == plan.collector else None
        await self._release(ctx, total, q, bits, wait=plan.flow_rounds - last)  # after the flow's later rounds
