"""The interactive local protocol (Beimel–Nissim–Omri, Section 2): adaptive median search by RR."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privsim
from privsim import CURATOR
from privsim.errors import InputError, ParameterError
from privsim.protocols.interactive import InteractiveRR


def transcript(res):
    """(thresholds, answers) per query round from the curator's view: (R, l) and (R, l, n)."""
    view = res.view("C")
    n, rounds = res.n, res.protocol.query_rounds
    queries = {r: [] for r in range(1, 2 * rounds, 2)}
    answers = {r: [] for r in range(2, 2 * rounds + 1, 2)}
    for r, s, d, v in view.messages:
        (queries if r % 2 else answers)[r].append((d if r % 2 else s, np.asarray(v)))
    theta = []
    for r in sorted(queries):
        sent = [v for _, v in sorted(queries[r], key=lambda p: p[0])]
        assert len(sent) == n and all(np.array_equal(v, sent[0]) for v in sent)  # same query to all
        theta.append(sent[0])
    z = [np.stack([v for _, v in sorted(answers[r], key=lambda p: p[0])], axis=1) for r in sorted(answers)]
    return np.stack(theta, axis=1), np.stack(z, axis=1).astype(np.int64)


@pytest.mark.parametrize(("n", "domain"), [(5, 2), (40, 8), (100, 16), (33, 64)])
def test_message_count_rounds_and_bits(n, domain):
    proto = InteractiveRR(epsilon=1.0, domain=domain)
    res = privsim.simulate(proto, n=n, trials=4, seed=1)
    l = int(math.log2(domain))
    assert res.messages == res.schedule.messages == 2 * n * l == proto.message_count(n)
    assert res.rounds == 2 * l and res.schedule.messages_per_round() == [n] * (2 * l)
    assert res.bits == n * l * l + n * l  # a query is log2(D) = l bits, an answer 1 bit


def test_curator_view_holds_every_query_and_answer_and_no_randomness():
    n, domain, trials = 6, 8, 3
    res = privsim.simulate(InteractiveRR(epsilon=1.0, domain=domain), n=n, trials=trials, seed=2)
    view = res.view("C")
    triples = [(r, s, d) for r, s, d, _ in view.messages]
    expected = []
    for j in range(3):
        expected += [(2 * j + 1, CURATOR, i) for i in range(n)] + [(2 * j + 2, i, CURATOR) for i in range(n)]
    assert triples == expected
    assert view.randomness[CURATOR] == [] and view.inputs == {}  # deterministic, no input
    assert view.to_array().shape == (trials, 2 * n * 3 + 1)  # messages plus the published output
    np.testing.assert_array_equal(view.outputs[CURATOR], res.estimate)
    # a party sees only its own queries and answers
    assert {(s, d) for _, s, d, _ in res.view("2").messages} == {(CURATOR, 2), (2, CURATOR)}


def test_second_query_depends_on_the_first_answers():
    n, domain = 60, 16
    proto = InteractiveRR(epsilon=1.0, domain=domain)
    x = np.array([3] * 30 + [12] * 30)  # exactly half the parties are >= D/2: both branches occur
    res = privsim.simulate(proto, x, trials=400, seed=3)
    theta, z = transcript(res)
    assert np.all(theta[:, 0] == domain // 2)
    c1 = proto.rr.debias(z[:, 0].sum(axis=1), n)
    np.testing.assert_array_equal(theta[:, 1], np.where(c1 >= n / 2, 3 * domain // 4, domain // 4))
    assert set(theta[:, 1].tolist()) == {domain // 4, 3 * domain // 4}
    # and every later query follows the binary search on the earlier answers
    lo, hi = np.zeros(400, dtype=int), np.full(400, domain)
    for j in range(proto.query_rounds):
        np.testing.assert_array_equal(theta[:, j], (lo + hi) // 2)
        up = proto.rr.debias(z[:, j].sum(axis=1), n) >= n / 2
        lo, hi = np.where(up, theta[:, j], lo), np.where(up, hi, theta[:, j])
    np.testing.assert_array_equal(res.estimate, lo)


def test_each_round_count_is_unbiased_with_the_rr_variance():
    n, trials = 200, 3000
    proto = InteractiveRR(epsilon=2.0, domain=16)
    x = proto.default_inputs(n)
    res = privsim.simulate(proto, x, trials=trials, seed=4)
    theta, z = transcript(res)
    var = proto.count_variance(n)
    for j in range(proto.query_rounds):
        true_count = (x[None, :] >= theta[:, j, None]).sum(axis=1)  # at the (random) adaptive threshold
        err = proto.rr.debias(z[:, j].sum(axis=1), n) - true_count
        assert abs(err.mean()) < 5 * math.sqrt(var / trials)
        sq = err ** 2
        assert abs(sq.mean() - var) < 5 * sq.std(ddof=1) / math.sqrt(trials)


def test_answers_keep_the_true_bit_with_probability_half_plus_a_of_eps_over_l():
    n, trials, eps = 50, 2000, 3.0
    proto = InteractiveRR(epsilon=eps, domain=8)
    x = proto.default_inputs(n)
    res = privsim.simulate(proto, x, trials=trials, seed=5)
    theta, z = transcript(res)
    truth = (x[None, None, :] >= theta[:, :, None]).astype(np.int64)
    kept = (z == truth).mean()
    a = (eps / 3) / (4 + 2 * eps / 3)  # eps split evenly over l = 3 rounds
    assert proto.rr.a == pytest.approx(a)
    N = z.size
    assert abs(kept - (0.5 + a)) < 5 * math.sqrt((0.25 - a * a) / N)


def test_finds_the_median_when_counts_are_far_from_n_over_2():
    n, trials = 400, 500
    x = np.array([3] * (n // 5) + [9] * (3 * n // 5) + [14] * (n // 5))  # #{x >= v}: 100, 80, 20, 0 %
    proto = InteractiveRR(epsilon=8.0, domain=16)  # count sd = sqrt(0.75 n) = 17: margins of 7 sd
    res = privsim.simulate(proto, x, trials=trials, seed=6, record=False)
    assert res.true_value[0] == 9
    np.testing.assert_array_equal(res.estimate, 9)


def test_true_value_is_the_upper_median():
    proto = InteractiveRR(domain=8)
    x = np.array([[0, 1, 5, 7], [2, 2, 2, 7], [6, 0, 0, 0]])
    # max{v : #{x_i >= v} >= n/2 = 2}
    np.testing.assert_array_equal(proto.true_value(x), [5, 2, 0])


def test_privacy_is_eps_for_every_coalition():
    proto = InteractiveRR(epsilon=1.2, domain=16)
    assert proto.round_epsilon == pytest.approx(0.3)
    for coalition in (["C"], [0, 1], ["C", 0, 1, 2]):
        assert proto.privacy(coalition, 10, 9) == privsim.Privacy(1.2)
    assert 4 * math.log(1 + proto.round_epsilon) <= proto.epsilon  # exact loss of four answers


def test_bad_domain_and_inputs():
    with pytest.raises(ParameterError, match="power of two"):
        InteractiveRR(domain=12)
    with pytest.raises(InputError, match="outside the domain 0..7"):
        privsim.simulate(InteractiveRR(domain=8), [0, 8, 1], trials=1, seed=0)
