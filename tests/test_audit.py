"""The audit end to end: soundness, power, leaks caught, streaming, CLI contract."""

from __future__ import annotations

import json
import math
import tracemalloc

import numpy as np
import pytest
from _fast_audit import fast_audit

from privsim import InputError, ParameterError
from privsim.analysis.audit import audit, plan_audit_batches
from privsim.cli import main
from privsim.protocols import RandomizedResponse, RandomizedResponseDistributed, get_protocol

X8 = [0, 1, 0, 1, 1, 0, 0, 1]
LN2 = math.log(2)


def test_power_randomized_response_at_a_million_trials():
    r = fast_audit(RandomizedResponse(epsilon=1.0), X8, coalition="C", neighbor=3, trials=10**6, seed=11)
    assert r.epsilon_lower >= 0.675
    assert r.epsilon_claimed == 1.0 and not r.violated
    assert "msg r1 3->C" in r.event


def test_fast_audit_is_the_default_audit_bit_for_bit():
    # tests/_fast_audit.py: larger batches over the same selection and estimation trials.
    for proto, coalition, neighbor in ((RandomizedResponse(epsilon=1.0), "C", 1),
                                       (RandomizedResponseDistributed(epsilon=1.0), "0,2", 5)):
        want = audit(proto, X8, coalition=coalition, neighbor=neighbor, trials=20_000, seed=7)
        got = fast_audit(proto, X8, coalition=coalition, neighbor=neighbor, trials=20_000, seed=7)
        assert got.to_dict() == want.to_dict()


def test_soundness_fifty_audits_rarely_exceed_the_true_loss():
    # True loss ln 2 at eps = 1 (ln(1 + eps)). At 95% confidence about 5% of audits may
    # exceed it; a Binomial(50, 0.05) exceeds 7 with probability 1.2%, and the engine's
    # bounds are conservative, so more than 7 means the audit is not sound.
    exceed = 0
    for seed in range(50):
        r = fast_audit(RandomizedResponse(epsilon=1.0), X8, coalition="C", neighbor=1, trials=20_000, seed=1000 + seed)
        exceed += r.epsilon_lower > LN2
    assert exceed <= 7


def test_distributed_rr_coalition_of_the_collector():
    r = fast_audit(RandomizedResponseDistributed(epsilon=1.0), X8, coalition="0,2", neighbor=5, trials=200_000, seed=3)
    assert 0.6 < r.epsilon_lower and not r.violated


def test_deliberate_leak_is_caught():
    r = fast_audit(get_protocol("leaky-rr", leak=0.01), X8, coalition="C", neighbor=1, trials=10**6, seed=5)
    assert r.violated and r.epsilon_lower > 3


def test_no_leak_without_the_neighbour_message():
    # The coalition {2} in the local protocol sees nothing of party 1: no loss can be certified.
    r = fast_audit(RandomizedResponse(epsilon=1.0), X8, coalition="2", neighbor=1, trials=50_000, seed=2)
    assert r.epsilon_lower < 0.1


def test_audit_streams_batches():
    n, trials = 16, 1 << 18
    proto = RandomizedResponse(epsilon=1.0)
    x = (np.arange(n) % 2).tolist()
    full_bytes = 2 * trials * (n + 1) * 8  # every view under x and x', as float64
    tracemalloc.start()
    audit(proto, x, coalition="C", neighbor=1, trials=trials, seed=1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(plan_audit_batches(trials, n)) >= 8
    # held at once: the selection sample (20% of the trials, per input) and one batch per input
    assert peak < full_bytes / 2


@pytest.mark.parametrize("kw, message", [
    ({"coalition": "C,1", "neighbor": 1}, "neighbor: party 1 is inside the coalition"),
    ({"coalition": "0,99", "neighbor": 1}, "party 99 does not exist"),
    ({"coalition": "0", "neighbor": "C"}, "the curator has no input"),
    ({"coalition": "0", "neighbor": 1, "trials": 500}, "trials must be >= 2024"),
    ({"coalition": "0", "neighbor": 1, "confidence": 1.5}, "confidence"),
])
def test_bad_audit_input(kw, message):
    args = {"trials": 5000, "seed": 1, **kw}
    with pytest.raises((ParameterError, InputError), match=message):
        audit(RandomizedResponse(), X8, **args)


def test_audit_cli_contract(capsys):
    main(["audit", "--protocol", "randomized-response", "--n", "8", "--coalition", "C", "--neighbor", "1",
          "--trials", "20000", "--seed", "1", "--param", "epsilon=1", "--json"])
    d = json.loads(capsys.readouterr().out)
    for key in ("epsilon_lower", "epsilon_claimed", "confidence", "delta", "trials", "violated", "event"):
        assert key in d
    assert d["trials"] == 20000 and d["confidence"] == 0.95 and d["delta"] == 0.0


def test_audit_plot(tmp_path, capsys):
    png = tmp_path / "audit.png"
    main(["audit", "--protocol", "randomized-response-distributed", "--n", "6", "--coalition", "0",
          "--neighbor", "2", "--trials", "20000", "--seed", "1", "--plot", str(png), "--json"])
    assert json.loads(capsys.readouterr().out)["plot"] == str(png) and png.stat().st_size > 1000


def test_bounds_audit_measures_the_lonely_party(capsys):
    main(["bounds", "--protocol", "randomized-response-distributed", "--n", "8", "--t", "2", "--audit",
          "--trials", "50000", "--seed", "1", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert d["audit"]["coalition"] == ["0"] and d["audit"]["neighbor"] == 1
    assert 0.5 < d["audit"]["epsilon_lower"] < 1.0
