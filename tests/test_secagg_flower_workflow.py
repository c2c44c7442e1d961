"""privsim's SecAgg+ message counts against Flower's own SecAgg+ workflow, run in-process.

Flower's server side (``flwr.server.workflow.SecAggPlusWorkflow``) runs against a small
in-process grid (:class:`FakeGrid`) that hands every instruction, after a copy standing for
the wire, to a client app wrapped by Flower's ``secaggplus_mod``, and returns the replies;
it records every message by Flower stage (the ``stage`` of the instruction's
``secaggplus_configs`` record; a reply belongs to the stage of its instruction). A
dropped client takes the instruction of its stage and never replies (the grid returns
what came, as after the workflow's timeout). Flower's ring is set to privsim's graph:
the workflow's shuffle of node ids is replaced by the ring order of privsim's relabelled
Harary graph, and the test checks that every client is sent exactly privsim's neighbours'
keys. privsim's counts are those of ``privsim.simulate(SecAggPlus(k=k), ..., t=t)``
(one trial), read round by round from the transcript (``Protocol.round_stages`` names
each round's stage); a message is present unless it is the absence marker (all -1).

Same setting: privsim's degree k and threshold t + 1 are Flower's ``num_shares = k + 1``
(a client keeps one of its shares) and ``reconstruction_threshold = t + 1``.

The mapping (every Flower message goes through the server; Flower stage: instructions
server -> clients, replies clients -> server):

======================  ===================================  =========================================
Flower stage            instructions (server -> client)      replies (client -> server)
======================  ===================================  =========================================
setup                   n configurations: no privsim         round 1, advertise-keys (one each)
                        message (its parameters are public)
share_keys              round 2, keys back (one each)        round 3, share-keys: a reply bundles its
                                                             sender's ciphertexts, one per privsim
                                                             share message (same sender -> receiver
                                                             pairs)
collect_masked_vectors  the relay's second leg: one per      round 4, masked-input (one each)
                        client, bundling the ciphertexts
                        addressed to it (no privsim
                        message: privsim delivers round 3
                        on the private channel u -> v)
unmask                  round 5, unmasking (survivors)       round 6, unmasking (shares): the same
                                                             (holder, owner) share pairs
======================  ===================================  =========================================

Without dropouts Flower sends 8n messages and privsim n(k + 5): Flower's count is
privsim's minus the n k share messages, plus the 2n bundled messages that relay them
(up and down), plus the n setup instructions.

With dropouts (an error reply counts as received): a Flower reply is a privsim message
present at the matching round, and an uploaded ciphertext a present round-3 message.
privsim's schedule is oblivious, so its server sends to all n clients every time and a
dropped client's messages travel as absences (``absent_messages``), whereas Flower
instructs, at each stage, only the clients that replied at the previous one, and
forwards only the ciphertexts addressed to clients that replied at share_keys. A client
that stops before masked-input (Flower: before collect_masked_vectors) halts Flower's
workflow at unmask, where privsim releases the survivors' sum: Flower asks every holder
for a share of every sampled client outside the survivors (not only of those that shared
keys, U2 minus U3 in Bell et al.), holders that never received one fail, and the server
needs t + 1 shares of every sampled client.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import flwr.server.workflow.secure_aggregation.secaggplus_workflow as secaggplus_workflow
import numpy as np
import pytest
from flwr.app import ConfigRecord, Context, Error, Message, Metadata, RecordDict
from flwr.client.mod import secaggplus_mod
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.common.constant import ErrorCode
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
from flwr.compat.common import recorddict_compat as compat
from flwr.server.client_manager import SimpleClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.strategy import FedAvg
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey
from flwr.supercore.task_identity import TaskIdentity

import privsim
from privsim.network.schedule import CURATOR
from privsim.protocols.secagg import ABSENT, SecAggPlus

NODE = 1000  # privsim client u is Flower node NODE + u
SETUP, SHARE, COLLECT, UNMASK = Stage.all()
CLIP = 8.0  # Flower's clipping range: integer inputs in [0, 7] quantize exactly


# ---------------------------------------------------------------------------------------------- Flower, in-process
class Proxy(ClientProxy):
    """A client proxy that only names its node (the workflow reaches clients through the grid)."""

    def __init__(self, node_id: int) -> None:
        super().__init__(str(node_id))
        self.node_id = node_id

    def get_properties(self, *args: Any) -> Any:
        raise NotImplementedError

    get_parameters = fit = evaluate = reconnect = get_properties


@dataclass
class FakeGrid:
    """The Grid calls of ``SecAggPlusWorkflow`` (``send_and_receive`` only), delivered to clients in-process."""

    apps: dict[int, tuple[Any, Context]]
    drop: dict[int, str]  # node id -> the Flower stage whose instruction it takes and never answers
    sent: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # stage -> instructed nodes
    replied: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # stage -> repliers
    failed: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # stage -> error repliers
    keys_to: dict[int, set[int]] = field(default_factory=dict)  # share_keys: whose keys each node is sent
    uploaded: list[tuple[int, int]] = field(default_factory=list)  # share_keys replies: (src, dst) ciphertexts
    forwarded: list[tuple[int, int]] = field(default_factory=list)  # collect instructions: (src, dst)
    survivors_to: dict[int, tuple[set[int], set[int]]] = field(default_factory=dict)  # unmask: (active, dead)
    shares: list[tuple[int, int]] = field(default_factory=list)  # unmask replies: (holder, owner)
    ids: Any = field(default_factory=lambda: itertools.count(1))

    def send_and_receive(self, messages: Any, *, timeout: float | None = None) -> list[Message]:
        replies = []
        for msg in messages:
            dst, cfg = msg.metadata.dst_node_id, msg.content.config_records[RECORD_KEY_CONFIGS]
            stage = str(cfg[Key.STAGE])
            self.sent[stage].append(dst)
            if stage == SHARE:
                self.keys_to[dst] = {int(k) for k in cfg if k != Key.STAGE}
            elif stage == COLLECT:
                self.forwarded += [(int(s), dst) for s in cfg[Key.SOURCE_LIST]]
            elif stage == UNMASK:
                self.survivors_to[dst] = (set(cfg[Key.ACTIVE_NODE_ID_LIST]), set(cfg[Key.DEAD_NODE_ID_LIST]))
            if dst in self.drop and Stage.all().index(stage) >= Stage.all().index(self.drop[dst]):
                continue  # gone: the instruction reached it, no reply comes
            md = msg.metadata  # the SuperLink's delivery: a message id, and a copy of the content (the wire)
            delivered = Message(metadata=Metadata(
                run_id=md.run_id, message_id=f"m{next(self.ids)}", src_node_id=md.src_node_id, dst_node_id=dst,
                reply_to_message_id="", group_id=md.group_id, created_at=time.time(), ttl=md.ttl,
                message_type=md.message_type), content=copy.deepcopy(msg.content))
            app, ctx = self.apps[dst]
            try:
                reply = secaggplus_mod(delivered, ctx, app)
            except Exception as exc:  # what a ClientApp that raised sends back
                reply = Message(Error(ErrorCode.CLIENT_APP_RAISED_EXCEPTION, repr(exc)), reply_to=delivered)
                self.failed[stage].append(dst)
            else:
                self.replied[stage].append(dst)
                res = reply.content.config_records[RECORD_KEY_CONFIGS]
                if stage == SHARE:
                    self.uploaded += [(dst, int(d)) for d in res[Key.DESTINATION_LIST]]
                elif stage == UNMASK:
                    self.shares += [(dst, int(o)) for o in res[Key.NODE_ID_LIST]]
            replies.append(reply)
        return replies

    def messages(self) -> int:
        return sum(len(v) for v in self.sent.values()) + sum(len(v) for v in (*self.replied.values(),
                                                                                *self.failed.values()))


def client_app(value: float) -> Any:
    """A ClientApp's training step: returns ``[value]``, one example, as Flower's FitRes."""
    def train(msg: Message, ctx: Context) -> Message:
        fitres = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([np.array([value])]), 1, {})
        return Message(compat.fitres_to_recorddict(fitres, keep_input=True), reply_to=msg)
    return train


def ring_order(nb: list[list[int]]) -> list[int]:
    """A cyclic order of the clients in which each one's neighbours are the k/2 on each side (Flower's ring)."""
    n, half = len(nb), len(nb[0]) // 2
    adj = [set(v) for v in nb]

    def extend(order: list[int]) -> list[int] | None:
        if len(order) == n:
            ok = all(adj[order[i]] == {order[(i + d) % n] for d in range(-half, half + 1) if d} for i in range(n))
            return order if ok else None
        for v in sorted(adj[order[-1]] - set(order)):
            if all(w in adj[v] for w in order[-half:]):
                found = extend([*order, v])
                if found:
                    return found
        return None

    found = extend([0])
    assert found is not None, "privsim's graph is not a relabelled Harary ring"
    return found


def run_flower(monkeypatch: pytest.MonkeyPatch, values: np.ndarray, nb: list[list[int]], t: int,
               drop: dict[int, str]) -> tuple[FakeGrid, np.ndarray]:
    """Flower's SecAgg+ workflow on ``values`` over privsim's graph ``nb`` (threshold t + 1); the grid and
    the server's parameters after the round (zeros if the workflow halted)."""
    n, k = len(values), len(nb[0])
    for attr in ("_task_id", "_run_id", "_node_id"):  # what Flower's ServerApp runtime sets before a workflow
        monkeypatch.setattr(TaskIdentity, attr, 1)
    order = [NODE + u for u in ring_order(nb)]

    def shuffle(ids: list[int]) -> None:
        assert sorted(ids) == sorted(order)
        ids[:] = order

    monkeypatch.setattr(secaggplus_workflow, "random", SimpleNamespace(shuffle=shuffle))
    manager = SimpleClientManager()
    apps = {}
    for u in range(n):
        manager.register(Proxy(NODE + u))
        apps[NODE + u] = (client_app(float(values[u])),
                          Context(run_id=1, node_id=NODE + u, node_config={}, state=RecordDict(), run_config={}))
    server = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={})
    context = LegacyContext(server, strategy=FedAvg(min_fit_clients=n, min_available_clients=n),
                            client_manager=manager)
    context.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord({WorkflowKey.CURRENT_ROUND: 1})
    start = compat.parameters_to_arrayrecord(ndarrays_to_parameters([np.zeros(1)]), keep_input=True)
    context.state.array_records[MAIN_PARAMS_RECORD] = start
    grid = FakeGrid(apps, drop)
    workflow = SecAggPlusWorkflow(k + 1, t + 1, max_weight=1.0, clipping_range=CLIP, timeout=10.0)
    workflow(grid, context)  # type: ignore[arg-type]
    out = compat.arrayrecord_to_parameters(context.state.array_records[MAIN_PARAMS_RECORD], keep_input=True)
    return grid, parameters_to_ndarrays(out)[0]


