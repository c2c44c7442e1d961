"""continual-sum: the tree's variance at every step, its covariance, determinism, counts, claims, errors."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from _fast_audit import fast_audit
from _sum_checks import assert_mean_and_variance, gaussian_total_moments
from test_continual_counter import _strategy_matrices

import privsim
from privsim.cli import main
from privsim.errors import InputError, ParameterError
from privsim.mechanisms.accounting import zcdp_to_approx_dp
from privsim.mechanisms.tree import FastGaMe, tree_covariance
from privsim.protocols import get_protocol
from privsim.protocols.continual_sum import MAX_T, ContinualSum, TreeNoise, check_horizon, stream_rho
from privsim.simulate import simulate_batches


def errors(proto: ContinualSum, res: privsim.SimulationResult) -> np.ndarray:
    """Per-trial, per-step error of the released series, shape (R, T)."""
    return res.outputs[privsim.CURATOR] - proto.true_series(res.inputs)


def assert_step_variances(err: np.ndarray, variance: float) -> None:
    """Every step's error: mean 0 (5 se) and variance ``variance`` (5 sd of s^2, Gaussian)."""
    for s in range(err.shape[1]):
        assert_mean_and_variance(err[:, s], variance, gaussian_total_moments(variance)[1])


def test_registered_and_contract_cli(capsys):
    assert type(get_protocol("continual-sum")) is ContinualSum
    with pytest.raises(SystemExit) as exc:
        main(["run", "--protocol", "continual-sum", "--n", "16", "--trials", "50", "--seed", "1",
              "--param", "T=64", "--param", "rho=1", "--json"])
        raise SystemExit(0)
    assert (exc.value.code or 0) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["messages"], d["rounds"], d["bits"]) == (16 * 64, 64, 16 * 64)
    # default inputs: party i sends 1 at the steps s with 3 | i + s
    assert d["true_value"] == ContinualSum(T=64).default_inputs(16).sum()
    sd = math.sqrt(7 * 8 / 8)  # (h + 1)(h + 2)/(8 rho), h = 6
    assert abs(d["estimate_mean"] - d["true_value"]) < 5 * sd / math.sqrt(50)


def test_error_at_every_step_has_the_tree_variance():
    # (h + 1)(h + 2)/(8 rho) = 7 * 8/(8 * 0.5) = 14 at T = 64; a factor 2 anywhere fails (5 sd is 11%).
    proto = ContinualSum(T=64, rho=0.5)
    assert proto.variance == pytest.approx(14.0)
    res = privsim.simulate(proto, n=5, trials=4000, seed=11, record=False)
    err = errors(proto, res)
    assert_step_variances(err, 14.0)
    np.testing.assert_array_equal(res.estimate, res.outputs["C"][:, -1])
    np.testing.assert_array_equal(res.true_value, proto.default_inputs(5).sum())


@pytest.mark.parametrize("params, variance", [
    ({"domain": "real", "sensitivity": 2.0, "rho": 2.0, "T": 16}, 5 * 6 * 4 / 16),  # Delta^2 (h+1)(h+2)/(8 rho)
    ({"level": "party", "rho": 8.0, "T": 8}, 4 * 64 / 32),  # (h + 1) Delta^2 T^2 / (4 rho)
])
def test_variance_scales_with_sensitivity_and_level(params, variance):
    proto = ContinualSum(**params)
    assert proto.variance == pytest.approx(variance)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, size=(3, proto.T)) if proto.domain == "real" else proto.default_inputs(3)
    res = privsim.simulate(proto, x, trials=4000, seed=12, record=False)
    assert_step_variances(errors(proto, res), variance)


def test_noise_has_the_tree_covariance_across_steps():
    # Independent N(0, (h+1) s^2) per step would pass the marginal test; the covariance
    # (m + 1) s^2 (Theorem 3.1) would not. Sample covariance: Var(S_ij) = (C_ii C_jj + C_ij^2)/R.
    proto, r = ContinualSum(T=16, rho=1.0), 6000
    res = privsim.simulate(proto, n=2, trials=r, seed=13, record=False)
    err = errors(proto, res)
    expected = tree_covariance(np.arange(1, 17), 16, proto.sigma2)
    got = np.cov(err, rowvar=False)
    tol = 5 * np.sqrt((np.outer(np.diag(expected), np.diag(expected)) + expected**2) / r)
    assert np.all(np.abs(got - expected) < tol), np.max(np.abs(got - expected) / tol)
    # and the law is not degenerate: steps 8 and 9 share only the root, steps 1 and 2 all but a leaf
    assert expected[7, 8] == proto.sigma2 and expected[0, 1] == 4 * proto.sigma2


