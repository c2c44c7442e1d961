"""Randomized response against the paper's mathematics (Beimel–Nissim–Omri, Section 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privsim
from privsim.protocols import RandomizedResponse, RandomizedResponseDistributed


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_flip_bias(epsilon):
    a = RandomizedResponse(epsilon=epsilon).a
    assert a == pytest.approx(epsilon / (4 + 2 * epsilon))
    assert math.log((0.5 + a) / (0.5 - a)) == pytest.approx(math.log(1 + epsilon))


@pytest.mark.parametrize("cls", [RandomizedResponse, RandomizedResponseDistributed])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_estimate_unbiased_with_the_paper_variance(cls, epsilon):
    n, trials = 400, 6000
    proto = cls(epsilon=epsilon)
    x = (np.arange(n) % 3 == 0).astype(int)
    res = privsim.simulate(proto, x, trials=trials, seed=20 + int(epsilon * 10))
    var = proto.variance(n)  # n (1/4 - a^2)/(4 a^2)
    a = proto.a
    assert var == pytest.approx(n * (0.25 - a * a) / (4 * a * a))
    err = res.estimate - x.sum()
    # mean within 5 sigma of 0
    assert abs(err.mean()) < 5 * math.sqrt(var / trials)
    # sample variance within 5 sigma of var (the estimate is a shifted binomial sum:
    # Var(s^2) = var^2 (2/(R-1) + kurtosis_excess/R), excess = (1 - 6pq)/(n pq) with pq = 1/4 - a^2)
    pq = 0.25 - a * a
    excess = (1 - 6 * pq) / (n * pq)
    sd_var = var * math.sqrt(2 / (trials - 1) + excess / trials)
    assert abs(err.var(ddof=1) - var) < 5 * sd_var


@pytest.mark.parametrize("epsilon", [1.0, 3.0])
def test_curator_view_frequency_ratio_is_one_plus_epsilon(epsilon):
    n, trials = 200, 4000
    x = (np.arange(n) < n // 2).astype(int)
    res = privsim.simulate(RandomizedResponse(epsilon=epsilon), x, trials=trials, seed=7)
    view = res.view("C")
    z = view.to_array()[:, :n]  # msg r1 j->C
    p1 = z[:, x == 1].mean()
    p0 = z[:, x == 0].mean()
    m = trials * n // 2
    a = epsilon / (4 + 2 * epsilon)
    assert abs(p1 - (0.5 + a)) < 5 * math.sqrt((0.25 - a * a) / m)
    ratio = p1 / p0
    # delta method: sd(ratio) = ratio * sqrt(var p1/p1^2 + var p0/p0^2)
    sd = ratio * math.sqrt((1 - p1) / (p1 * m) + (1 - p0) / (p0 * m))
    assert abs(ratio - (1 + epsilon)) < 5 * sd


def test_message_counts():
    for n in (2, 7, 50):
        x = np.zeros(n, dtype=int)
        local = privsim.simulate(RandomizedResponse(), x, trials=2, seed=0)
        dist = privsim.simulate(RandomizedResponseDistributed(), x, trials=2, seed=0)
        assert (local.messages, local.rounds, local.bits) == (n, 1, n)
        assert (dist.messages, dist.rounds) == (2 * (n - 1), 2)
        assert dist.bits == (n - 1) * 1 + (n - 1) * 64


def test_privacy_claim():
    rr = RandomizedResponse(epsilon=0.7)
    assert rr.privacy(("C",), 10, 9).epsilon == 0.7
    assert RandomizedResponseDistributed(epsilon=2).privacy((0, 1, 2), 10, 9).epsilon == 2
