"""Verdicts you can trust (issue 13): typed claims, the verdict at the claim's delta,
frozen messages and parameters, the outside observer, and the audit's trial minimum."""

from __future__ import annotations

import json
import math

import dp_accounting
import numpy as np
import pytest
from _fast_audit import fast_audit
from dp_accounting import rdp
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli import cli

import privsim
from privsim import CURATOR, Param, Privacy, Protocol, Schedule
from privsim.analysis.audit import MIN_ESTIMATE_TRIALS, default_delta, min_audit_trials
from privsim.errors import ParameterError, PartyFailure
from privsim.mechanisms import accounting
from privsim.privacy import judge
from privsim.protocols import get_protocol


# ---------------------------------------------------------------------------- typed claims
def _rr_delta(eps0: float, eps: float) -> float:
    # The hockey-stick divergence of binary randomized response at eps0, by enumeration.
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return max(0.0, p - math.exp(eps) * (1 - p)) + max(0.0, (1 - p) - math.exp(eps) * p)


@pytest.mark.parametrize("eps0", [0.1, 1.0, 3.0])
def test_pure_claim_implies_what_randomized_response_attains(eps0):
    # Randomized response attains the pure claim's curve exactly (KOV15 Thm 2.4), so the
    # curve can be neither looser nor tighter.
    claim = Privacy(eps0)
    for delta in (0.0, 1e-3, 0.05, 0.2):
        eps = claim.epsilon_at(delta)
        if delta >= claim.delta_at(0.0):  # the whole curve is below this delta: 0-DP at it
            assert eps == 0.0
            continue
        assert _rr_delta(eps0, eps) == pytest.approx(delta, abs=1e-12)
        assert claim.delta_at(eps) == pytest.approx(delta, abs=1e-12)


def test_approx_claim_implies_nothing_below_its_delta():
    claim = Privacy(1.2, 0.1)
    assert claim.measure == "approx"
    assert claim.epsilon_at(0.05) is None and claim.epsilon_at(0.0) is None
    assert claim.epsilon_at(0.1) == 1.2
    assert claim.epsilon_at(0.2) < 1.2  # the canonical (eps, delta) mechanism's curve


@pytest.mark.parametrize("rho,delta", [(0.01, 1e-6), (0.5, 1e-5), (2.0, 1e-3)])
def test_zcdp_claim_matches_dp_accounting(rho, delta):
    claim = Privacy.zcdp(rho, delta)
    accountant = rdp.RdpAccountant(orders=list(np.linspace(1.01, 200, 20_000)))
    accountant.compose(dp_accounting.ZCDpEvent(rho))
    theirs = accountant.get_epsilon(delta)
    # Both minimize the same CKS20 bound; dp_accounting on a grid of orders, so never below ours.
    assert claim.epsilon <= theirs + 1e-9 and claim.epsilon == pytest.approx(theirs, rel=2e-3)
    assert claim.epsilon_at(0.0) is None
    assert claim.delta_at(claim.epsilon) == pytest.approx(delta, rel=1e-6)


@pytest.mark.parametrize("sigma,delta", [(1.0, 1e-5), (2.42, 1e-5), (4.0, 1e-6)])
def test_gaussian_claim_matches_dp_accounting(sigma, delta):
    claim = Privacy.gaussian(1.0 / sigma, delta)
    assert claim.epsilon == pytest.approx(dp_accounting.get_epsilon_gaussian(sigma, delta), rel=1e-3)
    assert claim.rho == pytest.approx(accounting.gaussian_rho(sigma))
    # The exact Gaussian curve is below the generic zCDP conversion of the same rho.
    assert claim.epsilon < Privacy.zcdp(claim.rho, delta).epsilon


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["pure", "approx", "zcdp", "gaussian"]), st.floats(0.05, 4.0), st.floats(-9, -1))
def test_delta_at_inverts_epsilon_at(measure, value, log_delta):
    delta = 10.0 ** log_delta
    claim = {"pure": lambda: Privacy(value), "approx": lambda: Privacy(value, 1e-10),
             "zcdp": lambda: Privacy.zcdp(value / 10), "gaussian": lambda: Privacy.gaussian(value / 4)}[measure]()
    eps = claim.epsilon_at(delta)
    if eps > 0:
        assert claim.delta_at(eps) == pytest.approx(delta, rel=1e-5, abs=1e-14)


