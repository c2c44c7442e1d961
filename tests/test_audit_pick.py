"""The pick among the selectors' proposals (issue 24, "an honest pick").

The held-out half of the selection sample cannot tell apart proposals whose forecasts differ
by less than its noise, so those are carried into estimation together, each bound at
1 - alpha/k, and the largest is reported; the view rule's event, when carried, is chosen on
the whole selection sample as the view rule alone chooses it. The full-size figures (10^6
trials, 15 seeds of twenty 0.1-DP messages) are in the commit message and
bench/bench_audit_selectors.py; here the suite's sizes.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
from _fast_audit import fast_audit

from privsim.analysis.audit import best_of, result_from_counts
from privsim.analysis.audit_bounds import epsilon_lower_bound
from privsim.analysis.audit_events import EventCounts, ThresholdEvent
from privsim.analysis.audit_selectors import MAX_CARRIED, Candidate
from privsim.protocols import get_protocol

_EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)
    return module


repeated_rr = _module(_EXAMPLES / "leaks" / "repeated_rr.py", "privsim_example_pick_repeated_rr")
relay_sum = _module(_EXAMPLES / "relay_sum.py", "privsim_example_pick_relay_sum")


def _candidates(k: int) -> list[Candidate]:
    return [Candidate(ThresholdEvent(float(c), ">=", column=0, name="y"), "column") for c in range(k)]


# --------------------------------------------------------------------------------------
# The confidence split


def test_each_candidate_is_bounded_at_its_share_of_the_confidence():
    cands = _candidates(3)
    totals = [(600, 1000, 300, 1000), (700, 1000, 300, 1000), (500, 1000, 300, 1000)]
    counts = [EventCounts(c.event).add_totals(t) for c, t in zip(cands, totals)]
    r = best_of(counts, cands, 0.0, 0.95, 200)
    assert r.confidence == 0.95 and r.confidence_each == pytest.approx(1 - 0.05 / 3)
    expected = [epsilon_lower_bound(*t, confidence=1 - 0.05 / 3, oriented=True).epsilon_lower for t in totals]
    assert [c["epsilon_lower"] for c in r.candidates] == pytest.approx(expected)
    assert r.epsilon_lower == max(expected) and r.event == "y >= 1"  # the second candidate won
    # One candidate keeps the whole confidence: the former result, field for field.
    alone = best_of(counts[:1], cands[:1], 0.0, 0.95, 200)
    former = result_from_counts(counts[0], 0.0, 0.95, 200, "column")
    assert (alone.epsilon_lower, alone.p_lower, alone.q_upper) == (former.epsilon_lower, former.p_lower,
                                                                   former.q_upper)


def test_the_split_keeps_the_largest_of_many_bounds_sound():
    # k = 10 events, each exactly at the truth ln(p/q) (the worst case for a bound), with
    # a rare denominator: one such bound exceeds the truth in about 1.5% of draws, the
    # largest of ten unsplit bounds in about 16%. Split, the largest must exceed it in at
    # most 5%: of 1000 repetitions at most 50 + 3 standard deviations (6.9) of Binomial(1000, 0.05).
    rng = np.random.default_rng(np.random.SeedSequence(24))
    n, p, q = 20_000, 0.5, 0.001
    truth = math.log(p / q)
    cands = _candidates(10)
    exceed = unsplit = 0
    for _ in range(1000):
        counts = [EventCounts(c.event).add_totals((rng.binomial(n, p), n, rng.binomial(n, q), n)) for c in cands]
        exceed += best_of(counts, cands, 0.0, 0.95, 0).epsilon_lower > truth
        unsplit += max(result_from_counts(c, 0.0, 0.95, 0, "column").epsilon_lower for c in counts) > truth
    assert exceed <= 70
    assert unsplit > 70  # the same draws without the split: the test can tell


# --------------------------------------------------------------------------------------
# The pick's power


def test_twenty_weak_messages_on_seeds_where_the_old_pick_chose_badly():
    # Twenty 0.1-DP messages (true loss 2) at 10^5 trials: the best count event (16 of 20
    # reports) certifies 1.059 on the ~8 x 10^4 estimation trials at 95%, 1.018 with the
    # confidence split three ways; its bound's standard deviation is about 0.065 (some
    # 250 rows under x'). The floor 0.89 is two of them below 1.018. The former pick
    # (one proposal, chosen by its held-out forecast) took the view rule's logistic score
    # on seed 17 and certified 0.834.
    proto = repeated_rr.RepeatedRR(round_epsilon=0.1)
    for seed in (13, 14, 15, 16, 17):
        r = fast_audit(proto, [1, 1], coalition="C", neighbor=1, trials=100_000, seed=seed)
        assert 0.89 <= r.epsilon_lower <= 2.0, seed
        assert 1 <= len(r.candidates) <= MAX_CARRIED
        assert r.confidence_each == pytest.approx(1 - 0.05 / len(r.candidates))
        assert r.selection in [c["selection"] for c in r.candidates]  # the result says which one won
        assert r.epsilon_lower == max(c["epsilon_lower"] for c in r.candidates)


@pytest.mark.parametrize("case", ["getting-started", "relay"])
def test_every_selector_is_within_0_02_of_the_view_rule_alone(case):
    # The former pick lost to the view rule alone on both: 0.932 against 0.966 (its view
    # proposal fitted on half the selection sample), 0.401 against 0.486 (the trees'
    # forecast won and their estimate did not).
    if case == "getting-started":
        kw = dict(protocol=get_protocol("secure-sum", noise="laplace", epsilon=1.0), inputs=np.tile([0, 1], 8),
                  coalition="0,1,2", neighbor=5, t=3, trials=100_000, seed=2)
    else:
        kw = dict(protocol=relay_sum.RelaySum(epsilon=0.5), inputs=None, n=8, coalition="2,4", neighbor=3,
                  trials=200_000, seed=2)
    every = fast_audit(**kw)
    alone = fast_audit(selectors=("view",), **kw)
    assert every.epsilon_lower >= alone.epsilon_lower - 0.02
    assert alone.candidates == [{"selection": alone.selection, "event": alone.event, "forecast": None,
                                 "epsilon_lower": alone.epsilon_lower}]
    assert every.to_dict()["candidates"] == every.candidates  # in the JSON, beside the former fields


def test_a_proposal_that_stands_out_is_carried_alone():
    # The share holders (scenarios/audit_secure_sum_holders.toml): the protocol's own score
    # forecasts above 5 and every other proposal below 1, so it goes alone, at the whole
    # confidence, and is the view rule's event on the whole selection sample: the bound
    # is the view rule's own, 6.24 (the former pick, fitting it on half the sample: 5.64).
    kw = dict(protocol=get_protocol("secure-sum", noise="laplace", epsilon=1.0), inputs=[0, 1] * 4, t=3,
              coalition="0,1,2,3", neighbor=7, trials=200_000, seed=5)
    every = fast_audit(**kw)
    alone = fast_audit(selectors=("view",), **kw)
    assert [c["selection"] for c in every.candidates] == ["score"] and every.confidence_each == 0.95
    assert math.isfinite(every.candidates[0]["forecast"])
    assert (every.event, every.epsilon_lower) == (alone.event, alone.epsilon_lower)
    assert every.epsilon_lower > 6.0


def test_a_leader_that_separates_the_held_out_rows_perfectly_is_carried_alone():
    # (the lazy join at 10^6 trials: its score separated x from x', two runners-up were
    # carried, and the three-way split cost 0.26 against the view rule alone)
    from privsim.analysis.audit_selectors import _pick

    rng = np.random.default_rng(np.random.SeedSequence(7))
    hold_x, hold_xp = rng.uniform(1.0, 2.0, (4000, 1)), rng.uniform(-1.0, 0.0, (4000, 1))
    perfect = ThresholdEvent(0.5, ">=", column=0, name="y")
    near = ThresholdEvent(1.0005, ">=", column=0, name="y")  # holds almost every x row, none of x'
    carried = _pick([("view", "column", perfect), ("trees", "trees", near)], hold_x, hold_xp, 0.0, 0.95, 16_000)
    assert [name for name, _ in carried] == ["view"] and carried[0][1].event is perfect
    # the same runner-up behind a leader that misses one held-out row of x is carried beside it
    hold_x[0, 0] = 0.0
    carried = _pick([("view", "column", perfect), ("trees", "trees", near)], hold_x, hold_xp, 0.0, 0.95, 16_000)
    assert [name for name, _ in carried] == ["view", "trees"]
