"""Real summation in the multi-message shuffle model (``shuffle-sum``).

The protocol of Balle, Bell, Gascon and Nissim ("Private Summation in the Multi-Message
Shuffle Model", CCS 2020, the IKOS-based protocol of their Section 5): every party rounds
its real input x_i in [0, 1] to precision p, adds its share of discrete Laplace noise,
and splits the result into m additive shares mod q (the "split and mix" of Ishai,
Kushilevitz, Ostrovsky and Sahai, FOCS 2006); a trusted shuffler (party 0, p_1, which
also holds an input) forwards the multiset of all n m shares to the curator, who adds
them up. The shuffler is a component outside Beimel-Nissim-Omri's model, as for
:mod:`privsim.protocols.shuffle`.

Encoding and noise (per party i; b = p/epsilon, r = 1/(n - t))
------------------------------------------------------------
- randomized rounding: xbar_i = floor(x_i p) + Bern(frac(x_i p)), unbiased for x_i p,
  variance f_i (1 - f_i) with f_i = frac(x_i p) (0 for inputs on the grid, as 0/1);
- noise: z_i = NB(r, 1 - a) - NB(r, 1 - a), a = e^(-1/b) (Polya shares,
  :func:`privsim.mechanisms.noise.discrete_laplace_share`): any n - t of them sum to at
  least the discrete Laplace of scale b, exactly epsilon-DP for the sensitivity p of a
  rounded input. With the default t = 0 every party adds 1/n of it, as in the paper;
- y_i = xbar_i + z_i mod q, split into m shares uniform among those with sum y_i.

The curator adds the n m shares mod q and releases to_signed(total)/p, an unbiased
estimate of SUM(x) (the sum wraps around mod q with probability at most 2^-40: q is the
smallest power of two above 2 (n p + B), B the noise's tail bound at 2^-40), with

    Var = (sum_i f_i (1 - f_i) + n/(n - t) Var DLap(b)) / p^2,   Var DLap(b) = 2a/(1-a)^2,

about n/(4 p^2) + 2/epsilon^2: with the default p = ceil(sqrt(n)), O(1/epsilon).

Schedule (n parties and the curator C)
--------------------------------------
- rounds 1..m: every party i >= 1 sends its k-th share to the shuffler in round k;
- round m + 1: the shuffler sends C the multiset of the n m shares (its own included),
  sorted (the canonical form of a multiset: a uniform permutation of it is a
  post-processing with fresh randomness), as one message of n m ceil(log2 q) bits.

    messages = (n - 1) m + 1,   bits = (2n - 1) m ceil(log2 q),   rounds = m + 1.

The m shares travel in m rounds only because a channel carries one message per round in
privsim's network (docs/architecture.md, "Where a message moves"); in the shuffle model
they leave together, and nothing here depends on their order: the rounds serialize, they
do not interact.

The number of messages m
------------------------
``messages = 0`` takes the smallest m for which the split-and-mix bound of
:func:`privsim.mechanisms.shuffle_accounting.split_mix_delta` gives delta <= ``delta``
towards the curator: the multiset of the n m shares is within
s = sqrt(chi^2)/2 in total variation of a law that depends on the y_i only through their
sum, where chi^2 = E[q^(c-1)] - 1 is computed exactly (c: the number of components of a
random bipartite m-regular multigraph; above 129 parties a bounded tail makes it an upper
bound; see that module). The paper states that O(1 + sigma/log n) messages give
statistical distance 2^-sigma; its theorem's constants could not be checked here (only
its abstract's example, 12 messages for 2^-40 at n = 10^4 and q = 2^32, where the bound
used here needs 10), so the claims below rest on that computation alone, and no paper
claim is attached.

Privacy (per coalition T; the neighbour j is outside T)
-------------------------------------------------------
- T contains the shuffler (party 0): it sees every share with its sender, so y_j =
  xbar_j + z_j, with only j's own noise share z_j unknown: pure epsilon_local =
  ln(W(0)/W(p)), W the pmf of NB(r) - NB(r)
  (:func:`~privsim.mechanisms.shuffle_accounting.polya_difference_epsilon`; exact, for
  every coalition that holds the shuffler).
- T contains C but not the shuffler, with k users: it removes its members' shares from
  the multiset and faces the h = n - k honest ones. Their sum holds the noise shape
  h/(n - t): epsilon_h = epsilon when h >= n - t, else the Polya-difference epsilon of
  that shape; and the honest multiset is within s_h of a function of that sum, so the
  claim is (epsilon_h, (1 + e^epsilon_h) s_h). Every view is also a post-processing of
  all the y_i, so epsilon_local holds too; the claim is the first where its delta is at
  most ``delta``, else the second.
- users only: Privacy(0): they see only their own shares.
- ``public`` (the release): the sum with all n noise shares: epsilon.

Examples
--------
>>> import privsim
>>> proto = ShuffleSum(epsilon=1.0, messages=4)
>>> res = privsim.simulate(proto, [0.25] * 12 + [0.75] * 12, trials=400, seed=3)
>>> res.messages, res.rounds, res.messages == 23 * 4 + 1
(93, 5, True)
>>> bool(abs(res.estimate.mean() - 12.0) < 5 * (proto.variance(24, 0, [0.25] * 12 + [0.75] * 12) / 400) ** 0.5)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privsim.errors import ParameterError
from privsim.mechanisms.noise import (
    discrete_laplace_share,
    discrete_laplace_shares_variance,
    discrete_laplace_tail_bound,
)
from privsim.mechanisms.sharing import choose_modulus, reconstruct, share, share_unchecked, to_signed
from privsim.mechanisms.shuffle_accounting import polya_difference_epsilon, split_mix_delta, split_mix_messages
from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext
from privsim.protocols.base import AuditScoreContext, Param, Privacy, Protocol, _check_domain
from privsim.protocols.secure_sum import WRAP_FAILURE_LOG2, modulus_bits
from privsim.protocols.shuffle import SHUFFLER

__all__ = ["MAX_MESSAGES", "ShuffleSum"]

#: The largest number of shares per party that ``messages = 0`` considers.
MAX_MESSAGES = 64


class ShuffleSum(Protocol):
    """Real summation through a shuffler (party 0): rounded inputs plus Polya noise shares, split into m shares.

    See the module docstring for the encoding, the schedule, the choice of m, the
    estimator and the claims.

    Examples
    --------
    >>> p = ShuffleSum(epsilon=1.0, delta=1e-6)
    >>> p.precision_for(100), p.modulus_for(100, 0), p.messages_for(100, 0)
    (10, 4096, 9)
    >>> c = p.privacy(("C",), 100, 0)
    >>> c.epsilon, c.delta <= 1e-6, round(p.privacy((0,), 100, 0).epsilon, 3)
    (1.0, True, 7.866)
    """

    name = "shuffle-sum"
    has_curator = True
    input_values = None  # reals in [0, 1], checked in validate_inputs
    input_dtype = np.float64
    epsilon = Param(1.0, gt=0, doc="epsilon of the discrete Laplace noise of the sum (the curator's and "
                                   "the public's claim)")
    delta = Param(1e-6, gt=0, lt=1, doc="the largest delta the mixing may add towards the curator (sets m "
                                        "when messages = 0)")
    messages = Param(0, type=int, ge=0, le=MAX_MESSAGES, doc="shares per party m; 0 = the fewest that meet "
                                                             "delta by the split-and-mix bound")
    precision = Param(0, type=int, ge=0, le=2**20, doc="fixed-point precision p of the rounded inputs; "
                                                       "0 = ceil(sqrt(n))")

    def default_t(self, n: int) -> int:
        """t = 0: every party adds 1/n of the noise, as in the paper (t > 0 over-provisions it)."""
        return 0

    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        return _check_domain(inputs, ~np.isfinite(inputs) | (inputs < 0) | (inputs > 1), "of reals in [0, 1]")

    # ------------------------------------------------------------------ calibration
    def precision_for(self, n: int) -> int:
        """p: ``precision``, or ceil(sqrt(n)) (rounding then adds at most n/(4 p^2) <= 1/4 to the variance)."""
        return self.precision or math.isqrt(n - 1) + 1

    def laplace_b(self, n: int) -> float:
        """The scale b = p/epsilon of the discrete Laplace that any n - t noise shares hold."""
        return self.precision_for(n) / self.epsilon

    def modulus_for(self, n: int, t: int) -> int:
        """q: the smallest power of two above 2 (n p + B), B the noise's tail bound at 2^-40."""
        def compute() -> int:
            bound = discrete_laplace_tail_bound(self.laplace_b(n), n - t, n, WRAP_FAILURE_LOG2)
            return choose_modulus(n * self.precision_for(n), bound)
        return self._memo(("q", n, t), compute)

    def messages_for(self, n: int, t: int) -> int:
        """m: ``messages``, or the fewest shares per party whose mixing adds at most ``delta`` at the curator.

        Raises
        ------
        ParameterError
            If no m <= :data:`MAX_MESSAGES` meets ``delta``.
        """
        if self.messages:
            return self.messages

        def compute() -> int:
            q = self.modulus_for(n, t)
            m = split_mix_messages(self.epsilon, self.delta, n, q, MAX_MESSAGES)
            if m is None:
                raise ParameterError(f"delta = {self.delta:g} is out of reach for n = {n}: no m <= {MAX_MESSAGES} "
                                     f"shares mod q = {q} mix that well (allowed: a larger delta, or messages=M)")
            return m
        return self._memo(("m", n, t), compute)

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        self.messages_for(n, t)  # an unreachable delta fails before the run

    # ------------------------------------------------------------------ schedule and parties
    def schedule(self, n: int, t: int) -> Schedule:
        users = [(i, SHUFFLER) for i in range(n) if i != SHUFFLER]
        return Schedule(n, [users] * self.messages_for(n, t) + [[(SHUFFLER, CURATOR)]], curator=True)

    def encode(self, ctx: PartyContext | CohortContext, q: int) -> np.ndarray:
        """y = floor(x p) + Bern(frac(x p)) + (this party's noise share), mod q (trial axis first)."""
        p = self.precision_for(ctx.n)
        scaled = np.asarray(ctx.input, dtype=np.float64) * p
        low = np.floor(scaled)
        rounded = low.astype(np.int64) + (ctx.rng.random() < scaled - low)
        noise = discrete_laplace_share(ctx.rng, self.laplace_b(ctx.n), ctx.n - ctx.t, size=())
        return (rounded + noise) % q

    async def party(self, ctx: PartyContext) -> None:
        q = self.modulus_for(ctx.n, ctx.t)
        m = self.messages_for(ctx.n, ctx.t)
        bits = modulus_bits(q)
        shares = share(ctx.rng, self.encode(ctx, q), q, m, size=())  # (R, m)
        received = []
        for k in range(m):
            if ctx.id != SHUFFLER:
                ctx.send(SHUFFLER, shares[:, k], bits=bits)
            inbox = await ctx.end_round()
            received.extend(inbox.values())
        if ctx.id == SHUFFLER:
            multiset = np.sort(np.concatenate([shares, np.stack(received, axis=1)], axis=1), axis=1)
            ctx.send(CURATOR, multiset, bits=ctx.n * m * bits)
            await ctx.end_round()

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """The users: every party but the shuffler (who runs alone).

        >>> ShuffleSum().cohorts(5, 0)
        {'users': [1, 2, 3, 4]}
        """
        return {"users": [i for i in range(n) if i != SHUFFLER]}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many users at once: each sends its m shares, one per round."""
        q = self.modulus_for(cctx.n, cctx.t)
        m = self.messages_for(cctx.n, cctx.t)
        bits = modulus_bits(q)
        shares = share_unchecked(cctx.rng, self.encode(cctx, q), q, m, ())  # (R, k, m); q, m checked by the run
        for k in range(m):
            cctx.send(SHUFFLER, shares[:, :, k], bits=bits)
            await cctx.end_round()

    async def curator(self, ctx: PartyContext) -> None:
        q = self.modulus_for(ctx.n, ctx.t)
        await ctx.idle(self.messages_for(ctx.n, ctx.t))
        multiset = (await ctx.end_round())[SHUFFLER]
        ctx.output(to_signed(reconstruct(multiset, q), q) / self.precision_for(ctx.n))

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[CURATOR], dtype=float)

    # ------------------------------------------------------------------ accuracy
    def noise_variance(self, n: int, t: int) -> float:
        """n/(n - t) Var DLap(b) / p^2: the error variance when every x_i p is an integer (e.g. 0/1 inputs).

        >>> round(ShuffleSum(epsilon=1.0, precision=10).noise_variance(100, 0), 4)  # about 2/epsilon^2
        1.9983
        """
        p = self.precision_for(n)
        return float(discrete_laplace_shares_variance(self.laplace_b(n), n - t, n)) / p**2

    def variance(self, n: int, t: int, inputs: Any) -> float:
        """The exact error variance: (sum_i f_i (1 - f_i) + noise) / p^2, f_i = frac(x_i p).

        >>> round(ShuffleSum(epsilon=1.0, precision=10).variance(100, 0, [0.05] * 100), 4)  # + 100/4/100
        2.2483
        """
        scaled = np.asarray(inputs, dtype=np.float64) * self.precision_for(n)
        frac = scaled - np.floor(scaled)
        return self.noise_variance(n, t) + float(np.sum(frac * (1 - frac))) / self.precision_for(n) ** 2

    # ------------------------------------------------------------------ privacy
    def local_epsilon(self, n: int, t: int, shape: float | None = None) -> float:
        """The pure epsilon of y_j against an observer who misses only noise of Polya shape ``shape``
        (default: j's own share, 1/(n - t))."""
        shape = 1.0 / (n - t) if shape is None else shape
        return polya_difference_epsilon(self.epsilon, self.precision_for(n), shape)

    def curator_claim(self, honest: int, n: int, t: int) -> Privacy:
        """The claim towards the curator with n - ``honest`` users: the mixed sum's (epsilon_h, delta_h)
        where delta_h <= ``delta``, else the pure epsilon_local (see the module docstring).

        >>> ShuffleSum(epsilon=1.0).curator_claim(100, 100, 0).epsilon
        1.0
        """
        eps_h = self.local_epsilon(n, t, honest / (n - t))
        delta_h = split_mix_delta(eps_h, honest, self.messages_for(n, t), self.modulus_for(n, t))
        return Privacy(eps_h, delta_h) if delta_h <= self.delta else Privacy(self.local_epsilon(n, t))

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        if SHUFFLER in coalition:
            return Privacy(self.local_epsilon(n, t))  # every share with its sender: y_j itself
        if CURATOR in coalition:
            return self.curator_claim(n - sum(1 for member in coalition if member != CURATOR), n, t)
        return Privacy(0.0)  # users see only their own shares

    def public_privacy(self, n: int, t: int) -> Privacy | None:
        return Privacy(self.epsilon)  # the release: the rounded sum plus all n noise shares (>= n - t)

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
        """The neighbour's y_j (with the shuffler: the sum of its m shares) or the released sum, signed
        towards x: all the view says about x_j, up to noise that does not depend on it."""
        if ctx.x is None or ctx.x_prime is None:
            return None
        n, t, j = ctx.n, ctx.t, ctx.neighbor
        sign = 1.0 if float(np.asarray(ctx.x)[j]) > float(np.asarray(ctx.x_prime)[j]) else -1.0
        own = ctx.find("msg", sender=j, receiver=SHUFFLER)
        if SHUFFLER in ctx.coalition and own:
            q = self.modulus_for(n, t)
            return lambda views: sign * to_signed(np.rint(views[:, own]).astype(np.int64).sum(axis=1) % q, q)
        out = ctx.index("output", party=CURATOR)
        return None if out is None else (lambda views: sign * views[:, out])
