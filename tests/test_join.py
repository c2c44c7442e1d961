"""Tests for continual private join size estimation (Pagh & Sejer 2026, section 5, Theorem 5.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.errors import InputError, ParameterError
from privsim.mechanisms.join import JoinSizeEstimator
from privsim.mechanisms.sketch import CountSketch


def _relations(seed: int, n_keys: int, high: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = rng.choice(1 << 40, size=n_keys, replace=False).astype(np.int64)
    x = rng.integers(0, high, size=n_keys)
    y = rng.integers(0, high, size=n_keys)
    return keys, x, y


def _stream(
    keys: np.ndarray, x: np.ndarray, y: np.ndarray, steps: int, seed: int
) -> list[tuple[str, np.ndarray]]:
    """Unit insertions of the tuples of R and S, shuffled into ``steps`` update batches."""
    tuples = [("R", k) for k, c in zip(keys, x, strict=True) for _ in range(c)]
    tuples += [("S", k) for k, c in zip(keys, y, strict=True) for _ in range(c)]
    order = np.random.default_rng(seed).permutation(len(tuples))
    batches = []
    for part in np.array_split(order, steps // 2):
        for relation in ("R", "S"):
            batch = np.array([tuples[i][1] for i in part if tuples[i][0] == relation], dtype=np.int64)
            batches.append((relation, batch))
    return batches


def _exact_row_variance(
    x: np.ndarray, y: np.ndarray, width: int, sigma2: float
) -> tuple[float, float, float]:
    """The three terms of Var Z_i (Lemma 5.2): CountSketch, sketch-noise, noise-noise."""
    x, y = x.astype(float), y.astype(float)
    sketch = (x @ x * (y @ y) + (x @ y) ** 2 - 2 * np.sum(x**2 * y**2)) / width
    return sketch, sigma2 * (x @ x + y @ y), width * sigma2**2


def _rho_for(rows: int, T: int, sigma2: float) -> float:
    """rho giving released counter variance sigma2 = (h + 1) k (h + 2) / (8 rho) (Theorem 5.6)."""
    h = int(math.log2(T))
    return rows * (h + 2) * (h + 1) / (8 * sigma2)


@pytest.mark.parametrize(
    ("name", "n_keys", "high", "width", "sigma2"),
    [
        ("sketch term dominates", 60, 8, 16, 0.5),
        ("sketch-noise term dominates", 60, 12, 128, 25.0),
        ("noise-noise term dominates", 8, 3, 64, 20.0),
    ],
)
def test_single_row_variance_is_the_three_terms(
    name: str, n_keys: int, high: int, width: int, sigma2: float
) -> None:
    """Each row estimate at the final step: unbiased, Var = the three terms exactly.

    Counters were refreshed at different steps; at any step they are independent with
    variance (log2 T + 1) sigma_node^2 (proof of Theorem 5.6), the sigma^2 used here.
    """
    rows, T = 4_001, 16
    keys, x, y = _relations(70 + n_keys, n_keys, high)
    js = JoinSizeEstimator(T, rows, width, rho=_rho_for(rows, T, sigma2), seed=71)
    assert math.isclose(js.sigma2, sigma2)
    for relation, batch in _stream(keys, x, y, T, seed=72):
        js.update(relation, batch)
    terms = _exact_row_variance(x, y, width, sigma2)
    variance = sum(terms)
    errors = js.row_estimates() - float(x @ y)
    assert abs(errors.mean()) < 5 * math.sqrt(variance / rows), name
    sq = errors**2
    tol = 5 * sq.std(ddof=1) / math.sqrt(rows)
    assert abs(sq.mean() - variance) < tol, (name, sq.mean(), variance, tol)
    assert max(terms) == terms[["sketch", "sketch-noise", "noise-noise"].index(name.split(" term")[0])]
    assert tol < max(terms) / 2  # the dominant term is pinned down to a factor of two


def test_error_within_lemma_5_2_bound() -> None:
    """Lemma 5.5's explicit bound: P[|J~ - J| > Delta] <= eta, for k = 3 and b >= 8 eta^(-2/(k+1))."""
    k, eta, width, T = 3, 0.05, 64, 16
    c_eta = eta ** (-2 / (k + 1))
    assert width >= 8 * c_eta
    keys, x, y = _relations(80, 40, 6)
    xf, yf = x.astype(float), y.astype(float)
    groups = 1_001
    sigma2 = 4.0
    js = JoinSizeEstimator(T, k * groups, width, rho=_rho_for(k * groups, T, sigma2), seed=81)
    for relation, batch in _stream(keys, x, y, T, seed=82):
        js.update(relation, batch)
    medians = np.median(js.row_estimates().reshape(groups, k), axis=1)  # 1001 estimators, k = 3
    l2x, l2y = math.sqrt(xf @ xf), math.sqrt(yf @ yf)
    sketch_term = min(
        math.sqrt(64 / (width * eta ** (2 / (k + 1)))) * l2x * l2y,
        32 / (width * eta ** (2 / (k + 1))) * xf.sum() * yf.sum(),
    )
    sigma = math.sqrt(sigma2)
    privacy_term = 3 * sigma * (l2x + l2y + 5 * sigma * math.sqrt(width)) * math.sqrt(math.log(32 * c_eta))
    delta = sketch_term + privacy_term
    failures = np.mean(np.abs(medians - float(xf @ yf)) > delta)
    assert failures <= eta + 5 * math.sqrt(eta * (1 - eta) / groups), (failures, delta)


