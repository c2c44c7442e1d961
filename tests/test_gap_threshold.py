"""GAP-TR_{kappa,tau} from a SUM protocol (Beimel–Nissim–Omri, Section 2): the reduction and its error."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from test_cli import cli

import privsim
from privsim import CURATOR, Protocol, Schedule
from privsim.errors import ParameterError
from privsim.protocols import REGISTRY, RandomizedResponse
from privsim.protocols.gap_threshold import GapThreshold


class ExactSum(Protocol):
    """Parties send their bits to C, who outputs the exact sum: y = SUM, no error."""

    name = "test-exact-sum"
    has_curator = True

    def schedule(self, n, t):
        return Schedule.star_to(n, CURATOR)

    async def party(self, ctx):
        ctx.send(CURATOR, ctx.input)
        await ctx.end_round()

    async def curator(self, ctx):
        ctx.output((await ctx.end_round()).total())

    def estimate(self, outputs, n, t):
        return outputs[CURATOR]


@pytest.fixture
def exact_sum(monkeypatch):
    monkeypatch.setitem(REGISTRY._classes, ExactSum.name, ExactSum)
    return ExactSum.name


def bits_with_sum(n: int, k: int) -> list[int]:
    return [1] * k + [0] * (n - k)


def test_reduction_rule_is_exact_at_the_threshold(exact_sum):
    # kappa = 3, tau = 4: output 0 iff y <= kappa + tau/2 = 5
    gap = GapThreshold(base=exact_sum, kappa=3, tau=4)
    n = 10
    x = np.array([bits_with_sum(n, k) for k in range(n + 1)])
    res = privsim.simulate(gap, x, trials=n + 1, seed=0)
    np.testing.assert_array_equal(res.estimate, (np.arange(n + 1) > 5).astype(int))
    np.testing.assert_array_equal(res.true_value, (np.arange(n + 1) > 5).astype(int))
    np.testing.assert_array_equal(gap.in_gap(x), (np.arange(n + 1) > 3) & (np.arange(n + 1) < 7))
    assert gap.error_rate(res) == 0.0


def test_threshold_of_the_base_estimate_trial_by_trial():
    n, kappa, tau = 200, 40, 30
    gap = GapThreshold(base="randomized-response", epsilon=1.0, kappa=kappa, tau=tau)
    res = privsim.simulate(gap, bits_with_sum(n, kappa), trials=2000, seed=1)
    y = gap.sum_estimate(res.outputs, n, res.t)
    np.testing.assert_array_equal(y, RandomizedResponse(epsilon=1.0).debias(res.outputs[CURATOR], n))
    np.testing.assert_array_equal(res.estimate, np.where(y <= kappa + tau / 2, 0, 1))
    # at SUM = kappa an answer is wrong exactly when y - SUM > tau/2
    assert gap.error_rate(res) == np.mean(y - kappa > tau / 2)
    assert 0.05 < gap.error_rate(res) < 0.95  # tau small against RR's error: errors are common


@pytest.mark.parametrize("side", ["low", "high"])
def test_errors_only_where_the_base_errs_by_tau_over_2(side):
    n, kappa, tau = 300, 100, 40
    gap = GapThreshold(base="randomized-response", epsilon=0.5, kappa=kappa, tau=tau)
    k = kappa if side == "low" else kappa + tau
    res = privsim.simulate(gap, bits_with_sum(n, k), trials=3000, seed=2)
    y_err = gap.sum_estimate(res.outputs, n, res.t) - k
    wrong = res.estimate != res.true_value
    assert wrong.any()
    assert np.all(np.abs(y_err[wrong]) >= tau / 2)  # Section 2: a (gamma, tau/2)-approx. of SUM suffices
    assert gap.error_rate(res) <= np.mean(np.abs(y_err) >= tau / 2)


@pytest.mark.parametrize("side", ["low", "high"])
def test_error_rate_is_small_when_tau_is_large_against_the_base_error(side):
    n, eps, trials = 400, 1.0, 2000
    sd = math.sqrt(RandomizedResponse(epsilon=eps).variance(n))
    kappa, tau = 50.0, 10 * sd  # tau/2 = 5 standard deviations of the base's error
    gap = GapThreshold(base="randomized-response", epsilon=eps, kappa=kappa, tau=tau)
    k = int(kappa) if side == "low" else int(math.ceil(kappa + tau))
    res = privsim.simulate(gap, bits_with_sum(n, k), trials=trials, seed=3)
    p = 2 * stats.norm.sf(5.0)  # the base errs by tau/2 about this often (normal approximation)
    assert gap.error_rate(res) <= p + 5 * math.sqrt(p / trials)
    # the same tau against a 6x noisier base (eps/8: tau/2 is 5/6 of its sd) errs often
    weak = GapThreshold(base="randomized-response", epsilon=eps / 8, kappa=kappa, tau=tau)
    res_weak = privsim.simulate(weak, bits_with_sum(n, k), trials=trials, seed=3)
    assert weak.error_rate(res_weak) > 0.1


def test_cost_view_and_privacy_are_the_bases():
    n = 50
    base = RandomizedResponse(epsilon=1.5)
    gap = GapThreshold(base="randomized-response", epsilon=1.5, kappa=10, tau=20)
    x = bits_with_sum(n, 30)
    rb = privsim.simulate(base, x, trials=20, seed=4)
    rg = privsim.simulate(gap, x, trials=20, seed=4)
    assert (rg.messages, rg.bits, rg.rounds) == (rb.messages, rb.bits, rb.rounds)
    np.testing.assert_array_equal(rg.view("C").to_array(), rb.view("C").to_array())
    assert gap.privacy(["C"], n, n - 1) == base.privacy(["C"], n, n - 1) == privsim.Privacy(1.5)
    assert gap.has_curator and gap.parameters == {"base": "randomized-response", "kappa": 10.0, "tau": 20.0,
                                                  "epsilon": 1.5}


@pytest.mark.parametrize("base", ["secure-sum", "ck-sum", "secagg", "randomized-response"])
def test_the_public_sees_and_is_promised_what_the_base_publishes(base):
    # Without broadcast a distributed sum publishes only its output party's release; the
    # wrapper once published every party's output and claimed the empty coalition's Privacy(0).
    n = 16
    gap = GapThreshold(base=base, epsilon=1.0, kappa=4, tau=8)
    t = gap.default_t(n)
    assert gap.publishes(n, t) == gap.inner.publishes(n, t)
    assert gap.public_privacy(n, t) == gap.inner.public_privacy(n, t)
    assert gap.public_privacy(n, t) != privsim.Privacy(0.0)  # None (no claim) for secagg
    res = privsim.simulate(gap, bits_with_sum(n, 10), trials=5, seed=1)
    assert set(res.view("public").outputs) == set(gap.inner.publishes(n, t))
    assert gap.round_stages(n, t) == gap.inner.round_stages(n, t)
    assert gap.precomputed(n, t) == gap.inner.precomputed(n, t)


def test_inside_the_gap_the_rule_is_applied_to_the_exact_sum_and_not_counted():
    gap = GapThreshold(kappa=10, tau=20)
    res = privsim.simulate(gap, bits_with_sum(100, 21), trials=50, seed=5)
    assert gap.in_gap(res.inputs).all() and np.all(res.true_value == 1)  # 21 > 10 + 20/2
    assert math.isnan(gap.error_rate(res))


def test_defaults_depend_on_n():
    gap = GapThreshold()
    assert gap.gap(100) == (25.0, 50.0) and gap.threshold(100) == 50.0
    assert gap.default_inputs(100).sum() == 75


def test_cli_passes_base_parameters_through(capsys):
    code, out, _ = cli(capsys, "run", "--protocol", "gap-threshold", "--n", 100, "--trials", 200, "--seed", 1,
                           "--param", "base=randomized-response-distributed", "--param", "epsilon=2",
                           "--param", "kappa=10", "--param", "tau=80", "--inputs", "count:10", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["params"]["base"] == "randomized-response-distributed" and data["params"]["epsilon"] == 2.0
    assert data["messages"] == 2 * 99 and data["true_value"] == 0.0


@pytest.mark.parametrize(("params", "fragment"), [
    (["base=no-such"], "base must be a registered SUM protocol"),
    (["base=gap-threshold"], "base must be a registered SUM protocol"),
    (["foo=1"], "unknown parameter 'foo' for gap-threshold"),
    (["epsilon=-1"], "epsilon must be > 0"),
    (["kappa=60", "tau=50"], "kappa + tau must be <= n"),
    (["tau=0"], "tau must be > 0"),
])
def test_bad_parameters_give_one_line(capsys, params, fragment):
    args = [a for p in params for a in ("--param", p)]
    code, _, err = cli(capsys, "run", "--protocol", "gap-threshold", "--n", 100, "--trials", 5, *args)
    assert code == 2 and fragment in err and err.strip().count("\n") == 0


def test_constructor_errors_are_parameter_errors():
    with pytest.raises(ParameterError, match="allowed: base, kappa, tau, epsilon"):
        GapThreshold(base="randomized-response", delta=0.1)
