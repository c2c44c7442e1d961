"""Cohorts (issue 29): the parties of a role run as one task, and nothing a run produces changes.

For the same seed, a run with cohorts and the per-party run (``LocalTransport(cohorts=False)``)
must agree bit for bit on estimates, outputs, counts, the transcript, the random tapes and
every coalition's view; the schedule is enforced on a cohort's messages as on a party's.
"""

from __future__ import annotations

import numpy as np
import pytest

import privsim
from privsim.errors import ParameterError, PartyFailure, ScheduleViolation
from privsim.mechanisms.noise import laplace_share
from privsim.network.messages import CohortInbox
from privsim.network.schedule import Schedule
from privsim.parties.cohort import CohortRNG
from privsim.parties.rng import StreamSeeder, block_range, generate_state, generator_call, generator_calls
from privsim.protocols.central import CentralGaussian, CentralLaplace
from privsim.protocols.ck_sum import CKSum
from privsim.protocols.randomized_response import RandomizedResponse, RandomizedResponseDistributed
from privsim.protocols.secagg import SecAgg, SecAggPlus
from privsim.protocols.secure_sum import SecureSum
from privsim.protocols.shuffle import ShuffleRR
from privsim.protocols.shuffle_sum import ShuffleSum
from privsim.transport.local import LocalTransport

PER_PARTY = LocalTransport(cohorts=False)


def same_arrays(a: object, b: object) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same_arrays, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


def assert_same_run(a: privsim.SimulationResult, b: privsim.SimulationResult) -> None:
    assert (a.messages, a.bits, a.rounds) == (b.messages, b.bits, b.rounds)
    assert same_arrays(a.estimate, b.estimate) and same_arrays(a.true_value, b.true_value)
    assert list(a.outputs) == list(b.outputs)
    assert all(same_arrays(a.outputs[p], b.outputs[p]) for p in a.outputs)
    assert (a.transcript is None) == (b.transcript is None)
    if a.transcript is not None:
        assert len(a.transcript) == len(b.transcript)
        for ra, rb in zip(a.transcript, b.transcript):
            assert set(ra) == set(rb)
            for d in ra:
                assert list(ra[d]) == list(rb[d]), f"receiver {d}: senders differ or are out of order"
                assert all(same_arrays(ra[d][s], rb[d][s]) for s in ra[d])
    assert list(a.draws) == list(b.draws)
    for p in a.draws:
        assert len(a.draws[p]) == len(b.draws[p]) and all(map(same_arrays, a.draws[p], b.draws[p]))


def assert_same_view(a: privsim.SimulationResult, b: privsim.SimulationResult, coalition: str) -> None:
    va, vb = a.view(coalition), b.view(coalition)
    assert va.coalition == vb.coalition and len(va.messages) == len(vb.messages)
    for ma, mb in zip(va.messages, vb.messages):
        assert ma[:3] == mb[:3] and same_arrays(ma[3], mb[3])
    assert set(va.randomness) == set(vb.randomness)
    assert all(len(va.randomness[m]) == len(vb.randomness[m]) and all(map(same_arrays, va.randomness[m],
                                                                          vb.randomness[m])) for m in va.randomness)
    assert set(va.outputs) == set(vb.outputs) and all(same_arrays(va.outputs[m], vb.outputs[m]) for m in va.outputs)
    assert all(same_arrays(va.inputs[m], vb.inputs[m]) for m in va.inputs)


NOISES = [dict(noise="none"), dict(noise="laplace", epsilon=1.0), dict(noise="discrete-gaussian", epsilon=1.0),
          dict(noise="skellam", epsilon=1.0), dict(noise="laplace", epsilon=0.5, broadcast=True)]


@pytest.mark.parametrize("params", NOISES, ids=lambda p: "-".join(map(str, p.values())))
@pytest.mark.parametrize("t", [0, 1, 3])
def test_secure_sum_with_cohorts_is_the_per_party_run_bit_for_bit(params: dict, t: int) -> None:
    proto = SecureSum(**params)
    x = (np.arange(23) * 7 % 2).tolist()
    for coalition in (None, "0", "2", "1,9", "C" if proto.has_curator else "22"):
        kw = dict(trials=6, seed=11, t=t, coalition=coalition)
        a, b = privsim.simulate(proto, x, **kw), privsim.simulate(proto, x, transport=PER_PARTY, **kw)
        assert_same_run(a, b)
        if coalition is not None:
            assert_same_view(a, b, coalition)


