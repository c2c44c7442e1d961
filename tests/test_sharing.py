"""Tests of privsim.mechanisms.sharing: correctness, perfect secrecy, encodings."""

from __future__ import annotations

import doctest
import math
from fractions import Fraction

import numpy as np
import pytest
from _trial_rng import TrialRng
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import sharing
from privsim.mechanisms.noise import discrete_laplace_share, discrete_laplace_tail_bound
from privsim.mechanisms.sharing import (
    MAX_MODULUS,
    add_mod,
    choose_modulus,
    decode_fixed,
    encode_fixed,
    reconstruct,
    share,
    to_signed,
)

P_MIN = 1e-4


@st.composite
def secrets(draw: st.DrawFn) -> tuple[int, list[int]]:
    q = draw(st.one_of(st.integers(2, 64), st.integers(2, MAX_MODULUS), st.just(MAX_MODULUS)))
    x = draw(st.lists(st.one_of(st.integers(0, q - 1), st.just(q - 1)), max_size=12))
    return q, x


@settings(max_examples=200, deadline=None)
@given(secrets(), st.integers(1, 9), st.integers(0, 2**32))
def test_shares_reconstruct_to_the_secret(qx: tuple[int, list[int]], parties: int, seed: int) -> None:
    q, x = qx
    secret = np.array(x, dtype=np.int64)
    shares = share(np.random.default_rng(seed), secret, q, parties)
    assert shares.shape == (len(x), parties) and shares.dtype == np.int64
    assert np.all((shares >= 0) & (shares < q))
    np.testing.assert_array_equal(reconstruct(shares, q), secret)
    # against exact Python integers: no int64 overflow anywhere
    assert [sum(int(v) for v in row) % q for row in shares] == x


def test_many_shares_at_the_largest_modulus_do_not_overflow() -> None:
    q = MAX_MODULUS
    secret = np.array([[0, 1], [q - 2, q - 1]], dtype=np.int64)
    shares = share(np.random.default_rng(1), secret, q, 101)
    assert shares.shape == (2, 2, 101)
    np.testing.assert_array_equal(reconstruct(shares, q), secret)
    exact = [[sum(int(v) for v in cell) % q for cell in row] for row in shares]
    assert exact == secret.tolist()


def test_one_party_holds_the_secret() -> None:
    secret = np.array([3, 0, 4])
    np.testing.assert_array_equal(share(np.random.default_rng(2), secret, 5, 1)[..., 0], secret)


def _joint_counts(shares: np.ndarray, subset: tuple[int, ...], q: int) -> np.ndarray:
    cells = np.ravel_multi_index(tuple(shares[:, i] for i in subset), (q,) * len(subset))
    return np.bincount(cells, minlength=q ** len(subset))


@pytest.mark.parametrize("subset", [(0, 1), (1, 2), (0, 2)])
def test_any_parties_minus_one_shares_do_not_depend_on_the_secret(subset: tuple[int, ...]) -> None:
    q, parties, trials = 5, 3, 50_000
    by_secret = []
    for x, seed in ((0, 10), (4, 11)):
        shares = share(np.random.default_rng(seed), np.full(trials, x), q, parties)
        by_secret.append(_joint_counts(shares, subset, q))
    table = np.array(by_secret)
    assert stats.chi2_contingency(table).pvalue > P_MIN  # same law under x = 0 and x = 4
    for counts in by_secret:  # ... and that law is uniform on the q^2 cells
        assert stats.chisquare(counts).pvalue > P_MIN


