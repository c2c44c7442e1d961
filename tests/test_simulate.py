"""simulate(): determinism, batch invariance, views, parameter and input validation."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_protocols import Gossip, Ring
from hypothesis import given, settings
from hypothesis import strategies as st

import privsim
from privsim import InputError, ParameterError, ViewNotRecorded
from privsim.protocols import RandomizedResponse, RandomizedResponseDistributed
from privsim.simulate import batch_plan, simulate_batches

X = np.array([1, 0, 1, 1, 0, 0, 1, 0])


def test_same_seed_same_outputs_and_views():
    a = privsim.simulate(RandomizedResponseDistributed(epsilon=1.0), X, trials=300, seed=11)
    b = privsim.simulate(RandomizedResponseDistributed(epsilon=1.0), X, trials=300, seed=11)
    for k in a.outputs:
        assert np.array_equal(a.outputs[k], b.outputs[k])
    for coalition in ("0", "1,2", "0,3,5"):
        assert np.array_equal(a.view(coalition).to_array(), b.view(coalition).to_array())
        assert a.view(coalition).columns() == b.view(coalition).columns()


def test_different_seeds_differ():
    a = privsim.simulate(RandomizedResponse(), X, trials=300, seed=1)
    b = privsim.simulate(RandomizedResponse(), X, trials=300, seed=2)
    assert not np.array_equal(a.outputs["C"], b.outputs["C"])


@pytest.mark.parametrize("batch_trials", [1024, 2048])
def test_batches_reproduce_the_unsplit_run(batch_trials):
    full = privsim.simulate(Ring(laps=2), np.arange(5), trials=3000, seed=5)
    parts = list(simulate_batches(Ring(laps=2), np.arange(5), trials=3000, seed=5, batch_trials=batch_trials))
    assert [p.trials for p in parts] == [s for _, s in batch_plan(3000, 5, batch_trials)]
    joined = np.concatenate([p.outputs[0] for p in parts])
    assert np.array_equal(joined, full.outputs[0])


def test_seed_none_is_reported_and_reproducible():
    a = privsim.simulate(RandomizedResponse(), X, trials=50, seed=None)
    b = privsim.simulate(RandomizedResponse(), X, trials=50, seed=a.seed)
    assert np.array_equal(a.outputs["C"], b.outputs["C"])


def test_per_trial_inputs():
    xs = np.stack([X, 1 - X])
    res = privsim.simulate(RandomizedResponse(), xs, trials=2, seed=0)
    assert res.true_value.tolist() == [X.sum(), (1 - X).sum()]


def test_view_contents_for_curator():
    res = privsim.simulate(RandomizedResponse(epsilon=1.0), X, trials=20, seed=3)
    v = res.view("C")
    assert v.coalition == ("C",)
    assert v.inputs == {}
    assert [m[:3] for m in v.messages] == [(1, i, "C") for i in range(len(X))]
    assert v.columns() == [f"msg r1 {i}->C" for i in range(len(X))] + ["output C"]
    arr = v.to_array()
    assert arr.shape == (20, len(X) + 1)
    assert np.array_equal(arr[:, -1], arr[:, :-1].sum(axis=1))


def test_view_of_a_party_holds_input_randomness_and_output():
    res = privsim.simulate(RandomizedResponseDistributed(epsilon=1.0), X, trials=10, seed=3)
    v = res.view([2])
    assert np.array_equal(v.inputs[2], np.full(10, X[2]))
    assert len(v.randomness[2]) == 1 and v.randomness[2][0].shape == (10,)
    assert [m[:3] for m in v.messages] == [(1, 2, 0), (2, 0, 2)]
    assert v.seeds[2]["entropy"] == 3
    assert "rand 2#0" in v.columns() and "output 2" in v.columns()


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 7), st.data())
def test_view_never_holds_a_message_between_non_members(n, data):
    members = data.draw(st.sets(st.sampled_from([*range(n), "C"]), min_size=1, max_size=n))
    res = privsim.simulate(Gossip(), np.arange(n), trials=2, seed=1)
    v = res.view(members)
    for _, s, d, _ in v.messages:
        assert s in members or d in members
    expected = [(r, s, d) for r, s, d in res.schedule.triples() if s in members or d in members]
    assert [m[:3] for m in v.messages] == expected
    # the randomness and inputs are the members' only
    assert set(v.inputs) <= set(members) and set(v.randomness) <= set(members)


def test_coalition_recording_saves_only_what_it_needs():
    res = privsim.simulate(Gossip(), np.arange(5), trials=2, seed=1, coalition="1,2")
    full = privsim.simulate(Gossip(), np.arange(5), trials=2, seed=1)
    assert np.array_equal(res.view("1,2").to_array(), full.view("1,2").to_array())
    with pytest.raises(ViewNotRecorded, match="coalition 1,2 only"):
        res.view("3")
    with pytest.raises(ViewNotRecorded):
        privsim.simulate(Gossip(), np.arange(5), trials=2, seed=1, record=False).view("0")


@pytest.mark.parametrize("bad, message", [
    ({"epsilon": 0}, r"epsilon must be > 0 \(got 0"),
    ({"epsilon": -1}, r"epsilon must be > 0"),
    ({"epsilon": "abc"}, r"epsilon must be float"),
    ({"epsilon": float("inf")}, r"epsilon must be finite"),
    ({"epsilon": 1, "rho": 2}, r"unknown parameter 'rho' for randomized-response \(allowed: epsilon\)"),
])
def test_parameters_validated_at_construction(bad, message):
    with pytest.raises(ParameterError, match=message):
        RandomizedResponse(**bad)


def test_setting_and_inputs_validated():
    with pytest.raises(ParameterError, match=r"t must satisfy 0 <= t < n = 8 \(got 8\)"):
        privsim.simulate(RandomizedResponse(), X, t=8)
    with pytest.raises(InputError, match=r"party 2 has 2, outside the domain \{0, 1\}"):
        privsim.simulate(RandomizedResponse(), [0, 1, 2])
    with pytest.raises(InputError, match="expected an array"):
        privsim.simulate(RandomizedResponse(), np.zeros((2, 2, 2)))
    with pytest.raises(ParameterError, match="trials must be >= 1"):
        privsim.simulate(RandomizedResponse(), X, trials=0)
    with pytest.raises(ParameterError, match=r"party 99 does not exist \(allowed: 0..7 or C\)"):
        privsim.simulate(RandomizedResponse(), X, coalition="0,99")


def test_trial_rng_draws_have_the_trial_axis():
    from privsim.parties.rng import StreamSeeder, block_range

    rng = StreamSeeder(1, 2, block_range(2500)).rng(1, 2500, record=True)
    assert rng.random().shape == (2500,)
    assert rng.normal(0, 1, size=(3,)).shape == (2500, 3)
    assert rng.integers(0, 7, size=2).shape == (2500, 2)
    assert rng.poisson(lam=2.0, size=()).shape == (2500,)
    per_trial = np.arange(2500.0)
    assert np.array_equal(rng.normal(per_trial, 0.0), per_trial)  # per-trial parameters follow trials
    assert len(rng.draws) == 5