def test_incremental_estimates_equal_recomputed_sketches() -> None:
    """With negligible noise every step's row estimates are the exact CountSketch inner products."""
    rows, width, T = 5, 32, 32
    js = JoinSizeEstimator(T, rows, width, rho=1e14, seed=90)
    x_cs = CountSketch(rows, width, hashes=js.hashes)
    y_cs = CountSketch(rows, width, hashes=js.hashes)
    rng = np.random.default_rng(91)
    assert js.estimate() == 0.0 and js.t == 0
    for step in range(T):
        relation = "R" if step % 2 == 0 else "S"
        keys = rng.integers(0, 20, size=rng.integers(1, 6))
        deltas = rng.choice([-1.0, 1.0, 0.5], size=keys.size)
        js.update(relation, keys, deltas)
        (x_cs if relation == "R" else y_cs).update(keys, deltas)
        assert np.allclose(js.row_estimates(), x_cs.row_inner(y_cs), atol=1e-3)
        assert js.estimate() == float(np.median(js.row_estimates()))
    assert js.t == T
    with pytest.raises(ParameterError, match="T"):
        js.update("R", [1])


def test_calibration_matches_theorem_5_6() -> None:
    for T in (2, 16, 1 << 20):
        h = int(math.log2(T))
        js = JoinSizeEstimator(T, rows=5, width=8, rho=0.25, seed=0)
        assert math.isclose(js.sigma2_node, 5 * (h + 2) / (8 * 0.25))
        assert math.isclose(js.sigma2, (h + 1) * js.sigma2_node)
        assert js.sigma2 < 5 * (h + 2) ** 2 / (8 * 0.25)  # below sigma_co^2
        assert js.words == 2 * 5 * 8 * (h + 5)


def test_lazy_update_touches_only_k_counters() -> None:
    """refresh="touched" (the paper's lazy refresh): after the first step (which releases all
    k b counters once), a step costs O(k): only the touched counters are refreshed, so their
    released values change and no other does."""
    js = JoinSizeEstimator(64, rows=3, width=1024, rho=1.0, seed=5, refresh="touched")
    js.update("R", [1])
    before = js._noisy.copy()
    js.update("S", [7])
    changed = np.flatnonzero((js._noisy != before).ravel())
    assert changed.size == 3 and np.all(changed >= 3 * 1024)  # one counter per row of S


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"rows": 4}, "rows"),
        ({"rows": 0}, "rows"),
        ({"width": 0}, "width"),
        ({"rho": -1.0}, "rho"),
        ({"T": 12}, "T"),
        ({"T": 1}, "T"),
        ({"seed": "x"}, "seed"),
    ],
)
def test_bad_parameters(kwargs: dict, field: str) -> None:
    args = {"T": 16, "rows": 3, "width": 8, "rho": 1.0} | kwargs
    with pytest.raises(ParameterError, match=field):
        JoinSizeEstimator(**args)


def test_bad_inputs() -> None:
    js = JoinSizeEstimator(16, 3, 8, 1.0, seed=0)
    with pytest.raises(ParameterError, match="relation"):
        js.update("T", [1])
    with pytest.raises(InputError, match="deltas"):
        js.update("R", [1], 2.0)
    with pytest.raises(InputError, match="keys"):
        js.update("S", [1.5])
    assert js.t == 0  # refused updates take no step
