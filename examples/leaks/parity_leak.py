"""A secure sum whose noise-share holder also tells party 0 its share's parity (a leak in two columns).

Run the audit (generic: no ``audit_score``) from the repository root::

    privsim audit --protocol examples/leaks/parity_leak.py:ParityLeakSum --n 8 --t 1 \
        --coalition 0 --neighbor 2 --trials 1000000 --seed 1

The protocol: t + 1 share holders (parties 0..t) receive additive shares mod q of every
party's contribution, add them, and the holders 1..t send their partial sums to party 0,
which releases ``y = sum x_i + C + N``. The noise comes in two shares:

- party n - 2 adds a *coin* C in {0, 1}, 1 with probability p = 1/(1 + e^(1.9 eps));
- party n - 1, the *noise-share holder*, adds N ~ discrete Laplace, Pr[N = k] ~ e^(-c|k|)
  with c = eps/20, and (the leak) also sends ``N mod 2`` to party 0 in round 2.

Exact privacy loss (neighbouring bit sums s and s + 1):

- the released value alone: y - s = C + N is a mixture over C of shifted N, and each
  ratio Pr[N = k]/Pr[N = k - 1] lies in [e^-c, e^c], so the loss is at most c = eps/20
  (attained in the tails): the claim ``eps`` for a coalition of at most t parties holds;
- with the parity b = N mod 2: (y - b) mod 2 = (s + C) mod 2, a randomized-response bit
  about s with ratio (1 - p)/p = e^(1.9 eps), and given b, N = b + 2H with
  Pr[H = h | b] ~ e^(-c|2h + b|), whose ratios for a shift of one in h lie in
  [e^-2c, e^2c]. The loss is ln((1 - p)/p) + 2c = 1.9 eps + 0.1 eps = 2 eps, attained
  (in the tails), so it is exactly 2 eps: twice the claim.

The parity column alone is a fair coin, independent of the input, and y alone says
almost nothing (loss eps/20); the leak lives in (y - b) mod 2, a function of two columns.
Any t parties' shares of a contribution are uniform mod q, so party 0's view is, in law,
(y, b) plus independent uniform shares: :func:`exact_loss` is the loss of the view.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from privsim import Param, ParameterError, Privacy, Protocol, Schedule
from privsim.mechanisms.sharing import reconstruct, share, to_signed

__all__ = ["ParityLeakSum", "exact_loss"]

#: The modulus: |noise| stays far below q/2 - n (Pr[|N| > 30000] < e^-1500 at eps = 1).
MODULUS = 1 << 16


class ParityLeakSum(Protocol):
    """Secure sum of bits with a two-share noise; the noise-share holder leaks its share's parity.

    Examples
    --------
    >>> import privsim
    >>> res = privsim.simulate(ParityLeakSum(), [1, 0, 1, 1, 0, 0], trials=2000, seed=1, t=1)
    >>> res.messages, res.rounds, bool(abs(res.estimate.mean() - 3) < 3)
    (12, 2, True)
    >>> round(exact_loss(1.0), 6)
    2.0
    """

    name = "parity-leak-sum"
    epsilon = Param(1.0, gt=0, doc="the privacy claimed for the released sum (the true loss is 2 eps)")

    @property
    def coin_p(self) -> float:
        """Pr[C = 1] = 1/(1 + e^(1.9 eps)): the coin is a 1.9 eps randomized response bit."""
        return 1.0 / (1.0 + math.exp(1.9 * self.epsilon))

    @property
    def noise_c(self) -> float:
        """The decay rate c = eps/20 of the holder's discrete Laplace share."""
        return self.epsilon / 20

    def default_t(self, n: int) -> int:
        return 1

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        if n < t + 3:
            raise ParameterError(f"n must be >= t + 3 (two noise parties outside the holders); got n={n}, t={t}")

    def schedule(self, n: int, t: int) -> Schedule:
        holders = range(t + 1)
        return Schedule(n, [
            [(i, j) for i in range(n) for j in holders if i != j],       # shares to the holders
            [(j, 0) for j in range(1, t + 1)] + [(n - 1, 0)],            # partial sums; the parity leak
        ])

    def _noise(self, ctx) -> np.ndarray:  # noqa: ANN001 - a PartyContext
        trials = np.shape(ctx.input)
        if ctx.id == ctx.n - 2:
            return ctx.rng.bernoulli(self.coin_p, size=()).astype(np.int64).reshape(trials)
        if ctx.id == ctx.n - 1:
            a = math.exp(-self.noise_c)  # N = G1 - G2 with G ~ Geometric(1 - a) on {0, 1, ...}
            return (ctx.rng.geometric(1 - a, size=()) - ctx.rng.geometric(1 - a, size=())).astype(np.int64)
        return np.zeros(trials, dtype=np.int64)

    async def party(self, ctx) -> None:  # noqa: ANN001 - a PartyContext
        t, me, q = ctx.t, ctx.id, MODULUS
        noise = self._noise(ctx)
        shares = share(ctx.rng, (np.asarray(ctx.input, dtype=np.int64) + noise) % q, q, t + 1, size=())
        for j in range(t + 1):
            if j != me:
                ctx.send(j, shares[:, j], bits=16)
        inbox = await ctx.end_round()
        if me <= t:
            partial = reconstruct(np.stack([shares[:, me], *inbox.values()], axis=-1), q)
            if me != 0:
                ctx.send(0, partial, bits=16)
            inbox = await ctx.end_round()
            if me == 0:  # the holders' partial sums (not the parity message)
                partials = [partial] + [inbox[j] for j in range(1, t + 1)]
                ctx.output(to_signed(reconstruct(np.stack(partials, axis=-1), q), q))
        elif me == ctx.n - 1:
            ctx.send(0, noise % 2, bits=1)  # the leak: "only a parity bit"
            await ctx.end_round()

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[0], dtype=float) - self.coin_p

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        # The designer's claim: any t parties see shares that are uniform, plus (party 0)
        # the released value, which is eps-DP. The parity message breaks it (exact_loss).
        return Privacy(self.epsilon) if len(coalition) <= t else None


def exact_loss(epsilon: float) -> float:
    """The exact privacy loss of party 0's view (released sum and parity), by enumeration.

    Sums the pmf of (y - s, b) = (C + N, N mod 2) over |N| <= K and returns the largest
    |log ratio| between the outcomes under s and s + 1 (it is attained in the tails, so
    the enumeration is cut where the tails are still many times above double precision).

    >>> round(exact_loss(0.5), 6)
    1.0
    """
    proto = ParityLeakSum(epsilon=epsilon)
    p = proto.coin_p
    k = np.arange(-int(400 / proto.noise_c), int(400 / proto.noise_c) + 1)
    log_n = -proto.noise_c * np.abs(k)  # log pmf of N, up to a constant
    ratios = []
    for b in (0, 1):
        m = k[k % 2 == b]
        log_pm = log_n[k % 2 == b]
        # z = C + N with N = m: z = m (C = 0) or m + 1 (C = 1); pmf of z given b, shifted by s.
        z = np.arange(m.min(), m.max() + 2)
        pz = np.zeros(z.size)
        pz[m - z[0]] += (1 - p) * np.exp(log_pm)
        pz[m + 1 - z[0]] += p * np.exp(log_pm)
        inner = pz[1:-1] > 1e-250
        ratios.append(np.abs(np.log(pz[1:-1][inner]) - np.log(pz[:-2][inner])).max())
    return float(max(ratios))
