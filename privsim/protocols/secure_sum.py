"""Secure sum with distributed noise: the natural paradigm, SFE of a DP sum (Beimel–Nissim–Omri, Section 1).

Every party p_i adds its own share of the noise to its input and splits the result into
t+1 additive shares mod q, one for each of the share holders p_1..p_{t+1} (parties
0..t). The holders add what they received and send the partial sums to p_1 (party 0),
who adds them and releases ``sum_i x_i + sum_i N_i``. Any t shares of a secret are
independent and uniform, so a coalition of at most t parties learns nothing beyond its
own inputs and the released value, and the released value is differentially private
because the honest parties' noise alone already is (over-provisioned shares, as in
"Our Data, Ourselves", Dwork et al. 2006).

Schedule and message count (n parties, threshold t, ``broadcast`` off)
---------------------------------------------------------------------
- round 1: party i sends share j to holder j for every holder j != i: holders send t
  messages each (they keep their own share), the other n - t - 1 parties send t + 1:
  (t+1) t + (n-t-1)(t+1) = (t+1)(n-1) messages;
- round 2: holders 1..t send their partial sums to party 0: t messages;
- round 3 (only with ``broadcast=True``): party 0 sends the released value to the other
  n - 1 parties.

    messages = (t+1)(n-1) + t            [+ (n-1) with broadcast]
             = n(t+1) - 1                 [n(t+1) + n - 2 with broadcast]

which is at least n(t+1)/2 (the Chor–Kushilevitz lower bound for oblivious t-private
sums) for every n >= 2: (t+1)(n-1) + t - n(t+1)/2 = (t+1)(n/2 - 1) + t >= 0.

Noise (``noise=``), for integer inputs in [0, max_input] (l1 sensitivity D = max_input)
--------------------------------------------------------------------------------------
With m = n - t, each party's noise is a 1/m "share" of the central noise, so the shares
of any n - t honest parties sum to at least the full central noise (the coalition's own
shares are known to it and cancel; extra honest shares are independent noise on top,
i.e. post-processing). The released total holds n shares, so its variance is n/m times
the central one:

- ``laplace``: Gamma(1/m, b) - Gamma(1/m, b) per party, b = D/epsilon; m shares sum to
  exactly Lap(b) (infinite divisibility). epsilon-DP. Var = 2 b^2 n/(n-t).
- ``gaussian``: N(0, sigma2/m) per party; sigma2 = D^2/(2 rho) for rho-zCDP (Bun–Steinke
  Prop. 1.6) or, with rho = 0, the analytic Gaussian sigma for (epsilon, delta) (Balle–
  Wang 2018). Var = sigma2 n/(n-t).
- ``discrete-laplace``: the difference of two Polya (negative binomial, shape 1/m)
  variables per party; m shares sum to exactly the discrete Laplace
  Pr[k] = (1-a)/(1+a) a^|k|, a = e^{-1/b}, b = D/epsilon, which is exactly epsilon-DP on
  Z for integer sensitivity D. The total of all n shares is NB(n/m, 1-a) - NB(n/m, 1-a),
  Var = (n/m) 2a/(1-a)^2. Integer noise: it lives in Z_q without any rounding.
- ``discrete-gaussian``: N_Z(0, s2) per party, sampled exactly (Canonne-Kamath-Steinke,
  Algorithm 3). The sum of discrete Gaussians is not itself a discrete Gaussian, but its
  law is computable: for an (epsilon, delta) target s2 is the smallest value for which
  m shares meet it exactly (:mod:`privsim.mechanisms.exact_integer`); for a rho-zCDP
  target, the smallest value meeting it by the bound of Kairouz-Liu-Steinke (ICML 2021,
  Prop. 14). Var = n Var N_Z(0, s2).
- ``skellam``: Pois(mu/(2m)) - Pois(mu/(2m)) per party; m shares are exactly the Skellam
  Sk(mu) (closed under summation, Agarwal-Kairouz-Liu, NeurIPS 2021), with mu the
  smallest variance meeting (epsilon, delta) exactly (their Renyi bound, Theorem 3.5,
  beside the claims as ``paper``). Var = mu n/m.
- ``none``: the exact sum (no DP claim for the output).

Each option is a noise family of :mod:`privsim.mechanisms.noise_families` (sampler,
share variance, tail bound and privacy map together); the integer ones (discrete-laplace,
discrete-gaussian, skellam) live in Z_q without rounding.

Real noise in Z_q (laplace, gaussian): fixed point with ``digits`` binary digits after
the point. Party i encodes x_i 2^digits + rint(N_i 2^digits) (x_i is an integer, so the
encoding of the input is exact and the rounding error, in [-1/2, 1/2] units of
2^-digits, depends on the noise only). The released value is decoded as
to_signed(total)/2^digits, so it differs from x + sum N_i by at most n 2^-(digits+1)
(1.2e-4 for n = 16384 at the default 16 digits) and stays unbiased (every N_i and the
rounding are symmetric). The privacy claim for these two options is the claim of the
real-valued mechanism; like every floating-point sampler it is not an exact guarantee
for the rounded output (Mironov 2012); the claims say so in their ``assumption``. Use
an integer option (discrete-laplace, discrete-gaussian, skellam) for an exact one.

The modulus
-----------
q = choose_modulus(n max_input 2^d, B) with d the fixed-point digits (0 for integer
noise) and B a bound on |total noise| in encoded units that fails with probability at
most 2^-40 (the noise family's ``tail_bound``, plus n/2 for the rounding in fixed
point): the smallest power of two q > 2 (n max_input 2^d + B). Then every total decodes
exactly by to_signed, and the sum wraps around with probability at most 2^-40 per run
(:data:`WRAP_FAILURE_LOG2`). A
``modulus`` given by the user must satisfy the same q > 2 (n max_input 2^d + B).

Privacy (the claim travels with the calibration: :meth:`DistributedNoiseSum.privacy`)
-------------------------------------------------------------------------------------
- |T| > t: no claim (``None``): t+1 holders reconstruct every input.
- |T| <= t and T sees the released value (T contains party 0, or ``broadcast``): the
  family's claim for the n - |T| honest shares T does not know (epsilon for laplace and
  discrete-laplace; for gaussian exactly the Gaussian mechanism with
  mu = D / sqrt(sigma2 (n - |T|)/(n - t)), with the calibration's blanket claim as
  ``paper``; for discrete-gaussian and skellam the exact (epsilon, delta) of the honest
  shares' law at ``delta``, with KLS21's resp. AKL21's bound for the same noise as
  ``paper`` (zCDP by KLS21 for discrete-gaussian with ``rho``); ``None`` for ``none``).
- |T| <= t and T sees no released value: Privacy(0): the view is independent of the
  other parties' inputs.
- ``public`` (the release only): the family's claim for all n shares.

Lemma (flow privacy), used here and by :mod:`privsim.protocols.ck_sum`. Call a protocol
a *flow*: nodes (each owned by one party) form a DAG with one final node c; every other
node v adds its secret s_v to what it received and splits the result into additive
shares mod q, uniform among vectors with that sum, one per out-edge. Then c ends with
sum_v s_v. If, after removing the nodes owned by a coalition T, the remaining nodes are
connected (as an undirected graph), then T's view (its secrets, its random draws, the
values on every edge touching its nodes) depends on the others' secrets only through
their sum if c is T's, and not at all otherwise. Proof: edge values f are uniform on
A(s) = {f : out(v) - in(v) = s_v for all v != c} (the share draws of v are exactly its
first out-values, a bijection). For s, s' that agree on T's nodes (and, when c is
T's, have equal sums), route d = s' - s along a spanning tree of the honest part (to c
when c is honest); the resulting flow g touches no edge at T's nodes and f -> f + g maps
A(s) onto A(s') preserving T's view. Secure sum is a flow: party i's input node sends
to the aggregator node of each holder (the share a holder keeps is an edge inside that
holder), holders' aggregators send to party 0's, which is c. For |T| <= t some holder
is honest; every honest input node is adjacent to every honest holder's aggregator, so
the honest part is connected.

Examples
--------
>>> import privsim
>>> proto = SecureSum(noise="laplace", epsilon=1.0)
>>> res = privsim.simulate(proto, [1] * 30 + [0] * 34, trials=2000, seed=4, t=3)
>>> res.messages == SecureSum.message_count(64, 3) == 4 * 63 + 3
True
>>> bool(abs(res.error.mean()) < 5 * (proto.noise_variance(64, 3) / 2000) ** 0.5)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from privsim.errors import ParameterError
from privsim.mechanisms.noise_families import FAMILIES, NoiseFamily, noise_family
from privsim.mechanisms.sharing import (
    MAX_MODULUS,
    add_mod,
    choose_modulus,
    decode_fixed,
    encode_fixed,
    reconstruct,
    reconstruct_unchecked,
    share_unchecked,
    to_signed,
)
from privsim.network.messages import seal
from privsim.network.schedule import Schedule
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext
from privsim.protocols.base import AuditScoreContext, Param, Privacy, Protocol, _check_domain, check_rho_or_epsilon

__all__ = ["NOISES", "WRAP_FAILURE_LOG2", "DistributedNoiseSum", "IntegerInputs", "SecureSum", "modulus_bits"]

#: The noise options of the distributed sums (the families of :mod:`privsim.mechanisms.noise_families`).
NOISES = FAMILIES

#: The integer noises whose sum may be computed on a finer grid (``granularity``).
GRANULAR_NOISES = ("discrete-gaussian", "skellam")

#: The sum wraps around mod q with probability at most 2^-WRAP_FAILURE_LOG2 per run.
WRAP_FAILURE_LOG2 = 40


def modulus_bits(q: int) -> int:
    """Bits of one residue mod q: ceil(log2 q), the bit count of every share message.

    >>> modulus_bits(256), modulus_bits(11)
    (8, 4)
    """
    return max(1, (int(q) - 1).bit_length())


class IntegerInputs(Protocol):
    """Inputs are integers in [0, max_input]; max_input is the sum's sensitivity.

    ``input_values`` follows ``max_input`` (so the audit flips bits and steps integers
    within the domain); the domain check is a range check.

    >>> class Counts(IntegerInputs):
    ...     name = "counts"
    >>> Counts(max_input=3).input_values
    (0, 1, 2, 3)
    """

    max_input = Param(1, type=int, ge=1, le=2**16,
                      doc="inputs are integers in [0, max_input] (the sensitivity)")

    @property  # type: ignore[override]
    def input_values(self) -> tuple[int, ...]:
        return tuple(range(self.max_input + 1))

    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        return _check_domain(inputs, (inputs < 0) | (inputs > self.max_input),
                             f"of integers in [0, {self.max_input}] (max_input)")


class DistributedNoiseSum(IntegerInputs):
    """Shared machinery of the t-private sums with distributively generated noise.

    Holds the noise parameters, the fixed-point encoding, the modulus rule, the error
    variance and the privacy claim (see the module docstring); subclasses add the
    communication pattern and say which coalitions see the released value
    (:meth:`sees_output`).

    >>> p = SecureSum(noise="discrete-laplace", epsilon=0.5)
    >>> p.scale, p.laplace_b
    (1, 2.0)
    """

    noise = Param("laplace", type=str, choices=NOISES, doc="noise of the released sum: " + ", ".join(NOISES))
    epsilon = Param(1.0, gt=0, doc="privacy parameter eps (laplace, discrete-laplace, skellam; gaussian and "
                                   "discrete-gaussian when rho = 0)")
    delta = Param(1e-6, gt=0, lt=1, doc="delta of the (epsilon, delta) guarantee and of reported zCDP claims "
                                        "(gaussian, discrete-gaussian, skellam)")
    rho = Param(0.0, ge=0, doc="zCDP parameter (gaussian, discrete-gaussian); 0 = calibrate to (epsilon, delta)")
    digits = Param(16, type=int, ge=0, le=40, doc="binary digits after the point of the fixed-point "
                                                  "encoding (laplace, gaussian)")
    modulus = Param(0, type=int, ge=0, doc="the modulus q; 0 = the smallest power of two that cannot wrap")
    broadcast = Param(False, type=bool, doc="send the released value to every party (one more round)")
    granularity = Param(0.0, ge=0, le=1, doc="discrete-gaussian, skellam: the sum lives on the grid "
                                             "granularity * Z (1/granularity an integer, inputs scaled "
                                             "exactly); 0 = automatic (the integers for the exact "
                                             "calibrations, a grid fine enough for KLS21's bound "
                                             "with rho)")

    def validate(self) -> None:
        check_rho_or_epsilon(self)
        self.family  # noqa: B018 -- calibrate now: a bad combination (e.g. rho with laplace) fails at construction
        if self.modulus == 1 or self.modulus > MAX_MODULUS:
            raise ParameterError(f"modulus must be 0 (automatic) or in [2, 2^62] (got {self.modulus})")
        if self.granularity > 0:
            if self.noise not in GRANULAR_NOISES:
                raise ParameterError(f"granularity applies only to noise={' or noise='.join(GRANULAR_NOISES)} "
                                     f"(got noise={self.noise})")
            steps = 1.0 / self.granularity
            if abs(steps - round(steps)) > 1e-9 * steps:
                raise ParameterError(f"granularity must be 1/k for an integer k (got {self.granularity!r})")

    def default_t(self, n: int) -> int:
        """The default threshold t = 1 (the smallest non-trivial one; pass t explicitly)."""
        return min(1, n - 1)

    # ------------------------------------------------------------------ noise calibration
    @property
    def sensitivity(self) -> int:
        """The l1 (and l2) sensitivity of the sum: one party moves it by at most max_input."""
        return self.max_input

    @cached_property
    def family(self) -> NoiseFamily:
        """The calibrated noise family: sampler, share variance, tail bound and privacy map.

        >>> SecureSum(noise="discrete-laplace", epsilon=0.5).family
        DiscreteLaplaceShares(b=2.0, epsilon=0.5)
        """
        return noise_family(self.noise, sensitivity=self.sensitivity, epsilon=self.epsilon, delta=self.delta,
                            rho=self.rho)

    @property
    def laplace_b(self) -> float:
        """The scale b = max_input/epsilon of the (discrete) Laplace families."""
        return float(getattr(self.family, "b", self.sensitivity / self.epsilon))

    @property
    def sigma2(self) -> float:
        """The variance of the honest n - t parties' Gaussian noise: D^2/(2 rho) or analytic (eps, delta)."""
        return float(getattr(self.family, "sigma2", 0.0))

    @property
    def fixed_point(self) -> bool:
        """Whether the noise is real and travels in fixed point (laplace, gaussian)."""
        return not self.family.integer

    @property
    def scale(self) -> int:
        """Encoded units per unit of the sum: 2^digits in fixed point, else 1."""
        return 2 ** self.digits if self.fixed_point else 1

    def shares_count(self, n: int, t: int) -> int:
        """m: any m honest parties' noise shares sum to the full central noise (n - t here).

        >>> SecureSum().shares_count(10, 3)
        7
        """
        return n - t

    def units(self, n: int, t: int) -> int:
        """Encoded units per unit of the sum: 2^digits in fixed point, 1/granularity for the granular noises.

        With ``granularity = 0``: the integers themselves (1) wherever the noise is
        calibrated to its exact law (skellam; discrete-gaussian with an (epsilon, delta)
        target): a finer grid only brings the law closer to the Gaussian, and the exact
        accounting shows the integer laws beat it at sensitivity 1 (the Skellam's std is
        0.89x the analytic Gaussian's at (1, 1e-6)). For discrete-gaussian with a zCDP
        target (``rho``, [KLS21]'s bound) the smallest power of two s with
        s^2 sigma_c^2 >= max(2^12, 4 m) (sigma_c^2 = D^2/(2 rho), m = n - t): each share
        then has variance >= 4 units, where [KLS21]'s tau is below 1e-15 (Kairouz-Liu-Steinke
        scale the input the same way), and the error is within a few percent of the real
        Gaussian's.

        >>> SecureSum(noise="discrete-gaussian", rho=0.05).units(1000, 3), SecureSum(noise="skellam").units(1000, 3)
        (32, 1)
        >>> SecureSum(noise="skellam", granularity=0.25).units(1000, 3), SecureSum().units(10, 1)
        (4, 65536)
        """
        if self.fixed_point:
            return self.scale
        if self.granularity > 0:  # validate: only with the granular noises
            return int(round(1.0 / self.granularity))
        if self.noise not in GRANULAR_NOISES or self.family.exact:  # exact: calibrated to its law, integers are best
            return 1
        central = self.sensitivity**2 / (2.0 * self.family.rho)
        need = max(2.0**12, 4.0 * self.shares_count(n, t)) / central
        return 1 if need <= 1 else 1 << int(math.ceil(0.5 * math.log2(need)))

    def family_for(self, n: int, t: int) -> NoiseFamily:
        """The family calibrated in encoded units: sensitivity max_input * :meth:`units` (integer noise).

        >>> SecureSum(noise="skellam", granularity=0.5).family_for(100, 1).sensitivity
        2.0
        """
        units = 1 if self.fixed_point else self.units(n, t)
        if units == 1:
            return self.family
        return self._memo(("family", units), lambda: noise_family(
            self.noise, sensitivity=self.sensitivity * units, epsilon=self.epsilon, delta=self.delta, rho=self.rho))

    def noise_variance(self, n: int, t: int) -> float:
        """The exact variance of the released noise: the sum of all n parties' shares, m = n - t.

        laplace 2 b^2 n/m, gaussian sigma2 n/m, discrete-laplace n/m times the discrete
        Laplace variance 2a/(1-a)^2, skellam mu n/m, discrete-gaussian n times the
        variance of one N_Z share, none 0. Fixed-point rounding adds at most
        :meth:`rounding_bound` to each released value (see the module docstring).

        >>> SecureSum(noise="laplace", epsilon=1.0).noise_variance(10, 2)
        2.5
        """
        m = self.shares_count(n, t)
        if self.fixed_point:
            return float(self.family.shares_variance(m, n))
        return float(self.family_for(n, t).shares_variance(m, n)) / self.units(n, t) ** 2

    def rounding_bound(self, n: int) -> float:
        """The largest |released - (sum + noise)| that fixed-point rounding causes: n 2^-(digits+1).

        >>> SecureSum(noise="gaussian", rho=0.5, digits=10).rounding_bound(1024)
        0.5
        """
        return n / (2.0 * self.scale) if self.fixed_point else 0.0

    def noise_bound(self, n: int, t: int) -> float:
        """B: |total noise| in encoded units exceeds B with probability <= 2^-40 (rounding included).

        >>> SecureSum(noise="discrete-laplace").noise_bound(1, 0)  # one discrete Laplace, b = 1
        28.0
        """
        bound = self.family_for(n, t).tail_bound(self.shares_count(n, t), n, WRAP_FAILURE_LOG2)
        return self.scale * bound + n / 2 if self.fixed_point else float(bound)

    def modulus_for(self, n: int, t: int) -> int:
        """The modulus q of a run with n parties and threshold t (see "The modulus" above).

        Raises ParameterError if a given ``modulus`` is too small for the range, or the
        rule needs q > 2^62. Cached: every party asks, and parameters never change.

        >>> SecureSum(noise="none").modulus_for(100, 2)   # q > 2 * 100
        256
        >>> SecureSum(noise="none", modulus=150).modulus_for(100, 2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        privsim.errors.ParameterError: modulus must be > 200 = 2 * (n max_input + noise bound) ... (got 150)
        """
        return self._memo(("modulus", n, t), lambda: self._modulus_for(n, t))

    def precomputed(self, n: int, t: int) -> dict[str, Any]:
        """The modulus: its noise bound is a quantile (scipy), which a party process need not import.

        >>> SecureSum(noise="none").precomputed(100, 2)
        {'modulus': 256}
        """
        return {"modulus": self.modulus_for(n, t)}

    def adopt_precomputed(self, n: int, t: int, values: dict[str, Any]) -> None:
        """Take :meth:`precomputed`'s modulus: the given ``modulus``, or a power of two above the
        noiseless range (the noise bound is the file writer's: checking it would mean computing it).

        >>> p = SecureSum(noise="none")
        >>> p.adopt_precomputed(100, 2, {"modulus": 256}); p.modulus_for(100, 2)
        256
        >>> p.adopt_precomputed(100, 2, {"modulus": 200})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        privsim.errors.ParameterError: precomputed modulus for n = 100, t = 2 must be a power of two in (200, ...
        """
        unknown = sorted(set(values) - {"modulus"})
        if unknown:
            raise ParameterError(f"precomputed: unknown value {unknown[0]!r} for {self.name} (allowed: modulus)")
        if "modulus" not in values:
            return
        q, floor = values["modulus"], 2 * n * self.max_input * self.units(n, t)
        if self.modulus:
            ok, rule = type(q) is int and q == self.modulus, f"the modulus parameter, {self.modulus}"
        else:
            ok = type(q) is int and floor < q <= MAX_MODULUS and q & (q - 1) == 0
            rule = f"a power of two in ({floor}, 2^62]"
        if not ok:
            raise ParameterError(f"precomputed modulus for n = {n}, t = {t} must be {rule} (got {q!r})")
        self.__dict__.setdefault("_memos", {})[("modulus", n, t)] = q  # Protocol._memo's cache: the file's q wins

    def _modulus_for(self, n: int, t: int) -> int:
        value_bound = n * self.max_input * self.units(n, t)
        noise_bound = self.noise_bound(n, t)
        if self.modulus == 0:
            if value_bound + noise_bound >= MAX_MODULUS // 2:
                raise ParameterError(self._too_much_noise(n, value_bound, noise_bound))
            return choose_modulus(value_bound, noise_bound)
        need = 2 * (value_bound + math.ceil(noise_bound))
        if self.modulus <= need:
            units = " 2^digits" if self.fixed_point else ""
            raise ParameterError(
                f"modulus must be > {need} = 2 * (n max_input{units} + noise bound) = 2 * ({value_bound} + "
                f"{math.ceil(noise_bound)}) so that the sum cannot wrap (got {self.modulus})")
        return self.modulus

    def _too_much_noise(self, n: int, value_bound: int, noise_bound: float) -> str:
        # The noise bound scales as 1/epsilon (Laplace), 1/sqrt(rho) (Gaussian): name the
        # parameter that sets it and about how far it may go, not the 300-digit total.
        room = MAX_MODULUS // 2 - value_bound
        share = noise_bound / max(room, 1)
        if self.noise == "gaussian" and self.rho > 0:
            name, value, least = "rho", self.rho, self.rho * share**2
        else:
            name, value, least = "epsilon", self.epsilon, self.epsilon * share
        return (f"{name} = {value:.3g} is too small for n = {n}: its noise cannot be shared mod q <= 2^62 "
                f"(allowed: {name} >= about {least:.3g}, or fewer digits)")

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        self.modulus_for(n, t)  # refuse a modulus too small for the range, once, before the run

    # ------------------------------------------------------------------ encoding
    def contribution(self, ctx: PartyContext, q: int) -> np.ndarray:
        """This party's secret mod q: its input plus its noise share, encoded (trial axis first)."""
        m = self.shares_count(ctx.n, ctx.t)  # any m honest parties hold the full central noise
        x = np.asarray(ctx.input, dtype=np.int64) * self.units(ctx.n, ctx.t) % q  # exact: integer inputs
        noise_share = self.family_for(ctx.n, ctx.t).share(ctx.rng, m, size=())
        if self.family.integer:
            return (x + noise_share) % q  # |share| < q/2 except with prob. 2^-40, and x < q/2
        return add_mod(x, encode_fixed(noise_share, self.digits, q), q)  # x 2^d + rint(N 2^d)

    def decode(self, total: np.ndarray, q: int, units: int = 1) -> np.ndarray:
        """The released value from the total mod q (float in fixed point or with ``units`` > 1, else int64).

        ``units`` is :meth:`units` of the run for the granular integer noises.

        >>> SecureSum(noise="laplace", digits=2).decode(np.array([5, 62]), 64)
        array([ 1.25, -0.5 ])
        >>> SecureSum(noise="skellam").decode(np.array([5, 62]), 64, units=4)
        array([ 1.25, -0.5 ])
        """
        if self.fixed_point:
            return decode_fixed(total, self.digits, q)
        signed = to_signed(total, q)
        return signed if units == 1 else signed / float(units)

    async def _release(self, ctx: PartyContext | CohortContext, total: np.ndarray | None, q: int, bits: int,
                       wait: int = 0) -> None:
        # The run's end, for a party or a cohort: with ``broadcast``, after ``wait`` idle rounds, the
        # output party (the one holding the total) sends it to every other party; whoever holds it outputs it.
        out = self.output_party(ctx.n, ctx.t)
        if self.broadcast:
            await ctx.idle(wait)
            if total is None:
                inbox = await ctx.end_round()
                total = inbox.from_party(out) if isinstance(ctx, CohortContext) else inbox[out]
            else:
                for i in range(ctx.n):
                    if i != out:
                        ctx.send(i, total, bits=bits)
                await ctx.end_round()
        if total is not None:
            ctx.output(self.decode(total, q, self.units(ctx.n, ctx.t)))

    # ------------------------------------------------------------------ privacy
    def sees_output(self, coalition: Sequence[int | str], n: int, t: int) -> bool:
        """Whether the coalition's view contains the released value."""
        raise NotImplementedError

    def output_privacy(self) -> Privacy | None:
        """The blanket guarantee of the released value: that of the honest n - t parties' noise.

        It is the claim towards a coalition of exactly t (the paper's statement for every
        coalition of size <= t); :meth:`privacy` is exact where the family allows it.

        >>> round(SecureSum(noise="gaussian", epsilon=0.5, delta=1e-7).output_privacy().epsilon, 9)
        0.5
        """
        claim = self.family.privacy(1, 1)
        return None if claim is None else (claim.paper or claim)

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        members = [p for p in coalition if isinstance(p, (int, np.integer))]
        if len(members) > t:
            return None  # t + 1 share holders reconstruct every input
        if not self.sees_output(coalition, n, t):
            return Privacy(0.0)  # flow-privacy lemma: the view is independent of the others' inputs
        # the view is the sum plus the n - |T| honest shares it does not know (m = n - t per unit)
        return self.family_for(n, t).privacy(n - len(members), n - t)

    def publishes(self, n: int, t: int) -> tuple[int | str, ...]:
        """The released value: the output of :meth:`output_party` (with ``broadcast``, every party's copy)."""
        return tuple(range(n)) if self.broadcast else (self.output_party(n, t),)

    def public_privacy(self, n: int, t: int) -> Privacy | None:
        """The outside observer reads the release and knows no share: all n shares are noise to it."""
        return self.family_for(n, t).privacy(n, n - t)

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
        """When the coalition holds every neighbour of party j, it sees all j sends and
        receives, so it recovers x_j + N_j = (sum sent - sum received) mod q (j's input plus
        its own noise share). The score is then log|v - x'_j| - log|v - x_j|: the
        log-likelihood ratio of the spiky Gamma-difference (or Polya-difference) share,
        up to a constant factor, near its peak. Otherwise ``None``: the audit's logistic
        score handles what is linear in the view (the released value minus the coalition's
        own inputs and noise).
        """
        if ctx.x is None or ctx.x_prime is None:
            return None
        n, t, neighbor = ctx.n, ctx.t, ctx.neighbor
        schedule = self.cached_schedule(n, t)
        if not set(schedule.neighbours(neighbor)) <= set(ctx.coalition):
            return None
        last = schedule.rounds if self.broadcast else schedule.rounds + 1  # the broadcast carries no share
        shares = [(i, c) for i, c in enumerate(ctx.records)
                  if c.kind == "msg" and c.element is None and c.round < last]  # type: ignore[operator]
        sent = [i for i, c in shares if c.sender == neighbor]
        received = [i for i, c in shares if c.receiver == neighbor and c.sender != neighbor]
        q = self.modulus_for(n, t)
        xj, xpj = float(np.asarray(ctx.x)[neighbor]), float(np.asarray(ctx.x_prime)[neighbor])
        units = self.units(n, t)
        floor = 0.5 / units  # half an encoded unit: |v - x| is never exactly 0 in the log

        def score(views: np.ndarray) -> np.ndarray:
            ints = np.rint(views).astype(np.int64) % q
            total = reconstruct(np.concatenate([ints[:, sent], (q - ints[:, received]) % q], axis=1), q)
            v = np.asarray(self.decode(total, q, units), dtype=float)
            return np.log(np.abs(v - xpj) + floor) - np.log(np.abs(v - xj) + floor)

        return score

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[self.output_party(n, t)], dtype=float)

    def output_party(self, n: int, t: int) -> int:
        """The party that computes the released value."""
        return 0


