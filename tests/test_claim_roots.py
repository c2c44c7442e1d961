"""Claims on the safe side of their root-finders (issue 26), recomputed in high precision.

Grid: shuffle-rr at n in (1, 2, 10, 100, 500) x eps0 in (0.1, 1, 5) x delta in (1e-2, 1e-6, 1e-10),
plus n = 1000, 2000 points and points with epsilon near eps0 (LARGE, WORST below).

The shuffled randomized-response count's exact delta at the claimed epsilon is recomputed
in 40-digit decimal arithmetic by an independent route (binomial pmfs by their ratio
recurrence, the others' count only where needed, by direct sums, and one tail at the
likelihood ratio's threshold), never numpy's FFT; an mpmath direct convolution over every
k checks that route at small n.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from operator import mul

import mpmath
import numpy as np
import pytest

from privsim.mechanisms import accounting, integer_noise
from privsim.mechanisms import shuffle_accounting as S
from privsim.mechanisms._roots import safe_root

#: 40 digits; the exponent range holds q^h (1e-4343 at h = 2000, eps0 = 5)
_DEC = decimal.Context(prec=40, Emin=-10**9, Emax=10**9)
#: every u is checked up to this many bits; above, the u that the float code screens in
ALL_U = 100
#: above ALL_U, u is checked when its float delta_u exceeds this fraction of the target
SCREEN = 0.99


def _float_per_u(epsilon: float, eps0: float, h: int) -> np.ndarray:
    """The float code's delta_u for u = 0..h-1 (rr_count_delta is their maximum)."""
    p = S.rr_keep_probability(eps0)
    o = S._others_pmf(h, p)
    one = p * np.pad(o, ((0, 0), (1, 0))) + (1 - p) * np.pad(o, ((0, 0), (0, 1)))
    zero = (1 - p) * np.pad(o, ((0, 0), (1, 0))) + p * np.pad(o, ((0, 0), (0, 1)))
    return np.clip(one - math.exp(epsilon) * zero, 0.0, None).sum(axis=1)


def _float_worst_u(epsilon: float, eps0: float, h: int) -> int:
    return int(_float_per_u(epsilon, eps0, h).argmax())


def _mp_rr_delta_u(epsilon: float, eps0: float, h: int, u: int) -> mpmath.mpf:
    """sum_k max(0, P_u(k) - e^eps Q_u(k)) in mpmath (40 digits), every k, by direct convolution."""
    with mpmath.workdps(40):
        e0 = mpmath.e ** mpmath.mpf(eps0)
        p = e0 / (1 + e0)
        ee = mpmath.e ** mpmath.mpf(epsilon)
        # u of the other h - 1 bits are 1 (reported 1 w.p. p), the rest 0 (w.p. 1 - p)
        ones = [mpmath.binomial(u, k) * p ** k * (1 - p) ** (u - k) for k in range(u + 1)]
        zeros = [mpmath.binomial(h - 1 - u, k) * (1 - p) ** k * p ** (h - 1 - u - k) for k in range(h - u)]
        poly = [mpmath.mpf(0)] * h
        for i, a in enumerate(ones):
            for j, b in enumerate(zeros):
                poly[i + j] += a * b
        total = mpmath.mpf(0)
        for k in range(h + 1):
            below = poly[k - 1] if k else 0
            here = poly[k] if k < h else 0
            total += max(mpmath.mpf(0), (p * below + (1 - p) * here) - ee * ((1 - p) * below + p * here))
        return total


def _mp_rr_delta(epsilon: float, eps0: float, h: int) -> mpmath.mpf:
    """max over u of :func:`_mp_rr_delta_u` (see rr_count_delta).

    Every u for h <= 12; above, u = 0, h - 1 and the float code's worst u (so this checks
    the precision of the claim where it binds, not the float code's choice of u).
    """
    us = range(h) if h <= 12 else sorted({0, h - 1, _float_worst_u(epsilon, eps0, h)})
    return max(_mp_rr_delta_u(epsilon, eps0, h, u) for u in us)


def _binomial_pmf(n: int, s: Decimal, t: Decimal) -> list[Decimal]:
    """Bin(n, s) on 0..n (t = 1 - s) by f(i + 1) = f(i) (n - i)/(i + 1) s/t: relative error ~ n 1e-40."""
    ratio = s / t
    f = [t**n]
    for i in range(n):
        f.append(f[-1] * ratio * (n - i) / (i + 1))
    return f


