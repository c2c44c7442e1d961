"""Tests for private orthogonal range counting (Pagh & Sejer 2026, section 4, Theorems D.2 and 4.3)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsim.errors import InputError, ParameterError
from privsim.mechanisms.range_counting import RangeCounter, dyadic_boxes, dyadic_intervals

B = 1 << 10


def _truth(points: np.ndarray, lo: list[int], hi: list[int]) -> int:
    inside = np.all((points >= np.array(lo)) & (points < np.array(hi)), axis=1)
    return int(inside.sum())


def _single_row_variance(
    points: np.ndarray, lo: list[int], hi: list[int], B: int, width: int, cell_variance: float
) -> float:
    """Exact variance of one row's range answer (expectation over hashes and noise).

    For component c with query boxes Q_c and box-count vector y_c, 2-wise buckets and
    4-wise signs give E err_c^2 = (|Q_c| ||y_c||^2 + (sum_{Q_c} y)^2 - 2 sum_{Q_c} y^2) / b,
    the noise adds cell_variance per box (signs make distinct boxes uncorrelated), and
    components are independent.
    """
    levels, indices = dyadic_boxes(lo, hi, B)
    d = points.shape[1]
    weights = B ** np.arange(d)
    total = 0.0
    for level in {tuple(v) for v in levels.tolist()}:
        mine = np.all(levels == np.array(level), axis=1)
        query_keys = indices[mine] @ weights
        point_keys = (points >> np.array(level)) @ weights
        keys, counts = np.unique(point_keys, return_counts=True)
        y = dict(zip(keys.tolist(), counts.tolist(), strict=True))
        in_q = np.array([y.get(k, 0) for k in query_keys.tolist()], dtype=np.float64)
        norm2 = float(np.sum(counts.astype(np.float64) ** 2))
        total += (query_keys.size * norm2 + in_q.sum() ** 2 - 2 * np.sum(in_q**2)) / width
    return total + cell_variance * levels.shape[0]


# -- dyadic decomposition -----------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(data=st.data(), L=st.integers(min_value=1, max_value=12))
def test_dyadic_intervals_partition_the_range(data, L: int) -> None:  # type: ignore[no-untyped-def]
    size = 1 << L
    lo = data.draw(st.integers(0, size))
    hi = data.draw(st.integers(lo, size))
    parts = dyadic_intervals(lo, hi, size)
    covered = []
    for level, index in parts:
        assert 0 <= level <= L - 1  # no full-domain level (section 4.1: k in 0..log2 B - 1)
        covered.extend(range(index << level, (index + 1) << level))
    assert covered == list(range(lo, hi))  # disjoint, in order, exactly [lo, hi)
    per_level = np.bincount([lv for lv, _ in parts], minlength=L)
    assert per_level.max(initial=0) <= 2 and len(parts) <= 2 * L


def test_dyadic_intervals_examples() -> None:
    assert dyadic_intervals(0, 1024, 1024) == [(9, 0), (9, 1)]
    assert dyadic_intervals(5, 5, 8) == []
    assert len(dyadic_intervals(1, 1023, 1024)) == 2 * 10 - 2  # the worst case
    with pytest.raises(InputError, match="lo"):
        dyadic_intervals(5, 4, 8)
    with pytest.raises(ParameterError, match="hi"):
        dyadic_intervals(0, 9, 8)


@pytest.mark.parametrize("d", [2, 3])
def test_dyadic_boxes_cover_each_cell_once(d: int) -> None:
    side, rng = 16, np.random.default_rng(d)
    for _ in range(20):
        lo = rng.integers(0, side, size=d)
        hi = np.array([rng.integers(a, side + 1) for a in lo])
        levels, indices = dyadic_boxes(lo, hi, side)
        assert levels.shape[0] <= (2 * 4) ** d
        for level in {tuple(v) for v in levels.tolist()}:  # at most 2^d boxes per component
            assert np.sum(np.all(levels == np.array(level), axis=1)) <= 2**d
        cover = np.zeros((side,) * d, dtype=int)
        for lv, ix in zip(levels.tolist(), indices.tolist(), strict=True):
            cover[tuple(slice(i << k, (i + 1) << k) for k, i in zip(lv, ix, strict=True))] += 1
        want = np.zeros_like(cover)
        want[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))] = 1
        assert np.array_equal(cover, want)


# -- answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "side", "width"), [(1, B, 8192), (2, B, 8192), (3, 64, 4096)])
def test_answers_exact_without_collisions_or_noise(d: int, side: int, width: int) -> None:
    """A query box collides with one of the n point boxes of its component with chance
    <= n / b per row; with 5 rows a median is off only if 3 rows collide (~10 (n/b)^3)."""
    rng = np.random.default_rng(10 + d)
    points = rng.integers(0, side, size=(30, d))
    rc = RangeCounter(side, d, rows=5, width=width, rho=1e12, seed=d)
    rc.update(points)
    for _ in range(30):
        lo = rng.integers(0, side, size=d)
        hi = np.array([rng.integers(a, side + 1) for a in lo])
        assert abs(rc.query(lo, hi) - _truth(points, lo.tolist(), hi.tolist())) < 1e-3


def test_deletions_and_fractional_deltas() -> None:
    rc = RangeCounter(64, 2, rows=5, width=512, rho=1e12, seed=0)
    rc.update([[1, 2], [3, 4], [60, 60]])
    rc.update([[3, 4]], -1)
    rc.update([[10, 10], [11, 11]], [0.5, -0.25])
    assert abs(rc.query([0, 0], [64, 64]) - 2.25) < 1e-3
    assert abs(rc.query([0, 0], [32, 32]) - 1.25) < 1e-3


@pytest.mark.parametrize(("d", "trials"), [(1, 400), (2, 400), (3, 300)])
def test_range_answers_unbiased_at_B_1024(d: int, trials: int) -> None:
    """Median-of-3 box estimates summed over the decomposition are unbiased (section 4.1).

    Small width makes collisions frequent, so a sign or decomposition bias would show.
    """
    rng = np.random.default_rng(20 + d)
    points = rng.integers(200, 800, size=(20, d))
    lo, hi = [5, 100, 0][:d], [700, 900, 1000][:d]
    truth = _truth(points, lo, hi)
    answers = np.empty(trials)
    for i in range(trials):
        rc = RangeCounter(B, d, rows=3, width=8, rho=1e3, seed=1000 * d + i)
        rc.update(points)
        answers[i] = rc.query(lo, hi)
    se = answers.std(ddof=1) / math.sqrt(trials)
    assert abs(answers.mean() - truth) < 5 * se, (answers.mean(), truth, se)


@pytest.mark.parametrize(
    ("d", "rows", "T"),
    [(1, 10_001, None), (2, 1_001, None), (1, 10_001, 8), (2, 1_001, 8)],
)
def test_single_row_answer_variance_exact(d: int, rows: int, T: int | None) -> None:
    """Var of one row's answer = collision terms + cell_variance * |decomposition|, exactly.

    Dynamic: cell_variance = (log2 T + 1) s_node^2 with s_node^2 = r L^d (log2 T + 2)/(8 rho).
    The noise part is set comparable to the collision part, so the 5-sigma tolerance
    separates it from twice or half of it.
    """
    rng = np.random.default_rng(30 + d)
    points = rng.integers(200, 800, size=(30, d))
    lo, hi = [5, 100][:d], [700, 900][:d]
    width = 8
    collisions = _single_row_variance(points, lo, hi, B, width, 0.0)
    boxes = dyadic_boxes(lo, hi, B)[0].shape[0]
    L = 10
    target = collisions / boxes  # per-cell noise variance that equals the collision part
    if T is None:
        rho = rows * L**d / (2 * target)  # Theorem D.2: s^2 = r L^d / (2 rho)
    else:
        h = int(math.log2(T))
        rho = rows * L**d * (h + 2) * (h + 1) / (8 * target)  # Theorem 4.3 via section 2
    rc = RangeCounter(B, d, rows=rows, width=width, rho=rho, T=T, seed=40 + d)
    assert math.isclose(rc.cell_variance, target)
    for chunk in np.array_split(points, 4 if T else 1):  # dynamic: 4 update steps
        rc.update(chunk)
    errors = rc.row_answers(lo, hi) - _truth(points, lo, hi)
    variance = collisions + rc.cell_variance * boxes
    se_mean = math.sqrt(variance / rows)
    assert abs(errors.mean()) < 5 * se_mean
    sq = errors**2
    tol = 5 * sq.std(ddof=1) / math.sqrt(rows)
    assert abs(sq.mean() - variance) < tol, (sq.mean(), variance, tol)
    assert tol < rc.cell_variance * boxes / 2


def test_error_and_space_against_theorem_d2() -> None:
    """Theorem D.2's parameters: t = ceil(tau) rows (odd), b = ceil(n / sigma), sigma^2 = t L^d / (2 rho).

    Lemma D.3's proof bounds the answer's second moment by sum_i q_i sum_j E Z_ij^2 with
    E Z_ij^2 = O(sigma^2) for b = O(n / sigma); with constant 1, sigma^2 * sum_i q_i^2
    (q_i = boxes of the query in component i). We check the measured mean squared error
    against it, the 1 - beta error quantile against the theorem's error E (constants 1),
    and the space t b L^d against O(d n L^d tau / E + 1).
    """
    d, n, rho, beta, L = 2, 200, 1.0, 0.1, 10
    tau = math.log(d / beta) + d * math.log(math.log(B))
    t = math.ceil(tau) | 1  # odd, as the medians want
    sigma2 = t * L**d / (2 * rho)
    width = math.ceil(n / math.sqrt(sigma2))
    rng = np.random.default_rng(50)
    points = rng.integers(0, B, size=(n, d))
    queries = []
    for _ in range(10):
        lo = rng.integers(0, B // 2, size=d)
        queries.append((lo.tolist(), (lo + rng.integers(1, B // 2, size=d)).tolist()))
    errors = []
    for trial in range(60):
        rc = RangeCounter(B, d, rows=t, width=width, rho=rho, seed=500 + trial)
        assert math.isclose(rc.sigma2, sigma2)
        rc.update(points)
        errors += [rc.query(lo, hi) - _truth(points, lo, hi) for lo, hi in queries]
    err = np.array(errors).reshape(60, len(queries))
    for j, (lo, hi) in enumerate(queries):
        levels = dyadic_boxes(lo, hi, B)[0]
        q = np.unique(levels, axis=0, return_counts=True)[1]
        bound = sigma2 * float(np.sum(q.astype(float) ** 2))
        sq = err[:, j] ** 2
        assert sq.mean() - 5 * sq.std(ddof=1) / math.sqrt(sq.size) <= bound, (j, sq.mean(), bound)
    E = math.sqrt(d) * tau * L ** (d + 1 + math.log(4 / beta, B)) / math.sqrt(rho)
    assert np.quantile(np.abs(err), 1 - beta) <= E
    assert rc.words == L**d * t * width
    assert rc.words <= L**d * t * (1 + n / math.sqrt(sigma2) + 1)  # b = O(1 + n / sigma)


def test_dynamic_noise_and_space_grow_by_the_tree_factor() -> None:
    """Theorem 4.3: node variance s^2 (h+2)/4, released variance s^2 (h+1)(h+2)/4, space x (h+4)."""
    static = RangeCounter(B, 2, rows=3, width=16, rho=0.5, seed=0)
    for T in (2, 8, 1024):
        h = int(math.log2(T))
        dyn = RangeCounter(B, 2, rows=3, width=16, rho=0.5, T=T, seed=0)
        assert math.isclose(dyn.sigma2, 3 * 100 * (h + 2) / (8 * 0.5))
        assert math.isclose(dyn.sigma2, static.sigma2 * (h + 2) / 4)
        assert math.isclose(dyn.cell_variance, static.cell_variance * (h + 1) * (h + 2) / 4)
        assert dyn.words == static.words * (h + 4)


def test_continual_queries_track_the_data() -> None:
    rng = np.random.default_rng(60)
    rc = RangeCounter(256, 2, rows=5, width=512, rho=1e9, T=16, seed=61)
    assert rc.query([0, 0], [256, 256]) == 0.0  # before any update: reveals nothing
    live = np.zeros((0, 2), dtype=np.int64)
    for step in range(16):
        batch = rng.integers(0, 256, size=(5, 2))
        rc.update(batch)
        live = np.vstack([live, batch])
        if step % 3 == 0 and live.shape[0] > 3:  # delete the oldest point
            rc.update(live[:1], -1.0)
            live = live[1:]
        if rc.t == rc.T:
            break
        first = rc.query([0, 0], [128, 200])
        assert first == rc.query([0, 0], [128, 200])  # same step, same noise
        assert abs(first - _truth(live, [0, 0], [128, 200])) < 0.05
    with pytest.raises(ParameterError, match="T"):
        rc.update([[1, 1]])


def test_static_refuses_updates_after_release() -> None:
    rc = RangeCounter(16, 1, rows=3, width=8, rho=1.0, seed=0)
    rc.update([1, 2, 3])
    rc.query(0, 0)  # an empty box releases nothing
    rc.update([4])
    first = rc.query(0, 8)
    assert first == rc.query(0, 8)
    with pytest.raises(ParameterError, match="T"):
        rc.update([5])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"B": 1000}, "B"),
        ({"B": 1}, "B"),
        ({"B": 2**21, "d": 3}, "B"),
        ({"d": 0}, "d"),
        ({"rows": 0}, "rows"),
        ({"width": 0}, "width"),
        ({"rho": 0.0}, "rho"),
        ({"T": 100}, "T"),
        ({"T": 1}, "T"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_parameters(kwargs: dict, field: str) -> None:
    args = {"B": 16, "d": 2, "rows": 3, "width": 8, "rho": 1.0} | kwargs
    with pytest.raises(ParameterError, match=field):
        RangeCounter(**args)


def test_bad_inputs() -> None:
    rc = RangeCounter(16, 2, rows=3, width=8, rho=1.0, seed=0)
    with pytest.raises(InputError, match="points"):
        rc.update([[16, 0]])
    with pytest.raises(InputError, match="points"):
        rc.update([[1, 2, 3]])
    with pytest.raises(InputError, match="deltas"):
        rc.update([[1, 2]], 2.0)
    with pytest.raises(InputError, match="lo"):
        rc.query([3, 0], [2, 16])
    with pytest.raises(InputError, match="lo and hi"):
        rc.query([0], [16])
    with pytest.raises(ParameterError, match="hi"):
        rc.query([0, 0], [17, 16])


def test_single_points_and_shapes() -> None:
    rc = RangeCounter(16, 3, rows=3, width=64, rho=1e12, seed=1)
    rc.update([1, 2, 3])  # one point in d = 3
    assert abs(rc.query([0, 0, 0], [2, 3, 4]) - 1) < 1e-3
    assert rc.components == 4**3 and rc.max_boxes == 8**3 and rc.levels == 4
    for lo, hi in itertools.product([0, 1], [15, 16]):
        assert abs(rc.query([lo] * 3, [hi] * 3) - 1) < 1e-3
