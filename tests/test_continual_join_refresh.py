"""Continual join, private by default: which counters a release reads, and the trial-vectorized noise.

The paper's lazy refresh (``refresh="touched"``) re-releases only the counters an update
touches, so "the release did not change" reveals that no update came (Pagh & Sejer, proof
of Theorem 5.6). The default (``refresh="all"``) reads every counter's tree release at
every step. Under it, the event has probability 0 under both neighbours; under the lazy
refresh, 1 under one and 0 under the other.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privsim
from privsim.errors import InputError, ParameterError
from privsim.mechanisms._counter_noise import counter_noise
from privsim.mechanisms.join import JoinSizeEstimator
from privsim.mechanisms.range_counting import RangeCounter
from privsim.mechanisms.sketch import CountSketch
from privsim.mechanisms.tree import tree_covariance
from privsim.protocols.continual_sketch import ContinualJoin

RUNS = 4000


@pytest.mark.parametrize(("T", "times"), [(16, [2, 4, 6, 8, 10, 12, 14, 16]), (16, list(range(1, 17))),
                                          (32, [1, 5, 6, 20, 21, 32]), (2, [1, 2])])
def test_dense_counter_noise_has_the_tree_covariance(T: int, times: list[int]) -> None:
    """Every entry of the sample covariance within 5 sd of Theorem 3.1's (m + 1) s^2.

    The dense counters of 5,000 trials read together (FastGaMe in lockstep). sd of a
    sample covariance of jointly Gaussian values: sqrt((C_ii C_jj + C_ij^2) / N). A factor
    of two in s^2, or a level shared wrongly (off by one in m), moves an entry by at least
    s^2 = 1.5, over 25 sd at N = 40,000.
    """
    n = 40_000
    noise = counter_noise(T, 1.5, 8, trials=n // 8, seed=T)
    draws = np.stack([noise.at(t).ravel() for t in times], axis=1)
    exact = tree_covariance(times, T, 1.5)
    sample = draws.T @ draws / n  # the mean is 0
    sd = np.sqrt((np.outer(np.diag(exact), np.diag(exact)) + exact**2) / n)
    assert np.all(np.abs(sample - exact) < 5 * sd), np.abs((sample - exact) / sd).max()
    assert np.all(np.abs(draws.mean(axis=0)) < 5 * np.sqrt(np.diag(exact) / n))


def test_dense_counter_noise_repeats_and_refuses_going_back() -> None:
    noise = counter_noise(8, 1.0, 2, trials=3, seed=0)
    first = noise.at(3).copy()
    np.testing.assert_array_equal(noise.at(3), first)
    np.testing.assert_array_equal(noise.at(3, np.array([[1], [0], [1]]))[:, 0], first[np.arange(3), [1, 0, 1]])
    with pytest.raises(ParameterError, match="before the last query"):
        noise.at(2)
    with pytest.raises(ParameterError, match="t"):
        noise.at(9)
    # the scalar path is FastGaMe over the counters: a subset at a step is a subset of the whole
    one = counter_noise(8, 1.0, 5, sparse=True, seed=4)
    sub = one.at(2, np.array([[4, 1]]))
    np.testing.assert_array_equal(one.at(2)[0, [4, 1]], sub[0])


def _unchanged(proto: ContinualJoin, x: np.ndarray, seed: int) -> np.ndarray:
    """Per step s = 2..T: the share of runs whose release s equals release s - 1."""
    series = privsim.simulate(proto, x, trials=RUNS, seed=seed, record=False).outputs["C"]
    return (series[:, 1:] == series[:, :-1]).mean(axis=0)


def _streams(T: int, steps: list[int]) -> np.ndarray:
    """Party 0 (relation R) adds key 3 at the given steps; party 1 (relation S) never updates."""
    x = -np.ones((2, T), dtype=np.int64)
    x[0, [s - 1 for s in steps]] = 3
    return x


@pytest.mark.parametrize(("steps", "steps_prime"), [([3], []), ([2, 5], [5])])
def test_release_unchanged_is_no_event_by_default_and_a_leak_when_lazy(steps, steps_prime) -> None:
    """4,000 runs of each neighbouring stream, the event "release s equals release s - 1".

    Default: at every step its two frequencies agree within 5 sd of their difference under
    equal probabilities, sqrt(2 p (1 - p) / N) with p the pooled frequency. (Both are 0
    here: the release reads fresh continuous noise at every step, so the tolerance is 0
    and the test is that they are equal.) Lazy: at the step where exactly one of the
    streams updates, the frequencies are 0 and 1, the unbounded loss of Theorem 5.6's gap.
    """
    T = 8
    x, x_prime = _streams(T, steps), _streams(T, steps_prime)
    default = ContinualJoin(T=T, rows=1, width=16, keys=8, rho=0.01)
    p, q = _unchanged(default, x, 1), _unchanged(default, x_prime, 2)
    pooled = (p + q) / 2
    assert np.all(np.abs(p - q) <= 5 * np.sqrt(2 * pooled * (1 - pooled) / RUNS))
    lazy = default.replace(refresh="touched")
    p, q = _unchanged(lazy, x, 1), _unchanged(lazy, x_prime, 2)
    differ = sorted(set(steps) ^ set(steps_prime))[0]  # first step where one stream updates
    assert (p[differ - 2], q[differ - 2]) == (0.0, 1.0)
    # everywhere else the two streams touch the same counters (none), and lazily nothing changes
    quiet = [s for s in range(2, T + 1) if s not in steps and s not in steps_prime]
    assert np.all(p[[s - 2 for s in quiet]] == 1.0) and np.all(q[[s - 2 for s in quiet]] == 1.0)


def test_default_join_reads_every_counter_at_each_estimate() -> None:
    """A step without updates still changes every released counter (so the release); lazily none."""
    for refresh, changes in (("all", 2 * 3 * 16), ("touched", 0)):
        js = JoinSizeEstimator(8, rows=3, width=16, rho=1.0, seed=3, refresh=refresh)
        js.update("R", [1])
        js.estimate()
        before = js._noisy.copy()
        js.update("S", [2], deltas=0.0)  # a step with no update
        js.estimate()
        assert np.count_nonzero(js._noisy != before) == changes, refresh


@pytest.mark.parametrize("refresh", ["all", "touched"])
def test_vectorized_join_is_each_trials_countsketch(refresh: str) -> None:
    """trials=R: with negligible noise, trial r's row estimates are the exact inner products of
    CountSketches with trial r's hashes; absent keys (delta 0) change nothing."""
    R, rows, width, T = 4, 3, 32, 8
    js = JoinSizeEstimator(T, rows, width, rho=1e14, seed=5, refresh=refresh, trials=R)
    sketches = [(CountSketch(rows, width, hashes=js.hashes[r]), CountSketch(rows, width, hashes=js.hashes[r]))
                for r in range(R)]
    rng = np.random.default_rng(6)
    for step in range(T):
        relation = "RS"[step % 2]
        keys = rng.integers(0, 2000 if step == 5 else 40, size=(R, 3))  # one step past the hash table
        deltas = rng.choice([-1.0, 0.0, 1.0], size=(R, 3))
        js.update(relation, keys, deltas)
        for r, (x_cs, y_cs) in enumerate(sketches):
            (x_cs if relation == "R" else y_cs).update(keys[r], deltas[r])
        exact = np.array([x_cs.row_inner(y_cs) for x_cs, y_cs in sketches])
        np.testing.assert_allclose(js.row_estimates(), exact, atol=1e-3)
        np.testing.assert_array_equal(js.estimate(), np.median(js.row_estimates(), axis=1))