def test_the_secrecy_check_flags_a_sharing_whose_draws_miss_a_residue() -> None:
    q, trials = 5, 50_000

    def leaky_share(x: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        first = rng.integers(0, q - 1, size=trials)  # never q - 1: not uniform
        return np.stack([first, (x - first) % q], axis=1)

    table = np.array([_joint_counts(leaky_share(x, 20 + x), (1,), q) for x in (0, 4)])
    assert stats.chi2_contingency(table).pvalue < P_MIN


def test_each_share_is_uniform() -> None:
    q, parties, trials = 7, 4, 50_000
    shares = share(np.random.default_rng(30), np.full(trials, 3), q, parties)
    for i in range(parties):
        assert stats.chisquare(np.bincount(shares[:, i], minlength=q)).pvalue > P_MIN


def test_share_with_a_trial_rng() -> None:
    trials, q, parties = 50, 97, 4
    rng = TrialRng(seed=31, trials=trials)
    secret = np.arange(trials) % q  # one secret per trial
    shares = share(rng, secret, q, parties, size=())
    assert shares.shape == (trials, parties)
    np.testing.assert_array_equal(reconstruct(shares, q), secret)
    vectors = np.arange(trials * 3).reshape(trials, 3) % q
    shares = share(rng, vectors, q, parties, size=(3,))
    assert shares.shape == (trials, 3, parties)
    np.testing.assert_array_equal(reconstruct(shares, q), vectors)


def test_share_rejects_a_size_that_does_not_fit_the_secrets() -> None:
    with pytest.raises(ParameterError, match="size"):
        share(np.random.default_rng(0), np.zeros(4, dtype=np.int64), 5, 3, size=())


@settings(max_examples=200, deadline=None)
@given(st.integers(2, MAX_MODULUS), st.data())
def test_to_signed_inverts_reduction_on_the_centred_range(q: int, data: st.DataObject) -> None:
    s = data.draw(st.integers(-(q // 2), (q - 1) // 2))
    assert to_signed(np.int64(s % q), q) == s
    a = data.draw(st.integers(0, q - 1))
    b = data.draw(st.integers(0, q - 1))
    assert add_mod(a, b, q) == (a + b) % q


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 2.0**59), st.floats(0, 2.0**59))
@example(5.764607523034234e17, 5.764607523034235e17)  # the float sum rounds up to 2^60
def test_choose_modulus_is_the_smallest_power_of_two_above_twice_the_bound(
    value: float, noise_bound: float
) -> None:
    q = choose_modulus(value, noise_bound)
    bound = math.ceil(value) + math.ceil(noise_bound)
    # Exact arithmetic: in floats, value + noise_bound may round up past q / 2.
    assert q & (q - 1) == 0 and q > 2 * (Fraction(value) + Fraction(noise_bound)) and q > 2 * bound
    assert q == 2 or q // 2 <= 2 * bound
    for s in (bound, -bound):  # the extreme totals decode exactly
        assert to_signed(np.int64(s % q), q) == s


def test_choose_modulus_examples_and_limits() -> None:
    assert [choose_modulus(v) for v in (0, 1, 3, 4, 2**60 - 1)] == [2, 4, 8, 16, 2**62]
    with pytest.raises(ParameterError, match="q <= 2"):
        choose_modulus(2**61)
    with pytest.raises(ParameterError, match="noise_bound"):
        choose_modulus(3, noise_bound=-1)


def test_secure_sum_of_bits_and_discrete_noise_decodes_exactly() -> None:
    # n parties share x_i + noise share; the reconstructed total is the true signed sum
    n, t, b, trials = 12, 4, 3.0, 20_000
    rng = np.random.default_rng(40)
    bits = rng.integers(0, 2, size=(trials, n))
    noisy = bits + discrete_laplace_share(rng, b, n - t, size=(trials, n))
    q = choose_modulus(n, discrete_laplace_tail_bound(b, n - t, n))
    shares = share(rng, noisy % q, q, t + 1)  # (trials, n, t + 1)
    per_holder = np.stack([reconstruct(shares[:, :, j], q) for j in range(t + 1)], axis=-1)
    total = to_signed(reconstruct(per_holder, q), q)
    np.testing.assert_array_equal(total, noisy.sum(axis=1))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=20),
    st.integers(0, 20),
)
def test_fixed_point_round_trip_and_sums(values: list[float], digits: int) -> None:
    q = MAX_MODULUS
    x = np.array(values)
    encoded = encode_fixed(x, digits, q)
    step = 2.0**-digits
    assert np.all(np.abs(decode_fixed(encoded, digits, q) - x) <= step / 2)
    shares = share(np.random.default_rng(digits), encoded, q, 3)
    per_party = reconstruct(np.moveaxis(shares, 0, -1), q)  # each party sums its shares
    total = decode_fixed(reconstruct(per_party, q), digits, q)
    assert abs(float(total) - x.sum()) <= len(values) * step / 2 + 1e-9 * abs(x).sum()


