"""shuffle-sum: the split-and-mix bound against exact multiset laws, the Polya-difference
epsilon against brute force, the schedule and counts, the estimator (unbiased, variance as
derived), the claims per coalition, the scenario and the audit of the curator."""

from __future__ import annotations

import doctest
import itertools
import math
import tomllib
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from _sum_checks import assert_mean_and_variance, discrete_laplace_total_moments
from scipy import stats

import privsim
from privsim.errors import InputError, ParameterError
from privsim.mechanisms import shuffle_accounting
from privsim.mechanisms.shuffle_accounting import (
    polya_difference_epsilon,
    split_mix_chi2,
    split_mix_delta,
    split_mix_distance,
    split_mix_messages,
)
from privsim.protocols import REGISTRY, get_protocol
from privsim.protocols import shuffle_sum as shuffle_sum_module
from privsim.protocols.secure_sum import modulus_bits
from privsim.protocols.shuffle import SHUFFLER
from privsim.protocols.shuffle_sum import ShuffleSum

ROOT = Path(__file__).resolve().parent.parent


def test_doctests():
    result = doctest.testmod(shuffle_sum_module)
    assert result.attempted > 5 and result.failed == 0


# ------------------------------------------------------------------ split and mix, exactly
def _multiset_law(y: tuple[int, ...], m: int, q: int) -> dict[tuple[int, ...], float]:
    """The law of the sorted shares when party i splits y_i into m shares mod q (all q^(n(m-1)) draws)."""
    n, law = len(y), Counter()
    for free in itertools.product(range(q), repeat=n * (m - 1)):
        shares = []
        for i in range(n):
            first = free[i * (m - 1):(i + 1) * (m - 1)]
            shares += [*first, (y[i] - sum(first)) % q]
        law[tuple(sorted(shares))] += 1
    return {k: v / q ** (n * (m - 1)) for k, v in law.items()}


def _uniform_law(size: int, total: int, q: int) -> dict[tuple[int, ...], float]:
    """The law of the sorted values of a uniform vector in Z_q^size with sum ``total``."""
    law = {}
    for values in itertools.combinations_with_replacement(range(q), size):
        if sum(values) % q == total:
            orderings = math.factorial(size)
            for count in Counter(values).values():
                orderings //= math.factorial(count)
            law[values] = orderings / q ** (size - 1)
    return law


def _tv(a: dict, b: dict) -> float:
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


@pytest.mark.parametrize("n, m, q", [(2, 2, 3), (3, 2, 3), (2, 3, 5), (3, 3, 3), (4, 2, 3)])
def test_chi2_is_the_exact_maximum_over_the_inputs(n, m, q):
    """Enumerate every multiset law: max_y chi^2(P_y || U_Y) equals split_mix_chi2 (a wrong constant
    or power in the identity E[q^(c-1)] - 1 would show), and the distances obey the bound."""
    inputs = list(itertools.product(range(q), repeat=n))
    laws = {y: _multiset_law(y, m, q) for y in inputs}
    chi2, worst_pair, worst_uniform = 0.0, 0.0, 0.0
    for total in range(q):
        uniform = _uniform_law(n * m, total, q)
        group = [y for y in inputs if sum(y) % q == total]
        for y in group:
            chi2 = max(chi2, sum(laws[y].get(k, 0.0) ** 2 / u for k, u in uniform.items()) - 1)
            worst_uniform = max(worst_uniform, _tv(laws[y], uniform))
            worst_pair = max(worst_pair, max(_tv(laws[y], laws[z]) for z in group))
    assert split_mix_chi2(n, m, q) == pytest.approx(chi2, rel=1e-9)
    assert worst_uniform <= split_mix_distance(n, m, q) + 1e-12
    assert worst_pair <= 2 * split_mix_distance(n, m, q) + 1e-12


