"""ck-sum: the message count near n(t+1)/2, the plan behind the t-privacy proof, exactness, noise."""

from __future__ import annotations

import doctest
import math

import networkx as nx
import numpy as np
import pytest
from _sum_checks import (
    ALPHA,
    assert_mean_and_variance,
    assert_pmf_fits,
    discrete_laplace_total_moments,
    homogeneous,
    laplace_total_moments,
    uniform_p,
)
from scipy import stats

import privsim
from privsim.errors import ParameterError
from privsim.mechanisms.noise import discrete_laplace_pmf
from privsim.protocols import ck_sum as ck_sum_module
from privsim.protocols import get_protocol
from privsim.protocols.ck_sum import CKSum, ck_plan, half_degree
from privsim.protocols.secure_sum import SecureSum, modulus_bits

SETTINGS = [(n, t) for t in range(0, 9) for n in range(t + 1, 41)]


def test_doctests():
    result = doctest.testmod(ck_sum_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 8 and result.failed == 0


def test_registered_under_its_cli_name():
    assert isinstance(get_protocol("ck-sum", levels=4), CKSum)


# ------------------------------------------------------------------ messages
def _closed_form(n, t, k=0, broadcast=False):
    r = (t + 2) // 2
    k = k or r + 1
    flow = n * r + n // k - 1 if n >= 2 * r + 1 else n * (n - 1) // 2
    return flow + (n - 1 if broadcast else 0)


@pytest.mark.parametrize("levels", ["default", "n"])
def test_message_count_equals_the_closed_form_everywhere(levels):
    for n, t in SETTINGS:
        r = half_degree(t)
        k = n if (levels == "n" and n >= 2 * r + 1) else 0
        sched = CKSum(levels=k).schedule(n, t)
        assert sched.messages == CKSum.message_count(n, t, k) == _closed_form(n, t, k), (n, t, k)
        assert abs(sched.messages - n * (t + 1) / 2) <= n, (n, t)  # within n of Chor–Kushilevitz
        if levels == "n" and t % 2 == 1 and n >= 2 * r + 1:
            assert sched.messages == n * (t + 1) // 2  # odd t, K = n: exactly the bound


@pytest.mark.parametrize("n,t", [(2, 1), (5, 2), (10, 3), (33, 4), (64, 7), (100, 1)])
@pytest.mark.parametrize("broadcast", [False, True])
def test_simulated_counts_match_and_sum_is_exact(n, t, broadcast):
    rng = np.random.default_rng(n + t)
    x = rng.integers(0, 4, size=(20, n))
    proto = CKSum(noise="none", max_input=3, broadcast=broadcast)
    res = privsim.simulate(proto, x, trials=20, seed=1, t=t)
    assert res.messages == res.schedule.messages == CKSum.message_count(n, t, 0, broadcast)
    assert res.bits == res.messages * modulus_bits(proto.modulus_for(n, t))
    assert np.array_equal(res.estimate, x.sum(axis=1))
    if broadcast:
        assert all(np.array_equal(res.outputs[i], x.sum(axis=1)) for i in range(n))
    assert res.rounds == ck_plan(n, t).flow_rounds + broadcast
    assert res.rounds <= 2 * half_degree(t) + broadcast or n <= 2 * half_degree(t)


def test_more_levels_trade_rounds_for_messages():
    n, t = 60, 3
    small, large = CKSum(noise="none"), CKSum(noise="none", levels=20)
    a = privsim.simulate(small, np.ones(n, dtype=int), trials=2, seed=1, t=t)
    b = privsim.simulate(large, np.ones(n, dtype=int), trials=2, seed=1, t=t)
    assert (a.messages, a.rounds) == (2 * n + n // 3 - 1, 3)     # K = r + 1 = 3 divides n: K rounds
    assert (b.messages, b.rounds) == (2 * n + n // 20 - 1, 20)
    c = privsim.simulate(CKSum(noise="none", levels=7), np.ones(n, dtype=int), trials=2, seed=1, t=t)
    assert (c.messages, c.rounds) == (2 * n + n // 7 - 1, 7 + 60 % 7 - 1)  # K + s - 1 rounds
    assert np.all(b.estimate == n)


def test_fewer_messages_than_secure_sum():
    for n, t in [(100, 1), (100, 5), (1000, 9)]:
        assert CKSum.message_count(n, t) < SecureSum.message_count(n, t)


# ------------------------------------------------------------------ the plan behind the proof
def test_every_party_is_popular_and_the_graph_is_t_plus_1_connected():
    """The proof's key step: removing any t parties leaves the parties connected."""
    for n, t in SETTINGS:
        if n < 2 or n > 24:
            continue
        sched = CKSum().schedule(n, t)
        g = sched.graph()
        assert nx.node_connectivity(g) >= min(t + 1, n - 1), (n, t)
        if n >= t + 2:
            assert sched.lonely(t) == []  # every party has >= t + 1 active channels


def test_levels_are_a_proper_colouring_and_the_flow_is_acyclic():
    for n, t in SETTINGS:
        plan = ck_plan(n, t)
        dag = nx.DiGraph()
        dag.add_nodes_from(range(n))
        for i in range(n):
            for j in plan.neighbours(i):
                assert plan.level[i] != plan.level[j]
            for j in plan.out[i]:
                dag.add_edge(i, j)
                assert plan.level[j] > plan.level[i] or j == plan.collector
        assert nx.is_directed_acyclic_graph(dag)
        assert plan.out[plan.collector] == ()
        assert all(plan.out[i] for i in range(n) if i != plan.collector)
        # sinks: floor(n/K) (one of them the collector) on the circulant
        r = half_degree(t)
        if n >= 2 * r + 1:
            sinks = [i for i in range(n) if i == plan.collector
                     or (plan.out[i] == (plan.collector,) and plan.collector not in plan.neighbours(i))]
            assert len(sinks) == n // plan.levels


# ------------------------------------------------------------------ perfect privacy of the view
def _view_cells(res, coalition):
    """The messages crossing between the coalition and the rest, and which of them are
    shares of a split (sent by an outsider with two or more receivers: marginally uniform)."""
    plan = ck_plan(res.n, res.t)
    view = res.view(coalition)
    cols, shares = [], []
    for _, s, d, v in view.messages:
        if (s in coalition) != (d in coalition):
            cols.append(np.asarray(v))
            shares.append(s not in coalition and len(plan.out[s]) >= 2)
    return cols, shares


@pytest.mark.parametrize("n,t,coalition,target", [
    (5, 1, [1], 0), (5, 1, [1], 2), (5, 1, [3], 2),
    (7, 2, [2, 3], 0), (7, 2, [2, 3], 4), (7, 2, [0, 5], 1),
])
def test_t_coalition_view_does_not_depend_on_an_input(n, t, coalition, target):
    """Chi-square (two samples: x_target = 0 vs 1) on every pair of messages crossing the cut,
    and on their sum; the collector (n - 1) is outside the coalition. (Only the distribution
    must not move: messages the coalition sends depend on those it receives.)"""
    q = 11 if n == 5 else 17
    proto = CKSum(noise="none", modulus=q)
    trials = 8000
    cols = {}
    for bit, seed in ((0, 41), (1, 42)):
        x = np.zeros(n, dtype=int)
        x[target] = bit
        res = privsim.simulate(proto, x, trials=trials, seed=seed, t=t, coalition=coalition)
        cols[bit], shares = _view_cells(res, coalition)
        for c, is_share in zip(cols[bit], shares):
            if is_share:
                assert uniform_p(c, q) > ALPHA / len(shares)
    k = len(cols[0])
    assert k >= 1
    tests = [(i, j) for i in range(k) for j in range(i + 1, k)] or [(0, None)]
    alpha = ALPHA / (len(tests) + 1)
    for i, j in tests:
        a = cols[0][i] if j is None else cols[0][i] * q + cols[0][j]
        b = cols[1][i] if j is None else cols[1][i] * q + cols[1][j]
        cells = q if j is None else q * q
        assert homogeneous(a, b, cells) > alpha
    total = [sum(c) % q for c in (cols[0], cols[1])]
    assert homogeneous(total[0], total[1], q) > alpha


def test_the_view_test_detects_a_party_whose_neighbours_collude():
    """Power: the 2r = t + 1 neighbours of a party (one more than t) see all it sends."""
    n, t, q = 5, 1, 11
    proto = CKSum(noise="none", modulus=q)
    totals = {}
    for bit, seed in ((0, 51), (1, 52)):
        x = np.zeros(n, dtype=int)
        x[2] = bit
        res = privsim.simulate(proto, x, trials=3000, seed=seed, t=t, coalition=[1, 3])
        sent = [np.asarray(v) for _, s, d, v in res.view([1, 3]).messages if s == 2]
        assert len(sent) == 2
        totals[bit] = sum(sent) % q
    assert homogeneous(totals[0], totals[1], q) < 1e-10


# ------------------------------------------------------------------ noise
@pytest.mark.parametrize("noise", ["laplace", "discrete-laplace"])
def test_released_noise_has_the_stated_variance(noise):
    n, t, trials = 15, 4, 20000
    proto = CKSum(noise=noise, epsilon=0.5)
    res = privsim.simulate(proto, np.arange(n) % 2, trials=trials, seed=13, t=t, record=False)
    b, k = 2.0, n / (n - t)
    if noise == "laplace":
        variance, mu4 = laplace_total_moments(b, k)
        assert math.isclose(proto.noise_variance(n, t), 2 * b * b * n / (n - t))
    else:
        variance, mu4 = discrete_laplace_total_moments(b, k)
    assert math.isclose(proto.noise_variance(n, t), variance, rel_tol=1e-12)
    slack = math.sqrt(n) * 2.0 ** -(proto.digits + 1) if proto.fixed_point else 0.0
    assert_mean_and_variance(res.error, variance, mu4, slack_sd=slack)


def test_honest_parties_hold_the_full_discrete_laplace():
    """The collector's coalition subtracts its own noise shares and still faces DLap(b)."""
    n, t, b = 9, 3, 1.5
    coalition = [6, 7, 8]  # t parties, including the collector, party 8
    proto = CKSum(noise="discrete-laplace", epsilon=1 / b)
    res = privsim.simulate(proto, np.ones(n, dtype=int), trials=20000, seed=14, t=t, coalition=coalition)
    view = res.view(coalition)
    own = sum(view.randomness[m][0].astype(np.int64) - view.randomness[m][1].astype(np.int64)
              for m in coalition)
    assert_pmf_fits(view.outputs[8] - n - own, lambda k: discrete_laplace_pmf(k, b), -200, 200)


def test_gaussian_total_is_normal():
    n, t = 12, 5
    proto = CKSum(noise="gaussian", rho=0.5)
    res = privsim.simulate(proto, np.zeros(n, dtype=int), trials=20000, seed=15, t=t, record=False)
    assert stats.kstest(res.error, stats.norm(scale=math.sqrt(n / (n - t))).cdf).pvalue > ALPHA


def test_no_wrap_with_all_ones_and_large_noise():
    n, t = 50, 5
    proto = CKSum(noise="laplace", epsilon=0.01)
    res = privsim.simulate(proto, np.ones(n, dtype=int), trials=4000, seed=16, t=t, record=False)
    assert np.max(np.abs(res.error)) < 8 * math.sqrt(proto.noise_variance(n, t))


# ------------------------------------------------------------------ privacy claims and errors
def test_privacy_claims():
    n, t = 20, 3
    p = CKSum(noise="laplace", epsilon=0.5)
    assert p.privacy([19], n, t) == privsim.Privacy(0.5)           # the collector sees the output
    assert p.privacy([0, 1, 2], n, t) == privsim.Privacy(0.0)      # no output: view independent
    assert p.privacy([0, 1, 2, 3], n, t) is None
    assert CKSum(broadcast=True).privacy([4], n, t) == privsim.Privacy(1.0)
    assert CKSum(noise="none").privacy([19], n, t) is None
    # Gaussian shares: exactly the Gaussian of the residual noise, the collector alone facing 19 of 17 per unit
    g = CKSum(noise="gaussian", rho=0.125)  # sigma2 = 4
    assert g.privacy([19], n, t).mu == pytest.approx(1 / math.sqrt(4 * 19 / 17), rel=1e-12)
    assert g.privacy([17, 18, 19], n, t).mu == pytest.approx(0.5, rel=1e-12)
    assert g.public_privacy(n, t).mu == pytest.approx(1 / math.sqrt(4 * 20 / 17), rel=1e-12)
    assert g.publishes(n, t) == (19,)


def test_bad_parameters():
    with pytest.raises(ParameterError, match="levels must be"):
        privsim.simulate(CKSum(levels=2), np.ones(20, dtype=int), t=3)
    with pytest.raises(ParameterError, match="levels must be"):
        privsim.simulate(CKSum(levels=21), np.ones(20, dtype=int), t=3)
    with pytest.raises(ParameterError, match="t must satisfy"):
        privsim.simulate(CKSum(), np.ones(4, dtype=int), t=4)
    with pytest.raises(ParameterError, match="noise must be one of"):
        CKSum(noise="uniform")
    with pytest.raises(ParameterError, match="modulus must be >"):
        privsim.simulate(CKSum(noise="none", modulus=15), np.ones(8, dtype=int), t=2)


def _reference_plan(n: int, t: int, levels: int) -> tuple:
    """The orientation written out party by party, as the construction states it."""
    from privsim.protocols.ck_sum import half_degree

    r = half_degree(t)
    if n <= 2 * r:
        k, level = n, list(range(n))
        nbrs = [[j for j in range(n) if j != i] for i in range(n)]
    else:
        k = levels or r + 1
        main = k * (n // k)
        level = [i % k if i < main else k + (i - main) for i in range(n)]
        nbrs = [[(i + d) % n for d in range(-r, r + 1) if d] for i in range(n)]
    out = []
    for i in range(n):
        up = tuple(sorted(j for j in nbrs[i] if level[j] > level[i]))
        out.append(() if i == n - 1 else up or (n - 1,))
    return k, tuple(level), tuple(out)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 40, 101])
@pytest.mark.parametrize("t", [0, 1, 3, 6])
def test_plan_and_schedule_follow_the_construction(n: int, t: int) -> None:
    from privsim.protocols.ck_sum import CKSum, ck_plan, half_degree

    for levels in sorted({0, half_degree(t) + 1, n} - ({n} if n <= half_degree(t) else set())):
        plan = ck_plan(n, t, levels)
        k, level, out = _reference_plan(n, t, levels)
        assert (plan.levels, plan.level, plan.out) == (k, level, out)
        want = sorted((level[i] + 1, i, j) for i in range(n) for j in out[i])
        assert sorted(CKSum(levels=levels).schedule(n, t).triples()) == want
