"""Every party (and the curator) a task of this process, on trio or asyncio.

The network is :class:`~privsim.network.SyncNetwork` (or its asyncio twin); the parties
run in one nursery (:func:`privsim.parties.runner.run_parties`); docs/architecture.md,
"Where a message moves" and "Runtimes".
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privsim.network.backend import network_class
from privsim.network.messages import seal
from privsim.network.schedule import CURATOR, party_ids
from privsim.parties.cohort import CohortContext, CohortRNG
from privsim.parties.context import PartyContext
from privsim.parties.rng import StreamSeeder, block_range
from privsim.parties.runner import first_error, run_parties
from privsim.plan import Transport, TransportRun

if TYPE_CHECKING:
    from privsim.plan import RunPlan

__all__ = ["LocalTransport"]


#: A cohort task holds at most this many values per array (members x trials, at least 2
#: members): a step's arrays stay in cache (1 M int64 values, 8 MB).
COHORT_VALUES = 1 << 20


@dataclass(frozen=True)
class LocalTransport(Transport):
    """The in-process engine (the default transport, ``"local"``).

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> privsim.simulate(RandomizedResponse(), [0, 1], seed=1, transport=LocalTransport()).messages
    2
    """

    name: ClassVar[str] = "local"
    #: Run the parties of a protocol's cohort roles (:meth:`~privsim.Protocol.cohorts`), other
    #: than a recorded coalition's, as one task per role (docs/architecture.md, "Cohorts"); ``False``: every
    #: party its own task. The results, views and counts are the same for a seed either way.
    cohorts: bool = True
    #: Parties that run as their own tasks whatever their role (besides the recorded ones).
    solo: frozenset = frozenset()

    def execute(self, plan: RunPlan) -> TransportRun:
        """Run ``plan`` (one batch) with every party a task of this process."""
        trials, recorded, x = plan.trials, plan.recorded, plan.trial_inputs
        net = network_class(plan.backend)(plan.schedule, trials, record=recorded, on_round=plan.on_round)
        seeder = StreamSeeder(plan.entropy, plan.n, block_range(trials, plan.block_offset))

        def rng_factory(pid: int | str) -> Any:
            return seeder.rng(pid, trials, record=recorded == "all" or (recorded is not None and pid in recorded))

        # Hundreds of thousands of live contexts and tasks make the cyclic GC rescan everything
        # again and again (2x the run time at n = 10^5); nothing cyclic needs collecting mid-run.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        ids = party_ids(plan.n, plan.protocol.has_curator)
        seal(x)  # the engine's own copy: each party's input is a read-only slice of it, not a copy
        cohorts = self._cohorts(plan, x, net, seeder)
        alone = np.ones(plan.n, dtype=bool)
        for c in cohorts:
            alone[c.ids] = False
        own = [*np.flatnonzero(alone).tolist(), *ids[plan.n:]]  # and the curator, if any
        outboxes = net.attach(own, cohorts)
        contexts = [PartyContext(pid, plan.n, plan.t, trials, None if pid == CURATOR else x[:, pid], net,
                                 rng_factory, outboxes[pid]) for pid in own]
        try:
            run_parties(plan.backend, plan.protocol, contexts, net, cohorts)
            return self._collect(plan, ids, net, contexts, cohorts)
        except BaseExceptionGroup as group:
            raise first_error(group) from None
        finally:
            # The members' streams and the contexts go (by reference counting) before the
            # collector runs again: it would otherwise walk all of them once (60 ms at n = 10^5).
            contexts = cohorts = None  # type: ignore[assignment]
            if gc_was_enabled:
                gc.enable()

    def _collect(self, plan: RunPlan, ids: list, net: Any, contexts: list[PartyContext],
                 cohorts: list[CohortContext]) -> TransportRun:
        """What the run produced: the parties' outputs and done rounds, the recorded random tapes, the counts;
        outputs and tapes in canonical id order, as the per-party run has them."""
        outputs = {c.id: c._output for c in contexts if c._output_round is not None}
        done_rounds = {c.id: c._done_round for c in contexts}
        rngs = {c.id: c._rng for c in contexts if c._rng is not None}
        for c in cohorts:
            members = c.ids.tolist()
            if c.outputs is not None:
                outputs.update(zip(members, (c.outputs[:, j] for j in range(c.k))))
            done_rounds.update(dict.fromkeys(members, c._done_round))
            if c._rng is not None:
                rngs.update(zip(members, c._rng._rngs))
        return TransportRun(
            outputs={p: outputs[p] for p in ids if p in outputs},
            transcript=net.transcript if plan.recorded is not None else None,
            draws={p: rngs[p].draws for p in ids if p in rngs and rngs[p].draws is not None},
            messages=net.messages, bits=net.bits, rounds=net.rounds_used, done_rounds=done_rounds)

    def cohort_members(self, plan: RunPlan) -> list[tuple[str, np.ndarray]]:
        """Each cohort role's parties outside the recorded coalition and ``solo`` (ascending),
        for the roles with two or more such parties; none with ``cohorts=False``.

        >>> from privsim.plan import plan_run
        >>> from privsim.protocols.secure_sum import SecureSum
        >>> plan = plan_run(SecureSum(), n=6, t=1, record=(0,))
        >>> [(role, ids.tolist()) for role, ids in LocalTransport().cohort_members(plan)]
        [('others', [2, 3, 4, 5])]
        """
        if not self.cohorts:
            return []
        roles = plan.protocol.cohort_roles(plan.n, plan.t)
        keep_all = plan.recorded == "all"  # every party's messages and tapes are kept, cohorts' too
        solo = (set() if keep_all or plan.recorded is None else set(plan.recorded)) | set(self.solo)
        found = ((role, np.array(sorted(set(members) - solo), dtype=np.int64)) for role, members in roles.items())
        return [(role, ids) for role, ids in found if len(ids) >= 2]  # one party alone is just a party

    def _cohorts(self, plan: RunPlan, x: np.ndarray, net: Any, seeder: StreamSeeder) -> list[CohortContext]:
        """The cohorts of this run (:meth:`cohort_members`), each with its members' streams; a
        role of more than :data:`COHORT_VALUES` / trials members as several cohorts."""
        trials, keep_all, out = plan.trials, plan.recorded == "all", []
        step = max(2, COHORT_VALUES // max(trials, 1))
        for role, members in self.cohort_members(plan):
            for start in range(0, len(members), step):
                ids = members[start:start + step]

                def rngs(ids: np.ndarray = ids) -> CohortRNG:
                    if len(seeder.blocks) == 1 and not keep_all:  # each member's stream is one Generator
                        return CohortRNG.of_generators(seeder.generators(ids.tolist()), trials)
                    return CohortRNG([seeder.rng(p, trials, record=keep_all) for p in ids.tolist()])

                out.append(CohortContext(role, ids, plan.n, plan.t, trials, _columns(x, ids), net, rngs))
        return out


def _columns(x: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The members' inputs ``x[:, ids]`` (ids ascending and distinct), read-only: a view when
    the ids are a run of consecutive parties (no copy of a cohort's inputs), else one read-only copy.

    >>> x = np.arange(12).reshape(2, 6); x.flags.writeable = False
    >>> np.shares_memory(_columns(x, np.array([2, 3, 4])), x), _columns(x, np.array([1, 5])).flags.writeable
    (True, False)
    """
    if len(ids) and ids[-1] - ids[0] + 1 == len(ids):
        return x[:, int(ids[0]):int(ids[-1]) + 1]
    out = x[:, ids]
    out.flags.writeable = False
    return out