# ---------------------------------------------------------------------------------------------- privsim, per round
def run_privsim(proto: SecAggPlus, values: np.ndarray, t: int) -> tuple[Any, dict[str, list]]:
    """One trial; ``stage -> [(sender, receiver, value, present)]`` for each round, by ``round_stages``."""
    res = privsim.simulate(proto, values.astype(np.int64), trials=1, seed=11, t=t)
    stages = proto.round_stages(len(values), t)
    assert len(stages) == len(res.transcript) == res.rounds
    rounds = {}
    for stage, inboxes in zip(stages, res.transcript):
        rounds[stage] = [(s, d, np.asarray(v)[0], not (np.asarray(v)[0] == ABSENT).all())
                         for d, inbox in inboxes.items() for s, v in inbox.items()]
    return res, rounds


def node(p: int | str) -> int | str:
    return p if p == CURATOR else NODE + int(p)


def check_mapping(grid: FakeGrid, rounds: dict[str, list], nb: list[list[int]], until: str = UNMASK) -> None:
    """The mapping of the module docstring, stage by stage up to ``until``, dropouts included."""
    n = len(nb)
    present = {stage: [m for m in msgs if m[3]] for stage, msgs in rounds.items()}
    everyone = sorted(NODE + u for u in range(n))
    # setup: n configurations, none in privsim; the public keys are privsim's round 1
    assert sorted(grid.sent[SETUP]) == everyone
    assert sorted(grid.replied[SETUP]) == sorted(node(s) for s, d, _, _ in present["advertise-keys"])
    assert all(d == CURATOR for _, d, _, _ in rounds["advertise-keys"]) and len(rounds["advertise-keys"]) == n
    # share_keys: the keys back go to every client in privsim, to the setup repliers in Flower
    assert sorted(node(d) for _, d, _, _ in rounds["advertise-keys (keys back)"]) == everyone
    assert sorted(grid.sent[SHARE]) == sorted(grid.replied[SETUP])
    for u in range(n):  # the same graph: each client is sent its own and its live neighbours' keys
        if NODE + u in grid.keys_to:
            assert grid.keys_to[NODE + u] == {NODE + v for v in [u, *nb[u]] if NODE + v in grid.replied[SETUP]}
    # share-keys: one ciphertext per privsim share message, bundled by sender
    pairs = sorted((node(s), node(d)) for s, d, _, _ in present["share-keys"])
    assert sorted(grid.uploaded) == pairs
    assert sorted(grid.replied[SHARE]) == sorted({s for s, _ in pairs})
    assert len(rounds["share-keys"]) == sum(len(v) for v in nb)
    # collect_masked_vectors: the relay's second leg, bundled by receiver; the masked inputs are round 4
    assert sorted(grid.sent[COLLECT]) == sorted(grid.replied[SHARE])
    assert sorted(grid.forwarded) == sorted((s, d) for s, d in pairs if d in grid.replied[SHARE])
    assert sorted(grid.replied[COLLECT]) == sorted(node(s) for s, d, _, _ in present["masked-input"])
    if until != UNMASK:
        return
    # unmask: the survivors (Flower: to the survivors only, as lists of ids), then the shares
    assert sorted(grid.sent[UNMASK]) == sorted(grid.replied[COLLECT])
    assert len(rounds["unmasking (survivors)"]) == n
    for _, d, value, _ in rounds["unmasking (survivors)"]:
        holders = [NODE + w for w in [d, *nb[d]]]
        if NODE + d in grid.survivors_to:
            active, dead = grid.survivors_to[NODE + d]
            assert active == {h for h, got in zip(holders, value) if got == 1}
            assert dead == {h for h, got in zip(holders, value) if got == 0}
    assert sorted(grid.replied[UNMASK]) == sorted(node(s) for s, d, _, _ in present["unmasking (shares)"])
    assert sorted(grid.shares) == sorted((node(s), NODE + w) for s, _, value, ok in rounds["unmasking (shares)"]
                                         if ok for w, v in zip([s, *nb[s]], value) if v != ABSENT)


