"""The shuffle model: binary randomized response through a shuffler (``shuffle-rr``).

The shuffle model (Bittau et al. 2017; Erlingsson et al. 2019; Cheu et al. 2019) puts a
trusted *shuffler* between the users and the curator: it permutes the messages it
receives uniformly at random before passing them on, so the curator sees the multiset of
reports, not who sent which. The shuffler is a component outside Beimel-Nissim-Omri's
model (there every party is a possibly curious participant and channels are
point-to-point), and it is what lets a protocol with n messages escape their
Omega(sqrt(n)) bound for protocols below n(t+1)/4 messages: the lonely parties'
neighbour here is the shuffler, and it is trusted.

The shuffler is an ordinary party: p_1 (party 0) plays it, and holds an input like
everyone else. Its own view counts only when it joins a coalition.

Schedule (n parties and the curator C)
---------------------------------------
- round 1: every party i >= 1 sends its report z_i to the shuffler: n - 1 messages;
- round 2: the shuffler sends C the multiset of the n reports (its own included): 1
  message of n bits.

A uniformly random permutation of bits carries exactly their count (any order is a
post-processing of the multiset with fresh randomness), so the shuffler forwards the
multiset in its canonical form, the number of ones K = sum z_i: n messages in all.

Randomized response with local epsilon eps0
-------------------------------------------
z_i = x_i with probability p = e^eps0 / (1 + e^eps0), else 1 - x_i: exactly eps0-LDP.
The curator estimates SUM(x) by f = (K - (1 - p) n) / (2p - 1), unbiased since
E K = (1 - p) n + (2p - 1) SUM(x), with Var f = n p (1 - p) / (2p - 1)^2 (every report is
Bernoulli with variance p(1 - p), whatever the input).

Privacy (per coalition T; the neighbour j is outside T)
-------------------------------------------------------
- T contains the shuffler (party 0): it sees every report with its sender: eps0.
- T contains C but not the shuffler: it sees K, minus the reports of its own members, so
  the count of the h = n - |T| honest reports; its law under the two neighbouring inputs
  is computable exactly (a convolution of Bernoullis,
  :func:`privsim.mechanisms.shuffle_accounting.rr_count_epsilon`, worst case over the
  other inputs): the claim is that exact (epsilon, delta) at ``delta``, with the
  amplification bound of Feldman, McMillan and Talwar (FOCS 2021), computed numerically
  as they do and valid for any eps0-LDP randomizer, as the ``paper`` claim beside it.
- otherwise (users only): Privacy(0), nothing they see depends on the others' inputs.
- ``public`` (the release K): as C alone.

Examples
--------
>>> import privsim
>>> rr = ShuffleRR(epsilon=2.0)
>>> res = privsim.simulate(rr, [1] * 60 + [0] * 40, trials=2000, seed=2)
>>> res.messages, res.rounds
(100, 2)
>>> bool(abs(res.estimate.mean() - 60) < 5 * (rr.variance(100) / 2000) ** 0.5)
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privsim.mechanisms.shuffle_accounting import (
    fmt_closed_form,
    fmt_epsilon,
    rr_count_epsilon,
    rr_keep_probability,
)
from privsim.network.messages import seal
from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext
from privsim.protocols.base import AuditScoreContext, Param, Privacy, Protocol

__all__ = ["EXACT_LIMIT", "SHUFFLER", "ShuffleRR"]

#: The party that plays the shuffler (p_1).
SHUFFLER = 0

#: Above this many unknown reports the exact count law (O(h^2) memory and time) is not
#: computed; the claim is then the FMT bound, which holds for every eps0-LDP randomizer.
EXACT_LIMIT = 4096


class ShuffleRR(Protocol):
    """Binary randomized response (local epsilon ``epsilon``) through a shuffler (party 0) to the curator.

    See the module docstring for the schedule, the estimator and the claims.

    Examples
    --------
    >>> p = ShuffleRR(epsilon=2.0, delta=1e-6)
    >>> c = p.privacy(("C",), 1000, 999)
    >>> round(c.epsilon, 3), round(c.paper.epsilon, 3), p.privacy((0, "C"), 1000, 999).epsilon
    (0.323, 0.545, 2.0)
    """

    name = "shuffle-rr"
    has_curator = True
    epsilon = Param(1.0, gt=0, doc="local epsilon eps0 of each report (randomized response)")
    delta = Param(1e-6, gt=0, lt=1, doc="delta of the (epsilon, delta) claims towards the curator")

    @property
    def p(self) -> float:
        """The probability p = e^eps0 / (1 + e^eps0) that a report is the true bit."""
        return rr_keep_probability(self.epsilon)

    def variance(self, n: int) -> float:
        """Var f = n p (1 - p) / (2p - 1)^2 of the estimate of SUM(x).

        >>> round(ShuffleRR(epsilon=2.0).variance(100), 4)
        18.1015
        """
        p = self.p
        return n * p * (1 - p) / (2 * p - 1) ** 2

    def debias(self, count: Any, n: int) -> np.ndarray:
        """f = (K - (1 - p) n) / (2p - 1), the unbiased estimate of SUM(x) from the count K."""
        return (np.asarray(count, dtype=float) - (1 - self.p) * n) / (2 * self.p - 1)

    def schedule(self, n: int, t: int) -> Schedule:
        return Schedule(n, [[(i, SHUFFLER) for i in range(n) if i != SHUFFLER], [(SHUFFLER, CURATOR)]],
                        curator=True)

    def report(self, ctx: PartyContext) -> np.ndarray:
        """z = x with probability p, else 1 - x (one uniform per trial)."""
        keep = ctx.rng.random() < self.p
        # order="F": a cohort's (trials, k) reports member-major, as its draws are (each
        # member's reports contiguous, so the shuffler reads each as a party's own); the
        # same values, and for one party's (trials,) the same array either way
        return np.equal(keep, np.asarray(ctx.input) == 1, order="F").astype(np.int64)

    async def party(self, ctx: PartyContext) -> None:
        z = self.report(ctx)
        if ctx.id != SHUFFLER:
            ctx.send(SHUFFLER, z, bits=1)
            await ctx.end_round()
            return
        inbox = await ctx.end_round()
        # the multiset of the n reports in canonical form: the number of ones
        count = z + sum(np.asarray(v, dtype=np.int64) for v in inbox.values())
        ctx.send(CURATOR, count, bits=ctx.n)
        await ctx.end_round()

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """The users 1..n-1, who send their reports to the shuffler (party 0, alone).

        >>> ShuffleRR().cohorts(4, 0)
        {'users': range(1, 4)}
        """
        return {"users": range(1, n)}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many users at once."""
        # report() reads only rng and input; its array is new, so it is sent without a copy
        cctx.send(SHUFFLER, seal(self.report(cctx)), bits=1)  # type: ignore[arg-type]
        await cctx.end_round()

    async def curator(self, ctx: PartyContext) -> None:
        await ctx.end_round()
        ctx.output(np.asarray((await ctx.end_round())[SHUFFLER], dtype=np.int64))

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return self.debias(outputs[CURATOR], n)

    # ------------------------------------------------------------------ privacy
    def curator_claim(self, honest: int) -> Privacy:
        """The claim towards a view of the count of ``honest`` unknown reports: exact, FMT as paper.

        >>> ShuffleRR(epsilon=2.0).curator_claim(100).paper.epsilon > 1.99  # FMT: no amplification at n = 100
        True
        """
        fmt = Privacy(fmt_epsilon(self.delta, self.epsilon, honest), self.delta)
        if honest > EXACT_LIMIT:
            return fmt  # still a true claim: FMT holds for any eps0-LDP randomizer, RR included
        exact = Privacy(rr_count_epsilon(self.delta, self.epsilon, honest), self.delta)
        return exact.with_paper(fmt)

    def amplification(self, n: int) -> dict[str, float | None]:
        """The curator's epsilon at ``delta`` three ways: exact (None above :data:`EXACT_LIMIT`), FMT
        numerical, FMT closed form (None outside its condition); and the local eps0.

        >>> {k: round(v, 3) for k, v in ShuffleRR(epsilon=2.0).amplification(1000).items() if v is not None}
        {'exact': 0.323, 'fmt_numerical': 0.545, 'local': 2.0}
        """
        return {"exact": rr_count_epsilon(self.delta, self.epsilon, n) if n <= EXACT_LIMIT else None,
                "fmt_numerical": fmt_epsilon(self.delta, self.epsilon, n),
                "fmt_closed_form": fmt_closed_form(self.delta, self.epsilon, n),
                "local": float(self.epsilon)}

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        if SHUFFLER in coalition:
            return Privacy(self.epsilon)  # every report with its sender: randomized response, exactly eps0
        if CURATOR in coalition:
            return self.curator_claim(n - sum(1 for m in coalition if m != CURATOR))
        return Privacy(0.0)  # users see only their own reports

    def public_privacy(self, n: int, t: int) -> Privacy | None:
        return self.curator_claim(n)  # the release is the count K itself

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
        # The count (or, with the shuffler, the neighbour's own report) is all the view says about x_j.
        j, columns = ctx.neighbor, list(ctx.columns)
        names = [f"msg r1 {j}->{SHUFFLER}", f"msg r2 {SHUFFLER}->{CURATOR}", f"output {CURATOR}"]
        idx = next((columns.index(c) for c in names if c in columns), None)
        if idx is None or ctx.x is None or ctx.x_prime is None:
            return None
        sign = 1.0 if float(np.asarray(ctx.x)[j]) > float(np.asarray(ctx.x_prime)[j]) else -1.0
        return lambda views: sign * views[:, idx]
