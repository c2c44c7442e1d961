"""The continual noise kinds (privsim.mechanisms.continual_kinds) against brute force.

Each kind's two sensitivities are recomputed from its strategy matrix (the tree's R of
appendix B, BLT's Toeplitz C) by enumerating the vertices of the box of streams, and the
calibration and privacy map are checked against the formulas the papers state: a
factor of two anywhere in event, stream, scale or loss fails one of these.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.linalg import toeplitz
from test_continual_counter import _strategy_matrices

from privsim.errors import ParameterError
from privsim.mechanisms.blt import optimize_blt
from privsim.mechanisms.calibration import tree_sensitivity2
from privsim.mechanisms.continual_kinds import (
    BLT,
    EXACT_TREE,
    LAPLACE_TREE,
    TREE,
    noise_kind,
    sketch_noise_kind,
)
from privsim.protocols.continual_sum import stream_rho


def _vertices(T: int) -> list[np.ndarray]:
    return [np.array(v) for v in itertools.product((-1.0, 1.0), repeat=T)]


@pytest.mark.parametrize("T", [2, 4, 8, 16])
def test_tree_sensitivities_are_the_strategy_matrix(T: int) -> None:
    h = T.bit_length() - 1
    _, R = _strategy_matrices(h)
    event2 = max(float(R[:, s] @ R[:, s]) for s in range(T))
    event1 = max(float(np.abs(R[:, s]).sum()) for s in range(T))
    stream2 = max(float(np.sum((R @ v) ** 2)) for v in _vertices(T))
    stream1 = max(float(np.abs(R @ v).sum()) for v in _vertices(T))
    assert TREE.event(T) == pytest.approx(event2)
    assert TREE.stream(T) == pytest.approx(stream2)
    assert LAPLACE_TREE.event(T) == pytest.approx(event1)
    assert LAPLACE_TREE.stream(T) >= stream1 - 1e-9  # the triangle inequality: an upper bound
    assert TREE.stream_loss(T, 0.7, change=1.5) == pytest.approx(stream_rho(0.7, T, change=1.5))


@pytest.mark.parametrize("T", [4, 8, 16])
def test_blt_sensitivities_are_its_toeplitz_matrix(T: int) -> None:
    params = optimize_blt(T)
    C = np.tril(toeplitz(params.c(T)))
    assert BLT.event(T) == pytest.approx(max(float(C[:, s] @ C[:, s]) for s in range(T)), rel=1e-9)
    worst = max(float(np.sum((C @ v) ** 2)) for v in _vertices(T))
    assert BLT.stream(T) == pytest.approx(worst, rel=1e-9)


@pytest.mark.parametrize("T", [16, 1024])
@pytest.mark.parametrize("budget", [0.25, 2.0])
def test_calibration_and_privacy_map_invert(T: int, budget: float) -> None:
    h = T.bit_length() - 1
    assert TREE.scale(T, budget) == pytest.approx((h + 2) / (8 * budget))  # the paper's node variance
    assert TREE.scale(T, budget, 3.0) == pytest.approx(9 * (h + 2) / (8 * budget))
    assert EXACT_TREE.scale(T, budget) == pytest.approx(tree_sensitivity2(h) / (2 * budget))
    assert LAPLACE_TREE.scale(T, budget) == pytest.approx((h + 2) / (2 * budget))  # l1 (h+2)/2 over epsilon
    assert LAPLACE_TREE.sigma2(2.0) == 8.0 and TREE.sigma2(2.0) == 2.0  # Var Laplace(b) = 2 b^2
    for kind in (TREE, EXACT_TREE, BLT, LAPLACE_TREE):
        scale = kind.scale(T, budget)
        assert kind.loss(T, scale) == pytest.approx(budget)
        assert kind.loss(T, kind.stream_scale(T, budget), stream=True) == pytest.approx(budget)
        # a source calibrated per event, judged towards a stream: budget * stream / event
        factor = 2.0 if kind.pure else 4.0
        assert kind.stream_loss(T, budget, change=2.0) == pytest.approx(
            factor * kind.loss(T, scale, stream=True), rel=1e-9)


def test_sampler_has_the_calibrated_variance() -> None:
    T, rho = 64, 0.5
    s2 = TREE.scale(T, rho)
    src = TREE.source(T, s2, seed=1)
    assert src.variance == pytest.approx(s2 * (math.log2(T) + 1))  # one node per level on the path to leaf T


def test_names_are_read_in_one_place() -> None:
    assert noise_kind("tree") is TREE and noise_kind("tree", "exact") is EXACT_TREE
    assert noise_kind("laplace-tree", "exact") is LAPLACE_TREE and sketch_noise_kind("blt") is BLT
    with pytest.raises(ParameterError, match="noise must be one of tree, blt, laplace-tree"):
        noise_kind("gauss")
    with pytest.raises(ParameterError, match="laplace-tree is not offered"):
        sketch_noise_kind("laplace-tree")