def test_deprecated_tree_noise_is_fastgame_on_the_trial_axis():
    # One tree-noise implementation: the old TreeNoise class only forwards to FastGaMe.
    from privsim.parties.rng import StreamSeeder, block_range

    def rng():
        return StreamSeeder(1, 1, block_range(2)).rng(0, 2, record=False)

    with pytest.warns(DeprecationWarning, match="FastGaMe"):
        noise = TreeNoise(16, 1.0, rng())
    fast = FastGaMe(16, 1.0, k=2, seed=rng())
    np.testing.assert_array_equal(noise.step(1), fast.noise(1, np.arange(2)))
    with pytest.raises(ParameterError, match="next step 2"):
        noise.step(3)
    with pytest.raises(ParameterError, match="all 2 trials at once"):
        FastGaMe(16, 1.0, k=2, seed=rng()).noise(1, 0)


def test_deterministic_and_batch_invariant():
    proto = ContinualSum(T=8, rho=1.0)
    x = proto.default_inputs(3)
    whole = privsim.simulate(proto, x, trials=2100, seed=21, record=False)
    again = privsim.simulate(proto, x, trials=2100, seed=21, record=False)
    np.testing.assert_array_equal(whole.outputs["C"], again.outputs["C"])
    parts = list(simulate_batches(proto, x, trials=2100, seed=21, batch_trials=1024))
    assert [p.trials for p in parts] == [1024, 1024, 52]
    np.testing.assert_array_equal(np.concatenate([p.outputs["C"] for p in parts]), whole.outputs["C"])
    # seeding is per block of 1024 trials (batches are whole blocks): block 1 alone is the same
    block1 = privsim.simulate(proto, x, trials=1024, seed=21, record=False, block_offset=1)
    np.testing.assert_array_equal(block1.outputs["C"], whole.outputs["C"][1024:2048])
    other = privsim.simulate(proto, x, trials=2100, seed=22, record=False)
    assert not np.array_equal(other.outputs["C"], whole.outputs["C"])


@pytest.mark.parametrize("n, T", [(1, 2), (7, 16), (16, 64)])
def test_message_counts_and_schedule(n, T):
    proto = ContinualSum(T=T)
    res = privsim.simulate(proto, n=n, trials=3, seed=1)
    assert (res.messages, res.rounds, res.bits) == (n * T, T, n * T)
    assert res.schedule.messages == n * T
    real = privsim.simulate(ContinualSum(T=T, domain="real"), n=n, trials=3, seed=1)
    assert real.bits == 64 * n * T  # float64 updates


def test_broadcast_sends_every_release_back():
    proto = ContinualSum(T=8, broadcast=True)
    res = privsim.simulate(proto, n=4, trials=6, seed=2)
    assert (res.messages, res.rounds) == (2 * 4 * 8, 9)
    for i in range(4):
        np.testing.assert_array_equal(res.outputs[i], res.outputs["C"])
    view = res.view("0")
    assert {(s, d) for _, s, d, _ in view.messages} == {(0, "C"), ("C", 0)}


def test_privacy_claims():
    proto = ContinualSum(T=64, rho=1.0, delta=1e-6)
    assert proto.privacy(["C"], 8, 7) is None and proto.privacy([0, "C"], 8, 7) is None
    assert proto.privacy([0, 1], 8, 7) == privsim.Privacy(0.0)  # parties receive nothing
    party = privsim.Privacy(zcdp_to_approx_dp(1024.0, 1e-6), 1e-6)  # rho 2 T^2/(h + 2) = 1024
    assert proto.privacy([], 8, 7) == party
    assert ContinualSum(T=64, rho=1.0, broadcast=True).privacy([0, 1], 8, 7) == party
    assert proto.event_privacy() == privsim.Privacy(zcdp_to_approx_dp(1.0, 1e-6), 1e-6)
    user = ContinualSum(T=64, rho=1.0, level="party")
    assert user.privacy([], 8, 7) == privsim.Privacy(zcdp_to_approx_dp(1.0, 1e-6), 1e-6)
    assert user.rho_event == pytest.approx(8 / (2 * 64**2))
    assert user.sigma2 == pytest.approx(stream_rho(1.0, 64) * ContinualSum(T=64, rho=1.0).sigma2)