def test_vectorized_join_has_the_single_row_variance() -> None:
    """Each trial of a trials=R estimator is one estimator: 2,000 single-row trials, the noise-only
    row estimate <g, g'> has Var = b sigma2^2 (4th moment 6 b s^4 + 3 (b s^2)^2), as one
    instance's 2,000 rows do."""
    R, width = 2000, 16
    js = JoinSizeEstimator(4, rows=1, width=width, rho=1.0, seed=7, trials=R)
    js.update("R", np.zeros((R, 1), dtype=np.int64), 0.0)
    est = js.estimate()
    var, m4 = width * js.sigma2**2, 6 * width * js.sigma2**4 + 3 * (width * js.sigma2**2) ** 2
    assert abs(est.mean()) < 5 * math.sqrt(var / R)
    assert abs(np.mean(est**2) - var) < 5 * math.sqrt((m4 - var**2) / R)


def test_vectorized_range_counts_each_trial() -> None:
    """trials=R range counting: with negligible noise, each trial's answer is its exact count."""
    R, B = 3, 16
    rc = RangeCounter(B, 1, rows=3, width=4096, rho=1e14, T=4, seed=8, trials=R)
    rng = np.random.default_rng(9)
    pts = rng.integers(0, B, size=(R, 5, 1))
    present = rng.random((R, 5)) < 0.7
    rc.update(pts, present.astype(float))
    exact = ((pts[..., 0] >= 2) & (pts[..., 0] < 11) & present).sum(axis=1)
    np.testing.assert_allclose(rc.query(2, 11), exact, atol=1e-3)
    assert rc.row_answers(2, 11).shape == (R, 3) and rc.query(5, 5).tolist() == [0.0] * R


