"""A protocol's mistakes are reported on one line naming the place; less ceremony for writing one."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import privsim
from privsim import CURATOR, PartyFailure, Privacy, Protocol, Schedule
from privsim.accuracy import accuracy_summary
from privsim.cli import main
from privsim.errors import ParameterError, ProtocolError
from privsim.protocols import AuditScoreContext, RandomizedResponse
from privsim.protocols.base import claim_for
from privsim.protocols.columns import Column


class Tally(Protocol):
    """Parties -> curator; ``mode`` injects one mistake."""

    name = "tally"
    has_curator = True
    mode = privsim.Param("ok", type=str, choices=["ok", "short", "scalar", "out-shape", "twice", "silent",
                                                  "est-shape", "bad-schedule", "float-claim", "idle-drop"])

    def schedule(self, n, t):
        if self.mode == "bad-schedule":
            return [[(i, CURATOR) for i in range(n)]]
        return Schedule(n, [[(i, CURATOR) for i in range(n)], [(0, CURATOR)]], curator=True)

    async def party(self, ctx):
        value = {"short": ctx.input[:-1], "scalar": 1}.get(self.mode, ctx.input) if ctx.id == 1 else ctx.input
        ctx.send(CURATOR, value)
        await ctx.end_round()
        if ctx.id == 0:
            ctx.send(CURATOR, ctx.input)
        await ctx.end_round()

    async def curator(self, ctx):
        if self.mode == "idle-drop":
            await ctx.idle(2)
        total = (await ctx.end_round()).total()
        if self.mode == "silent":
            await ctx.end_round()
            return
        ctx.output(total[:1] if self.mode == "out-shape" else total)
        if self.mode == "twice":
            ctx.output(total)
        await ctx.end_round()

    def estimate(self, outputs, n, t):
        est = np.asarray(outputs[CURATOR], dtype=float)
        return np.stack([est, est], axis=1) if self.mode == "est-shape" else est

    def privacy(self, coalition, n, t):
        return 1.0 if self.mode == "float-claim" else Privacy(1.0)


def run(mode: str, trials: int = 4):
    return privsim.simulate(Tally(mode=mode), [0, 1, 1], trials=trials, seed=1)


def test_the_happy_path():
    assert run("ok").estimate.tolist() == [2.0] * 4


@pytest.mark.parametrize("mode, line", [
    ("short", "party 1, round 1: message to the curator has no trial axis of length 4 (expected an array of "
              "shape (trials=4, ...); ctx.full(v) repeats a constant, got shape (3,))"),
    ("scalar", "party 1, round 1: message to the curator has no trial axis of length 4 (expected an array of "
               "shape (trials=4, ...); ctx.full(v) repeats a constant, got a scalar int)"),
    ("out-shape", "the curator, round 2: output has no trial axis of length 4 (expected an array of shape "
                  "(trials=4, ...); ctx.full(v) repeats a constant, got shape (1,))"),
    ("twice", "the curator, round 2: output a second time (the first was in round 2) (expected one "
              "ctx.output(...) per party, got a second one)"),
    ("silent", "the curator, round 3: finished without an output, which tally.estimate reads (expected "
               "ctx.output(...) before the routine returns, got none)"),
    ("idle-drop", "the curator, round 1: received a message while idling (from party 0, party 1, party 2) "
                  "(expected no message, got 3 message(s); read them with `await ctx.end_round()`)"),
])
def test_party_mistakes_name_party_round_expected_and_got(mode, line):
    with pytest.raises(PartyFailure) as exc:
        run(mode)
    assert str(exc.value) == line and "\n" not in line
    assert exc.value.round == int(line.split("round ")[1][0])


def test_estimate_schedule_and_claim_mistakes():
    with pytest.raises(ProtocolError, match=r"^tally.estimate returned shape \(4, 2\) \(expected \(4,\), the "
                       r"shape of true_value: one value per trial of 4; got \(4, 2\)\)$"):
        run("est-shape")
    with pytest.raises(ProtocolError, match=r"^tally.schedule\(n=3, t=2\) returned list \(expected a "
                       r"privsim.Schedule, e.g. Schedule\(n, rounds, curator=...\), got \[\[\(0, 'C'\)"):
        run("bad-schedule")
    with pytest.raises(ParameterError, match=r"^tally.privacy\(\) must return a Privacy claim or None \(got "
                       r"1.0\); write Privacy\(1.0\)$"):
        claim_for(Tally(mode="float-claim"), ("C",), 3, 2)
    with pytest.raises(ProtocolError, match=r"^estimate and true_value must be one value per trial \(expected "
                       r"shapes \(trials,\) and \(trials,\) or \(\), got \(2, 2\) and \(2,\)\)$"):
        accuracy_summary(np.zeros((2, 2)), np.zeros(2))


def test_the_cli_prints_each_mistake_on_one_line(tmp_path, capsys):
    path = tmp_path / "tally.py"
    path.write_text("import numpy as np\nimport privsim\nfrom privsim import CURATOR, Privacy, Protocol, Schedule\n\n"
                    + inspect.getsource(Tally))
    common = ["--protocol", f"{path}:Tally", "--n", "3", "--trials", "8192"]
    for argv, expect in ((["run", *common, "--param", "mode=scalar"], "party 1, round 1: message to the curator"),
                         (["audit", *common, "--param", "mode=float-claim", "--coalition", "C", "--neighbor", "0"],
                          "tally.privacy() must return a Privacy claim or None (got 1.0)")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.count("\n") == 1 and err.startswith(f"error: {expect}"), err


# ------------------------------------------------------------------ less ceremony
class Relay(Protocol):
    """Party i waits for round i; then passes its input on (idle, zeros, full)."""

    name = "relay"
    input_values = None

    def schedule(self, n, t):
        return Schedule(n, [[(i, i + 1)] for i in range(n - 1)])

    async def party(self, ctx):
        total = ctx.zeros()
        if ctx.id > 0:
            await ctx.idle(ctx.id - 1)
            total = (await ctx.end_round())[ctx.id - 1]
        if ctx.id + 1 < ctx.n:
            ctx.send(ctx.id + 1, total + ctx.input + ctx.full(10))
            await ctx.end_round()
        ctx.output(total)

    def estimate(self, outputs, n, t):
        return outputs[n - 1]


def test_idle_zeros_full():
    res = privsim.simulate(Relay(), [1, 2, 3, 4], trials=3, seed=0)
    assert res.estimate.tolist() == [36.0] * 3 and res.rounds == 3 and res.messages == 3
    ctx = privsim.PartyContext(0, 2, 1, 5, None, None, None)
    assert ctx.zeros(2).shape == (5, 2) and ctx.ones().sum() == 5 and ctx.full(2.5, 3).shape == (5, 3)


def test_view_columns_as_records():
    view = privsim.simulate(RandomizedResponse(), [0, 1], trials=2, seed=1).view("0,C")
    records = view.column_records()
    assert [str(c) for c in records] == view.columns()
    assert [(c.kind, c.party, c.round, c.sender, c.receiver) for c in records] == [
        ("input", 0, None, None, None), ("rand", 0, None, None, None), ("msg", None, 1, 0, "C"),
        ("msg", None, 1, 1, "C"), ("output", "C", None, None, None)]
    assert Column.parse("msg r3 12->4[7]") == Column("msg", round=3, sender=12, receiver=4, element=7,
                                                     name="msg r3 12->4[7]")
    with pytest.raises(ValueError, match="not a view column name"):
        Column.parse("message 1")


class OldStyleRR(RandomizedResponse):
    name = "old-rr"

    def audit_score(self, columns, coalition, neighbor, n, t, x=None, x_prime=None):
        idx = list(columns).index(f"msg r1 {neighbor}->C")
        return lambda views: -views[:, idx]


def test_audit_score_takes_one_context_and_the_old_signature_still_works():
    columns = ["msg r1 0->C", "msg r1 1->C", "output C"]
    views = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    new = RandomizedResponse().make_audit_score(columns, ["C"], 1, 2, 1)
    assert new(views).tolist() == [0.0, 1.0]
    with pytest.warns(DeprecationWarning, match=r"audit_score\(self, ctx\)"):
        old = OldStyleRR().make_audit_score(columns, ["C"], 1, 2, 1)
    assert old(views).tolist() == [-0.0, -1.0]
    ctx = AuditScoreContext(tuple(columns), ("C",), 1, 2, 1)
    assert ctx.find("msg", receiver="C") == [0, 1] and ctx.index("msg", sender=5) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the audit itself warns only for old-style overrides
        r = privsim.audit(RandomizedResponse(), [0, 1], coalition="C", neighbor=1, trials=4096, seed=1)
    assert r.epsilon_lower > 0 and r.violated is False