@pytest.mark.parametrize("T", [2, 4, 8, 16])
def test_stream_rho_is_the_exact_factorization_bound(T):
    h = T.bit_length() - 1
    L, R = _strategy_matrices(h)  # appendix B's L and R, shared with the counter's tests
    np.testing.assert_allclose(L @ R, np.tril(np.ones((T, T))))  # LR = prefix sums
    event = max(float(R[:, s] @ R[:, s]) for s in range(T))
    assert event == pytest.approx((h + 2) / 4)
    # max over the box |v_s| <= 1 of ||R v||^2 (a convex function: the max is at a vertex)
    worst = max(float(np.sum((R @ np.array(v)) ** 2)) for v in itertools.product((-1.0, 1.0), repeat=T))
    assert worst == pytest.approx(T * T / 2)
    assert stream_rho(1.0, T) == pytest.approx(worst / event)
    assert stream_rho(1.0, T, change=2.0) == pytest.approx(4 * worst / event)


@pytest.mark.parametrize("params, match", [
    ({"T": 48}, r"T must be a power of two in 2, 4, 8, \.\.\., 65536 \(got 48\)"),
    ({"T": 1}, r"T must be a power of two in 2, 4, .*\(got 1\)"),
    ({"T": 0}, r"T must be a power of two .*\(got 0\)"),
    ({"T": 2 * MAX_T}, r"T must be a power of two .*\(got 131072\)"),
    ({"T": "abc"}, r"T must be .*int"),
    ({"rho": 0}, r"rho must be > 0"),
    ({"level": "user"}, r"level must be one of event, party"),
    ({"sensitivity": 0.5}, r"sensitivity must be >= 1 with domain=bits"),
    ({"delta": 1.5}, r"delta must be < 1"),
])
def test_bad_parameters(params, match):
    with pytest.raises(ParameterError, match=match):
        ContinualSum(**params)


def test_check_horizon():
    assert [check_horizon(2**k) for k in (1, 5, 16)] == [1, 5, 16]
    with pytest.raises(ParameterError):
        check_horizon(True)


def test_bad_inputs():
    with pytest.raises(InputError, match=r"party 1 has 2.0 at step 3, outside the domain \{0, 1\}"):
        privsim.simulate(ContinualSum(T=4), [[0, 1, 0, 1], [0, 0, 2, 0]], trials=2, seed=1)
    with pytest.raises(InputError, match=r"party 0 has 1.5 at step 2, outside the domain \[-1, 1\]"):
        privsim.simulate(ContinualSum(T=4, domain="real"), [[0, 1.5, 0, 0]], trials=2, seed=1)
    with pytest.raises(InputError, match="shape"):
        privsim.simulate(ContinualSum(T=4), [[0, 1, 0]], trials=2, seed=1)


def test_cli_bad_T_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--protocol", "continual-sum", "--n", "4", "--trials", "5", "--param", "T=100", "--json"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.strip().count("\n") == 0 and "T must be a power of two" in err and "(got 100)" in err


@pytest.mark.parametrize("level", ["party", "event"])
def test_audit_of_the_releases_stays_below_the_claim(level):
    # A party sees the releases (broadcast); the audit's neighbour flips party 1's whole bit stream,
    # the party-level relation the claim is stated for.

    proto = ContinualSum(T=4, rho=0.5, level=level, broadcast=True)
    res = fast_audit(proto, proto.default_inputs(2), coalition="0", neighbor=1, trials=40_000, seed=1)
    assert res.epsilon_claimed == pytest.approx(zcdp_to_approx_dp(proto.rho_party, proto.delta))
    assert not res.violated and res.epsilon_lower > 0.3


def test_run_trials_reports_the_per_step_error_against_the_tree_variance():
    import math

    from privsim.simulate import run_trials

    proto = ContinualSum(T=32, rho=1.0)
    trials = 4096
    res = run_trials(proto, proto.default_inputs(6), trials=trials, seed=3, batch_trials=1024)
    assert res.series_error_std.shape == (32,) and res.series_example[0].shape == (32,)
    sd = math.sqrt(proto.variance)  # sqrt((h+1)(h+2)/(8 rho)) with h = 5
    assert sd == pytest.approx(math.sqrt(6 * 7 / 8))
    # each step's sample sd is within 5 sigma of sd (sigma of a sample sd: sd / sqrt(2(R-1)))
    assert np.all(np.abs(res.series_error_std - sd) < 5 * sd / math.sqrt(2 * (trials - 1)))
    assert np.all(np.abs(res.series_error_mean) < 5 * sd / math.sqrt(trials))
