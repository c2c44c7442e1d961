"""GaussianTree: the reference binary tree mechanism (Pagh & Sejer 2026, section 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsim.errors import InputError, ParameterError
from privsim.mechanisms.tree import (
    GaussianTree,
    common_prefix_length,
    tree_covariance,
    tree_height,
)


@settings(max_examples=60, deadline=None)
@given(h=st.integers(0, 20), data=st.data())
def test_noise_is_the_sum_of_the_node_noises_on_the_path(h, data):
    T = 1 << h
    tree = GaussianTree(T, 0.5, k=3, seed=data.draw(st.integers(0, 99)))
    t = data.draw(st.integers(1, T))
    coord = data.draw(st.integers(0, 2))
    nu = tree.noise(t, coord)
    leaf = t - 1
    path = [tree.node_noise(coord, j, leaf >> (h - j)) for j in range(h + 1)]
    assert math.isclose(nu, sum(path), rel_tol=1e-12, abs_tol=1e-12)
    assert tree.n_nodes == h + 1  # node_noise only read nodes the query had drawn


def test_nodes_are_drawn_lazily_and_shared_by_common_prefixes():
    tree = GaussianTree(2**40, 1.0, seed=1)
    tree.noise(1)
    assert tree.n_nodes == 41
    t2 = 2**39 + 1  # leaf 100...0: shares only the root with leaf 0
    tree.noise(t2)
    assert common_prefix_length(1, t2, 40) == 0 and tree.n_nodes == 41 + 40
    tree.noise(2)  # leaf 0...01: shares 40 levels with leaf 0
    assert tree.n_nodes == 81 + 1
    assert tree.n_materialized == 1


def test_queries_in_any_order_and_repeated():
    tree = GaussianTree(16, 1.0, k=4, seed=2)
    late = tree.noise(16, [0, 1, 2, 3])
    early = tree.noise(3, [3, 2])
    np.testing.assert_array_equal(tree.noise(16, [1, 1]), late[[1, 1]])
    assert tree.noise(3, 2) == early[1]


def test_tree_covariance_hand_example_and_theorem_3_1():
    # T = 4: leaves 00, 01, 10, 11
    np.testing.assert_array_equal(
        tree_covariance([1, 2, 3, 4], 4, 2.0),
        2.0 * np.array([[3, 2, 1, 1], [2, 3, 1, 1], [1, 1, 3, 2], [1, 1, 2, 3]]))
    assert common_prefix_length(19, 24, 5) == 2  # Figure 3: 10010 vs 10111


def test_empirical_covariance_of_the_reference_tree():
    # 20,000 independent coordinates; zero-mean covariance estimates have standard error
    # sqrt((C_ii C_jj + C_ij^2) / N): 5 of them is the tolerance.
    T, s2, n = 32, 1.5, 20_000
    times = [1, 2, 8, 16, 17, 32]
    tree = GaussianTree(T, s2, k=n, seed=3)
    X = np.column_stack([tree.noise(t, np.arange(n)) for t in times])
    C = tree_covariance(times, T, s2)
    assert np.allclose(np.diag(C), 6 * s2)  # (h + 1) s^2
    d = np.diag(C)
    se = np.sqrt((d[:, None] * d[None, :] + C**2) / n)
    assert np.abs((X.T @ X / n - C) / se).max() < 5
    assert tree.n_nodes == n * 23  # 6 + 1 + 3 + 4 + 5 + 4 new nodes per coordinate


def test_scalar_for_k_1_and_arrays_otherwise():
    assert isinstance(GaussianTree(8, 1.0, seed=0).noise(1), float)
    tree = GaussianTree(8, 1.0, k=5, seed=0)
    assert tree.noise(1).shape == (5,)
    assert tree.noise(1, np.array([[0, 1], [2, 3]])).shape == (2, 2)
    assert tree.noise(1, np.array([], dtype=int)).shape == (0,)
    assert isinstance(tree.noise(1, 4), float)


def test_tree_height_refuses_non_powers_of_two():
    assert [tree_height(2**h) for h in (0, 1, 10, 62)] == [0, 1, 10, 62]
    with pytest.raises(ParameterError) as err:
        GaussianTree(12, 1.0)
    message = str(err.value)
    assert "\n" not in message and message.startswith("T must be a power of two")
    assert "got 12" in message
    for bad in (0, 3, -4, 2**63, 4.0, "8", None):
        with pytest.raises(ParameterError, match="T must be a power of two"):
            tree_height(bad)
    with pytest.raises(ParameterError, match="2, 4, 8"):
        tree_height(1, minimum=2)


def test_other_parameters_are_checked():
    with pytest.raises(ParameterError, match="sigma2"):
        GaussianTree(8, -1.0)
    with pytest.raises(ParameterError, match="sigma2"):
        GaussianTree(8, float("nan"))
    with pytest.raises(ParameterError, match="k must be"):
        GaussianTree(8, 1.0, k=0)
    tree = GaussianTree(8, 1.0, k=2, seed=0)
    with pytest.raises(ParameterError, match="t must be"):
        tree.noise(0)
    with pytest.raises(InputError, match="coords"):
        tree.noise(1, [2])
    with pytest.raises(ParameterError, match="level"):
        tree.node_noise(0, 4, 0)
    with pytest.raises(ParameterError, match="seed"):
        GaussianTree(8, 1.0, seed=1.5)


def test_seeds_reproduce():
    a = GaussianTree(64, 1.0, k=3, seed=4).noise(9)
    np.testing.assert_array_equal(a, GaussianTree(64, 1.0, k=3, seed=4).noise(9))
    np.testing.assert_array_equal(
        a, GaussianTree(64, 1.0, k=3, seed=np.random.SeedSequence(4)).noise(9))