def _dec_rr_deltas(epsilon: float, eps0: float, h: int, us: list[int]) -> dict[int, Decimal]:
    """delta_u = sum_k max(0, P_u(k) - e^eps Q_u(k)) for each u in ``us``, in 40 digits.

    With O the pmf of the others' count K_o = Bin(u, p) + Bin(h - 1 - u, q), q = 1 - p,
    P_u(k) - e^eps Q_u(k) = g(k) = a O(k - 1) - b O(k), a = p - e^eps q, b = e^eps p - q.
    For eps >= eps0, a <= 0 and every g(k) <= 0. Otherwise: O is a sum of independent
    Bernoullis, log-concave without internal zeros (convolution keeps log-concavity), so
    O(k - 1)/O(k) increases with k and g(k)/O(k) changes sign once, from - at k = 0 to + at
    k = h (O(h) = 0): with t the first k where g(k) > 0 (bisection), delta_u =
    sum_{k >= t} g(k) = a S(t - 1) - b S(t), S(j) = Pr[K_o >= j]. Rounding can misplace t
    only past a k with g(k) ~ 0, which changes the sum by that much.
    """
    with decimal.localcontext(_DEC):
        e0 = Decimal(eps0).exp()  # Decimal(float) is the float's exact value
        p, q = e0 / (1 + e0), 1 / (1 + e0)
        e = Decimal(epsilon).exp()
        a, b = p - e * q, e * p - q
        if a <= 0:
            return {u: Decimal(0) for u in us}
        out: dict[int, Decimal] = {}
        t = 0
        for u in us:
            out[u], t = _dec_rr_delta_u(a, b, _binomial_pmf(u, p, q), _binomial_pmf(h - 1 - u, q, p), t)
        return out


def _dec_rr_delta_u(a: Decimal, b: Decimal, ones: list[Decimal], zeros: list[Decimal], t: int) -> tuple[Decimal, int]:
    """delta_u and its threshold t (see :func:`_dec_rr_deltas`), from the pmfs of Bin(u, p), Bin(m, q).

    ``t`` is a guess: it moves little from one u to the next, so it is tried before bisecting.
    """
    u, m = len(ones) - 1, len(zeros) - 1
    h = u + m + 1
    zeros_rev = zeros[::-1]
    memo: dict[int, Decimal] = {}

    def o(k: int) -> Decimal:  # Pr[K_o = k]: only the terms with both indices in range
        if k not in memo:
            lo, hi = max(0, k - m), min(u, k)
            memo[k] = sum(map(mul, ones[lo:hi + 1], zeros_rev[m - k + lo:m - k + hi + 1]), Decimal(0))
        return memo[k]

    def g(k: int) -> Decimal:
        return a * o(k - 1) - b * o(k)

    if not (1 <= t <= h and g(t) > 0 and g(t - 1) <= 0):
        lo, hi = 0, h  # g(0) = -b O(0) < 0 < a O(h - 1) = g(h)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if g(mid) > 0 else (mid, hi)
        t = hi
    at_least = [Decimal(0)] * (m + 2)  # Pr[Bin(m, q) >= l], l = 0..m+1
    for l in range(m, -1, -1):
        at_least[l] = at_least[l + 1] + zeros[l]
    at_least_rev = at_least[::-1]

    def tail(j: int) -> Decimal:  # S(j) = sum_i Pr[Bin(u, p) = i] Pr[Bin(m, q) >= j - i]
        lo = max(0, j - m)            # below: j - i > m, probability 0
        mid = min(max(j, lo), u + 1)  # from here: j - i <= 0, probability 1
        part = sum(map(mul, ones[lo:mid], at_least_rev[m + 1 - j + lo:m + 1 - j + mid]), Decimal(0))
        return part + sum(ones[mid:], Decimal(0))

    return max(Decimal(0), a * tail(t - 1) - b * tail(t)), t


def _checked_us(epsilon: float, eps0: float, h: int, delta: float) -> tuple[list[int], np.ndarray]:
    """The u to recompute, and the float code's delta_u.

    Every u for h <= ALL_U. Above, u = 0, h - 1, the float code's worst u and each u whose
    float delta_u exceeds SCREEN delta: the others are below delta, as the float values are
    within 1e-14 of the truth (FFT round-off, 100 times less than the margin at delta =
    1e-10; the sweep asserts it on the u it recomputes).
    """
    floats = _float_per_u(epsilon, eps0, h)
    if h <= ALL_U:
        return list(range(h)), floats
    picked = {0, h - 1, int(floats.argmax())} | set(np.flatnonzero(floats > SCREEN * delta).tolist())
    return sorted(picked), floats


def test_mp_rr_delta_matches_the_float_code_where_both_are_accurate() -> None:
    for h, eps0, e in [(1, 1.0, 0.0), (7, 1.0, 0.3), (40, 2.0, 0.5)]:
        assert float(_mp_rr_delta(e, eps0, h)) == pytest.approx(S.rr_count_delta(e, eps0, h), rel=1e-9)


@pytest.mark.parametrize("h,eps0,e", [(1, 1.0, 0.0), (2, 0.1, 0.05), (9, 1.0, 0.3), (25, 2.0, 0.5),
                                      (30, 5.0, 5.0 - 3e-10), (30, 5.0, 5.0)])