class SecureSum(DistributedNoiseSum):
    """The natural paradigm: t-private additive secret sharing among p_1..p_{t+1}, distributed noise.

    See the module docstring for the protocol, the noise options, the modulus, the
    privacy claim and its proof. ``messages = (t+1)(n-1) + t`` (+ ``n - 1`` with
    ``broadcast``); rounds 2 (3 with ``broadcast``; 1 when t = 0 and no broadcast).

    Examples
    --------
    >>> import privsim
    >>> res = privsim.simulate(SecureSum(noise="none"), [1, 0, 1, 1, 0], trials=3, seed=1, t=2)
    >>> res.estimate.tolist(), res.messages, res.rounds
    ([3.0, 3.0, 3.0], 14, 2)
    """

    name = "secure-sum"

    @staticmethod
    def message_count(n: int, t: int, broadcast: bool = False) -> int:
        """The closed form (t+1)(n-1) + t, plus n - 1 with broadcast.

        >>> SecureSum.message_count(10, 2), SecureSum.message_count(10, 2, broadcast=True)
        (29, 38)
        """
        return (t + 1) * (n - 1) + t + ((n - 1) if broadcast else 0)

    def schedule(self, n: int, t: int) -> Schedule:
        senders, holders = np.repeat(np.arange(n), t + 1), np.tile(np.arange(t + 1), n)
        keep = senders != holders
        rounds: list = [
            (senders[keep], holders[keep]),      # shares to the holders (array form: n (t + 1) pairs)
            [(j, 0) for j in range(1, t + 1)],   # partial sums to p_1
        ]
        if self.broadcast:
            rounds.append((np.zeros(n - 1, dtype=np.int64), np.arange(1, n)))
        return Schedule(n, rounds)

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """The holders p_2..p_{t+1} and the other parties (p_1, who totals, runs alone).

        >>> SecureSum().cohorts(6, 2)
        {'holders': range(1, 3), 'others': range(3, 6)}
        """
        return {"holders": range(1, t + 1), "others": range(t + 1, n)}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many holders (other than p_1) or many other parties at once."""
        n, t, ids = cctx.n, cctx.t, cctx.ids
        q = self.modulus_for(n, t)
        bits = modulus_bits(q)
        shares = seal(share_unchecked(cctx.rng, self.contribution(cctx, q), q, t + 1, ()))  # (R, k, t+1)
        holding = role == "holders"
        for j in range(t + 1):
            if holding:
                members = np.flatnonzero(ids != j)
                cctx.send(j, shares[:, members, j], members=members, bits=bits)
            else:
                cctx.send(j, shares[:, :, j], bits=bits)
        inbox = await cctx.end_round()
        if holding:  # each adds its own share and what it received, and sends the partial sum to p_1
            own = shares[:, np.arange(cctx.k), ids]
            cctx.send(0, (own + inbox.sum_mod(q)) % q, bits=bits)
            await cctx.end_round()
        await self._release(cctx, None, q, bits, wait=0 if holding else 1)  # the others sit out the holders' round

    def sees_output(self, coalition: Sequence[int | str], n: int, t: int) -> bool:
        return self.broadcast or 0 in coalition

    async def party(self, ctx: PartyContext) -> None:
        n, t, me = ctx.n, ctx.t, ctx.id
        q = self.modulus_for(n, t)
        bits = modulus_bits(q)
        # q, t and the shapes are the run's, checked once (check_setting): the unchecked forms
        shares = seal(share_unchecked(ctx.rng, self.contribution(ctx, q), q, t + 1, ()))  # (R, t+1)
        for j in range(t + 1):
            if j != me:
                ctx.send(j, shares[:, j], bits=bits)  # a view of a sealed array: sent without a copy
        inbox = await ctx.end_round()
        total = None
        if me <= t:  # a holder adds its own share and what it received
            partial = seal(reconstruct_unchecked(np.stack([shares[:, me], *inbox.values()], axis=-1), q))
            if me != 0:
                ctx.send(0, partial, bits=bits)
            # With t = 0 and no broadcast, round 1 was the last one: nothing more arrives.
            inbox = await ctx.end_round() if t or self.broadcast else {}
            if me == 0:
                total = reconstruct(np.stack([partial, *inbox.values()], axis=-1), q)
        await self._release(ctx, total, q, bits, wait=0 if me <= t else 1)  # non-holders sit out the holders' round