@pytest.mark.parametrize("rho,epsilon", [(1e-6, 0.1), (1e-5, 0.2), (1e-8, 0.05)])
def test_zcdp_delta_at_below_the_smallest_float_rounds_up(rho, epsilon):
    # The true delta underflows every float (epsilon_at(5e-324) is already below epsilon): the
    # smallest positive float is returned, a delta at which the claim does imply epsilon (was a TypeError).
    claim = Privacy.zcdp(rho)
    tiny = math.ulp(0.0)
    assert claim.epsilon_at(tiny) <= epsilon
    assert claim.delta_at(epsilon) == tiny


def test_bad_claims_name_the_field():
    with pytest.raises(ParameterError, match="claim: epsilon"):
        Privacy(-1.0)
    with pytest.raises(ParameterError, match="claim: delta"):
        Privacy(1.0, 1.0)
    with pytest.raises(ParameterError, match="claim: rho"):
        Privacy.zcdp(0.0)


def test_verdict_compares_like_with_like():
    claim = Privacy(1.2, 0.1)
    assert judge(claim, 1.1, 0.1) == (False, judge(claim, 1.1, 0.1)[1])
    violated, reason = judge(claim, 1.1, 0.0)
    assert violated is None and "implies no epsilon at delta = 0" in reason and "delta >= 0.1" in reason
    assert judge(Privacy(1.0), 1.01, 0.0)[0] is True
    assert judge(None, 5.0, 0.0)[0] is False


# ---------------------------------------------------------------------------- local Gaussian protocol
class LocalGaussian(Protocol):
    """Each party sends x_i + N(0, sigma^2) to the curator; it claims (epsilon, delta)."""

    name = "local-gaussian"
    has_curator = True
    sigma = Param(1.0, gt=0)
    epsilon = Param(1.2, gt=0)
    delta = Param(0.1, gt=0, lt=1)

    def schedule(self, n, t):
        return Schedule(n, [[(i, CURATOR) for i in range(n)]], curator=True)

    async def party(self, ctx):
        ctx.send(CURATOR, ctx.input + ctx.rng.normal(0.0, self.sigma))
        await ctx.end_round()

    async def curator(self, ctx):
        ctx.output((await ctx.end_round()).total())

    def estimate(self, outputs, n, t):
        return outputs[CURATOR]

    def privacy(self, coalition, n, t):
        return None if CURATOR not in coalition and coalition else Privacy(self.epsilon, self.delta)


def test_true_approx_claim_is_not_violated_at_its_delta():
    # sigma = 1: the exact delta at eps = 1.2 is 0.094, so (1.2, 0.1) is true.
    assert accounting.gaussian_delta(1.0, 1.2) < 0.1
    proto = LocalGaussian()
    assert default_delta(proto, "C", 2, 1) == 0.1
    res = fast_audit(proto, [0, 1], coalition="C", neighbor=1, trials=100_000, seed=1)
    assert res.delta == 0.1 and res.delta_claimed == 0.1 and res.violated is False
    assert res.claim == {"measure": "approx", "epsilon": 1.2, "delta": 0.1}
    assert res.epsilon_lower > 0.5  # the audit did find most of the loss
    # delta = 0.1 given explicitly is the default's audit (compared whole, at 4096 trials: the
    # power was checked above); delta = 0, below the claim's, gives no verdict at any size.
    at = privsim.audit(proto, [0, 1], coalition="C", neighbor=1, trials=4096, seed=1, delta=0.1)
    assert at.violated is False
    assert at.to_dict() == privsim.audit(proto, [0, 1], coalition="C", neighbor=1, trials=4096, seed=1).to_dict()
    at0 = privsim.audit(proto, [0, 1], coalition="C", neighbor=1, trials=4096, seed=1, delta=0.0)
    assert at0.violated is None and at0.epsilon_claimed is None and "delta >= 0.1" in at0.reason


