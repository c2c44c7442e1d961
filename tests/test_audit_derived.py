"""Leaks a per-column view hides (issue 24): each family's own test protocol, audited on the generic path.

Each protocol here is a sampler of the coalition's views under x and x' (no score: the
generic path of :func:`privsim.analysis.audit.audit_batches`), with its exact loss and
the bound its best event allows computed in the test. The sizes are small (2 selection
and 8 estimation batches of 2000 rows per input), so the leaks are strong; the 10^6-trial
figures are in bench/bench_audit_derived.py (``privsim bench --only audit_derived``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.analysis.audit import audit_batches
from privsim.analysis.audit_bounds import clopper_pearson
from privsim.analysis.audit_derived import FAMILIES, DerivedEvent, Term, propose_derived
from privsim.analysis.audit_selectors import SELECTORS, searched_families

ROWS, SELECT, ESTIMATE = 2000, 2, 8
N_EST = ROWS * ESTIMATE


def _rng(seed: int, which: str, index: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, 0 if which == "x" else 1)))


def _bound_at(p: float, q: float, delta: float = 0.0, z: float = 5.0) -> float:
    """The Clopper-Pearson bound of an event of probabilities p (x) and q (x') on N_EST
    trials each, at counts z standard deviations against it: what a fixed best event
    certifies all but surely."""
    k_p = max(p * N_EST - z * math.sqrt(p * (1 - p) * N_EST), 0.0)
    k_q = min(q * N_EST + z * math.sqrt(max(q * (1 - q), 1.0 / N_EST) * N_EST), N_EST)
    p_lo = float(clopper_pearson(k_p, N_EST, 0.025, "lower"))
    q_hi = float(clopper_pearson(k_q, N_EST, 0.025, "upper"))
    return math.log((p_lo - delta) / q_hi)


def _rr(rng: np.random.Generator, bit: int, keep: float, n: int) -> np.ndarray:
    """The bit, flipped with probability 1 - keep."""
    return np.where(rng.random(n) < keep, bit, 1 - bit).astype(np.int64)


def _audit(sample, columns, seed_selectors=None, delta: float = 0.0):
    return audit_batches(sample, SELECT, ESTIMATE, columns, delta=delta, selectors=seed_selectors)


# --------------------------------------------------------------------------------------
# One protocol per family


def _atom_sampler(seed: int, p_atom: float):
    """A Laplace(input, 1) message that with probability p_atom is the input itself."""

    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1.0 if which == "x" else 0.0
        y = x + rng.laplace(0.0, 1.0, ROWS)
        return np.where(rng.random(ROWS) < p_atom, x, y)[:, None]

    return sample


def test_atoms_find_a_value_sent_without_noise():
    # Exact: Pr[y == 1 | x] = 0.1, Pr[y == 1 | x'] = 0 (a continuous law has no atom):
    # the loss at delta 0 is infinite, and the event {y == 1} certifies what no hit in
    # N_EST trials allows (about ln(0.1 N_EST / 5.8), 5.6 here, at 5 sigma below).
    p_atom = 0.1
    r = _audit(_atom_sampler(1, p_atom), ["y"])
    assert r.epsilon_lower >= _bound_at(p_atom, 0.0) > 3.5
    # The naive-Bayes bins may hold the atom too and be carried beside it (both forecast
    # alike): either may win on the estimation sample; the atom's event is carried.
    (atom,) = [c for c in r.candidates if c["selection"] == "atoms"]
    assert "y in {1}" in atom["event"] and atom["epsilon_lower"] >= _bound_at(p_atom, 0.0)
    # The threshold rule alone sees the shift and the atoms only as a threshold does.
    alone = _audit(_atom_sampler(1, p_atom), ["y"], ("view",))
    assert alone.epsilon_lower < r.epsilon_lower - 1.0


def _int_bit_sampler(seed: int, bit: int, keep: float):
    """A 16-bit uniform value whose bit ``bit`` is set to the input with probability ``keep``."""

    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        y = rng.integers(0, 1 << 16, ROWS)
        forced = (y & ~(1 << bit)) | (x << bit)
        return np.where(rng.random(ROWS) < keep, forced, y)[:, None].astype(float)

    return sample


def test_bits_of_an_integer():
    # Pr[bit 5 = 1 | x] = 0.6 + 0.4/2 = 0.8 against 0.2 under x': loss ln 4 = 1.386.
    keep = 0.6
    p, q = keep + (1 - keep) / 2, (1 - keep) / 2
    assert math.log(p / q) == pytest.approx(math.log(4))
    r = _audit(_int_bit_sampler(2, 5, keep), ["y"])
    assert _bound_at(p, q) <= r.epsilon_lower <= math.log(p / q)
    assert "bit 5 of y" in r.event


def _float_bit_sampler(seed: int, keep: float):
    """A float64 in [1, 2) of uniform mantissa bits, whose lowest one is set to the input
    with probability ``keep``. (Not 1 + U for U uniform in [0, 1): the rounding of the sum
    to even biases that lowest bit.)"""

    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), np.uint64(1 if which == "x" else 0)
        words = np.uint64(0x3FF0000000000000) | rng.integers(0, 1 << 52, ROWS, dtype=np.uint64)
        forced = (words & ~np.uint64(1)) | x
        return np.where(rng.random(ROWS) < keep, forced, words).view(np.float64)[:, None]

    return sample


def test_bits_of_a_float():
    keep = 0.6
    p, q = keep + (1 - keep) / 2, (1 - keep) / 2
    r = _audit(_float_bit_sampler(3, keep), ["y"])
    assert _bound_at(p, q) <= r.epsilon_lower <= math.log(p / q)
    assert "IEEE bit 0 of y" in r.event


def _parity_sampler(seed: int, keep: float):
    """Three bytes whose low bits XOR to the input's randomized response; each alone, and
    each pair, is uniform under both inputs."""

    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        low = rng.integers(0, 2, (ROWS, 3))
        low[:, 2] = low[:, 0] ^ low[:, 1] ^ _rr(rng, x, keep, ROWS)
        return (2 * rng.integers(0, 128, (ROWS, 3)) + low).astype(float)

    return sample


def test_parities_of_three_messages():
    # Exact: the parity is randomized response at keep 0.9, loss ln 9 = 2.197, and its
    # event is the best one (every other event is independent of the input given it).
    keep = 0.9
    r = _audit(_parity_sampler(4, keep), ["m0", "m1", "m2"])
    assert _bound_at(keep, 1 - keep) <= r.epsilon_lower <= math.log(keep / (1 - keep))
    assert r.event.count("xor") == 2


def _high_parity_sampler(seed: int, keep: float, positions: tuple[int, int, int]):
    """Three uniform 16-bit values whose bits at ``positions`` (bit positions[i] of
    message i) XOR to the input's randomized response; each message alone, and each
    pair, is uniform under both inputs."""

    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        m = rng.integers(0, 1 << 16, (ROWS, 3))
        bits = [(m[:, i] >> k) & 1 for i, k in enumerate(positions)]
        want = bits[0] ^ bits[1] ^ _rr(rng, x, keep, ROWS)
        k = positions[2]
        m[:, 2] = (m[:, 2] & ~(1 << k)) | (want << k)
        return m.astype(float)

    return sample


@pytest.mark.parametrize("positions", [(3, 3, 3), (3, 9, 14)])
def test_parities_of_high_bits_of_three_messages(positions):
    # The XOR of bit 3 of three messages (a value serialized with one of its bits
    # replaced), or of bits at three different positions: randomized response at keep
    # 0.9 again, loss ln 9, which only that 3-way parity of high bits shows.
    keep = 0.9
    columns = ["m0", "m1", "m2"]
    r = _audit(_high_parity_sampler(13, keep, positions), columns)
    assert _bound_at(keep, 1 - keep) <= r.epsilon_lower <= math.log(keep / (1 - keep))
    assert r.selection == "parities" and r.event.count("xor") == 2
    assert all(f"bit {k} of {c}" in r.event for k, c in zip(positions, columns))


def test_atom_floor_is_local_and_poisson():
    from privsim.analysis.audit_derived import _atom_values

    rng = np.random.default_rng(13)
    # A uniform 16-bit column at 0.6 rows a value: the largest of 65536 Poisson(0.6)
    # counts is 6 or 7, below the floor (Poisson(0.6) reaches 8 with probability 2e-6).
    assert _atom_values(rng.integers(0, 1 << 16, 40_000).astype(float)).size == 0
    # A rounded Gaussian: its dense middle is judged against its neighbours, not the mean.
    assert _atom_values(np.round(rng.normal(0.0, 200.0, 40_000))).size == 0
    # A continuous column with one value three times and another forty: both atoms, most
    # repeated first (its neighbours are seen once each, a Poisson rate of 0).
    y = np.concatenate([rng.normal(size=10_000), [0.5] * 3, [2.25] * 40])
    assert _atom_values(y).tolist() == [2.25, 0.5]
    # In that rounded Gaussian's middle, a value 4 times its neighbours' counts is one.
    g = np.round(rng.normal(0.0, 200.0, 40_000))
    g = np.concatenate([g, np.full(3 * int(np.count_nonzero(g == 7.0)) + 40, 7.0)])
    assert _atom_values(g).tolist() == [7.0]


def _share_sampler(seed: int, keep: float, modulus: int = 1 << 16):
    """The input's randomized response, in fixed point (4096 times the bit), split into
    two additive shares mod 2^16: the shares' residues mod 2 and 4 sum to 0 under both
    inputs, so only the reconstruction mod 2^16 shows the input."""

    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        first = rng.integers(0, modulus, ROWS)
        second = np.mod(4096 * _rr(rng, x, keep, ROWS) - first, modulus)
        return np.column_stack([first, second]).astype(float)

    return sample


def test_shares_of_two_members():
    keep = 0.75  # loss ln 3
    r = _audit(_share_sampler(5, keep), ["share 0", "share 1"])
    assert _bound_at(keep, 1 - keep) <= r.epsilon_lower <= math.log(keep / (1 - keep))
    assert r.selection == "shares" and "mod 65536" in r.event


def _three_share_sampler(seed: int, keep: float, modulus: int = 1 << 16, scale: int = 4096,
                         members: tuple[int, ...] = (0, 1, 2)):
    """The input's randomized response, times ``scale``, split into three additive shares
    mod ``modulus`` (two uniform, the third completing the sum), of which the view holds
    ``members``: any two shares are uniform and independent of the input."""

    def sample(which: str, index: int) -> np.ndarray:
        rng, x = _rng(seed, which, index), 1 if which == "x" else 0
        first, second = rng.integers(0, modulus, (2, ROWS))
        third = np.mod(scale * _rr(rng, x, keep, ROWS) - first - second, modulus)
        return np.column_stack([first, second, third])[:, list(members)].astype(float)

    return sample


def _share_view_loss(keep: float, modulus: int, scale: int, members: tuple[int, ...]) -> float:
    """The exact loss of the members' view of :func:`_three_share_sampler`, by enumerating
    its law: every (first, second, secret) with its probability, the view's cells summed."""
    laws = []
    for bit in (1, 0):
        law: dict[tuple[int, ...], float] = {}
        for first in range(modulus):
            for second in range(modulus):
                for secret, prob in ((scale * bit, keep), (scale * (1 - bit), 1 - keep)):
                    shares = (first, second, (secret - first - second) % modulus)
                    cell = tuple(shares[m] for m in members)
                    law[cell] = law.get(cell, 0.0) + prob / modulus**2
        laws.append(law)
    return max(abs(math.log(laws[0][c] / laws[1][c])) for c in laws[0])


def test_shares_of_three_members():
    # The view's law, enumerated on a small modulus (the same construction mod 16 with the
    # secret 4 x the bit): the three shares' loss is the randomized response's, ln 3, and
    # any two shares alone carry none (so no pair's sum can find it).
    keep = 0.75
    assert _share_view_loss(keep, 16, 4, (0, 1, 2)) == pytest.approx(math.log(keep / (1 - keep)))
    assert _share_view_loss(keep, 16, 4, (0, 2)) == pytest.approx(0.0, abs=1e-12)
    columns = ["share 0", "share 1", "share 2"]
    r = _audit(_three_share_sampler(8, keep), columns)
    assert _bound_at(keep, 1 - keep) <= r.epsilon_lower <= math.log(keep / (1 - keep))
    assert r.selection == "shares" and "(share 0 + share 1 + share 2) mod 65536" in r.event
    # Without the derived selector, nothing is found.
    before = _audit(_three_share_sampler(8, keep), columns, tuple(s for s in SELECTORS if s != "derived"))
    assert before.epsilon_lower < 0.3


def test_shares_of_three_members_under_any_modulus(monkeypatch):
    # Shares mod 10007 (no power of 2): their plain sum is the secret plus 0, 1 or 2 times
    # 10007, so the plain sum's atoms favoured by x ({1000, 11007, 21014}) are an event of
    # the whole loss, and so are their residues mod 2^14 (three atoms again), which win the tie.
    keep, modulus = 0.75, 10_007
    r = _audit(_three_share_sampler(9, keep, modulus, 1000), ["a", "b", "c"])
    assert _bound_at(keep, 1 - keep) <= r.epsilon_lower <= math.log(keep / (1 - keep))
    assert r.selection == "shares" and r.event.startswith("(a + b + c)")
    # With no modulus to reduce by, the plain sum's atoms alone find it.
    from privsim.analysis import audit_derived

    monkeypatch.setattr(audit_derived, "_share_moduli", lambda *args: [])
    sample = _three_share_sampler(9, keep, modulus, 1000)
    vx, vxp = (np.concatenate([sample(w, i) for i in range(SELECT)]) for w in ("x", "xp"))
    plain = propose_derived(vx, vxp, ["a", "b", "c"], [0, 1, 2], delta=0.0, confidence=0.95, n_estimate=N_EST,
                            families=("shares",))
    assert plain.describe().startswith("(a + b + c) in {") and set(plain.terms[0].arg[3]) == {1000, 11007, 21014}


def test_shares_negative_controls():
    # Correct claims are not flagged: the three shares' true loss ln 3 is not exceeded,
    # and two of the three (true loss 0, enumerated above) certify nothing. Each audit's
    # bound exceeds the truth with probability at most 5% (the seed is fixed).
    keep = 0.75
    r = _audit(_three_share_sampler(10, keep), ["share 0", "share 1", "share 2"])
    assert r.epsilon_lower <= math.log(keep / (1 - keep))
    pair = _audit(_three_share_sampler(11, keep, members=(0, 2)), ["share 0", "share 2"])
    assert pair.epsilon_lower <= 0.0


def test_a_sum_term_reads_and_counts_mod_m_and_plain():
    v = np.array([[1.0, 2.0, 65535.0], [3.0, 4.0, 5.0]])
    mod = Term("sum", 0, "a", ((1, 2), ("b", "c"), 1 << 16, (2,)))
    assert mod(v).tolist() == [1, 0] and mod.describe() == "(a + b + c) mod 65536 in {2}"
    plain = Term("sum", 0, "a", ((1, 2), ("b", "c"), 0, (12, 65538)))
    assert plain(v).tolist() == [1, 1] and plain.describe() == "(a + b + c) in {12, 65538}"


def _variance_sampler(seed: int, scale: float):
    """A Gaussian message of standard deviation ``scale`` under x and 1 under x'."""

    def sample(which: str, index: int) -> np.ndarray:
        rng = _rng(seed, which, index)
        return rng.normal(0.0, scale if which == "x" else 1.0, ROWS)[:, None]

    return sample


def test_magnitudes_find_a_variance_leak():
    # The events |y| >= t: Pr under x = 2 sf(t / 3), under x' = 2 sf(t); the best one at
    # this size, by the bound it allows at 5 sigma, is computed on a grid.
    from scipy import stats

    scale = 3.0
    best = max(_bound_at(2 * stats.norm.sf(t / scale), 2 * stats.norm.sf(t)) for t in np.linspace(0.5, 5, 91))
    r = _audit(_variance_sampler(6, scale), ["y"])
    assert r.epsilon_lower >= 0.8 * best > 1.0
    # Here a 64-bin naive-Bayes histogram competes too; the family alone finds a tail event.
    sample = _variance_sampler(7, scale)
    vx, vxp = (np.concatenate([sample(w, i) for i in range(2)]) for w in ("x", "xp"))
    event = propose_derived(vx, vxp, ["y"], [0], delta=0.0, confidence=0.95, n_estimate=N_EST,
                            families=("magnitudes",))
    assert event.describe().startswith("|y - ") and event.family == "magnitudes"
    hits_x, hits_xp = (int(np.count_nonzero(event.contains(np.concatenate([sample(w, i) for i in range(2, 10)]))))
                       for w in ("x", "xp"))
    assert hits_x > 2 * hits_xp


# --------------------------------------------------------------------------------------
# Soundness and the pieces


def _null_sampler(seed: int):
    """Every family's shape, independent of the input: a 16-bit value, a float, a byte triple."""

    def sample(which: str, index: int) -> np.ndarray:
        rng = _rng(seed, "x", 2 * index + (which == "xp"))
        return np.column_stack([rng.integers(0, 1 << 16, (ROWS // 4, 2)), rng.normal(size=ROWS // 4),
                                rng.integers(0, 256, (ROWS // 4, 3))]).astype(float)

    return sample


def test_soundness_zero_loss():
    # The truth is 0: of 4 audits, a Binomial(4, 0.05) count exceeds 1 with probability 1.4%
    # (the bench repeats 50 at full size).
    columns = ["a", "b", "g", "m0", "m1", "m2"]
    results = [audit_batches(_null_sampler(30_000 + i), SELECT, ESTIMATE, columns) for i in range(4)]
    assert sum(r.epsilon_lower > 0 for r in results) <= 1


def test_derived_event_pickles_and_describes():
    import pickle

    e = DerivedEvent((Term("share", 0, "a", (1, "b", -1, 16, (3, 5))),), 1, "shares")
    v = np.array([[8.0, 5.0], [9.0, 4.0], [0.0, 11.0]])
    assert e.contains(v).tolist() == [True, True, True]
    assert pickle.loads(pickle.dumps(e)).contains(v).tolist() == [True, True, True]
    assert e.describe() == "(a - b) mod 16 in {3, 5} == 1"
    assert e.complement().contains(v).tolist() == [False, False, False]


def test_no_bits_of_a_binary_column():
    rng = np.random.default_rng(0)
    vx, vxp = rng.integers(0, 2, (400, 1)).astype(float), rng.integers(0, 2, (400, 1)).astype(float)
    assert propose_derived(vx, vxp, ["b"], [0], delta=0.0, confidence=0.95, n_estimate=1000,
                           families=("bits", "atoms", "shares", "magnitudes")) is None


def test_searched_names_every_family():
    assert SELECTORS[-1] == "derived"
    assert searched_families(None)[-len(FAMILIES):] == list(FAMILIES)
    assert searched_families(("view", "pairs")) == ["view", "pairs"]
