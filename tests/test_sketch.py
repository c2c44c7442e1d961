"""Tests for CountSketch and PrivateCountSketch (Pagh & Sejer 2026, sections 1.2, 4.1 and 5).

Statistical tests use many independent rows of one sketch: rows have independent hash
functions and noise, so ``row_estimates`` / ``row_inner`` give M independent single-row
estimates. Tolerances are 5 standard errors, from the predicted variance where it is
known in closed form and from the sample otherwise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privsim.errors import InputError, ParameterError
from privsim.mechanisms.sketch import CountSketch, PrivateCountSketch, SketchHashes

M = 20_000  # independent single-row estimates per statistical test


def _data(seed: int, n_keys: int, high: int = 20) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = rng.choice(1 << 40, size=n_keys, replace=False).astype(np.int64)
    counts = rng.integers(1, high, size=n_keys).astype(np.float64)
    return keys, counts


def _assert_mean(samples: np.ndarray, mean: float, variance: float) -> None:
    """The sample mean is within 5 standard errors (from the predicted variance)."""
    se = math.sqrt(variance / samples.size)
    assert abs(samples.mean() - mean) < 5 * se, (samples.mean(), mean, se)


def _assert_second_moment(errors: np.ndarray, variance: float) -> float:
    """mean(error^2) is within 5 standard errors of ``variance``; returns the tolerance."""
    sq = errors**2
    tol = 5 * sq.std(ddof=1) / math.sqrt(sq.size)
    assert abs(sq.mean() - variance) < tol, (sq.mean(), variance, tol)
    return tol


def _cs_inner_variance(x: np.ndarray, y: np.ndarray, width: int) -> float:
    """Var of one row's <CS(x), CS(y)> with 2-wise buckets and 4-wise signs (Lemma 5.3 proof)."""
    return (x @ x * (y @ y) + (x @ y) ** 2 - 2 * np.sum(x**2 * y**2)) / width


