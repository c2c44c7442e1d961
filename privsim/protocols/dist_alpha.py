"""DIST_alpha: the minimum weight of an n^alpha-long substring (Beimel–Nissim–Omri, Section 3).

Party p_i (party ``i - 1``) holds bit x_i of an n-bit string. DIST_alpha(x) is the least
number of ones in any substring of n^alpha consecutive bits. The paper's 3-round protocol
chooses *what* to compute together with *how*:

- The string is cut into K = n/L disjoint intervals of L = n^(alpha/3) bits. The minimum
  over windows that start at an interval boundary and span W = n^(2 alpha/3) intervals
  (n^alpha bits) is an additive L-approximation of DIST_alpha (Section 3).
- Round 1: every party draws Gaussian noise Y_i, encodes x_i + Y_i in fixed point with
  d = ceil(log2 n) binary digits (footnote 6: "log n digits after the point") and splits
  it into t + 1 additive shares mod q, one for each of p_1..p_{t+1} (parties 0..t).
- Round 2: each share holder adds, per interval, the shares it holds and sends the K
  sums to p_1 (party 0).
- Round 3: p_1 adds the t + 1 sums of each interval, which is
  S_k = sum_{j in I_k} (x_j + Y_j) = x(I_k) + Z_k, outputs the minimum over windows of
  W consecutive S_k, and sends it to every other party. (Step 4 of the paper writes
  min_k sum_{j=k}^{k+n^(2 alpha/3)} S_k; the summand must be S_j and the window
  j = k..k+W-1, W intervals, to cover n^alpha bits.)

**Rounding of L and W.** ``L = floor(n^(alpha/3) + 1/2)`` (at least 1) and
``W = floor(n^alpha / L + 1/2)`` (at least 1), so the window is ``m = L W`` bits, the
multiple of L nearest n^alpha. When n^(alpha/3) is an integer (e.g. n = 16, alpha = 0.75:
L = 2, W = 4, m = 8) these are exactly the paper's n^(alpha/3) and n^(2 alpha/3). The
setting must satisfy: L divides n (the paper's n^(1 - alpha/3) whole intervals), m <= n,
and 2t < n (the paper's condition; its "t <= n/2" elsewhere admits t = n/2, which
"2t < n" does not).

**The noise variance: two readings of the paper.** With R = 2 ln(2/delta)/eps^2 (the
paper's "log", read as the natural logarithm of the Gaussian mechanism) the paper says
both Var Y_i = 2R/n and Z_k = sum of the L noises of an interval ~ N(0, 2R); these
agree only when L = n. Parameter ``noise_reading`` picks one:

- ``"per-interval"`` (the default): Var Y_i = 2R/L, so Z_k ~ N(0, 2R) exactly as the
  paper's step 3 states. This is the reading under which its claims hold together:
  each x_j lies in exactly one interval, so the vector (S_k) has sensitivity 1 and
  N(0, 2R) = N(0, 4 ln(2/delta)/eps^2) is more than the classical Gaussian mechanism's
  2 ln(1.25/delta)/eps^2 (eps < 1), i.e. the S_k that p_1 learns are (eps, delta)-DP
  towards a party none of whose interval-mates is in the coalition; and a window
  sum carries noise N(0, 2 R W) with sqrt(W) = n^(alpha/3), which is the stated error
  O~(n^(alpha/3)/eps).
- ``"per-party"``: Var Y_i = 2R/n as written in step 1. Then Z_k ~ N(0, 2R L/n), far less
  noise (the window noise is sqrt(L/n) times the per-interval one),
  and p_1 sees every S_k with it: the (eps, delta) claim cannot hold for p_1 unless L = n.

``sigma2`` overrides Var Y_i directly (``sigma2 = 0``: no noise, for exactness checks).

**Privacy claim** (:meth:`DistAlpha.privacy`): for a coalition of at most t parties, the
exact (epsilon, delta) of the Gaussian noise it faces, with the paper's blanket claim
(Section 3: "(t, eps, delta)-differentially private when 2t < n") reported beside it. A
coalition that contains p_1 and m_k members of interval k knows their Y_j and faces only
(L - m_k) Var Y_i on a neighbour in interval k, so its exact epsilon exceeds the paper's
eps once m_k > 0 (1.12 at n = 256 for {0, 1, 2}): the paper's claim is not what the
mathematics gives, and privsim does not ship it. No claim for larger coalitions (t + 1
share holders can reconstruct every x_i + Y_i), nor where no noise is left.

**Cost** (per run, n >= 2): messages ``(n - 1)(t + 1)`` in round 1 (every party to every
share holder other than itself), ``t`` in round 2, ``n - 1`` in round 3:
``M = (n - 1)(t + 2) + t``. Bits: ``log2 q`` per share, ``K log2 q`` per round-2 message,
64 per round-3 message. 3 rounds.

**The estimate** is p_1's output, the minimum of the noisy window sums. The true value is
DIST over *all* n - m + 1 substrings of m bits (not only the interval-aligned ones);
:meth:`DistAlpha.aligned_value` is the aligned minimum, which lies in
[true, true + L - 1]. p_1's output is the pair (estimate, S_1..S_K): p_1 learns the S_k
(the paper's footnote 7), so they belong to its view.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privsim.errors import ParameterError
from privsim.mechanisms import accounting
from privsim.mechanisms.noise import gaussian_share, gaussian_tail_bound
from privsim.mechanisms.sharing import choose_modulus, decode_fixed, encode_fixed, reconstruct, share
from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.context import PartyContext
from privsim.protocols.base import Param, Privacy, Protocol

__all__ = ["DistAlpha", "window_minimum"]

#: Bits of a round-3 message (the float64 result).
RESULT_BITS = 64


def window_minimum(values: np.ndarray, width: int, step: int = 1) -> np.ndarray:
    """The minimum over windows of ``width`` consecutive entries along the last axis.

    Windows start at every multiple of ``step`` (``step = 1``: all windows) and lie inside
    the array.

    >>> window_minimum(np.array([[1, 0, 0, 1, 1, 1]]), 3).tolist()
    [1]
    >>> window_minimum(np.array([[1, 0, 0, 1, 1, 1]]), 2, step=2).tolist()
    [1]
    """
    values = np.asarray(values)
    csum = np.concatenate([np.zeros((*values.shape[:-1], 1), dtype=values.dtype),
                           np.cumsum(values, axis=-1)], axis=-1)
    starts = np.arange(0, values.shape[-1] - width + 1, step)
    return (csum[..., starts + width] - csum[..., starts]).min(axis=-1)


class DistAlpha(Protocol):
    """The paper's 3-round (t, eps, delta) protocol for DIST_alpha (see the module docstring).

    Examples
    --------
    >>> import privsim
    >>> proto = DistAlpha(alpha=0.75, epsilon=1.0, delta=1e-6)
    >>> proto.interval_length(16), proto.window_intervals(16), proto.window_bits(16)
    (2, 4, 8)
    >>> res = privsim.simulate(proto, n=16, trials=50, seed=1, t=3)
    >>> res.messages == proto.message_count(16, 3) == 78, res.rounds
    (True, 3)
    >>> int(res.true_value[0]), int(proto.aligned_value(res.inputs)[0])
    (0, 0)
    """

    name = "dist-alpha"
    alpha = Param(0.75, gt=0, le=1, doc="substring length n^alpha; intervals of n^(alpha/3) bits")
    epsilon = Param(1.0, gt=0, doc="privacy parameter eps (R = 2 ln(2/delta)/eps^2)")
    delta = Param(1e-6, gt=0, lt=1, doc="privacy parameter delta")
    noise_reading = Param("per-interval", type=str, choices=["per-interval", "per-party"],
                          doc="Var Y_i = 2R/L (interval noise N(0, 2R)) or 2R/n (as in step 1)")
    sigma2 = Param(None, ge=0, doc="explicit Var Y_i, overriding noise_reading (0: no noise)")
    density = Param(0.5, ge=0, le=1, doc="default inputs: fraction of ones outside the planted window")
    planted_weight = Param(0, type=int, ge=0, doc="default inputs: ones inside the planted window")

    # ------------------------------------------------------------------ geometry
    def interval_length(self, n: int) -> int:
        """L = n^(alpha/3), rounded half up (at least 1)."""
        return max(1, math.floor(n ** (self.alpha / 3) + 0.5))

    def window_intervals(self, n: int) -> int:
        """W = n^alpha / L intervals per window, rounded half up (n^(2 alpha/3) when L is exact)."""
        return max(1, math.floor(n ** self.alpha / self.interval_length(n) + 0.5))

    def window_bits(self, n: int) -> int:
        """m = L W, the substring length the protocol targets (the multiple of L nearest n^alpha)."""
        return self.interval_length(n) * self.window_intervals(n)

    @staticmethod
    def digits(n: int) -> int:
        """Binary digits after the point of the fixed-point encoding: ceil(log2 n) (footnote 6)."""
        return max(0, (n - 1).bit_length())

    # ------------------------------------------------------------------ noise
    @property
    def R(self) -> float:
        """R = 2 ln(2/delta)/eps^2 (Section 3, step 1)."""
        return 2 * math.log(2 / self.delta) / self.epsilon ** 2

    def _noise(self, n: int) -> tuple[float, int]:
        """(sigma2_total, m): each Y_i is one of m shares of N(0, sigma2_total)."""
        if self.sigma2 is not None:
            return float(self.sigma2), 1
        if self.noise_reading == "per-interval":
            return 2 * self.R, self.interval_length(n)  # Z_k ~ N(0, 2R) (step 3)
        return 2 * self.R, n  # Var Y_i = 2R/n (step 1)

    def sigma2_y(self, n: int) -> float:
        """Var Y_i, the variance of one party's noise."""
        total, m = self._noise(n)
        return total / m

    def interval_sigma2(self, n: int) -> float:
        """Var Z_k = L Var Y_i, the noise variance of an interval sum S_k."""
        return self.interval_length(n) * self.sigma2_y(n)

    def window_sigma2(self, n: int) -> float:
        """W L Var Y_i, the noise variance of a window sum (the estimate's error scale)."""
        return self.window_bits(n) * self.sigma2_y(n)

    def modulus(self, n: int) -> int:
        """q: a power of two that holds every interval sum of encodings (choose_modulus).

        The bound, in encoded units, is L 2^d (the bits) + L/2 (rounding) plus the
        2^-40 two-sided tail bound of the L noises; q is the least power of two above twice it.
        """
        scale = 2.0 ** self.digits(n)
        L = self.interval_length(n)
        total, m = self._noise(n)
        tail = gaussian_tail_bound(total, m=m, count=L) if total > 0 else 0.0
        return choose_modulus(L * scale + L / 2, noise_bound=tail * scale)

    # ------------------------------------------------------------------ setting
    def default_t(self, n: int) -> int:
        """The largest t with 2t < n (the paper's condition)."""
        return max(0, (n - 1) // 2)

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        if n < 2:
            raise ParameterError(f"dist-alpha needs n >= 2 (got {n})")
        if 2 * t >= n:
            raise ParameterError(f"dist-alpha needs 2t < n: t must be <= {(n - 1) // 2} for n = {n} "
                                 f"(got {t})")
        L, m = self.interval_length(n), self.window_bits(n)
        if n % L:
            raise ParameterError(f"n must be a multiple of the interval length L = n^(alpha/3) = {L} "
                                 f"(n = {n}, alpha = {self.alpha:g}); e.g. n = L^(3/alpha)")
        if m > n:
            raise ParameterError(f"alpha = {self.alpha:g}: the window of L*W = {m} bits exceeds n = {n}")
        if self.planted_weight > m:
            raise ParameterError(f"planted_weight must be <= the window length {m} "
                                 f"(got {self.planted_weight})")
        self.modulus(n)  # q <= 2^62, or a ParameterError

    def planted_start(self, n: int) -> int:
        """Where the planted window of the default inputs starts: mid-string, off the interval grid."""
        L, m = self.interval_length(n), self.window_bits(n)
        return min(((n - m) // 2 // L) * L + L // 2, n - m)

    def default_inputs(self, n: int) -> np.ndarray:
        """A fixed bit string with a planted low-weight window.

        Outside the window of m bits starting at :meth:`planted_start`, bit i is 1 iff
        ceil((i + 1) density) > ceil(i density) (ones spread evenly at rate ``density``);
        inside, ``planted_weight`` = w ones sit at the centres of w equal stretches. The
        planted window starts off the interval grid when L > 1, so the aligned minimum may
        miss it by up to L - 1.

        >>> DistAlpha(alpha=0.75).default_inputs(16).tolist()
        [1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]
        """
        m, s = self.window_bits(n), self.planted_start(n)
        i = np.arange(n)
        x = (np.ceil((i + 1) * self.density) > np.ceil(i * self.density)).astype(np.int64)
        x[s:s + m] = 0
        w = min(self.planted_weight, m)
        if w:
            x[s + ((np.arange(w) + 0.5) * m / w).astype(np.int64)] = 1  # centred in the window
        return x

    # ------------------------------------------------------------------ schedule
    def message_count(self, n: int, t: int) -> int:
        """M = (n - 1)(t + 1) + t + (n - 1) = (n - 1)(t + 2) + t messages per run.

        >>> DistAlpha().message_count(16, 3)
        78
        """
        return (n - 1) * (t + 2) + t

    def schedule(self, n: int, t: int) -> Schedule:
        holders = range(t + 1)
        r1 = [(i, h) for i in range(n) for h in holders if h != i]
        r2 = [(h, 0) for h in holders if h != 0]
        r3 = [(0, i) for i in range(1, n)]
        return Schedule(n, [r1, r2, r3])

    # ------------------------------------------------------------------ parties
    async def party(self, ctx: PartyContext) -> None:
        n, t, i = ctx.n, ctx.t, ctx.id
        q, d, L = self.modulus(n), self.digits(n), self.interval_length(n)
        qbits = q.bit_length() - 1  # q is a power of two
        # Round 1: share the fixed-point encoding of x_i + Y_i among parties 0..t.
        total, m = self._noise(n)
        value = ctx.input.astype(np.float64)
        if total > 0:
            value = value + gaussian_share(ctx.rng, total, m, size=())  # Y_i ~ N(0, total/m)
        shares = share(ctx.rng, encode_fixed(value, d, q), q, t + 1, size=())  # (R, t + 1)
        for h in range(t + 1):
            if h != i:
                ctx.send(h, shares[:, h], bits=qbits)
        inbox = await ctx.end_round()

        # Round 2: a share holder adds, per interval, the shares it holds.
        if i <= t:
            held = np.insert(inbox.stack(), i, shares[:, i], axis=1)  # (R, n): every party's share, by party
            sums = reconstruct(held.reshape(ctx.trials, n // L, L), q)  # (R, K)
            if i != 0:
                ctx.send(0, sums, bits=(n // L) * qbits)
        inbox = await ctx.end_round()

        # Round 3: p_1 reconstructs S_k, takes the minimum window and broadcasts it.
        if i == 0:
            parts = np.stack([sums, *inbox.values()], axis=-1)  # (R, K, t + 1)
            S = decode_fixed(reconstruct(parts, q), d, q)
            result = window_minimum(S, self.window_intervals(n))
            for j in range(1, n):
                ctx.send(j, result, bits=RESULT_BITS)
            await ctx.end_round()
            ctx.output((result, S))
        else:
            ctx.output((await ctx.end_round())[0])

    # ------------------------------------------------------------------ results
    def true_value(self, inputs: np.ndarray) -> np.ndarray:
        """DIST over all substrings of m = L W bits: min_s sum_{j=s}^{s+m-1} x_j, exactly."""
        return window_minimum(inputs.astype(np.int64), self.window_bits(inputs.shape[1]))

    def aligned_value(self, inputs: np.ndarray) -> np.ndarray:
        """The noiseless protocol's value: the minimum over windows starting at an interval
        boundary; it lies in [true_value, true_value + L - 1] (Section 3)."""
        n = inputs.shape[1]
        return window_minimum(inputs.astype(np.int64), self.window_bits(n), step=self.interval_length(n))

    def estimate(self, outputs: dict[int | str, Any], n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[0][0], dtype=np.float64)

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        """The exact Gaussian claim of the residual noise this coalition faces, with the
        paper's (Section 3: "(t, eps, delta)-differentially private when 2t < n") beside it.

        A coalition of at most t parties holds at most t of the t + 1 shares of every
        x_i + Y_i (uniform and independent of the inputs); what depends on a neighbour j is
        S_k(j) (p_1 reconstructs it; the others see the window minimum, a function of the
        S_k), and the coalition knows its own members' Y_i: the noise left on S_k(j) is
        N(0, (L - m_k) Var Y_i) (:meth:`residual_sigma2`). So the view is at most a
        Gaussian mechanism with mu = 1 / sqrt(min_j residual) (a bit changes S_k by 1):
        exactly that for coalitions containing p_1, an upper bound for the others. The
        fixed-point grid (2^-digits) is ignored. ``None`` for more than t parties, for C,
        and where no noise is left.

        >>> c = DistAlpha(alpha=0.75, epsilon=1.0, delta=1e-6).privacy([0, 1, 2], 256, 3)
        >>> round(c.epsilon, 2), c.paper
        (1.12, Privacy(epsilon=1.0, delta=1e-06))
        """
        if CURATOR in coalition or len(coalition) > t:
            return None
        members = {int(c) for c in coalition}
        worst = min((self.residual_sigma2(members, n, j) for j in range(n) if j not in members), default=None)
        if worst is None:
            return Privacy(0.0)  # no neighbour outside the coalition
        if worst <= 0:
            return None  # no noise left: nothing to claim
        exact = Privacy.gaussian(1.0 / math.sqrt(worst), delta=self.delta)
        return exact.with_paper(Privacy(self.epsilon, self.delta))

    def publishes(self, n: int, t: int) -> tuple[int | str, ...]:
        """The window minimum that p_1 broadcasts (party 0's own output adds its interval
        sums S_k, which stay private to it). It is a function of the S_k, each with all of its
        noise L Var Y_i, so the inherited :meth:`public_privacy` (:meth:`privacy` of ``()``) fits it."""
        return (1,) if n > 1 else (0,)

    def residual_sigma2(self, coalition: Sequence[int | str], n: int, neighbor: int) -> float:
        """Var of the noise on S_k(neighbor) that ``coalition`` does not know: (L - m_k) Var Y_i,
        m_k = members of the neighbour's interval in the coalition (fixed-point rounding ignored)."""
        L = self.interval_length(n)
        k = neighbor // L
        members = sum(1 for c in coalition if c != CURATOR and int(c) // L == k and int(c) != neighbor)
        return (L - members) * self.sigma2_y(n)

    def gaussian_epsilon(self, coalition: Sequence[int | str], n: int) -> float:
        """The exact epsilon at ``delta`` of S_k towards the worst neighbour outside ``coalition``.

        A coalition's view is at most as revealing as the S_k with its members' noise
        subtracted (p_1 sees them; everyone else sees a function of them), so this bounds
        the privacy loss of every coalition of at most t parties, and is attained by those
        containing p_1 (ignoring fixed-point rounding). ``inf`` when no noise is left.

        >>> round(DistAlpha(alpha=0.75, epsilon=1.0, delta=1e-6).gaussian_epsilon([0], 16), 3)
        0.77
        """
        members = {int(c) for c in coalition if c != CURATOR}
        worst = min((self.residual_sigma2(members, n, j) for j in range(n) if j not in members), default=None)
        if worst is None:
            return 0.0
        if worst <= 0:
            return math.inf
        return accounting.gaussian_epsilon(math.sqrt(worst), self.delta)
