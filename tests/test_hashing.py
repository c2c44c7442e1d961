"""Tests for privsim.mechanisms.hashing: exact arithmetic, independence, seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privsim.errors import InputError, ParameterError
from privsim.mechanisms.hashing import MERSENNE_PRIME, BucketHash, PolynomialHash, SignHash, _mulmod

P = MERSENNE_PRIME
FIVE_SIGMA_P = 2 * stats.norm.sf(5.0)  # two-sided tail of a 5-sigma event, ~5.7e-7


def _reference(coefficients: np.ndarray, index: tuple[int, ...], key: int) -> int:
    """The polynomial sum_j c_j x^j mod p in exact Python integers (key read mod 2**64)."""
    x = (key % (1 << 64)) % P
    return sum(int(coefficients[(j, *index)]) * pow(x, j, P) for j in range(coefficients.shape[0])) % P


def _edge_keys(rng: np.random.Generator) -> list[int]:
    near = [0, 1, 2, P - 2, P - 1, P, P + 1, 1 << 61, (1 << 62) - 1, 1 << 62, (1 << 63) - 1]
    near += [(1 << 63) + i for i in range(3)] + [(1 << 64) - 1 - i for i in range(3)]
    near += [(1 << 61) + i for i in range(-5, 6)] + [(1 << 63) + i for i in range(-5, 0)]
    near += rng.integers(0, 1 << 63, size=200, dtype=np.uint64).tolist()
    near += [int(v) + (1 << 63) for v in rng.integers(0, 1 << 63, size=200, dtype=np.uint64)]
    return sorted(set(near))


@pytest.mark.parametrize("independence", [1, 2, 3, 4, 5])
def test_polynomial_matches_python_integers(independence: int) -> None:
    rng = np.random.default_rng(11)
    keys = _edge_keys(rng)
    g = PolynomialHash(independence, 4, seed=independence)
    values = g(np.array(keys, dtype=np.uint64))
    assert values.shape == (4, len(keys)) and values.dtype == np.uint64
    for row in range(4):
        for i, key in enumerate(keys):
            assert int(values[row, i]) == _reference(g.coefficients, (row,), key), (row, key)


def test_largest_degree_with_largest_values_does_not_wrap() -> None:
    """k = 7 coefficients all p - 1 and keys = p - 1: the widest sums before the fold."""
    g = PolynomialHash(7, 1, seed=0)
    g._coefficients[:] = np.uint64(P - 1)
    keys = [P - 1, P - 2, (1 << 64) - 1, (1 << 61) - 2]
    values = g(np.array(keys, dtype=np.uint64))
    for i, key in enumerate(keys):
        assert int(values[0, i]) == _reference(g.coefficients, (0,), key)


def test_keys_are_not_modified() -> None:
    keys = np.array([P + 3, (1 << 64) - 1, 5], dtype=np.uint64)
    copy = keys.copy()
    PolynomialHash(4, 2, seed=0)(keys)
    assert np.array_equal(keys, copy)


def test_negative_int64_keys_are_read_as_twos_complement() -> None:
    g = PolynomialHash(4, 3, seed=2)
    signed = np.array([-1, -2, -(1 << 63), -(1 << 61), -12345], dtype=np.int64)
    unsigned = signed.view(np.uint64)
    assert np.array_equal(g(signed), g(unsigned))
    for i, key in enumerate(signed.tolist()):
        assert int(g(signed)[0, i]) == _reference(g.coefficients, (0,), key)


def test_python_int_lists_beyond_int64_are_exact() -> None:
    g = PolynomialHash(2, 2, seed=5)
    keys = [0, 1, (1 << 63) + 7, (1 << 64) - 1]
    values = g(keys)
    for i, key in enumerate(keys):
        assert int(values[1, i]) == _reference(g.coefficients, (1,), key)


@settings(max_examples=200, deadline=None)
@given(
    key=st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_any_key_any_seed_matches_reference(key: int, seed: int) -> None:
    g = PolynomialHash(4, 2, seed=seed)
    arr = np.array([key], dtype=np.int64 if key < 0 else np.uint64)
    values = g(arr)
    assert [int(v) for v in values[:, 0]] == [_reference(g.coefficients, (r,), key) for r in range(2)]


def test_mulmod_exact_on_extremes() -> None:
    edge = [0, 1, 2, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, (1 << 60), P - 2, P - 1, (1 << 61) - 2]
    edge += np.random.default_rng(3).integers(0, P, size=300, dtype=np.uint64).tolist()
    a = np.array([x for x in edge for _ in edge], dtype=np.uint64)
    b = np.array([y for _ in edge for y in edge], dtype=np.uint64)
    got = _mulmod(a, b)
    want = [(int(x) * int(y)) % P for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert got.tolist() == want


def test_bucket_and_sign_formulas() -> None:
    rng = np.random.default_rng(4)
    keys = _edge_keys(rng)
    arr = np.array(keys, dtype=np.uint64)
    h = BucketHash(3, width=1000, seed=8)
    s = SignHash(3, seed=9)
    buckets, signs = h(arr), s(arr)
    assert h.polynomial.independence == 2 and s.polynomial.independence == 4
    for row in range(3):
        for i, key in enumerate(keys):
            a, b = int(h.polynomial.coefficients[1, row]), int(h.polynomial.coefficients[0, row])
            assert buckets[row, i] == ((a * (key % (1 << 64) % P) + b) % P) % 1000
            assert signs[row, i] == 1 - 2 * (_reference(s.polynomial.coefficients, (row,), key) % 2)


def test_batch_shapes_and_sub_batches() -> None:
    g = PolynomialHash(4, (5, 3), seed=1)
    keys = np.arange(7)
    full = g(keys)
    assert full.shape == (5, 3, 7)
    assert np.array_equal(g[2](keys), full[2])
    picked = np.array([4, 0, 4])
    assert np.array_equal(g[picked](keys), full[picked])
    own = np.arange(5 * 7).reshape(5, 1, 7)  # each first-axis function gets its own keys
    per = g(own)
    for a in range(5):
        assert np.array_equal(per[a], g[a](own[a, 0]))
    assert g(5).shape == (5, 3, 1)
    with pytest.raises(InputError, match="broadcast"):
        g(np.zeros((4, 1, 2), dtype=np.int64))


def test_per_key_buckets_uniform_over_functions() -> None:
    """For a fixed key the bucket of a random function is uniform (chi-square, 5 sigma)."""
    width, functions = 16, 40_000
    h = BucketHash(functions, width=width, seed=21)
    buckets = h([0, 1, 2**61 - 2, 2**63 + 5])
    for column in buckets.T:
        counts = np.bincount(column, minlength=width)
        chi2 = ((counts - functions / width) ** 2 / (functions / width)).sum()
        assert stats.chi2.sf(chi2, width - 1) > FIVE_SIGMA_P, chi2


def test_one_function_spreads_many_keys() -> None:
    """One function on 2**17 consecutive keys fills buckets evenly (chi-square upper tail)."""
    width = 64
    for seed in range(3):
        counts = np.bincount(BucketHash(1, width, seed=seed)(np.arange(1 << 17))[0], minlength=width)
        expected = (1 << 17) / width
        chi2 = ((counts - expected) ** 2 / expected).sum()
        assert stats.chi2.sf(chi2, width - 1) > FIVE_SIGMA_P, chi2


def test_pairwise_collision_probability_is_one_over_width() -> None:
    width, functions = 8, 200_000
    buckets = BucketHash(functions, width=width, seed=22)([3, 4, 2**62 + 3])
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        hits = int((buckets[:, a] == buckets[:, b]).sum())
        mean, sd = functions / width, math.sqrt(functions * (1 / width) * (1 - 1 / width))
        assert abs(hits - mean) < 5 * sd, hits


def test_signs_balanced_and_four_wise_products_centered() -> None:
    """P[s = +1] = 1/2 and E[s(a)s(b)s(c)s(d)] = 0 for distinct keys (binomial, 5 sigma)."""
    functions = 200_000
    signs = SignHash(functions, seed=23)([10, 11, 12, 2**61 + 10]).astype(np.int64)
    sd = math.sqrt(functions)  # each +-1 term has variance 1
    for column in signs.T:
        assert abs(column.sum()) < 5 * sd
    for subset in [(0, 1), (0, 1, 2), (0, 1, 2, 3)]:
        product = np.prod(signs[:, list(subset)], axis=1)
        assert abs(product.sum()) < 5 * sd, subset


def test_seeds_reproduce_and_differ() -> None:
    assert PolynomialHash(4, 3, seed=7) == PolynomialHash(4, 3, seed=7)
    assert PolynomialHash(4, 3, seed=7) != PolynomialHash(4, 3, seed=8)
    assert BucketHash(3, 5, seed=1) == BucketHash(3, 5, seed=1)
    assert BucketHash(3, 5, seed=1) != BucketHash(3, 6, seed=1)
    ss = np.random.SeedSequence(99)
    assert PolynomialHash(2, 2, seed=ss) == PolynomialHash(2, 2, seed=np.random.SeedSequence(99))
    gen = np.random.default_rng(5)
    assert PolynomialHash(2, 2, seed=gen) != PolynomialHash(2, 2, seed=gen)  # the Generator advances


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: PolynomialHash(0, 3), "independence"),
        (lambda: PolynomialHash(8, 3), "independence"),
        (lambda: PolynomialHash(2, -1), "shape"),
        (lambda: BucketHash(3, width=0), "width"),
        (lambda: BucketHash(3, width=(1 << 32) + 1), "width"),
        (lambda: SignHash(2, seed=-1), "seed"),
        (lambda: SignHash(2, seed=1.5), "seed"),  # type: ignore[arg-type]
    ],
)
def test_bad_parameters(make, field: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match=field):
        make()


def test_non_integer_keys_rejected() -> None:
    with pytest.raises(InputError, match="keys"):
        SignHash(2, seed=0)([1.5, 2.0])
    with pytest.raises(InputError, match="keys"):
        BucketHash(2, 4, seed=0)(np.array([True, False]))