def test_threshold_route_matches_the_direct_sum_at_every_u(h: int, eps0: float, e: float) -> None:
    # the tail at one threshold (decimal) against the sum over every k (mpmath), u by u;
    # 1e-38 absolute: at eps = eps0, a = p - e^eps q is 0 up to rounding
    fast = _dec_rr_deltas(e, eps0, h, list(range(h)))
    for u in range(h):
        with mpmath.workdps(40):
            direct = Decimal(mpmath.nstr(_mp_rr_delta_u(e, eps0, h, u), 40))
        assert abs(fast[u] - direct) <= Decimal("1e-28") * direct + Decimal("1e-38")


GRID = [(n, eps0, delta) for n in (1, 2, 10, 100, 500) for eps0 in (0.1, 1.0, 5.0) for delta in (1e-2, 1e-6, 1e-10)]
LARGE = [(2000, 0.1, 1e-2), (2000, 0.1, 1e-10)]
# epsilon near eps0: delta(eps) steep
WORST = [(30, 5.0, 1e-10), (60, 4.0, 1e-10), (100, 5.0, 1e-9), (1000, 4.0, 1e-10), (2000, 5.0, 1e-10)]


@pytest.mark.parametrize("n,eps0,delta", GRID + LARGE + WORST)
def test_shuffle_rr_claim_never_below_the_truth(n: int, eps0: float, delta: float) -> None:
    S.rr_count_epsilon.cache_clear()
    claim = S.rr_count_epsilon(delta, eps0, n)
    assert 0.0 <= claim <= eps0
    us, floats = _checked_us(claim, eps0, n, delta)
    exact = _dec_rr_deltas(claim, eps0, n, us)
    assert max(exact.values()) <= delta
    if n > ALL_U:  # the screen's premise, on the u recomputed: float delta_u within 1e-3 delta
        assert max(abs(float(exact[u]) - floats[u]) for u in us) <= 1e-3 * delta
    if n >= 100 and 0.0 < claim < eps0 - 1e-6:  # and tight: a little below the claim the target fails
        worst = int(floats.argmax())
        assert _dec_rr_deltas(claim - 1e-6, eps0, n, [worst])[worst] > delta


def test_old_root_was_below_the_truth_at_the_worst_point() -> None:
    # brentq's root at n = 100, eps0 = 5, delta = 1e-10 was 5 - 3e-10 with delta 1.53x the target
    assert _mp_rr_delta(5.0 - 3e-10, 5.0, 100) > 1.5e-10
    assert _mp_rr_delta(S.rr_count_epsilon(1e-10, 5.0, 100), 5.0, 100) <= 1e-10


def test_safe_root_moves_to_the_safe_side() -> None:
    # a step: excess jumps at 1/3, so brentq may land on either side within its tolerance
    root = 1.0 / 3.0
    hi_side = safe_root(lambda x: 1.0 if x < root else -1.0, 0.0, 1.0, safe="hi", xtol=1e-3)
    lo_side = safe_root(lambda x: -1.0 if x <= root else 1.0, 0.0, 1.0, safe="lo", xtol=1e-3)
    assert hi_side >= root and lo_side <= root
    assert hi_side - root < 1e-2 and root - lo_side < 1e-2
    with pytest.raises(ValueError):
        safe_root(lambda x: 1.0, 0.0, 1.0, safe="hi")


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_calibrations_land_on_the_safe_side(delta: float) -> None:
    sigma = accounting.analytic_gaussian_sigma(1.0, delta)
    assert accounting.gaussian_delta(sigma, 1.0) <= delta
    assert accounting.gaussian_epsilon(sigma, delta) >= 1.0 - 1e-12
    mu = integer_noise.skellam_variance_for(1.0, delta)
    assert integer_noise.skellam_epsilon(mu, delta) <= 1.0
    s2 = integer_noise.ddg_sigma_for_rho(0.05, 10)
    assert integer_noise.ddg_rho(s2, 10) <= 0.05
    rho = accounting.approx_dp_to_zcdp(1.0, delta, tight=True)
    assert accounting.zcdp_to_approx_dp_tight(rho, delta) <= 1.0


def test_split_mix_at_two_messages_is_finite_or_trivial() -> None:
    for h in (100, 129, 130, 400):
        log_chi = float(S._log_chi2_table(h, 2, 2**20)[h])
        assert math.isfinite(log_chi)
        # chi^2 >= (q - 1) h / C(2h, 2): a first block alone; the exact value is far above
        assert log_chi >= math.log(2**20 - 1) + math.log(h) - math.log(math.comb(2 * h, 2))
        assert S.split_mix_distance(h, 2, 2**20) == 1.0
    # below the window the sum is the same exact recurrence as before
    assert S.split_mix_chi2(2, 2, 3) == pytest.approx(2.0 / 3.0, rel=1e-12)