def test_encode_fixed_rejects_values_that_do_not_fit() -> None:
    with pytest.raises(InputError, match="x"):
        encode_fixed(np.array([8.0]), 2, 64)  # 32 is outside [-32, 31]
    assert encode_fixed(np.array([-8.0]), 2, 64) == 32  # -32 fits
    with pytest.raises(InputError):
        encode_fixed(np.array([np.inf]), 2, 64)
    with pytest.raises(InputError):
        encode_fixed(np.array([2.0**61]), 0, MAX_MODULUS)  # 2^61 is one past the top


@pytest.mark.parametrize(
    ("call", "error", "field"),
    [
        (lambda: share(np.random.default_rng(0), [1], 1, 2), ParameterError, "q"),
        (lambda: share(np.random.default_rng(0), [1], 2**62 + 1, 2), ParameterError, "q"),
        (lambda: share(np.random.default_rng(0), [1], 5, 0), ParameterError, "parties"),
        (lambda: share(np.random.default_rng(0), [5], 5, 2), InputError, "x"),
        (lambda: share(np.random.default_rng(0), [-1], 5, 2), InputError, "x"),
        (lambda: share(np.random.default_rng(0), [1.0], 5, 2), InputError, "x"),
        (lambda: reconstruct(np.int64(3), 5), ParameterError, "shares"),
        (lambda: reconstruct([[1, 5]], 5), InputError, "shares"),
        (lambda: add_mod(1, 7, 5), InputError, "b"),
        (lambda: to_signed(-1, 5), InputError, "v"),
        (lambda: encode_fixed(1.0, 62, 2**62), ParameterError, "digits"),
        (lambda: decode_fixed(9, 2, 8), InputError, "v"),
    ],
)
def test_bad_arguments_raise_one_line_naming_the_field(call, error, field: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert field in str(info.value) and "\n" not in str(info.value)


def test_docstring_examples() -> None:
    result = doctest.testmod(sharing)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("q", [2**8, 2**40, 2**62])
@pytest.mark.parametrize("parties", [1, 2, 7, 64])
def test_unchecked_forms_are_the_checked_ones(q: int, parties: int) -> None:
    # one int64 sum where count (q - 1) < 2^63 (q = 2^8, 2^40), pairwise otherwise (2^62, parties > 2)
    x = np.random.default_rng(1).integers(0, q, size=(5, 3), dtype=np.int64)
    checked = share(np.random.default_rng(2), x, q, parties)
    unchecked = sharing.share_unchecked(np.random.default_rng(2), x, q, parties, (5, 3))
    assert checked.tolist() == unchecked.tolist()
    exact = [[sum(int(v) for v in row) % q for row in block] for block in checked.tolist()]
    assert sharing.reconstruct_unchecked(checked, q).tolist() == exact == x.tolist()
    assert reconstruct(checked, q).tolist() == exact


def test_encode_fixed_unchecked_agrees_in_range_and_wraps_outside() -> None:
    values = np.random.default_rng(3).normal(0.0, 100.0, size=1000)
    q = 2**30
    assert sharing.encode_fixed_unchecked(values, 12, q).tolist() == encode_fixed(values, 12, q).tolist()
    # outside the centred range it reduces mod q (encode_fixed refuses): sums stay exact mod q
    assert sharing.encode_fixed_unchecked(np.array([40.0, -40.0]), 0, 64).tolist() == [40, 24]