# -- mechanics ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [5, 400])  # the scatter (add.at) and the dense (bincount) paths
def test_update_matches_a_plain_loop(n: int) -> None:
    rng = np.random.default_rng(n)
    keys = rng.integers(-(1 << 62), 1 << 62, size=n)
    keys[: n // 2] = keys[0]  # repeated keys must add up
    deltas = rng.normal(size=n)
    cs = CountSketch(rows=4, width=16, seed=3)
    cs.update(keys, deltas)
    want = np.zeros((4, 16))
    for key, delta in zip(keys.tolist(), deltas.tolist(), strict=True):
        buckets, signs = cs.hashes([key])
        for row in range(4):
            want[row, buckets[row, 0]] += signs[row, 0] * delta
    assert np.allclose(cs.table, want, rtol=0, atol=1e-12)


def test_linear_updates_and_deletions() -> None:
    keys, counts = _data(1, 50)
    a, b = CountSketch(5, 32, seed=9), CountSketch(5, 32, seed=9)
    a.update(keys, counts)
    b.update(keys[:20], counts[:20])
    b.update(keys[20:], counts[20:])
    assert np.allclose(a.table, b.table)
    b.update(keys, -counts)
    assert np.allclose(b.table, 0.0)
    scalar = CountSketch(5, 32, seed=9)
    scalar.update(keys)  # default delta 1
    ones = CountSketch(5, 32, seed=9)
    ones.update(keys, np.ones(keys.size))
    assert np.array_equal(scalar.table, ones.table)


def test_estimate_is_the_median_of_row_estimates() -> None:
    keys, counts = _data(2, 300)
    cs = CountSketch(7, 64, seed=4)
    cs.update(keys, counts)
    rows = cs.row_estimates(keys[:10])
    assert rows.shape == (7, 10)
    assert np.array_equal(cs.estimate(keys[:10]), np.median(rows, axis=0))
    grid = keys[:6].reshape(2, 3)
    assert cs.estimate(grid).shape == (2, 3)
    assert cs.estimate(int(keys[0])).shape == ()


def test_same_seed_same_hashes_private_and_not() -> None:
    cs = CountSketch(3, 8, seed=5)
    pcs = PrivateCountSketch(3, 8, 1.0, seed=5)
    assert cs.hashes == pcs.hashes
    assert cs.hashes != CountSketch(3, 8, seed=6).hashes
    shared = PrivateCountSketch(3, 8, 1.0, seed=6, hashes=cs.hashes)
    assert shared.hashes == cs.hashes


# -- point estimates: unbiased, exact single-row variance, Lemma 4.2 ----------------------


@pytest.fixture(scope="module")
def point_data() -> tuple[np.ndarray, np.ndarray, int]:
    keys, counts = _data(7, 200)
    counts[0] = 60.0  # the target key a, a heavy one
    return keys, counts, 32


def test_single_row_estimate_unbiased_with_exact_variance(point_data) -> None:  # type: ignore[no-untyped-def]
    """Var s_i(a) CS_i[h_i(a)] = ||x_{-a}||^2 / b (2-wise buckets, 2-wise signs)."""
    keys, counts, width = point_data
    cs = CountSketch(M, width, seed=11)
    cs.update(keys, counts)
    errors = cs.row_estimates(keys[:1])[:, 0] - counts[0]
    variance = (counts @ counts - counts[0] ** 2) / width
    _assert_mean(errors, 0.0, variance)
    _assert_second_moment(errors, variance)
    absent = cs.row_estimates([123])[:, 0]  # a key with count 0: variance ||x||^2 / b
    _assert_second_moment(absent, counts @ counts / width)


@pytest.mark.parametrize("noise_factor", [1.0, 4.0])
def test_private_single_row_variance_adds_sigma2(point_data, noise_factor: float) -> None:  # type: ignore[no-untyped-def]
    """Private error grows with sigma2 exactly: Var = ||x_{-a}||^2 / b + sigma2."""
    keys, counts, width = point_data
    sketch_part = (counts @ counts - counts[0] ** 2) / width
    sigma2 = noise_factor * sketch_part
    pcs = PrivateCountSketch(M, width, sigma2, seed=12)
    pcs.update(keys, counts)
    errors = pcs.row_estimates(keys[:1])[:, 0] - counts[0]
    _assert_mean(errors, 0.0, sketch_part + sigma2)
    tol = _assert_second_moment(errors, sketch_part + sigma2)
    # The test separates sigma2 from 2 sigma2 or sigma2 / 2 (a factor-of-two slip).
    assert tol < sigma2 / 2


def test_private_minus_plain_is_the_cell_noise(point_data) -> None:  # type: ignore[no-untyped-def]
    """Same seed, same hashes: the difference is s_i(a) nu_i, exactly N(0, sigma2)."""
    keys, counts, width = point_data
    cs, pcs = CountSketch(M, width, seed=13), PrivateCountSketch(M, width, 2.5, seed=13)
    cs.update(keys, counts)
    pcs.update(keys, counts)
    noise = pcs.row_estimates(keys[:3]) - cs.row_estimates(keys[:3])
    for column in noise.T:
        _assert_mean(column, 0.0, 2.5)
        var_se = math.sqrt(2 * 2.5**2 / M)  # Var of the sample variance of N(0, s2): 2 s2^2 / M
        assert abs(np.mean(column**2) - 2.5) < 5 * var_se


def test_median_estimate_unbiased(point_data) -> None:  # type: ignore[no-untyped-def]
    keys, counts, width = point_data
    groups, rows = 4_000, 5
    pcs = PrivateCountSketch(groups * rows, width, 4.0, seed=14)
    pcs.update(keys, counts)
    for j in (0, 1):
        medians = np.median(pcs.row_estimates(keys[j : j + 1])[:, 0].reshape(groups, rows), axis=1)
        se = medians.std(ddof=1) / math.sqrt(groups)
        assert abs(medians.mean() - counts[j]) < 5 * se


def test_error_within_lemma_4_2_scale() -> None:
    """Lemma 4.2 with explicit constants.

    Take b = 8 ||y||_1 / E, sigma = E and the m = b / 8 heaviest other keys as "heavy".
    A row is bad if a heavy key shares a's bucket (prob <= m / b = 1/8), if the light
    keys' error exceeds E (Chebyshev with Lemma 4.1: E L^2 <= ||tail_m(y)||^2 / b <=
    ||y||_1^2 / (4 m b) = E^2 / 32, prob <= 1/32), or if |noise| > 2 sigma (prob 0.0455).
    Otherwise the row's error is <= E + 2 sigma = 3E. The median of t odd rows exceeds 3E
    only if (t+1)/2 rows are bad: probability <= P[Bin(t, p_bad) >= (t+1)/2] = beta.
    """
    rng = np.random.default_rng(15)
    keys = rng.choice(1 << 40, size=300, replace=False).astype(np.int64)
    counts = np.floor(400.0 / np.arange(1, 301) ** 1.1)  # Zipf: heavy hitters and a long tail
    l1 = counts.sum()
    width = 256
    target_error = 8 * l1 / width
    t, groups = 9, 1_000
    pcs = PrivateCountSketch(t * groups, width, target_error**2, seed=16)
    pcs.update(keys, counts)
    p_bad = 1 / 8 + 1 / 32 + 2 * stats.norm.sf(2.0)
    beta = stats.binom.sf((t + 1) // 2 - 1, t, p_bad)
    for j in (0, 5, 150):  # the heaviest key, a medium one, a tail key
        medians = np.median(pcs.row_estimates(keys[j : j + 1])[:, 0].reshape(groups, t), axis=1)
        failures = np.mean(np.abs(medians - counts[j]) > 3 * target_error)
        assert failures <= beta + 5 * math.sqrt(beta * (1 - beta) / groups), (j, failures, beta)


# -- inner products (section 5) -----------------------------------------------------------


@pytest.fixture(scope="module")
def inner_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    rng = np.random.default_rng(17)
    keys = rng.choice(1 << 40, size=60, replace=False).astype(np.int64)
    x = rng.integers(0, 6, size=60).astype(np.float64)
    y = rng.integers(0, 6, size=60).astype(np.float64)
    return keys, x, y, 16


def test_single_row_inner_unbiased_with_exact_variance(inner_data) -> None:  # type: ignore[no-untyped-def]
    keys, x, y, width = inner_data
    a, b = CountSketch(M, width, seed=18), CountSketch(M, width, seed=18)
    a.update(keys, x)
    b.update(keys, y)
    errors = a.row_inner(b) - x @ y
    variance = _cs_inner_variance(x, y, width)
    _assert_mean(errors, 0.0, variance)
    _assert_second_moment(errors, variance)


def test_private_inner_has_the_three_lemma_5_2_terms(inner_data) -> None:  # type: ignore[no-untyped-def]
    """Var = CountSketch term + sigma^2 (||x||^2 + ||y||^2) + b sigma^4, exactly."""
    keys, x, y, width = inner_data
    sigma2 = 64.0  # makes the cross term and the noise-noise term comparable here
    a = PrivateCountSketch(M, width, sigma2, seed=19)
    b = PrivateCountSketch(M, width, sigma2, seed=20, hashes=a.hashes)
    a.update(keys, x)
    b.update(keys, y)
    errors = a.row_inner(b) - x @ y
    sketch, cross, noise = _cs_inner_variance(x, y, width), sigma2 * (x @ x + y @ y), width * sigma2**2
    _assert_mean(errors, 0.0, sketch + cross + noise)
    tol = _assert_second_moment(errors, sketch + cross + noise)
    assert tol < min(cross, noise) / 2  # a slip in either noise term would show
    assert a.inner(b) == float(np.median(a.row_inner(b)))


def test_private_self_inner_is_debiased(inner_data) -> None:  # type: ignore[no-untyped-def]
    keys, x, _, width = inner_data
    a = PrivateCountSketch(M, width, 3.0, seed=21)
    a.update(keys, x)
    errors = a.row_inner(a) - x @ x
    se = errors.std(ddof=1) / math.sqrt(M)
    assert abs(errors.mean()) < 5 * se


def test_inner_needs_shared_hashes() -> None:
    a = CountSketch(3, 16, seed=1)
    with pytest.raises(ParameterError, match="hash functions"):
        a.inner(CountSketch(3, 16, seed=2))
    with pytest.raises(ParameterError, match="hash functions"):
        a.inner(CountSketch(3, 32, seed=1))
    with pytest.raises(ParameterError, match="hash functions"):
        a.inner(CountSketch(5, 16, seed=1))
    with pytest.raises(ParameterError, match="other"):
        a.inner("not a sketch")  # type: ignore[arg-type]
    assert a.inner(CountSketch(3, 16, seed=2, hashes=a.hashes)) == 0.0


def test_private_pair_with_one_noise_seed_is_refused() -> None:
    a, b = PrivateCountSketch(3, 16, 1.0, seed=4), PrivateCountSketch(3, 16, 1.0, seed=4)
    with pytest.raises(ParameterError, match="seed"):
        a.inner(b)


# -- privacy calibration and the release rule ---------------------------------------------


def test_rho_and_from_rho() -> None:
    pcs = PrivateCountSketch(5, 64, sigma2=2.0, seed=0)
    assert pcs.rho == 5 / (2 * 2.0)  # rho = r / (2 sigma2), section 1.2
    other = PrivateCountSketch.from_rho(5, 64, rho=pcs.rho, seed=0)
    assert other.sigma2 == pcs.sigma2
    assert other.words == 5 * 64


def test_no_update_after_release() -> None:
    pcs = PrivateCountSketch(3, 16, 1.0, seed=0)
    pcs.update([1, 2])
    assert not pcs.released
    pcs.estimate([1])
    assert pcs.released
    with pytest.raises(ParameterError, match="release"):
        pcs.update([3])
    plain = CountSketch(3, 16, seed=0)
    plain.estimate([1])
    plain.update([3])  # a non-private sketch has nothing to protect


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: CountSketch(0, 16), "rows"),
        (lambda: CountSketch(3, 0), "width"),
        (lambda: CountSketch(3, 16, seed=-2), "seed"),
        (lambda: CountSketch(3, 16, hashes=SketchHashes(4, 16, seed=0)), "hashes"),
        (lambda: CountSketch(3, 16, hashes=SketchHashes(3, 8, seed=0)), "hashes"),
        (lambda: PrivateCountSketch(3, 16, 0.0), "sigma2"),
        (lambda: PrivateCountSketch(3, 16, float("inf")), "sigma2"),
        (lambda: PrivateCountSketch.from_rho(3, 16, rho=-1.0), "rho"),
    ],
)
def test_bad_parameters(make, field: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match=field):
        make()