def absent_from_flower(grid: FakeGrid, n: int, k: int) -> int:
    """privsim's ``absent_messages`` from Flower's replies: the client messages of privsim's schedule
    (n per client round, n k shares) that Flower did not receive (an error reply is received)."""
    got = sum(len(grid.replied[s]) + len(grid.failed[s]) for s in (SETUP, COLLECT, UNMASK))
    return 3 * n - got + n * k - len(grid.uploaded)


# ---------------------------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("n, k, t", [(8, 4, 2), (12, 6, 3), (16, 4, 2), (9, 8, 4)])
def test_per_stage_counts_equal_flowers_workflow(monkeypatch, n, k, t):
    values = np.random.default_rng(np.random.SeedSequence([28, n, k])).integers(0, 8, n)
    proto = SecAggPlus(k=k, max_input=7, graph_seed=n)
    nb = proto.neighbours(n)
    assert all(len(v) == k for v in nb)
    grid, released = run_flower(monkeypatch, values, nb, t, {})
    res, rounds = run_privsim(proto, values, t)
    check_mapping(grid, rounds, nb)
    counts = {s: (len(grid.sent[s]), len(grid.replied[s]), len(grid.failed[s])) for s in Stage.all()}
    assert counts == {s: (n, n, 0) for s in Stage.all()}
    assert len(grid.uploaded) == len(grid.forwarded) == n * k == len(rounds["share-keys"])
    assert len(grid.shares) == n * (k + 1)
    assert res.messages == n * (k + 5) and grid.messages() == 8 * n
    assert grid.messages() == res.messages - len(rounds["share-keys"]) + len(grid.replied[SHARE]) \
        + len(grid.sent[COLLECT]) + len(grid.sent[SETUP])
    # both completed and released the sum (Flower: its mean, one example each)
    assert res.estimate[0] == res.true_value[0] == values.sum()
    assert abs(released[0] * n - values.sum()) < 1e-6 * n


