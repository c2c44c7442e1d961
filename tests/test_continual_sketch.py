"""continual-range and continual-join: exact noise variance, unbiased answers, counts, claims, errors.

The statistical tests use short horizons (T = 2 or 4) and a little over a thousand trials:
enough for a 5-sigma band of 20% on a variance, which catches a factor of two.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _sum_checks import assert_mean_and_variance, gaussian_total_moments

import privsim
from privsim.errors import InputError, ParameterError
from privsim.mechanisms.range_counting import dyadic_boxes
from privsim.protocols import get_protocol
from privsim.protocols.continual_sketch import ContinualJoin, ContinualRange
from privsim.protocols.continual_sum import stream_rho
from privsim.simulate import simulate_batches


def assert_variance_close(err: np.ndarray, variance: float) -> None:
    """Sample variance within 5 sd of ``variance``; sd(s^2) ~ sqrt((mu4 - var^2)/R), mu4 from the sample.

    The errors mix sketch collisions and Gaussian noise, so their fourth moment has no
    closed form here; the plug-in estimate sets the band.
    """
    mu4 = float(np.mean((err - err.mean()) ** 4))
    assert abs(err.var(ddof=1) - variance) < 5 * math.sqrt(max(mu4 - variance**2, 0.0) / err.size)


def test_registered_under_their_cli_names():
    assert type(get_protocol("continual-range")) is ContinualRange
    assert type(get_protocol("continual-join")) is ContinualJoin


# ---------------------------------------------------------------- range counting


def test_range_noise_alone_has_variance_boxes_times_cell_variance():
    # No points: the answer is the sum of one noisy counter per dyadic piece; the default box
    # [0, 7)^2 on B = 8 has 3 x 3 pieces, each in its own component, so the answer is exactly
    # N(0, 9 * cell_variance) with cell_variance = (h + 1) rows L^d (h + 2)/(8 rho) = 2 * 9 * 3/8.
    proto = ContinualRange(T=2, B=8, d=2, rows=1, width=32, rho=1.0)
    assert (proto.query_boxes, proto.cell_variance) == (9, 6.75)
    res = privsim.simulate(proto, -np.ones((2, 2, 2), dtype=np.int64), trials=1200, seed=3, record=False)
    assert np.all(res.true_value == 0)
    variance = 9 * 6.75
    for s in range(2):  # every step's release
        err = res.outputs["C"][:, s]
        assert_mean_and_variance(err, variance, gaussian_total_moments(variance)[1])


def _range_error_variance(proto: ContinualRange, points: np.ndarray) -> float:
    """Exact variance of a rows=1 answer (one query piece per component): noise plus collisions.

    A piece q of component c is off by sum_{p != q} s_p s_q x_p [h(p) = h(q)] over the other
    boxes p of c (2-wise buckets: Pr = 1/width; independent signs: no cross terms).
    """
    lo, hi = proto.query
    levels, indices = dyadic_boxes(lo, hi, proto.B)
    collisions = 0.0
    for lv, q in zip(levels, indices):
        boxes, counts = np.unique(points >> lv, axis=0, return_counts=True)
        others = ~np.all(boxes == q, axis=1)
        collisions += float(np.sum(counts[others].astype(float) ** 2)) / proto.width
    return proto.query_boxes * proto.cell_variance + collisions


def test_range_answers_are_unbiased_with_the_exact_variance():
    proto = ContinualRange(T=2, B=16, d=1, rows=1, width=8, rho=4.0)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 16, size=(8, 2, 1))  # every party inserts a point at both steps
    r = 1200
    res = privsim.simulate(proto, x, trials=r, seed=4, record=False)
    points = x.reshape(-1, 1)
    truth = float(np.sum(points[:, 0] < 15))
    assert np.all(res.true_value == truth)
    var = _range_error_variance(proto, points)
    err = res.estimate - truth
    assert abs(err.mean()) < 5 * math.sqrt(var / r)
    # the collision term is a real part of the error here (width 8): the spread must include it
    assert var > 1.3 * proto.query_boxes * proto.cell_variance
    assert_variance_close(err, var)
    # the series: step 1 sees the first points only
    np.testing.assert_array_equal(proto.true_series(res.inputs)[0], [np.sum(x[:, 0, 0] < 15), truth])


def test_range_median_of_rows_is_unbiased():
    # The median of 3 independent symmetric row answers is symmetric about the count;
    # E[med^2] <= (x1^2 + x2^2 + x3^2)/2 bounds its variance by 1.5 times a row's.
    proto = ContinualRange(T=2, B=16, d=1, rows=3, width=8, rho=4.0)
    x = np.random.default_rng(8).integers(0, 16, size=(6, 2, 1))
    r = 600
    res = privsim.simulate(proto, x, trials=r, seed=5, record=False)
    row = ContinualRange(T=2, B=16, d=1, rows=1, width=8, rho=4.0 / 3)  # same cell variance as rows=3
    assert row.cell_variance == pytest.approx(proto.cell_variance)
    bound = 1.5 * _range_error_variance(row, x.reshape(-1, 1))
    err = res.estimate - res.true_value
    assert abs(err.mean()) < 5 * math.sqrt(bound / r)


def test_range_is_exact_without_noise_and_collisions():
    proto = ContinualRange(T=4, B=16, d=2, rows=3, width=4096, rho=1e12, box="2:11,0:9")
    res = privsim.simulate(proto, n=6, trials=3, seed=6)
    np.testing.assert_allclose(res.outputs["C"], proto.true_series(res.inputs), atol=1e-3)
    assert res.true_value[0] == proto.true_series(res.inputs)[0, -1] > 0


# ---------------------------------------------------------------- join size


def test_join_noise_alone_has_variance_width_sigma4():
    # No keys: one row estimate is <g, g'> over b counters, g, g' iid N(0, sigma2):
    # Var = b sigma2^2, 4th moment 6 b sigma2^4 + 3 (b sigma2^2)^2 (cumulants of a product add).
    proto = ContinualJoin(T=2, rows=1, width=16, rho=1.0)
    assert proto.sigma2 == pytest.approx(3 * 1 * 4 / 8)  # (log2 4 + 1) rows (log2 4 + 2)/(8 rho)
    res = privsim.simulate(proto, -np.ones((2, 2), dtype=np.int64), trials=1200, seed=7, record=False)
    b, s2 = 16, proto.sigma2
    assert_mean_and_variance(res.estimate, b * s2**2, 6 * b * s2**4 + 3 * (b * s2**2) ** 2)


def test_join_row_estimate_is_unbiased_with_lemma_5_2_variance():
    proto = ContinualJoin(T=2, rows=1, width=16, rho=2.0, keys=8)
    x = np.array([[0, 1], [1, 1], [2, -1], [1, 3], [1, 1], [3, -1]])  # parties 0-2: R, 3-5: S
    r = 1000
    res = privsim.simulate(proto, x, trials=r, seed=8, record=False)
    fx, fy = proto.frequencies(x[None])
    assert fx[0].tolist() == [1, 3, 1, 0, 0, 0, 0, 0] and fy[0].tolist() == [0, 3, 0, 2, 0, 0, 0, 0]
    assert np.all(res.true_value == 9)
    var = proto.row_variance(fx[0], fy[0])
    err = res.estimate - 9
    assert abs(err.mean()) < 5 * math.sqrt(var / r)
    assert_variance_close(err, var)


def test_join_is_exact_without_noise():
    proto = ContinualJoin(T=4, rows=3, width=4096, rho=1e12)
    res = privsim.simulate(proto, n=5, trials=2, seed=9)
    np.testing.assert_allclose(res.estimate, res.true_value, atol=1e-3)
    assert res.true_value[0] > 0


# ---------------------------------------------------------------- both


@pytest.mark.parametrize("proto", [ContinualRange(T=2, B=2, d=1, rows=1, width=2), ContinualJoin(T=2, width=8),
                                   ContinualJoin(T=2, width=8, refresh="touched")])
def test_deterministic_and_batch_invariant(proto):
    # The curator runs one vectorized mechanism per seeding block of 1024 trials, seeded from
    # that block's stream: any split into whole blocks gives the same series bit for bit.
    # (Before vectorization each trial had its own mechanism, so a trial's result did not
    # depend on how many trials ran; now it depends on its block's size, like any
    # TrialRNG draw, but never on the batch split.)
    x = proto.default_inputs(3)
    whole = privsim.simulate(proto, x, trials=2050, seed=10, record=False)
    parts = list(simulate_batches(proto, x, trials=2050, seed=10, batch_trials=1024))
    assert [p.trials for p in parts] == [1024, 1024, 2]
    np.testing.assert_array_equal(np.concatenate([p.outputs["C"] for p in parts]), whole.outputs["C"])
    again = privsim.simulate(proto, x, trials=2050, seed=10, record=False)
    np.testing.assert_array_equal(again.outputs["C"], whole.outputs["C"])
    series = whole.outputs["C"]
    assert np.unique(series[:, -1]).size > 2000  # trials have their own hashes and noise
    assert not np.array_equal(series[:1024], series[1024:2048])  # blocks have their own streams


@pytest.mark.parametrize("proto, bits", [
    (ContinualRange(T=4, B=16, d=2), 2 * 4 + 1),
    (ContinualJoin(T=4, keys=16), 5),
])
def test_message_counts(proto, bits):
    res = privsim.simulate(proto, n=5, trials=2, seed=1)
    assert (res.messages, res.rounds, res.bits) == (5 * 4, 4, 5 * 4 * bits)
    assert res.schedule.messages == 20 and res.outputs["C"].shape == (2, 4)


@pytest.mark.parametrize("proto, horizon", [(ContinualRange(T=8), 8), (ContinualJoin(T=8), 16),
                                            (ContinualJoin(T=8, refresh="touched"), 16)])
def test_privacy_claims(proto, horizon):
    assert proto.privacy(["C"], 4, 3) is None and proto.privacy([1, "C"], 4, 3) is None
    assert proto.privacy([0, 2], 4, 3) == privsim.Privacy(0.0)
    party = stream_rho(proto.rho, horizon, change=2.0)  # a party's update may move at every step
    assert proto.rho_party == pytest.approx(party)
    for claim in (proto.privacy([], 4, 3), proto.public_privacy(4, 3)):
        assert claim.measure == "zcdp" and claim.rho == pytest.approx(party) and claim.delta == 1e-6
        assert claim == privsim.Privacy.zcdp(party, delta=1e-6)
    event = proto.event_privacy()
    assert event.measure == "zcdp" and event.rho == proto.rho
    assert proto.publishes(4, 3) == ("C",)
    lazy = getattr(proto, "refresh", "all") == "touched"
    for claim in (proto.privacy([], 4, 3), proto.public_privacy(4, 3), event):
        assert ("counters each update touches is public" in claim.assumption) == lazy


@pytest.mark.parametrize("cls, params, match", [
    (ContinualRange, {"T": 12}, r"T must be a power of two in 2, 4, 8, \.\.\., 65536 \(got 12\)"),
    (ContinualRange, {"B": 12}, r"B must be a power of two \(got 12\)"),
    (ContinualRange, {"B": 1}, r"B must be >= 2"),
    (ContinualRange, {"d": 0}, r"d must be >= 1"),
    (ContinualRange, {"B": 2**20, "d": 4}, r"B\*\*d <= 2\*\*60"),
    (ContinualRange, {"box": "0:5,1:2"}, r"box must be 'lo:hi' per dimension.*d=1"),
    (ContinualRange, {"box": "5:3"}, r"box must be"),
    (ContinualRange, {"box": "a:b"}, r"box must be"),
    (ContinualRange, {"rho": -1}, r"rho must be > 0"),
    (ContinualJoin, {"rows": 2}, r"rows must be an odd integer"),
    (ContinualJoin, {"width": 0}, r"width must be >= 1"),
    (ContinualJoin, {"T": 1}, r"T must be a power of two"),
])
def test_bad_parameters(cls, params, match):
    with pytest.raises(ParameterError, match=match):
        cls(**params)


def test_bad_inputs_and_setting():
    rng_proto = ContinualRange(T=2, B=4, d=2)
    with pytest.raises(InputError, match=r"party 1 has 4 at step 2, outside \[0, B=4\)"):
        privsim.simulate(rng_proto, [[[0, 0], [1, 1]], [[0, 0], [4, 1]]], trials=1, seed=1)
    with pytest.raises(InputError, match="mixes -1"):
        privsim.simulate(rng_proto, [[[0, -1], [1, 1]]], trials=1, seed=1)
    with pytest.raises(InputError, match=r"party 0 has 9 at step 1, outside \[0, keys=8\)"):
        privsim.simulate(ContinualJoin(T=2, keys=8), [[9, 1], [1, 1]], trials=1, seed=1)
    with pytest.raises(ParameterError, match="n must be >= 2 for continual-join"):
        privsim.simulate(ContinualJoin(T=2), [[1, 1]], trials=1, seed=1)