@pytest.mark.parametrize("params", [dict(noise="none"), dict(noise="laplace", epsilon=1.0),
                                    dict(noise="skellam", epsilon=1.0, broadcast=True), dict(levels=4)],
                         ids=lambda p: "-".join(map(str, p.values())))
@pytest.mark.parametrize("n,t", [(5, 3), (19, 2), (40, 5)])
def test_ck_sum_with_cohorts_is_the_per_party_run_bit_for_bit(params: dict, n: int, t: int) -> None:
    proto = CKSum(**params)
    x = (np.arange(n) * 5 % 2).tolist()
    for coalition in (None, "0", f"{n - 1}", "1,3"):
        kw = dict(trials=5, seed=21, t=t, coalition=coalition)
        a, b = privsim.simulate(proto, x, **kw), privsim.simulate(proto, x, transport=PER_PARTY, **kw)
        assert_same_run(a, b)
        if coalition is not None:
            assert_same_view(a, b, coalition)


@pytest.mark.parametrize("make, x", [
    (lambda: RandomizedResponseDistributed(epsilon=1.0), (np.arange(21) % 2).tolist()),
    (lambda: RandomizedResponseDistributed(epsilon=0.3), [1, 0, 1]),
    (lambda: ShuffleSum(epsilon=1.0), (np.arange(17) % 3 / 4).tolist()),
    (lambda: ShuffleSum(epsilon=0.5, precision=7), (np.arange(9) % 2).tolist()),
    (lambda: RandomizedResponse(epsilon=1.0), (np.arange(19) % 2).tolist()),
    (lambda: CentralLaplace(epsilon=1.0, broadcast=True), (np.arange(11) % 2).tolist()),
    (lambda: CentralGaussian(rho=0.5), (np.arange(8) % 2).tolist()),
    (lambda: ShuffleRR(epsilon=1.0), (np.arange(23) % 2).tolist()),
], ids=["rr-distributed", "rr-distributed-3", "shuffle-sum", "shuffle-sum-p7", "rr-local", "central-laplace-bc",
        "central-gaussian", "shuffle-rr"])
def test_rr_distributed_and_shuffle_sum_with_cohorts_are_the_per_party_run_bit_for_bit(make, x) -> None:
    proto, n = make(), len(x)
    assert proto.cohorts(n, 0)
    for coalition in (None, "0", f"{n - 1}", "1,2", "C" if proto.has_curator else "0,1"):
        kw = dict(trials=7, seed=31, coalition=coalition)
        a, b = privsim.simulate(proto, x, **kw), privsim.simulate(proto, x, transport=PER_PARTY, **kw)
        assert_same_run(a, b)
        if coalition is not None:
            assert_same_view(a, b, coalition)


@pytest.mark.parametrize("make, n", [
    (lambda: SecAgg(), 12), (lambda: SecAggPlus(), 30),
    (lambda: SecAggPlus(dropout="0.05", noise="discrete-gaussian"), 30),
    (lambda: SecAgg(dropout="3@masked-input,5@unmasking", noise="skellam"), 12),
    (lambda: SecAggPlus(dropout="2@share-keys,7@unmasking", noise="discrete-laplace", tolerate=0.1), 12),
], ids=["secagg", "secagg-plus", "plus-dropout-dgauss", "secagg-fixed-skellam", "plus-fixed-dlaplace"])
def test_secagg_with_cohorts_is_the_per_party_run_bit_for_bit(make, n: int) -> None:
    proto = make()
    assert proto.cohorts(n, 1) == {"clients": range(n)}
    x = (np.arange(n) % 2).tolist()
    for coalition in (None, "0", "C", "1,4", "C,2"):
        kw = dict(trials=5, seed=3, coalition=coalition)
        a, b = privsim.simulate(proto, x, **kw), privsim.simulate(proto, x, transport=PER_PARTY, **kw)
        assert_same_run(a, b)
        if coalition is not None:
            assert_same_view(a, b, coalition)