def test_false_approx_claim_is_violated():
    # sigma = 2.42 is (1.6, 1e-5)-DP at best, not (1, 1e-5).
    assert accounting.gaussian_epsilon(2.42, 1e-5) > 1.5
    proto = LocalGaussian(sigma=2.42, epsilon=1.0, delta=1e-5)
    res = fast_audit(proto, [0, 1], coalition="C", neighbor=1, trials=10**6, seed=2)
    assert res.delta == 1e-5 and res.violated is True and res.epsilon_lower > 1.0
    assert res.epsilon_lower <= accounting.gaussian_epsilon(2.42, 1e-5)


# ---------------------------------------------------------------------------- views are what was sent
class Relay(Protocol):
    """Parties send their bits to the curator, who outputs the sum; ``mischief`` misbehaves."""

    name = "relay"
    has_curator = True
    mischief = Param("none", type=str, choices=["none", "mutate", "pop", "input", "resend"])

    def schedule(self, n, t):
        return Schedule(n, [[(i, CURATOR) for i in range(n)], []], curator=True)

    async def party(self, ctx):
        bit = ctx.input + ctx.rng.integers(0, 2)
        ctx.send(CURATOR, bit)
        if self.mischief == "input":
            ctx.input[0] = 7
        if self.mischief == "resend":
            bit += 100  # the sender changes its own array after sending it
        await ctx.end_round()
        await ctx.end_round()

    async def curator(self, ctx):
        inbox = await ctx.end_round()
        if self.mischief == "mutate":
            v = inbox[0]
            v += 100
        elif self.mischief == "pop":
            inbox.pop(1)
        await ctx.end_round()
        ctx.output(inbox.total())

    def estimate(self, outputs, n, t):
        return outputs[CURATOR]


@pytest.mark.parametrize("mischief,where", [("mutate", "the curator failed in round 2"),
                                            ("pop", r"inbox of party C \(round 1\) is read-only"),
                                            ("input", "party 0 failed in round 1")])
def test_a_party_cannot_rewrite_what_it_received(mischief, where):
    with pytest.raises((PartyFailure, privsim.PrivsimError), match=where) as info:
        privsim.simulate(Relay(mischief=mischief), [0, 1, 1], trials=4, seed=1)
    assert "read-only" in str(info.value)


def test_the_transcript_is_what_was_sent_even_if_the_sender_changes_its_array():
    honest = privsim.simulate(Relay(), [0, 1, 1], trials=8, seed=3)
    sly = privsim.simulate(Relay(mischief="resend"), [0, 1, 1], trials=8, seed=3)
    np.testing.assert_array_equal(honest.view("C").to_array(), sly.view("C").to_array())
    assert not honest.view("C").messages[0][3].flags.writeable


# ---------------------------------------------------------------------------- frozen parameters
def test_parameters_are_frozen_and_replace_revalidates():
    p = get_protocol("secure-sum", noise="laplace", epsilon=1.0)
    with pytest.raises(ParameterError, match="parameter 'epsilon' cannot be changed after construction"):
        p.epsilon = 0.1
    q = p.replace(epsilon=0.1)
    assert q.epsilon == 0.1 and p.epsilon == 1.0 and type(q) is type(p)
    with pytest.raises(ParameterError, match="epsilon must be > 0"):
        p.replace(epsilon=0.0)
    n, t = 8, 3
    assert q.privacy([0], n, t).epsilon == 0.1
    # the noise follows the claim: ten times the Laplace scale
    r1 = privsim.simulate(p, np.zeros(n), trials=4000, seed=1, t=t)
    r2 = privsim.simulate(q, np.zeros(n), trials=4000, seed=1, t=t)
    assert 8 < r2.error.std() / r1.error.std() < 12