def test_audit_of_public_finds_the_lazy_leak_and_not_the_default() -> None:
    """privsim's own audit of coalition public: violated on the lazy refresh, not by default.

    Steps 3 and 4 are silent under x (party 0, the neighbour, never updates; the others
    stop after step 2) and not under x' (party 0 adds key 0 at every step). Lazily, the
    audit score sees releases 3 and 4 unchanged under x always and under x' never; the
    party-level claim is rho_party = stream_rho(1e-4, 8, 2) = 0.0102-zCDP, about 0.6 at
    delta = 1e-6, while 3,072 estimation trials per input with p = 1, q = 0 certify about 6.
    """
    x = np.array([[-1, -1, -1, -1], [3, 3, -1, -1], [3, -1, -1, -1], [-1, 7, -1, -1]])
    lazy = ContinualJoin(T=4, rows=1, width=16, keys=16, rho=1e-4, refresh="touched")
    found = privsim.audit(lazy, x, coalition="public", neighbor=0, trials=4096, seed=12)
    assert found.violated is True and found.p_hat == 1.0 and found.q_hat == 0.0
    assert found.epsilon_lower > 5 > 1 > found.epsilon_claimed
    assert "touches is public" in found.claim["assumption"]
    default = privsim.audit(lazy.replace(refresh="all"), x, coalition="public", neighbor=0, trials=4096, seed=12)
    assert default.violated is False and default.epsilon_claimed == found.epsilon_claimed
    assert "assumption" not in default.claim


@pytest.mark.parametrize("box", [None, (1, 3)])
def test_vectorized_range_pieces_in_one_bucket_share_their_noise(box) -> None:
    """Width 1: both pieces of [1, 3) (the level-0 intervals {1} and {2}, one component) read
    that component's one counter, so the answer's noise is (s(1) + s(2)) nu: exactly 0 where
    the signs differ, variance 4 cell variances where they agree (independent noise per
    piece would give 2). With or without the declared box (noise for its counters only)."""
    R = 4000
    rc = RangeCounter(4, 1, rows=1, width=1, rho=1.0, T=2, seed=3, trials=R, box=box)
    rc.update(np.zeros((R, 1, 1), dtype=np.int64), 0.0)
    answer = rc.query(1, 3)
    buckets, signs = rc._hashes[:, 0](np.array([1, 2]))  # component 0 = level 0, row 0
    agree = signs[:, 0, 0] == signs[:, 0, 1]
    assert np.all(answer[~agree] == 0.0) and 1000 < agree.sum() < 3000
    var = 4 * rc.cell_variance
    sq = answer[agree] ** 2
    assert abs(sq.mean() - var) < 5 * var * math.sqrt(2 / agree.sum())
    if box is not None:
        with pytest.raises(InputError, match="declared box"):
            rc.query(0, 3)