def test_secagg_aborts_alike_in_cohorts_and_per_party() -> None:
    # n = 30 with a tenth of the clients dropping: in trial 4 one client keeps too few share holders
    proto, x = SecAggPlus(dropout="0.1"), (np.arange(30) % 2).tolist()
    errors = []
    for transport in (LocalTransport(), PER_PARTY):
        with pytest.raises(PartyFailure) as exc:
            privsim.simulate(proto, x, trials=5, seed=3, transport=transport)
        errors.append(str(exc.value))
    assert errors[0] == errors[1] and "aborted at stage unmasking" in errors[0]


def test_cohort_inbox_from_each_reads_one_sender_per_member() -> None:
    box = CohortInbox(3, 2, [(0, np.array([4, 7]), np.arange(4).reshape(2, 2)),
                             (np.array([2, 1]), np.array([4, 4]), np.arange(10, 14).reshape(2, 2)),
                             (1, np.array(["C", 7], dtype=object), np.arange(20, 24).reshape(2, 2))])
    assert box.from_each(np.array([7, 4, 4])).tolist() == [[1, 11, 10], [3, 13, 12]]
    assert box.from_each(np.array([4, 7, 4])).tolist() == [[0, 21, 10], [2, 23, 12]]
    with pytest.raises(KeyError):
        box.from_each(np.array([4, 4, 7]))


def test_two_seeding_blocks_per_trial_inputs_and_named_parties_change_nothing() -> None:
    proto = SecureSum(noise="laplace", epsilon=1.0, broadcast=True)
    rng = np.random.default_rng(4)
    x = rng.integers(0, 2, size=(1100, 17))  # per-trial inputs; 1100 trials span two seeding blocks
    base = privsim.simulate(proto, x, trials=1100, seed=5, t=3, transport=PER_PARTY)
    for transport in (LocalTransport(), LocalTransport(solo=frozenset({2, 8}))):
        assert_same_run(privsim.simulate(proto, x, trials=1100, seed=5, t=3, transport=transport), base)
    assert_same_run(privsim.simulate(proto, x, trials=1100, seed=5, t=3, backend="asyncio"), base)


def test_a_cohort_run_has_cohort_tasks_and_a_per_party_run_none() -> None:
    proto = SecureSum(noise="none")
    plan = privsim.plan.plan_run(proto, [1] * 12, trials=2, seed=1, t=2, coalition="5")
    cohorts = LocalTransport()._cohorts(plan, plan.trial_inputs, None, StreamSeeder(1, 12, block_range(2)))
    assert {c.role: c.ids.tolist() for c in cohorts} == {"holders": [1, 2], "others": [3, 4, 6, 7, 8, 9, 10, 11]}
    assert PER_PARTY._cohorts(plan, plan.trial_inputs, None, StreamSeeder(1, 12, block_range(2))) == []


def test_a_role_split_into_several_tasks_changes_nothing(monkeypatch) -> None:
    """A role's members run as tasks of at most COHORT_VALUES values (members x trials):
    with a cap of 2 x 7, tasks of 2 members, and every run is the per-party run still."""
    import privsim.transport.local as local

    monkeypatch.setattr(local, "COHORT_VALUES", 14)
    plan = privsim.plan.plan_run(SecureSum(noise="none"), [1] * 12, trials=7, seed=1, t=2, coalition="5")
    cohorts = LocalTransport()._cohorts(plan, plan.trial_inputs, None, StreamSeeder(1, 12, block_range(7)))
    assert [(c.role, c.ids.tolist()) for c in cohorts] == [
        ("holders", [1, 2]), ("others", [3, 4]), ("others", [6, 7]), ("others", [8, 9]), ("others", [10, 11])]
    assert len({c.key for c in cohorts}) == len(cohorts)
    for proto, x in ((ShuffleRR(epsilon=1.0), (np.arange(23) % 2).tolist()),
                     (SecureSum(noise="laplace", epsilon=1.0), (np.arange(12) % 2).tolist()),
                     (CKSum(), (np.arange(13) % 2).tolist())):
        for coalition in (None, "1,2", "C" if proto.has_curator else "0"):
            kw = dict(trials=7, seed=32, coalition=coalition, t=1 if isinstance(proto, CKSum) else None)
            a, b = privsim.simulate(proto, x, **kw), privsim.simulate(proto, x, transport=PER_PARTY, **kw)
            assert_same_run(a, b)


