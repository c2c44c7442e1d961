"""Claims on the safe side of their root-finders (issue 26), recomputed in high precision.

The shuffled randomized-response count's exact delta at the claimed epsilon is recomputed
with mpmath (40 digits) by an independent route: the pmf of the others' count is built by
polynomial multiplication and exact division, u by u, instead of numpy's FFT.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from privsim.mechanisms import accounting, integer_noise
from privsim.mechanisms import shuffle_accounting as S
from privsim.mechanisms._roots import safe_root


def _float_worst_u(epsilon: float, eps0: float, h: int) -> int:
    p = S.rr_keep_probability(eps0)
    o = S._others_pmf(h, p)
    one = p * np.pad(o, ((0, 0), (1, 0))) + (1 - p) * np.pad(o, ((0, 0), (0, 1)))
    zero = (1 - p) * np.pad(o, ((0, 0), (1, 0))) + p * np.pad(o, ((0, 0), (0, 1)))
    return int(np.clip(one - math.exp(epsilon) * zero, 0.0, None).sum(axis=1).argmax())


def _mp_rr_delta(epsilon: float, eps0: float, h: int) -> mpmath.mpf:
    """max over u of sum_k max(0, P_u(k) - e^eps Q_u(k)) in mpmath (see rr_count_delta).

    Every u for h <= 12; above, u = 0, h - 1 and the float code's worst u (so this checks
    the precision of the claim where it binds, not the float code's choice of u). The
    others' pmf is a direct convolution of the two binomial pmfs, not numpy's FFT.
    """
    us = range(h) if h <= 12 else sorted({0, h - 1, _float_worst_u(epsilon, eps0, h)})
    with mpmath.workdps(40):
        e0 = mpmath.e ** mpmath.mpf(eps0)
        p = e0 / (1 + e0)
        ee = mpmath.e ** mpmath.mpf(epsilon)
        worst = mpmath.mpf(0)
        for u in us:  # u of the other h - 1 bits are 1 (reported 1 w.p. p), the rest 0 (w.p. 1 - p)
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
            worst = max(worst, total)
        return worst


def test_mp_rr_delta_matches_the_float_code_where_both_are_accurate() -> None:
    for h, eps0, e in [(1, 1.0, 0.0), (7, 1.0, 0.3), (40, 2.0, 0.5)]:
        assert float(_mp_rr_delta(e, eps0, h)) == pytest.approx(S.rr_count_delta(e, eps0, h), rel=1e-9)


GRID = [(n, eps0, delta) for n in (1, 2, 10, 100) for eps0 in (0.1, 1.0, 5.0) for delta in (1e-2, 1e-10)]
WORST = [(30, 5.0, 1e-10), (60, 4.0, 1e-10), (100, 5.0, 1e-9)]  # epsilon near eps0: delta(eps) steep


@pytest.mark.parametrize("n,eps0,delta", GRID + WORST)
def test_shuffle_rr_claim_never_below_the_truth(n: int, eps0: float, delta: float) -> None:
    S.rr_count_epsilon.cache_clear()
    claim = S.rr_count_epsilon(delta, eps0, n)
    assert 0.0 <= claim <= eps0
    assert _mp_rr_delta(claim, eps0, n) <= delta
    if n == 100 and 0.0 < claim < eps0 - 1e-6:  # and tight: a little below the claim the target fails
        assert _mp_rr_delta(claim - 1e-6, eps0, n) > delta


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
