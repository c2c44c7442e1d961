"""One plan per run: what runs, estimates and reports a run or an audit reads the same object."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import privsim
from privsim import cli, resources
from privsim.analysis import audit as audit_module
from privsim.errors import ParameterError
from privsim.plan import MAX_SELECT_TRIALS, audit_split, plan_audit, plan_run
from privsim.protocols import RandomizedResponse
from privsim.scenario import RunSpec
from privsim.simulate import execute


class _Stop(Exception):
    pass


def test_estimate_progress_bar_and_audit_read_one_plan_at_4e6_trials(monkeypatch):
    seen: dict[str, object] = {}
    real_estimate, real_bar = resources.estimate, cli.progress_bar

    def estimate(plan, **kw):
        seen["estimate"] = plan
        return real_estimate(plan, **kw)

    def bar(total, label, **kw):
        seen["bar"] = total
        return real_bar(total, label, **kw)

    def run(job, n_select, n_estimate, ex, score_for, delta, confidence, *, rows, **kw):
        seen["audit"] = (job.plan, n_select, n_estimate, rows)
        raise _Stop  # what it would select on is all this test needs: no trial is simulated

    monkeypatch.setattr(resources, "estimate", estimate)
    monkeypatch.setattr(cli, "progress_bar", bar)
    monkeypatch.setattr(audit_module, "_run", run)
    spec = RunSpec(protocol="randomized-response", n=4, trials=4 * 10**6, seed=1)
    with pytest.raises(_Stop):
        cli._audit_with_progress(RandomizedResponse(), spec, "C", 1, progress=False, max_memory="64G")
    plan, n_select, n_estimate, rows = seen["audit"]
    assert seen["estimate"] is plan
    assert rows == plan.split.select_trials == MAX_SELECT_TRIALS  # 2^17, capped: not a fifth (8 x 10^5)
    assert seen["bar"] == plan.split.total_batches == 2 * (n_select + n_estimate) == 2 * len(plan.run.batches)
    # and the estimate counts that selection sample: a larger one would cost more memory
    larger = audit_split(4 * 10**6, 4, batch_trials=1 << 18)
    assert larger.select_trials == 1 << 18
    assert resources.estimate(plan).memory < resources.floor_estimate(4, 4 * 10**6, audit=larger).memory


def test_the_keyword_apis_are_thin_wrappers_over_the_plan():
    proto = RandomizedResponse(epsilon=1.0)
    a = privsim.simulate(proto, [0, 1, 1, 0], trials=1500, seed=4, coalition="C")
    b = execute(plan_run(proto, [0, 1, 1, 0], trials=1500, seed=4, coalition="C"))
    assert np.array_equal(a.estimate, b.estimate) and a.view("C").to_dict() == b.view("C").to_dict()
    kw = dict(coalition="C", neighbor=1, trials=6000, seed=2)
    via_audit = privsim.audit(proto, [0, 1, 1, 0], **kw).to_dict()
    via_plan = audit_module.run_audit(plan_audit(proto, [0, 1, 1, 0], **kw)).to_dict()
    assert via_audit == via_plan


def test_a_plan_is_checked_once_and_frozen():
    plan = plan_run(RandomizedResponse(), [0, 1, 1], trials=3000, seed=2, batch_trials=1024, split=True)
    assert plan.batches == ((0, 1024), (1, 1024), (2, 952)) and plan.batch(1).batches == ((1, 1024),)
    with pytest.raises(AttributeError):
        plan.t = 0  # type: ignore[misc]
    with pytest.raises(ParameterError, match="backend: 'asyncio' applies only with transport 'local'"):
        plan_run(RandomizedResponse(), [0, 1], backend="asyncio", transport="tcp")


def test_the_transcript_has_a_public_accessor():
    res = privsim.simulate(RandomizedResponse(), [0, 1], trials=3, seed=1)
    assert len(res.transcript) == 1 and set(res.transcript[0]) == {"C"}
    assert privsim.simulate(RandomizedResponse(), [0, 1], trials=3, seed=1, record=False).transcript is None


def _stored_batches(trials: int, n: int, batch_trials: int | None) -> list[tuple[int, int]]:
    # The batch pairs as plan.py stored them before they were computed (issue 27).
    from privsim.parties.rng import TRIAL_BLOCK
    from privsim.plan import BATCH_PARTY_TRIALS

    if batch_trials is None:
        batch_trials = max(TRIAL_BLOCK, BATCH_PARTY_TRIALS // max(n, 1))
    size = max(1, batch_trials // TRIAL_BLOCK) * TRIAL_BLOCK
    return [(start // TRIAL_BLOCK, min(size, trials - start)) for start in range(0, trials, size)]


@given(st.integers(1, 200_000), st.integers(1, 10**5), st.one_of(st.none(), st.integers(1, 50_000)),
       st.integers(-5, 300), st.integers(-5, 300))
def test_computed_batches_are_the_stored_ones(trials, n, batch_trials, lo, hi):
    from privsim.plan import batch_plan

    batches, stored = batch_plan(trials, n, batch_trials), _stored_batches(trials, n, batch_trials)
    assert len(batches) == len(stored) and list(batches) == stored and batches == stored
    assert list(batches[lo:hi]) == stored[lo:hi] and batches[lo:hi].trials == sum(s for _, s in stored[lo:hi])
    assert batches[-1] == stored[-1] and batches[len(stored) // 2] == stored[len(stored) // 2]
    with pytest.raises(IndexError):
        batches[len(stored)]


def test_a_plan_is_the_same_size_at_any_number_of_batches():
    import pickle

    def plan(trials):
        return plan_audit(RandomizedResponse(), n=4, coalition="C", neighbor=1, trials=trials, seed=1)

    small, huge = plan(10**6), plan(10**12)  # 31 and 3 * 10^7 batches per input
    assert len(huge.split.batches) == 30_517_579 and huge.split.batches[-1] == (976_562_496, 4096)
    assert len(pickle.dumps(huge)) - len(pickle.dumps(small)) < 16  # a few integers' digits
    assert huge.split.select_trials == MAX_SELECT_TRIALS