class OffSchedule(SecureSum):
    """The secure sum whose non-holder cohort also sends to party t + 1 (off the schedule)."""

    name = "off-schedule"

    async def cohort(self, role, cctx):  # type: ignore[no-untyped-def]
        if role == "others":
            cctx.send(cctx.t + 1, cctx.input[:, [1]], members=np.array([1]))
        await super().cohort(role, cctx)


class Silent(SecureSum):
    """The secure sum whose non-holder cohort leaves holder 0 out."""

    name = "silent"

    async def cohort(self, role, cctx):  # type: ignore[no-untyped-def]
        if role != "others":
            return await super().cohort(role, cctx)
        for j in range(1, cctx.t + 1):
            cctx.send(j, np.zeros((cctx.trials, cctx.k), dtype=np.int64))
        await cctx.end_round()


class Misaddressed(SecureSum):
    """A cohort whose send_each names fewer receivers than it has members."""

    name = "misaddressed"

    async def cohort(self, role, cctx):  # type: ignore[no-untyped-def]
        cctx.send_each(np.zeros(cctx.k - 1, dtype=np.int64), np.zeros((cctx.trials, cctx.k), dtype=np.int64))


class Broken(SecureSum):
    name = "broken"

    async def cohort(self, role, cctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("no cohort today")


def test_the_schedule_holds_for_a_cohorts_messages_as_for_a_partys() -> None:
    x = [0, 1] * 5
    with pytest.raises(ScheduleViolation, match=r"message off the schedule \(round 1, sender 4, receiver 3\)"):
        privsim.simulate(OffSchedule(noise="none"), x, t=2, seed=1)
    with pytest.raises(ScheduleViolation, match=r"party 3 did not send its scheduled message to party 0"):
        privsim.simulate(Silent(noise="none"), x, t=2, seed=1)
    with pytest.raises(PartyFailure, match=r"cohort holders \(parties 1..2, 2 of them\) failed in round 1: "
                                           r"RuntimeError: no cohort today"):
        privsim.simulate(Broken(noise="none"), x, t=2, seed=1)
    with pytest.raises(PartyFailure, match=r"cohort \w+, round 1: send_each got receivers of shape "
                                           r"\((\d+),\) for (\d+) senders"):
        privsim.simulate(Misaddressed(noise="none"), x, t=2, seed=1)


def test_schedule_from_arrays_equals_the_schedule_from_pairs() -> None:
    n, t = 9, 3
    pairs = [(i, j) for i in range(n) for j in range(t + 1) if i != j]
    s, d = np.array(pairs).T
    a, b = Schedule(n, [pairs, [(1, 0)]]), Schedule(n, [(s[::-1].copy(), d[::-1].copy()), [(1, 0)]])
    assert [a.senders_in(r) for r in (1, 2)] == [b.senders_in(r) for r in (1, 2)]
    assert (a.messages, a.rounds) == (b.messages, b.rounds) and list(a.triples()) == list(b.triples())
    ids = np.array([2, 5, 6])
    want = sorted(p * (n + 1) + q for p, q in pairs if p in (2, 5, 6))
    assert a.pair_codes(1, ids).tolist() == want == b.pair_codes(1, ids).tolist()
    with pytest.raises(ParameterError, match="to itself"):
        Schedule(3, [(np.array([0, 1]), np.array([1, 1]))])
    with pytest.raises(ParameterError, match="does not exist"):
        Schedule(3, [(np.array([0]), np.array([3]))])
    with pytest.raises(ParameterError, match="2 senders and 1 receivers"):
        Schedule(3, [(np.array([0, 1]), np.array([2]))])


def test_cohort_rng_columns_are_the_members_own_streams() -> None:
    seeder = StreamSeeder(9, 6, block_range(1500))
    members = [1, 4, 5]
    cohort = CohortRNG([seeder.rng(p, 1500, record=False) for p in members])
    alone = [seeder.rng(p, 1500, record=False) for p in members]
    got = cohort.integers(0, 2**40, size=3), cohort.gamma(0.5, 2.0), cohort.normal(np.zeros((1500, 3)), 1.0)
    for j, rng in enumerate(alone):
        assert same_arrays(got[0][:, j], rng.integers(0, 2**40, size=3))
        assert same_arrays(got[1][:, j], rng.gamma(0.5, 2.0))
        assert same_arrays(got[2][:, j], rng.normal(np.zeros(1500), 1.0))


def test_one_block_cohort_draws_are_the_members_own_streams() -> None:
    """One seeding block, no tape: the cohort calls each member's Generator directly."""
    seeder = StreamSeeder(9, 6, block_range(7))
    members = [0, 2, 3, 5]
    cohort = CohortRNG([seeder.rng(p, 7, record=False) for p in members])
    assert cohort._direct is not None
    alone = [seeder.rng(p, 7, record=False) for p in members]
    got = cohort.integers(0, 2**34, size=(2, 3)), cohort.gamma(0.25, 3.0, size=2), cohort.integers(0, 1000)
    assert got[0].shape == (7, 4, 2, 3)
    for j, rng in enumerate(alone):
        assert got[0][:, j].flags.c_contiguous  # member-major: each member's draws one run, as its own
        assert same_arrays(got[0][:, j], rng.integers(0, 2**34, size=(2, 3)))
        assert same_arrays(got[1][:, j], rng.gamma(0.25, 3.0, size=2))
        assert same_arrays(got[2][:, j], rng.integers(0, 1000))


def test_cohort_of_generators_draws_the_members_own_streams() -> None:
    """A one-block, unrecorded cohort holds its members' Generators only: each column is the member's TrialRNG's."""
    seeder = StreamSeeder(11, 9, block_range(5))
    members = [0, 3, 4, 8]
    cohort = CohortRNG.of_generators(seeder.generators(members), 5)
    alone = [seeder.rng(p, 5, record=False) for p in members]
    per_member = np.arange(5 * 4, dtype=np.float64).reshape(5, 4)
    got = (cohort.gamma(0.1, 2.0, size=3), cohort.integers(0, 2**50), cohort.normal(per_member, 1.0),
           cohort.multinomial(10, [0.2, 0.3, 0.5], size=2))
    assert got[3].shape == (5, 4, 2, 3)
    for j, rng in enumerate(alone):
        assert same_arrays(got[0][:, j], rng.gamma(0.1, 2.0, size=3))
        assert same_arrays(got[1][:, j], rng.integers(0, 2**50))
        assert same_arrays(got[2][:, j], rng.normal(per_member[:, j], 1.0))
        assert same_arrays(got[3][:, j], rng.multinomial(10, [0.2, 0.3, 0.5], size=2))
    with pytest.raises(ValueError, match="one block"):
        StreamSeeder(11, 9, block_range(1500)).generators(members)


def test_generator_calls_stack_each_generators_own_call() -> None:
    for name, args, kwargs, size in [("gamma", (0.3, 2.0), {}, (4, 2)),
                                     ("integers", (0, 2**40), {"dtype": np.int64}, (3,)),
                                     ("integers", (-5, 2**33 - 5), {"dtype": np.int64, "endpoint": False}, (2, 2)),
                                     ("random", (), {}, ()), ("dirichlet", ([1.0, 2.0],), {}, (3,))]:
        got = generator_calls([np.random.default_rng(s) for s in range(3)], name, args, kwargs, size)
        for s in range(3):
            want = getattr(np.random.default_rng(s), name)(*args, size=size, **kwargs)
            assert same_arrays(got[s], want), name


@pytest.mark.parametrize("trials", [7, 1500])
def test_successive_draws_are_the_calls_one_after_another(trials: int) -> None:
    """successive(r, name, ...)[i] is the i-th of r calls, the stream left where they leave it, the tape
    one array per call: for a party (one seeding block or two), a cohort (direct or not), per-trial arguments too."""
    seeder = StreamSeeder(4, 5, block_range(trials))
    per_trial = np.linspace(0.5, 2.0, trials)[:, None] * np.ones((1, 3))
    for name, args in [("gamma", (0.2, per_trial)), ("normal", (per_trial, 2.0)), ("laplace", (0.0, 1.5)),
                       ("random", ()), ("exponential", (per_trial,))]:
        mine, theirs = seeder.rng(2, trials, record=True), seeder.rng(2, trials, record=True)
        got = mine.successive(3, name, *args, size=3)
        want = [getattr(theirs, name)(*args, size=3) for _ in range(3)]
        assert got.shape == (3, trials, 3) and all(same_arrays(got[i], want[i]) for i in range(3)), name
        assert same_arrays(mine.random(), theirs.random())
        assert len(mine.draws) == len(theirs.draws) and all(map(same_arrays, mine.draws, theirs.draws))
    members = [0, 2, 4]
    cohorts = [CohortRNG([seeder.rng(p, trials, record=False) for p in members])]
    if trials <= 1024:
        cohorts.append(CohortRNG.of_generators(seeder.generators(members), trials))
    for cohort in cohorts:
        scale = np.ones((trials, 3, 2)) * np.array([1.0, 2.0, 3.0])[None, :, None]  # per member
        got = cohort.successive(2, "gamma", 0.5, 2.0, size=2), cohort.successive(2, "normal", 0.0, scale, size=2)
        assert got[0].shape == got[1].shape == (2, trials, 3, 2)
        for j, p in enumerate(members):
            alone = seeder.rng(p, trials, record=False)
            for i in range(2):
                assert same_arrays(got[0][i, :, j], alone.gamma(0.5, 2.0, size=2))
            for i in range(2):
                assert same_arrays(got[1][i, :, j], alone.normal(0.0, scale[:, j], size=2))
    with pytest.raises(ValueError, match="not 'integers'"):
        seeder.rng(0, trials, record=False).successive(2, "integers", 0, 10)


def test_laplace_share_from_a_party_stream_is_two_gamma_draws() -> None:
    """A party's Laplace share takes its two Gamma draws in one call: the values of two calls, as before."""
    seeder = StreamSeeder(8, 3, block_range(1500))
    mine, theirs = seeder.rng(1, 1500, record=False), seeder.rng(1, 1500, record=False)
    got = laplace_share(mine, 2.0, 4, size=(2,))
    want = theirs.gamma(0.25, 2.0, size=(2,)) - theirs.gamma(0.25, 2.0, size=(2,))
    assert same_arrays(got, want) and same_arrays(mine.random(), theirs.random())


@pytest.mark.parametrize("entropy", [0, 29, 2**100 + 7])
def test_generate_state_is_numpys(entropy: int) -> None:
    for n_words in (1, 2, 3, 4, 5, 17, 4 * 3001):
        for key in [(0, 0), (1, 5), (0, 123456)]:
            seq = np.random.SeedSequence(entropy, spawn_key=key)
            assert same_arrays(generate_state(seq, n_words), seq.generate_state(n_words, np.uint64))
    seq = np.random.SeedSequence(entropy, pool_size=8)
    assert same_arrays(generate_state(seq, 9), seq.generate_state(9, np.uint64))


@pytest.mark.parametrize("k", range(31, 64))
def test_integers_read_from_the_words_are_numpys_integers(k: int) -> None:
    """generator_call's power-of-two spans give numpy's own values and leave the stream where numpy does."""
    for low, endpoint in [(0, False), (0, True), (7, False), (-(2**62), True), (-(2**63), False)]:
        high = low + 2**k - endpoint
        mine, theirs = np.random.default_rng(k), np.random.default_rng(k)
        try:
            want = theirs.integers(low, high, size=(3, 5), dtype=np.int64, endpoint=endpoint)
        except ValueError:  # out of int64's range: numpy refuses, and so do we (numpy's own path)
            with pytest.raises(ValueError):
                generator_call(mine, "integers", (low, high), {"dtype": np.int64, "endpoint": endpoint}, (3, 5))
            continue
        got = generator_call(mine, "integers", (low, high), {"dtype": np.int64, "endpoint": endpoint}, (3, 5))
        assert got.dtype == np.int64 and same_arrays(got, want), (low, endpoint)
        assert mine.random() == theirs.random()


def test_integers_read_from_the_words_in_every_call_shape() -> None:
    """integers(high), integers(low, None), integers(low, high=...), integers(low=..., high=...):
    numpy's values in each (a user's protocol may call it any of these ways)."""
    for args, kwargs in [((2**40,), {}), ((2**40, None), {}), ((0,), {"high": 2**40}), ((), {"low": 0, "high": 2**40}),
                         ((-(2**40), 2**40), {})]:
        mine, theirs = np.random.default_rng(5), np.random.default_rng(5)
        want = theirs.integers(*args, size=(4, 2), dtype=np.int64, **kwargs)
        got = generator_call(mine, "integers", args, {"dtype": np.int64, **kwargs}, (4, 2))
        assert same_arrays(got, want), (args, kwargs)
        assert mine.random() == theirs.random()


def test_cohort_inbox_sums_exactly_past_int64() -> None:
    q = 2**62
    values = np.full((2, 40, 1), q - 1, dtype=np.int64)  # 40 (q - 1) overflows int64 unless reduced in chunks
    box = CohortInbox(1, 2, [(0, np.arange(40), values[:, :, 0])])
    assert box.sum_mod(q).tolist() == [[(40 * (q - 1)) % q]] * 2
    assert box.counts().tolist() == [40]
    with pytest.raises(KeyError):
        box.from_party(41)


def test_the_resource_estimate_knows_cohorts():
    """A cohort member costs a kilobyte, not a task (privsim.resources): the estimate of the same
    run drops by exactly the members' difference in the model, a coalition's members and solo
    parties stay tasks, and the floor of a protocol with a cohort form stays below its estimate."""
    from privsim import resources as res
    from privsim.plan import plan_run

    n, t, trials = 20_000, 10, 4

    def est(transport: LocalTransport, coalition: object = None) -> res.Estimate:
        return res.estimate(plan_run(SecureSum(), n=n, t=t, trials=trials, record=coalition is not None,
                                     coalition=coalition, split=True, transport=transport))

    cohort, per_party = est(LocalTransport()), est(PER_PARTY)
    members = sum(len(ids) for _, ids in LocalTransport().cohort_members(
        plan_run(SecureSum(), n=n, t=t, trials=trials, record=False, split=True)))
    assert members == n - 1  # the holders 1..t and the others: every party but party 0
    peak = max(SecureSum().schedule(n, t).messages_per_round())
    saved = (members - 2) * res.PARTY_BYTES - members * res.COHORT_MEMBER_BYTES \
        + (peak * members // n) * (res.MESSAGE_BYTES - res.COHORT_MESSAGE_BYTES)  # two cohort tasks
    assert per_party.memory - cohort.memory == pytest.approx(saved, abs=res.MESSAGE_BYTES)
    assert cohort.seconds < per_party.seconds / 3
    # recorded and solo parties run as tasks: fewer members, a larger estimate
    coalition = est(LocalTransport(), coalition=tuple(range(1, t + 2)))
    solo = est(LocalTransport(solo=frozenset(range(100))))
    assert cohort.memory < solo.memory < per_party.memory and cohort.memory < coalition.memory
    assert res.floor_estimate(n, trials, cohorts=True).memory <= cohort.memory
    assert res.floor_estimate(n, trials).memory > res.floor_estimate(n, trials, cohorts=True).memory


def test_a_cohort_run_leaves_its_streams_to_reference_counting() -> None:
    """Nothing of a finished cohort run waits for the cyclic collector: a context held by the
    network that it holds would keep every member's Generator alive until a full collection."""
    import gc

    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        privsim.simulate(SecureSum(noise="laplace", epsilon=1.0), np.ones(300, dtype=np.int64), trials=2, seed=4,
                         t=3, record=False)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        kinds = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert not kinds & {"Generator", "PCG64", "CohortContext", "CohortRNG"}


def test_receivers_read_off_the_codes_equal_the_map() -> None:
    """A round given as arrays answers its first senders from its codes, then from the
    sender -> receivers map; both give the receivers in canonical order."""
    from privsim.network import schedule as sched

    n = sched._LOOKUPS + 40
    rng = np.random.default_rng(8)
    s = rng.integers(0, n, 4000)
    d = (s + rng.integers(1, n, 4000)) % n
    got = Schedule(n, [(s, d)])
    want = Schedule(n, [list(zip(s.tolist(), d.tolist()))])
    for p in range(n):
        assert got.receivers(1, p) == want.receivers(1, p)
    assert got.senders_in(1) == want.senders_in(1) and got.messages == want.messages
    assert got.receivers(2, 0) == [] and got.rounds == 1