# ---------------------------------------------------------------------------- the outside observer
def test_public_sees_only_what_is_published():
    proto = get_protocol("central-laplace", epsilon=1.0)
    res = privsim.simulate(proto, [0, 1, 1, 0], trials=16, seed=1)
    view = res.view("public")
    assert view.coalition == ("public",) and view.columns() == ["output C"]
    assert not view.messages and not view.inputs and not view.randomness
    np.testing.assert_array_equal(view.to_array()[:, 0], res.outputs[CURATOR])
    only = privsim.simulate(proto, [0, 1, 1, 0], trials=16, seed=1, coalition="public")
    np.testing.assert_array_equal(only.view("public").to_array(), view.to_array())
    with pytest.raises(ParameterError, match="public .* cannot be combined"):
        res.view("public,0")


def test_audit_of_public_against_the_release_claim():
    proto = get_protocol("central-laplace", epsilon=1.0)
    res = fast_audit(proto, [0, 1, 1, 0], coalition="public", neighbor=1, trials=200_000, seed=4)
    assert res.coalition == ["public"] and res.epsilon_claimed == 1.0 and res.violated is False
    assert 0.8 < res.epsilon_lower <= 1.0


def test_public_in_the_cli(capsys):
    code, out, _ = cli(capsys, "audit", "--protocol", "central-gaussian", "--n", "4", "--coalition", "public",
                    "--neighbor", "0", "--trials", "20000", "--seed", "1", "--param", "rho=0.5", "--json")
    out = json.loads(out)
    assert code == 0 and out["coalition"] == ["public"] and out["delta"] == 1e-6
    assert out["claim"]["measure"] == "gaussian" and out["paper_claim"]["measure"] == "zcdp"
    assert out["violated"] is False and out["reason"]


# ---------------------------------------------------------------------------- trial minimum
def test_audit_refuses_too_few_estimation_trials_naming_the_minimum():
    least = min_audit_trials(3)
    with pytest.raises(ParameterError, match=f"trials must be >= {least}"):
        privsim.audit(get_protocol("randomized-response"), [0, 1, 1], coalition="C", neighbor=1,
                      trials=least - 1, seed=1)
    res = privsim.audit(get_protocol("randomized-response"), [0, 1, 1], coalition="C", neighbor=1,
                        trials=least, seed=1)
    assert res.trials_estimate >= MIN_ESTIMATE_TRIALS


def test_cli_audit_default_trials_are_valid(capsys):
    code, out, _ = cli(capsys, "audit", "--protocol", "randomized-response", "--n", "4", "--coalition", "C",
                    "--neighbor", "1", "--json")
    out = json.loads(out)
    assert code == 0 and out["trials"] == 100_000 and out["violated"] is False


def test_privacy_returning_a_float_is_refused_with_a_hint():
    class Bare(LocalGaussian):
        name = "bare"

        def privacy(self, coalition, n, t):
            return 1.0

    with pytest.raises(ParameterError, match=r"privacy\(\) must return a Privacy claim or None .*Privacy\(1.0\)"):
        privsim.audit(Bare(), [0, 1], coalition="C", neighbor=1, trials=4096, seed=1)


def test_a_frozen_protocol_pickles_with_its_state_and_stays_frozen():
    import pickle

    p = get_protocol("randomized-response", epsilon=0.5)
    p.note = "kept"  # not a parameter: free to set
    q = pickle.loads(pickle.dumps(p))
    assert q.epsilon == 0.5 and q.note == "kept"
    with pytest.raises(ParameterError, match="cannot be changed"):
        q.epsilon = 1.0
