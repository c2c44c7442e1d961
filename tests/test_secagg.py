"""SecAgg and SecAgg+ (privsim/protocols/secagg.py): every stage under every dropout point, the threshold."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

import privsim
from privsim.cli import main
from privsim.errors import ParameterError, PartyFailure
from privsim.mechanisms import secagg_crypto as crypto
from privsim.protocols.secagg import ABSENT, SecAgg, SecAggPlus, choose_k
from privsim.protocols.secure_sum import SecureSum

X8 = [1, 0, 1, 1, 0, 1, 1, 1]
MAKERS = [("secagg", lambda **kw: SecAgg(**kw)), ("secagg-plus", lambda **kw: SecAggPlus(k=4, **kw))]


def survivors(proto, drops: dict[int, str], n: int) -> list[int]:
    masked = proto.stages.index("masked-input")
    return [u for u in range(n) if u not in drops or proto.stages.index(drops[u]) > masked]


@pytest.mark.parametrize("name, make", MAKERS)
def test_every_stage_under_every_dropout_point_sums_the_survivors_exactly(name, make):
    for stage in make().stages:
        for drops in ({1: stage, 6: stage}, {0: "advertise-keys", 3: stage}):
            proto = make(dropout=",".join(f"{u}@{s}" for u, s in drops.items()))
            res = privsim.simulate(proto, X8, trials=3, seed=5, t=2, coalition="C")
            want = sum(X8[u] for u in survivors(proto, drops, 8))
            assert res.estimate.tolist() == [want] * 3 and res.true_value.tolist() == [want] * 3, (stage, drops)
            # the absence is in the server's view exactly where the server would see it
            view = res.view("C")
            to_server = {1: 0, 4: 2, 6: 3, 8: 4}  # round -> stage of the clients' messages to C
            for u, s in drops.items():
                at = proto.stages.index(s)
                sent = [(r, v) for r, snd, rcv, v in view.messages if snd == u and rcv == "C"]
                assert [r for r, _ in sent] == sorted(to_server)[:len(proto.stages) - 1]
                for r, value in sent:
                    assert bool((np.asarray(value) == ABSENT).all()) == (to_server[r] >= at), (stage, u, r)


@pytest.mark.parametrize("make", [SecAgg, lambda **kw: SecAggPlus(k=6, **kw)])
def test_a_dropout_fraction_varies_the_survivors_per_trial_and_the_sum_stays_exact(make):
    res = privsim.simulate(make(dropout="0.1"), X8 + X8, trials=40, seed=2, t=2)
    assert (res.estimate == res.true_value).all()
    assert len(set(res.true_value.tolist())) > 2  # the survivors differ between trials
    assert res.true_value.max() <= sum(X8 + X8)


@pytest.mark.parametrize("stage", SecAgg.stages)
def test_too_many_dropouts_fail_in_one_line_naming_the_stage(stage, capsys):
    drops = ",".join(f"{u}@{stage}" for u in range(4))  # 4 of 6 drop; the threshold is t + 1 = 3
    noticed = {"share-keys": "masked-input"}.get(stage, stage)  # the server sees the absence there first
    with pytest.raises(PartyFailure, match=f"aborted at stage {noticed} "):
        privsim.simulate(SecAgg(dropout=drops), X8[:6], trials=2, seed=1, t=2)
    with pytest.raises(SystemExit) as exc:
        main(["run", "--protocol", "secagg", "--n", "6", "--t", "2", "--trials", "2", "--param",
              f"dropout={drops}", "--json"])
    out = capsys.readouterr()
    assert exc.value.code == 2 and out.out == "" and out.err.count("\n") == 1 and "aborted at stage" in out.err


def test_message_counts_are_the_closed_forms_and_the_graph_is_k_regular_and_k_connected():
    for n in (6, 9):
        assert SecAgg().schedule(n, 2).messages == n * (n - 1) + 7 * n
        s = SecAggPlus(k=4).schedule(n, 2)
        assert s.messages == n * (4 + 5)
        g = s.graph()
        g.remove_node("C")
        assert {d for _, d in g.degree()} == {4} and nx.node_connectivity(g) == 4
    assert choose_k(64, 0.1, 0.1) == (14, 7) and choose_k(256, 0.1, 0.1) == (34, 20)


def test_shamir_any_threshold_of_shares_reconstruct_and_dh_agrees():
    rng = np.random.default_rng(3)
    secret = rng.integers(0, crypto.PRIME, size=50)
    shares = crypto.shamir_share(rng, secret, list(range(7)), 4, size=(50,))
    for ids in ([0, 1, 2, 3], [6, 2, 4, 5], [1, 3, 5, 6]):
        assert (crypto.shamir_reconstruct(shares[:, ids], ids) == secret).all()
    assert not (crypto.shamir_reconstruct(shares[:, [0, 1, 2]], [0, 1, 2]) == secret).all()
    a, b = crypto.secret_keys(rng, 50), crypto.secret_keys(rng, 50)
    assert (crypto.agree(a, crypto.public_key(b)) == crypto.agree(b, crypto.public_key(a))).all()


def test_the_survivors_noise_has_the_survivors_variance():
    # 2 of 8 drop before their masked input: the released noise is 6 shares, not 8.
    proto = SecAgg(noise="discrete-gaussian", epsilon=1.0, dropout="2@masked-input,5@share-keys")
    trials = 3000
    res = privsim.simulate(proto, X8, trials=trials, seed=11, t=2)
    var = proto.family_for(8, 2).shares_variance(proto.shares_count(8, 2), 6) / proto.units(8, 2) ** 2
    err = res.error
    assert abs(err.mean()) < 5 * (var / trials) ** 0.5
    assert abs(err.var() - var) < 5 * var * (2 / trials) ** 0.5 * 1.2  # sd of a sample variance (kurtosis ~3)


@pytest.mark.parametrize("noise", ["discrete-gaussian", "skellam"])
def test_integer_noise_lives_on_the_secure_sums_finer_grid(noise):
    # Issue 26: at n = 1024 the noise is the secure sum's (at most the real Gaussian's: both
    # calibrate m = n - t shares to their exact law), not the sqrt(n)-times larger one that
    # [KLS21]'s bound gave unit-grid shares of variance sigma^2/m each (sd 24.2).
    plus, ref = SecAggPlus(noise=noise, epsilon=1.0), SecureSum(noise=noise, epsilon=1.0)
    assert plus.units(1024, 5) == ref.units(1024, 5)
    assert plus.noise_variance(1024, 5) == pytest.approx(ref.noise_variance(1024, 5), rel=1e-12)
    gauss = SecureSum(noise="gaussian", epsilon=1.0).noise_variance(1024, 5)
    assert plus.noise_variance(1024, 5) <= 1.01 * gauss
    claim = plus.privacy(("C",), 1024, 5)  # the server: all n honest shares, calibrated for m = n - t
    assert claim.delta == 1e-6 and 0.9 < claim.epsilon <= 1.0
    trials, n = 1200, 64
    res = privsim.simulate(plus, (np.arange(n) < n // 2).astype(np.int64), trials=trials, seed=5, t=5, record=False)
    var = plus.noise_variance(n, 5)
    assert abs(res.error.mean()) < 5 * (var / trials) ** 0.5
    assert abs(res.error.var() - var) < 5 * var * (2 / trials) ** 0.5 * 1.2  # sd of a sample variance


def test_claims_follow_the_surviving_noise_and_refuse_an_isolating_coalition():
    proto = SecAgg(noise="discrete-gaussian", dropout="2@masked-input")
    assert proto.privacy(("C", 0), 8, 2) == proto.family_for(8, 2).privacy(8 - 1 - 1, proto.shares_count(8, 2))
    assert proto.privacy(("C", 0, 1, 3), 8, 2) is None  # more than t clients
    plus = SecAggPlus(k=4, noise="discrete-gaussian")
    nb = plus.neighbours(10)[3]
    assert plus.isolated(("C", *nb), 10, 4) == [3] or 3 in plus.isolated(("C", *nb), 10, 4)
    assert plus.privacy(("C", *nb), 10, 4) is None
    assert plus.privacy(tuple(nb), 10, 4) == privsim.Privacy(0.0)  # no server: masked values only


def test_bad_parameters_say_what_is_allowed():
    with pytest.raises(ParameterError, match="CLIENT@STAGE"):
        SecAgg(dropout="3@nowhere")
    with pytest.raises(ParameterError, match="k must be even"):
        SecAggPlus(k=3)
    with pytest.raises(ParameterError, match="client 9 does not exist"):
        privsim.simulate(SecAgg(dropout="9@unmasking"), X8, trials=1, seed=1)
    out = json.dumps(SecAgg().parameters)
    assert "dropout" in out


def test_absent_messages_are_counted_only_for_protocols_with_dropouts():
    from privsim.simulate import run_trials

    # client 1 stops at once: its 7 shares, 4 messages to the server, and the 7 shares sent to it
    summary = run_trials(SecAgg(dropout="1@advertise-keys"), X8, trials=2, seed=1, t=2).summary()
    assert summary["absent_messages"] == 18 and summary["messages"] == 8 * 7 + 7 * 8 and summary["rmse"] == 0
    assert privsim.simulate(SecAgg(dropout="1@advertise-keys"), X8, trials=2, seed=1, t=2).summary()[
        "absent_messages"] == 18
    assert "absent_messages" not in run_trials(privsim.protocols.get_protocol("secure-sum"), X8, trials=2,
                                               seed=1).summary()


@pytest.mark.parametrize("k, t", [(4, 1), (2, 2)])  # t + 1 of the neighbours' shares; all neighbours' keys
def test_the_audit_score_decodes_what_an_isolating_coalition_unmasks(k, t):
    proto = SecAggPlus(k=k, noise="none")
    n = 10
    coalition, j = proto.isolating_coalition(n, t)
    assert proto.isolated(coalition, n, t)[:1] == [j] and proto.privacy(coalition, n, t) is None
    x = np.array(X8 + [0, 1])
    x_prime = x.copy()
    x_prime[j] = 1 - x[j]
    res = privsim.simulate(proto, x, trials=4, seed=8, t=t, coalition=coalition)
    view = res.view(coalition)
    score = proto.make_audit_score(view.columns(), coalition, j, n, t, x, x_prime)
    assert (score(view.to_array()) == 0.5).all()  # the coalition reads x_j exactly
    other = next(("C", a, b) for a in range(n) for b in range(a + 1, n)
                 if j not in (a, b) and not proto.isolated(("C", a, b), n, t))
    assert proto.make_audit_score(view.columns(), other, j, n, t, x, x_prime) is None


def test_bounds_names_the_isolating_coalition(capsys):
    with pytest.raises(SystemExit):
        main(["bounds", "--protocol", "secagg-plus", "--n", "10", "--t", "1", "--param", "k=4", "--json"])
        raise SystemExit(0)
    data = json.loads(capsys.readouterr().out)
    coalition, j = SecAggPlus(k=4).isolating_coalition(10, 1)
    assert data["isolating_coalition"] == ",".join(map(str, coalition)) and data["isolated_party"] == j
    assert data["isolating_coalition"].startswith("C,") and len(coalition) == 3


def test_a_modulus_must_be_a_power_of_two():
    with pytest.raises(ParameterError, match="power of two"):
        SecAgg(modulus=1000)


def test_views_name_each_rounds_stage(capsys, monkeypatch):
    # 200 columns whatever the terminal (the CLI's console reads its width when privsim.cli is imported)
    from rich.console import Console

    monkeypatch.setattr("privsim.cli.stdout", Console(width=200))
    main(["views", "--protocol", "secagg", "--n", "5", "--t", "2", "--trials", "1", "--coalition", "C"])
    out = capsys.readouterr().out
    proto = SecAgg()
    assert len(proto.round_stages(5, 2)) == proto.schedule(5, 2).rounds == 8
    for r, stage in enumerate(proto.round_stages(5, 2), start=1):
        if r != 3:  # share-keys travel between clients: the server sees none
            assert f"{r} {stage}" in out, stage
    assert "3 share-keys" not in out


def test_modpow_matches_pow_and_refuses_a_negative_exponent():
    rng = np.random.default_rng(3)
    base, exp = rng.integers(0, crypto.PRIME, 50), rng.integers(0, 1 << 40, 50)
    assert crypto.modpow(base, exp).tolist() == [pow(int(b), int(e), crypto.PRIME) for b, e in zip(base, exp)]
    with pytest.raises(ParameterError, match="exp must be >= 0"):  # used to loop for ever: -1 >> 1 == -1
        crypto.modpow(3, np.array([2, -1]))