def test_dropouts_at_masked_input_and_unmasking_give_the_same_counts(monkeypatch):
    n, k, t = 12, 6, 2
    drop = {3: "masked-input", 5: "unmasking", 9: "masked-input"}
    values = np.random.default_rng(np.random.SeedSequence([28, len(drop)])).integers(0, 8, n)
    proto = SecAggPlus(k=k, max_input=7, graph_seed=5, dropout=",".join(f"{u}@{s}" for u, s in drop.items()))
    nb = proto.neighbours(n)
    flower_stage = {"masked-input": COLLECT, "unmasking": UNMASK}
    grid, released = run_flower(monkeypatch, values, nb, t, {NODE + u: flower_stage[s] for u, s in drop.items()})
    res, rounds = run_privsim(proto, values, t)
    check_mapping(grid, rounds, nb)
    before = [u for u, s in drop.items() if s == "masked-input"]
    lost = len(before) + len(drop)  # a client that stops at masked-input misses the unmasking too
    assert [len(grid.replied[s]) for s in Stage.all()] == [n, n, n - len(before), n - len(drop)]
    assert [len(grid.sent[s]) for s in Stage.all()] == [n, n, n, n - len(before)]
    assert not any(grid.failed.values())
    absent = proto.run_counts(res.outputs, n, t)["absent_messages"][0]
    assert absent == absent_from_flower(grid, n, k) == lost
    survivors = [u for u in range(n) if u not in before]
    assert res.estimate[0] == res.true_value[0] == values[survivors].sum()
    assert abs(released[0] * len(survivors) - values[survivors].sum()) < 1e-6 * n


