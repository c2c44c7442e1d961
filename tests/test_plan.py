"""One plan per run: what runs, estimates and reports a run or an audit reads the same object."""

from __future__ import annotations

import numpy as np
import pytest

import privsim
from privsim import cli, resources
from privsim.analysis import audit as audit_module
from privsim.errors import ParameterError
from privsim.plan import MAX_SELECT_TRIALS, MAX_SELECT_TRIALS_COMPETING, audit_split, plan_audit, plan_run
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
    assert rows == plan.split.select_trials == MAX_SELECT_TRIALS_COMPETING  # 2^18, not 2^17
    assert seen["bar"] == plan.split.total_batches == 2 * (n_select + n_estimate) == 2 * len(plan.run.batches)
    # and the estimate counts that selection sample: 2^18 rows more than a 2^17 one would
    smaller = audit_split(4 * 10**6, 4, selectors=("view",))
    assert smaller.select_trials == MAX_SELECT_TRIALS
    assert resources.estimate(plan).memory > resources.floor_estimate(4, 4 * 10**6, audit=smaller).memory


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
