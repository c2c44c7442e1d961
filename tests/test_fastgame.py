"""FastGaMe (Pagh & Sejer 2026, section 3): the binary tree's joint law in O(1) per value.

Three kinds of evidence:
- exact: every FastGaMe output is a linear function of the standard normals it draws,
  so feeding it unit vectors recovers the linear map A and Cov = A A^T exactly; this is
  compared with (m + 1) s^2 for arbitrary query sequences (hypothesis);
- statistical: with many coordinates (the vectorized path) the empirical covariance over
  an irregular query sequence matches the theory and GaussianTree's, within 5 standard
  errors of each estimator; mutants with a factor-of-two mistake fail the same check;
- the bookkeeping: forward-only time, repeated queries, lazy memory, errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import tree as tree_module
from privsim.mechanisms._slots import SlotTable
from privsim.mechanisms.tree import (
    FastGaMe,
    GaussianTree,
    LaplaceFastGaMe,
    _bit_length,
    common_prefix_length,
    tree_covariance,
)
from privsim.parties.rng import TrialRNG

# An irregular sequence over T = 2^10 that exercises bridges with a = 0 and a > 0,
# c = h and c < h, a valid shared level (t = 513) and the last leaf:
#   2: a=0 m=9 c=10 | 5: a=0 m=7 c=9 | 129: a=0 m=2 c=7 | 137: a=2 m=6 c=10 |
#   161: a=2 m=4 c=6 | 162: a=4 m=9 c=10 | 300: a=0 m=1 c=2 | 513: m=0 valid | ...
IRREGULAR = [1, 2, 5, 129, 137, 161, 162, 300, 513, 600, 1000, 1023, 1024]


# ----------------------------------------------------------------------------------
# exact covariance through the linear map
class _UnitDraws(np.random.Generator):
    """A Generator whose standard normals are all 0 except draw number ``hot`` (= 1)."""

    def __init__(self, hot: int) -> None:
        super().__init__(np.random.PCG64(0))
        self.hot, self.count = hot, 0

    def standard_normal(self, size=None, dtype=np.float64, out=None):  # noqa: ANN001
        n = 1 if size is None else int(np.prod(size))
        v = np.zeros(n)
        if self.count <= self.hot < self.count + n:
            v[self.hot - self.count] = 1.0
        self.count += n
        return float(v[0]) if size is None else v.reshape(size)


def _run(mech, queries):
    """Outputs of a list of (t, coords) queries, flattened, plus (coord, t) labels."""
    values, labels = [], []
    for t, coords in queries:
        out = np.atleast_1d(mech.noise(t, coords))
        keys = [0] if coords is None and mech.k == 1 else np.atleast_1d(
            np.arange(mech.k) if coords is None else coords).tolist()
        values.extend(out.tolist())
        labels.extend((c, t) for c in keys)
    return np.array(values), labels


def _exact_covariance(cls, T, sigma2, k, queries):
    """A A^T, A the linear map from the drawn standard normals to the outputs."""
    mech = cls(T, sigma2, k=k, seed=0)
    _, labels = _run(mech, queries)
    # FastGaMe draws at most 2 standard normals per released value, GaussianTree h + 1
    n_draws = (2 if cls is FastGaMe else mech.h + 1) * len(labels)
    columns = []
    for hot in range(n_draws):
        values, labels = _run(cls(T, sigma2, k=k, seed=_UnitDraws(hot)), queries)
        columns.append(values)
    A = np.array(columns).T
    return A @ A.T, labels


def _theory(labels, T, sigma2):
    coords = np.array([c for c, _ in labels])
    times = np.array([t for _, t in labels])
    return tree_covariance(times, T, sigma2) * (coords[:, None] == coords[None, :])


def test_figure_3_example():
    # b(l) = 10010 and b(t) = 10111 share the prefix 10 (the paper's Figure 3)
    assert common_prefix_length(0b10010 + 1, 0b10111 + 1, 5) == 2
    assert common_prefix_length(7, 7, 5) == 5


@settings(max_examples=60, deadline=None)
@given(h=st.integers(0, 8), data=st.data())
def test_exact_joint_law_scalar_path(h, data):
    T = 1 << h
    times = sorted(data.draw(st.lists(st.integers(1, T), min_size=1, max_size=9)))
    queries = [(t, None) for t in times]
    for cls in (FastGaMe, GaussianTree):
        cov, labels = _exact_covariance(cls, T, 0.7, 1, queries)
        np.testing.assert_allclose(cov, _theory(labels, T, 0.7), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 7), data=st.data())
def test_exact_joint_law_mixed_scalar_and_vector_queries(h, data):
    T, k = 1 << h, 3
    times = sorted(data.draw(st.lists(st.integers(1, T), min_size=1, max_size=7)))
    queries = []
    for t in times:
        kind = data.draw(st.sampled_from(["one", "some", "all"]))
        if kind == "one":
            queries.append((t, data.draw(st.integers(0, k - 1))))
        elif kind == "some":
            queries.append((t, np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=1,
                                                            max_size=4)))))
        else:
            queries.append((t, None))
    cov, labels = _exact_covariance(FastGaMe, T, 1.3, k, queries)
    np.testing.assert_allclose(cov, _theory(labels, T, 1.3), atol=1e-12)


@pytest.mark.parametrize("k", [2, 3])  # 2: every query reads all coordinates (lockstep); 3: per coordinate
def test_exact_joint_law_on_the_irregular_sequence(k):
    queries = [(t, np.array([0, 1])) for t in IRREGULAR]
    cov, labels = _exact_covariance(FastGaMe, 1024, 0.5, k, queries)
    np.testing.assert_allclose(cov, _theory(labels, 1024, 0.5), atol=1e-12)


def test_exact_joint_law_across_the_switch_from_lockstep():
    """All coordinates in lockstep, then a subset (the walks are drawn into the table), then all again."""
    every = np.arange(3)
    queries = [(t, every) for t in IRREGULAR[:5]] + [(161, np.array([1])), (162, np.array([2, 0]))]
    queries += [(t, every) for t in IRREGULAR[7:]]
    cov, labels = _exact_covariance(FastGaMe, 1024, 0.5, 3, queries)
    np.testing.assert_allclose(cov, _theory(labels, 1024, 0.5), atol=1e-12)


# ----------------------------------------------------------------------------------
# statistics with many coordinates
def _samples(mech, times, n, lockstep=False):
    """Noise of all n coordinates at each time: one query (lockstep), or two halves (per coordinate)."""
    coords = np.arange(n)
    if lockstep:
        return np.column_stack([mech.noise(t, coords) for t in times])
    return np.column_stack([np.concatenate([mech.noise(t, coords[: n // 2]), mech.noise(t, coords[n // 2 :])])
                            for t in times])


def _cov_z(X, C, *, Y=None, C_y=None):
    """z-scores of the zero-mean covariance estimate X^T X / N against C.

    For jointly normal zero-mean (x, y), Var(x y) = C_xx C_yy + C_xy^2, so the estimate
    of C_xy has standard error sqrt((C_xx C_yy + C_xy^2) / N). With ``Y`` the z-scores
    are of the difference of two independent estimates.
    """
    def est(Z):
        return Z.T @ Z / Z.shape[0]

    def var(Z, Cz):
        d = np.diag(Cz)
        return (d[:, None] * d[None, :] + Cz**2) / Z.shape[0]

    if Y is None:
        return (est(X) - C) / np.sqrt(var(X, C))
    return (est(X) - est(Y)) / np.sqrt(var(X, C) + var(Y, C_y))


N_BIG = 200_000


@pytest.mark.parametrize("lockstep", [False, True])
def test_variance_and_covariance_match_theory_irregular_skips(lockstep):
    """Within 5 sd of (m + 1) s^2: a factor of two in s^2 moves the variance entries by over 100 sd."""
    T, s2 = 1024, 0.5
    X = _samples(FastGaMe(T, s2, k=N_BIG, seed=11), IRREGULAR, N_BIG, lockstep)
    C = tree_covariance(IRREGULAR, T, s2)
    assert np.allclose(np.diag(C), (10 + 1) * s2)  # Var = (h + 1) s^2 at every t
    z = _cov_z(X, C)
    assert np.abs(z).max() < 5, np.abs(z).max()
    mean_z = X.mean(axis=0) / np.sqrt(np.diag(C) / N_BIG)
    assert np.abs(mean_z).max() < 5


def _double_bridge_variance(pa, pc, a, m, c, s, z):
    return pa + (m - a) / (c - a) * (pc - pa) + s * (2 * (m - a) * (c - m) / (c - a)) ** 0.5 * z


def _midpoint_bridge_mean(pa, pc, a, m, c, s, z):
    return (pa + pc) / 2 + s * ((m - a) * (c - m) / (c - a)) ** 0.5 * z


@pytest.mark.parametrize("mutant", [_double_bridge_variance, _midpoint_bridge_mean])
def test_the_statistical_check_catches_a_wrong_bridge(monkeypatch, mutant):
    monkeypatch.setattr(tree_module, "_bridge", mutant)
    T, s2, n = 1024, 0.5, 100_000
    X = _samples(FastGaMe(T, s2, k=n, seed=12), IRREGULAR, n)
    assert np.abs(_cov_z(X, tree_covariance(IRREGULAR, T, s2))).max() > 5


# N_TREE: the z statistics are standardized (the null stays below 5 at any size) and a
# mistake's z grows as sqrt(N_TREE): at 5,000 the factor-of-two mutants below reach z = 24
# (doubled variance) and 22 (doubled tail), the correct FastGaMe 2.3 (at 20,000: 48, 43, 1.9).
SMALL_T, SMALL_TIMES, N_TREE = 64, [1, 2, 4, 7, 8, 9, 17, 33, 40, 63, 64], 5_000


@pytest.fixture(scope="module")
def tree_sample() -> np.ndarray:
    """GaussianTree noise (the slow reference) at SMALL_TIMES for N_TREE coordinates."""
    return _samples(GaussianTree(SMALL_T, 1.0, k=N_TREE, seed=21), SMALL_TIMES, N_TREE)


def _tree_vs_fastgame_z(G: np.ndarray, fast: FastGaMe) -> float:
    F = _samples(fast, SMALL_TIMES, N_TREE)
    # the standard errors come from the pooled empirical covariance, not from the theory
    pooled = (G.T @ G + F.T @ F) / (2 * N_TREE)
    return float(np.abs(_cov_z(F, pooled, Y=G, C_y=pooled)).max())


def test_empirical_covariance_matches_gaussian_tree(tree_sample):
    assert _tree_vs_fastgame_z(tree_sample, FastGaMe(SMALL_T, 1.0, k=N_TREE, seed=22)) < 5


def test_a_factor_of_two_mistake_fails_the_gaussian_tree_comparison(tree_sample):
    assert _tree_vs_fastgame_z(tree_sample, FastGaMe(SMALL_T, 2.0, k=N_TREE, seed=23)) > 5
    tail_doubled = FastGaMe(SMALL_T, 1.0, k=N_TREE, seed=24)
    tail_doubled._sqrt_int = np.sqrt(2.0 * np.arange(7))  # N(0, 2 (h - m) s^2) tails
    assert _tree_vs_fastgame_z(tree_sample, tail_doubled) > 5


def test_bridge_step_has_the_conditional_law():
    # h = 10; after 1, 129, 137 the valid levels are {0, 2, 6, 10}; the query at 161
    # shares levels 0..4 with 137, so P_4 is drawn between a = 2 and c = 6.
    s2, n = 0.8, N_BIG
    fg = FastGaMe(1024, s2, k=n, seed=31)
    coords = np.arange(n)
    for t in (1, 129, 137):
        fg.noise(t, coords)
    before = fg.prefix_sums(coords)
    assert (~np.isnan(before[0])).nonzero()[0].tolist() == [0, 2, 6, 10]
    nu = fg.noise(161, coords)
    after = fg.prefix_sums(coords)
    assert (~np.isnan(after[0])).nonzero()[0].tolist() == [0, 2, 4, 10]
    np.testing.assert_array_equal(after[:, [0, 2]], before[:, [0, 2]])
    np.testing.assert_array_equal(after[:, 10], nu)

    P2, P6, P4 = before[:, 2], before[:, 6], after[:, 4]
    tau2 = (4 - 2) * (6 - 4) / (6 - 2) * s2
    resid = P4 - (P2 + (4 - 2) / (6 - 2) * (P6 - P2))
    assert abs(resid.mean()) < 5 * np.sqrt(tau2 / n)
    assert abs(resid.var() - tau2) < 5 * tau2 * np.sqrt(2 / n)
    # uncorrelated with the endpoints: the conditional mean is the right one
    for P, var_P in ((P2, 3 * s2), (P6, 7 * s2)):
        assert abs(np.mean(resid * P)) < 5 * np.sqrt(tau2 * var_P / n)
    # the fresh branch below level 4 adds h - m = 6 levels of independent noise
    tail = nu - P4
    assert abs(tail.var() - 6 * s2) < 5 * 6 * s2 * np.sqrt(2 / n)
    assert abs(np.mean(tail * P4)) < 5 * np.sqrt(6 * s2 * 5 * s2 / n)


# ----------------------------------------------------------------------------------
# bookkeeping
def test_repeated_queries_return_the_same_value():
    fg = FastGaMe(2**20, 1.0, k=50, seed=1)
    first = fg.noise(77, np.arange(50))
    np.testing.assert_array_equal(fg.noise(77, np.arange(50)), first)
    np.testing.assert_array_equal(fg.noise(77, [3, 3, 9]), first[[3, 3, 9]])
    assert fg.noise(77, 4) == first[4]
    one = FastGaMe(8, 1.0, seed=2)
    assert one.noise(5) == one.noise(5)


def test_backwards_queries_are_refused_and_leave_no_trace():
    fg, twin = FastGaMe(1024, 1.0, k=10, seed=3), FastGaMe(1024, 1.0, k=10, seed=3)
    for mech in (fg, twin):
        mech.noise(100, [1, 2])
    with pytest.raises(ParameterError, match="before the last query"):
        fg.noise(99, 1)
    with pytest.raises(ParameterError, match=r"t=50 .* coordinate 2"):
        fg.noise(50, [5, 6, 2])  # fresh coordinates 5, 6 and a late one
    assert fg.n_materialized == 2
    np.testing.assert_array_equal(fg.noise(300, [1, 2, 5]), twin.noise(300, [1, 2, 5]))
    scalar = FastGaMe(16, 1.0, seed=4)
    scalar.noise(9)
    with pytest.raises(ParameterError):
        scalar.noise(8)


@settings(max_examples=80, deadline=None)
@given(h=st.integers(1, 12), data=st.data())
def test_time_only_moves_forward_and_the_path_invariant_holds(h, data):
    T = 1 << h
    fg = FastGaMe(T, 1.0, seed=data.draw(st.integers(0, 10)))
    last = None
    for t in data.draw(st.lists(st.integers(1, T), min_size=1, max_size=12)):
        if last is not None and t < last:
            with pytest.raises(ParameterError):
                fg.noise(t)
            continue
        value = fg.noise(t)
        valid = np.flatnonzero(~np.isnan(fg.prefix_sums()))
        assert valid[0] == 0 and valid[-1] == h  # the sentinels
        assert fg.prefix_sums()[h] == value
        if last is not None and t != last:
            m = common_prefix_length(last, t, h)
            # the shared level is valid; nothing of the old path below it survives
            assert m in valid and not ((valid > m) & (valid < h)).any()
        last = t


def test_scalar_and_vector_paths_draw_the_same_stream():
    times = [1, 3, 4, 40, 41, 200, 255, 256]
    for k in (1, 9):
        a, b = FastGaMe(256, 0.3, k=k, seed=5), FastGaMe(256, 0.3, k=k, seed=5)
        coord = 0 if k == 1 else 7
        scalar = [a.noise(t) if k == 1 else a.noise(t, coord) for t in times]
        vector = [b.noise(t, np.array([coord]))[0] for t in times]
        assert scalar == vector


def test_constant_number_of_draws_per_query():
    fg = FastGaMe(2**60, 1.0, seed=6)
    # The scalar path reads the block of normals by index: count the normals read
    # (before each refill, up to the index it started from; then up to the current one).
    draws, done = fg._draws, [0]
    original = draws.refill

    def counting(pos: int) -> tuple[list[float], int]:
        done[0] += pos
        return original(pos)

    draws.refill = counting  # type: ignore[method-assign]
    times = np.unique(np.random.default_rng(0).integers(1, 2**60, 3000, dtype=np.int64))
    for t in times.tolist():
        before = done[0] + draws.pos
        fg.noise(t)
        assert 1 <= done[0] + draws.pos - before <= 2  # a bridge point and a tail, whatever T is
    assert done[0] > 0  # the count crossed blocks


def test_only_queried_coordinates_cost_memory():
    k = 10**12
    fg = FastGaMe(2**30, 1.0, k=k, seed=7)
    assert fg.nbytes < 2_000
    coords = np.random.default_rng(1).choice(10**11, 1000, replace=False) * 10
    fg.noise(5, coords)
    fg.noise(6, coords[:10])
    assert fg.n_materialized == 1000
    per_coordinate = 8 * (fg.h + 1) + 8 + 8  # P, last, mask
    assert fg.nbytes <= 4 * 1000 * per_coordinate  # growth by doubling, table at load <= 1/2
    assert np.isnan(fg.prefix_sums(3)).all()  # never queried
    assert fg.n_materialized == 1000


def test_vectorized_query_of_many_coordinates_is_one_pass():
    fg = FastGaMe(2**30, 1.0, k=5_000_000, seed=8)
    coords = np.random.default_rng(2).choice(5_000_000, 100_000, replace=False)
    for t in (1, 10, 10**5, 10**9):
        out = fg.noise(t, coords)
        assert out.shape == (100_000,) and np.isfinite(out).all()
    assert fg.n_materialized == 100_000


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match=r"T must be a power of two: 1, 2, 4.*got 1000"):
        FastGaMe(1000, 1.0)
    for bad_T in (0, -8, 2.0, True, 2**63):
        with pytest.raises(ParameterError, match="T must be a power of two"):
            FastGaMe(bad_T, 1.0)
    with pytest.raises(ParameterError, match="sigma2"):
        FastGaMe(8, 0.0)
    with pytest.raises(ParameterError, match="k"):
        FastGaMe(8, 1.0, k=0)
    fg = FastGaMe(8, 1.0, k=4, seed=0)
    for bad_t in (0, 9, 2.5):
        with pytest.raises(ParameterError, match="t must be"):
            fg.noise(bad_t)
    with pytest.raises(InputError, match="coords"):
        fg.noise(1, [0, 4])
    with pytest.raises(InputError, match="coords"):
        fg.noise(1, [0.5])
    with pytest.raises(ParameterError, match="seed"):
        FastGaMe(8, 1.0, seed=-1)
    assert FastGaMe(1, 1.0, seed=0).variance == 1.0  # T = 1: the root alone


def test_seeds_reproduce_and_global_state_is_untouched():
    state = np.random.get_state()[1].copy()
    a = FastGaMe(64, 1.0, k=3, seed=9).noise(5)
    b = FastGaMe(64, 1.0, k=3, seed=np.random.SeedSequence(9)).noise(5)
    c = FastGaMe(64, 1.0, k=3, seed=np.random.default_rng(np.random.SeedSequence(9))).noise(5)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, FastGaMe(64, 1.0, k=3, seed=10).noise(5))
    np.testing.assert_array_equal(np.random.get_state()[1], state)


# ----------------------------------------------------------------------------------
# the helpers
def test_bit_length_is_exact_near_float_rounding():
    xs = [0, 1, 2, 3, 2**52, 2**53 - 1, 2**53, 2**53 + 1, 2**54 - 1, 2**62 - 1, 2**62, 2**63 - 1]
    np.testing.assert_array_equal(_bit_length(np.array(xs, dtype=np.int64)),
                                  [x.bit_length() for x in xs])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**62), max_size=60), max_size=8))
def test_slot_table_agrees_with_a_dict(batches):
    table, ref = SlotTable(), {}
    for batch in batches:
        keys = np.unique(np.array(batch, dtype=np.int64))
        slots = table.get_or_insert(keys)
        for key, slot in zip(keys.tolist(), slots.tolist(), strict=True):
            assert ref.setdefault(key, len(ref)) == slot
        for key in batch[:3]:
            assert table.lookup_one(key) == ref[key]
    assert len(table) == len(ref)
    probe = np.array(list(ref) + [2**62 + 1], dtype=np.int64)
    np.testing.assert_array_equal(table.lookup(probe), [ref[k] for k in ref] + [-1])


def test_lockstep_off_keeps_the_per_coordinate_path():
    """lockstep=False: a read of all coordinates draws as a read of a subset does (Algorithm 1)."""
    every = np.arange(4)
    off = FastGaMe(64, 1.0, k=4, seed=3, lockstep=False)
    ref = FastGaMe(64, 1.0, k=5, seed=3)  # four of five coordinates: the per-coordinate path
    on = FastGaMe(64, 1.0, k=4, seed=3)
    for t in (1, 2, 7, 8, 33):
        values = off.noise(t)
        np.testing.assert_array_equal(values, ref.noise(t, every))
        # Since issue 29 lockstep is Algorithm 1 with the bookkeeping done once for all
        # coordinates (before, a Kalman filter with one normal per value): the same draws.
        np.testing.assert_array_equal(on.noise(t), values)


# ----------------------------------------------------------------------------------
# many steps of one coordinate (issue 29)
@settings(max_examples=60, deadline=None)
@given(h=st.sampled_from([0, 1, 3, 10, 40, 60]), data=st.data())
def test_noise_steps_is_one_query_per_step(h, data):
    """noise_steps reads the draws of one query per step, in order: the same values, bit for bit."""
    T = 1 << h
    times = sorted(data.draw(st.lists(st.integers(1, T), min_size=1, max_size=30)))
    split = data.draw(st.integers(0, len(times)))  # steps queried one by one before the batch
    for k, coord in ((1, None), (4, 2)):
        a, b = FastGaMe(T, 0.6, k=k, seed=h), FastGaMe(T, 0.6, k=k, seed=h)
        if k > 1:  # another coordinate draws in between: the stream is shared
            a.noise(1, [0, 3]), b.noise(1, [0, 3])
        one_by_one = [b.noise(t, coord) if k > 1 else b.noise(t) for t in times]
        batch = [a.noise(t, coord) if k > 1 else a.noise(t) for t in times[:split]]
        batch += a.noise_steps(times[split:], coord).tolist()
        assert batch == one_by_one
        np.testing.assert_array_equal(a.noise(T, [0, coord or 0]), b.noise(T, [0, coord or 0]))


def test_the_written_out_steps_are_algorithm_1_with_hooks():
    """FastGaMe's scalar query and walk equal the generic walk (_start/_bridge/_tail_one) on the same normals.

    A one-trial TrialRNG over a Generator reads that Generator's normals in order, one per
    draw, and takes the generic walk; a seed Generator is read in blocks by index.
    """
    times = [1, 2, 5, 129, 137, 161, 162, 162, 300, 513, 600, 1000, 1023, 1024]
    generic = FastGaMe(1024, 0.5, seed=TrialRNG([np.random.default_rng(7)], [(0, 1)], 1, False))
    queries, walk = FastGaMe(1024, 0.5, seed=np.random.default_rng(7)), FastGaMe(1024, 0.5, seed=7)
    expected = [generic.noise(t) for t in times]
    assert [queries.noise(t) for t in times] == expected
    assert walk.noise_steps(times).tolist() == expected


def test_noise_steps_of_the_laplace_tree_and_errors():
    lap, ref = LaplaceFastGaMe(2**20, 1.0, k=3, seed=1), LaplaceFastGaMe(2**20, 1.0, k=3, seed=1)
    times = [3, 3, 17, 2**19, 2**20]
    assert lap.noise_steps(times, 1).tolist() == [ref.noise(t, 1) for t in times]
    fg = FastGaMe(64, 1.0, k=3, seed=0)
    fg.noise_steps([5, 9], 0)
    with pytest.raises(ParameterError, match="before the last query"):
        fg.noise_steps([8, 10], 0)
    assert fg.prefix_sums(0)[-1] == fg.noise(9, 0)  # nothing drawn by the refused call
    with pytest.raises(ParameterError, match="non-decreasing"):
        fg.noise_steps([10, 9], 1)
    with pytest.raises(ParameterError, match="coord is required"):
        fg.noise_steps([10])
    with pytest.raises(ParameterError, match="one int"):
        fg.noise_steps([10], [1, 2])
    with pytest.raises(InputError, match="times"):
        fg.noise_steps([0, 3], 1)
    with pytest.raises(InputError, match="coord"):
        fg.noise_steps([3], 3)
    assert fg.noise_steps([], 2).shape == (0,)
    assert fg.n_materialized == 1