@pytest.mark.parametrize("stage", ["advertise-keys", "share-keys"])
def test_a_dropout_before_masked_input_halts_flowers_workflow_where_privsim_releases_the_sum(monkeypatch, stage):
    n, k, t, w = 10, 4, 2, 3
    values = np.random.default_rng(np.random.SeedSequence([28, 3])).integers(0, 8, n)
    proto = SecAggPlus(k=k, max_input=7, graph_seed=2, dropout=f"{w}@{stage}")
    nb = proto.neighbours(n)
    grid, released = run_flower(monkeypatch, values, nb, t, {NODE + w: {"advertise-keys": SETUP}.get(stage, SHARE)})
    res, rounds = run_privsim(proto, values, t)
    check_mapping(grid, rounds, nb, until=COLLECT)
    # privsim: w's secrets are not needed (nobody masked with it); the survivors' sum comes out
    survivors = [u for u in range(n) if u != w]
    assert res.estimate[0] == res.true_value[0] == values[survivors].sum()
    absent = proto.run_counts(res.outputs, n, t)["absent_messages"][0]
    assert absent == absent_from_flower(grid, n, k)
    # Flower: unmask lists w as dead to its neighbours, who hold no share of w's key and fail; no release
    assert sorted(grid.sent[UNMASK]) == sorted(NODE + u for u in survivors)
    assert all(NODE + w in grid.survivors_to[NODE + v][1] for v in nb[w])
    assert sorted(grid.failed[UNMASK]) == sorted(NODE + v for v in nb[w])
    assert released.tolist() == [0.0]