@pytest.mark.parametrize("n, m", [(3, 2), (2, 3)])
def test_chi2_is_the_component_count_over_every_permutation(n, m):
    """E_sigma[q^(c-1)] - 1 by enumerating all (nm)! permutations of the positions."""
    q = 7
    total = 0
    for sigma in itertools.permutations(range(n * m)):
        g = nx.MultiGraph()
        g.add_nodes_from([("L", i) for i in range(n)] + [("R", i) for i in range(n)])
        g.add_edges_from((("L", pos // m), ("R", sigma[pos] // m)) for pos in range(n * m))
        total += q ** (nx.number_connected_components(g) - 1)
    assert split_mix_chi2(n, m, q) == pytest.approx(total / math.factorial(n * m) - 1, rel=1e-12)


def test_the_windowed_recurrence_bounds_the_full_one_from_above(monkeypatch):
    h, m, q = 300, 4, 2**12
    windowed = split_mix_chi2(h, m, q)  # 300 > 2 W + 1: the middle terms are bounded
    monkeypatch.setattr(shuffle_accounting, "SPLIT_MIX_WINDOW", 200)
    shuffle_accounting._log_chi2_table.cache_clear()
    full = split_mix_chi2(h, m, q)
    shuffle_accounting._log_chi2_table.cache_clear()
    assert full * (1 - 1e-12) <= windowed <= full * (1 + 1e-9)  # the bounded middle: below rounding


def test_the_papers_example_is_within_the_bound():
    """BBGN: 32-bit numbers, n = 10^4 parties, 12 messages each: statistical distance 2^-40.
    The bound here certifies more: 2^-57.5 between any two inputs with the same sum."""
    pair = 2 * split_mix_distance(10**4, 12, 2**32)
    assert math.log2(pair) == pytest.approx(-57.53, abs=0.01)


def test_messages_are_the_fewest_that_meet_delta():
    n, q, eps, delta = 200, 2**14, 1.0, 1e-6
    m = split_mix_messages(eps, delta, n, q)
    assert split_mix_delta(eps, n, m, q) <= delta < split_mix_delta(eps, n, m - 1, q)
    assert split_mix_delta(eps, n, m, q) == pytest.approx((1 + math.e) * 0.5 * math.sqrt(split_mix_chi2(n, m, q)))
    assert split_mix_messages(eps, 1e-300, 4, q, max_messages=8) is None


@pytest.mark.parametrize("eps, p, shape", [(1.0, 10, 0.01), (0.5, 5, 0.3), (2.0, 3, 0.9), (1.0, 4, 1.0)])
def test_polya_difference_epsilon_is_the_worst_ratio(eps, p, shape):
    """max over every shift |d| <= p and every k of |ln W(k)/W(k+d)|, from the explicit pmf."""
    a = math.exp(-eps / p)
    pmf = stats.nbinom.pmf(np.arange(300), shape, 1 - a)
    w = np.convolve(pmf, pmf[::-1])  # W(k) at index 299 + k
    core = slice(100, -100)          # away from the truncated tails
    worst = max(np.abs(np.log(w[:-d][core] / w[d:][core])).max() for d in range(1, p + 1))
    assert polya_difference_epsilon(eps, p, shape) == pytest.approx(worst, rel=1e-9)


# ------------------------------------------------------------------ the protocol
def test_registered_and_refuses_what_it_cannot_do():
    assert REGISTRY["shuffle-sum"] is ShuffleSum
    proto = get_protocol("shuffle-sum", epsilon="0.5", messages="3")
    assert (proto.epsilon, proto.messages) == (0.5, 3)
    with pytest.raises(InputError, match="reals in \\[0, 1\\]"):
        privsim.simulate(proto, [0.5, 1.5, 0.0], trials=2, seed=1)
    with pytest.raises(ParameterError, match="delta = 1e-300 is out of reach"):
        privsim.simulate(ShuffleSum(delta=1e-300), [0.5] * 4, trials=2, seed=1)


def test_schedule_counts_and_what_the_curator_receives():
    n, m = 7, 3
    proto = ShuffleSum(epsilon=1.0, messages=m)
    x = np.linspace(0, 1, n)
    res = privsim.simulate(proto, x, trials=30, seed=2, record=True)
    q = proto.modulus_for(n, 0)
    bits = modulus_bits(q)
    assert res.messages == (n - 1) * m + 1 == proto.schedule(n, 0).messages
    assert res.bits == (2 * n - 1) * m * bits and res.rounds == m + 1
    shuffler = res.view([SHUFFLER]).to_array()
    columns = res.view([SHUFFLER]).columns()
    received = [shuffler[:, columns.index(f"msg r{k} {i}->0")] for i in range(1, n) for k in range(1, m + 1)]
    curator = res.view("C")
    multiset = curator.to_array()[:, :n * m]
    assert curator.columns()[0] == f"msg r{m + 1} 0->C[0]"
    assert np.all(np.diff(multiset, axis=1) >= 0)  # sorted: the multiset's canonical form
    # the multiset holds every received share (and the shuffler's own m)
    for row in range(3):
        pool = Counter(multiset[row].astype(int).tolist())
        assert not Counter(int(v[row]) for v in received) - pool
    total = privsim.mechanisms.to_signed(multiset.astype(np.int64).sum(axis=1) % q, q) / proto.precision_for(n)
    assert np.allclose(total, res.estimate)


def test_estimator_is_unbiased_with_the_derived_variance():
    """E = SUM(x); Var = (sum f(1-f) + n/(n-t) Var DLap(p/eps)) / p^2, checked with the exact 4th
    moment (5 sd). At eps = 4 the rounding and the noise are of one size, so dropping or doubling
    either term fails."""
    n, t, r, eps = 20, 2, 20000, 4.0
    proto = ShuffleSum(epsilon=eps, messages=2)
    x = np.array([0.1, 0.5, 0.9, 0.33, 1.0] * 4)
    res = privsim.simulate(proto, x, trials=r, seed=5, t=t, record=False)
    p = proto.precision_for(n)
    assert p == 5
    f = x * p - np.floor(x * p)
    var_z, mu4_z = discrete_laplace_total_moments(p / eps, n / (n - t))
    k2 = float(np.sum(f * (1 - f))) + var_z
    k4 = float(np.sum(f * (1 - f) * (1 - 6 * f * (1 - f)))) + (mu4_z - 3 * var_z**2)
    variance = k2 / p**2
    assert proto.variance(n, t, x) == pytest.approx(variance, rel=1e-12)
    assert 0.3 < float(np.sum(f * (1 - f))) / var_z < 3  # both terms matter
    assert_mean_and_variance(res.error, variance, (k4 + 3 * k2**2) / p**4)
    assert proto.noise_variance(n, t) == pytest.approx(var_z / p**2)


def test_claims_per_coalition():
    n, t = 100, 0
    proto = ShuffleSum(epsilon=1.0, delta=1e-6)
    m, q, p = proto.messages_for(n, t), proto.modulus_for(n, t), proto.precision_for(n)
    local = polya_difference_epsilon(1.0, p, 1 / n)
    curator = proto.privacy(("C",), n, t)
    assert curator == privsim.Privacy(1.0, split_mix_delta(1.0, n, m, q)) and curator.delta <= 1e-6
    assert split_mix_delta(1.0, n, m - 1, q) > 1e-6  # m is the fewest
    with_users = proto.privacy((5, 6, "C"), n, t)   # 98 honest: noise of shape 0.98
    eps98 = polya_difference_epsilon(1.0, p, 0.98)
    assert with_users == privsim.Privacy(eps98, split_mix_delta(eps98, 98, m, q)) and 1.0 < eps98 < 1.1
    assert proto.privacy((SHUFFLER,), n, t) == privsim.Privacy(local) == proto.privacy((SHUFFLER, "C"), n, t)
    assert local > 1.0 + math.log(p * n) / 2  # one share of 1/n of the noise: far weaker
    assert proto.privacy((3, 4), n, t) == privsim.Privacy(0.0)
    assert proto.public_privacy(n, t) == privsim.Privacy(1.0)
    # too few shares to mix: the claim falls back to what every view implies, y_j's own noise
    assert ShuffleSum(epsilon=1.0, messages=2).privacy(("C",), n, t) == privsim.Privacy(local)
    # over-provisioned noise (t = 10): 90 honest users still hold all of it
    assert ShuffleSum(epsilon=1.0).privacy(tuple(range(1, 11)) + ("C",), n, 10).epsilon == 1.0


def test_audits_stay_below_the_claims_and_the_shuffler_sees_more():
    """All inputs 0, neighbour 1 moves to 1: the total shifts by p, the discrete Laplace's worst case.
    The curator's claim (1, delta) is nearly met; the shuffler, who sees y_1 = xbar_1 + z_1 with
    z_1 only 1/n of the noise, is audited far above epsilon = 1 and below its pure claim."""
    proto = ShuffleSum(epsilon=1.0, delta=1e-6)
    x = np.zeros(6)
    curator = privsim.audit(proto, x, coalition="C", neighbor=1, trials=5000, seed=2, delta=1e-6)
    assert curator.epsilon_claimed == pytest.approx(proto.privacy(("C",), 6, 0).epsilon_at(1e-6))
    assert curator.violated is False and 0.5 < curator.epsilon_lower <= curator.epsilon_claimed
    shuffler = privsim.audit(proto, x, coalition="0", neighbor=1, trials=5000, seed=2, delta=1e-6)
    assert shuffler.epsilon_claimed == pytest.approx(polya_difference_epsilon(1.0, 3, 1 / 6))
    assert shuffler.violated is False and 2.0 < shuffler.epsilon_lower <= shuffler.epsilon_claimed


def test_scenario_reports_the_stated_numbers():
    data = tomllib.loads((ROOT / "scenarios" / "shuffle_sum.toml").read_text())
    proto = get_protocol(data["protocol"], **data["params"])
    n = data["n"]
    assert (proto.precision_for(n), proto.modulus_for(n, 0), proto.messages_for(n, 0)) == (32, 2**17, 8)
    assert math.sqrt(proto.noise_variance(n, 0)) == pytest.approx(1.414, abs=1e-3)