def test_bad_inputs() -> None:
    cs = CountSketch(3, 16, seed=0)
    with pytest.raises(InputError, match="keys"):
        cs.update([1.5])
    with pytest.raises(InputError, match="deltas"):
        cs.update([1, 2], [1.0, 2.0, 3.0])
    with pytest.raises(InputError, match="deltas"):
        cs.update([1], [float("nan")])


def test_empty_inputs() -> None:
    cs = CountSketch(3, 8, seed=0)
    cs.update([])
    cs.update(np.zeros(0, dtype=np.int64), [])
    assert cs.estimate([]).shape == (0,) and cs.row_estimates([]).shape == (3, 0)
    assert not cs.table.any()


def test_two_private_sketches_with_one_noise_seed_are_refused() -> None:
    # Equal seeds give equal noise, whose product biases <CS(x), CS(y)>; a plain sketch has no noise.
    a = PrivateCountSketch(3, 16, 1e-6, seed=2)
    with pytest.raises(ParameterError, match="same noise"):
        a.row_inner(PrivateCountSketch(3, 16, 1e-6, seed=2, hashes=a.hashes))
    assert a.row_inner(PrivateCountSketch(3, 16, 1e-6, seed=3, hashes=a.hashes)).shape == (3,)
    assert a.row_inner(CountSketch(3, 16, seed=2, hashes=a.hashes)).shape == (3,)
