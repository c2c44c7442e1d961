"""Every party (and the curator) a task of this process, on trio or asyncio.

The network is :class:`~privsim.network.SyncNetwork` (or its asyncio twin); the parties
run in one nursery (:func:`privsim.parties.runner.run_parties`); docs/architecture.md,
"Where a message moves" and "Runtimes".
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from privsim.network.backend import network_class
from privsim.network.messages import seal
from privsim.network.schedule import CURATOR, party_ids
from privsim.parties.context import PartyContext
from privsim.parties.rng import StreamSeeder, block_range
from privsim.parties.runner import first_error, run_parties
from privsim.transport.base import Transport, TransportRun

if TYPE_CHECKING:
    from privsim.plan import RunPlan

__all__ = ["LocalTransport"]


@dataclass(frozen=True)
class LocalTransport(Transport):
    """The in-process engine (the default transport, ``"local"``).

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> privsim.simulate(RandomizedResponse(), [0, 1], seed=1, transport=LocalTransport()).messages
    2
    """

    name: ClassVar[str] = "local"

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
        outboxes = net.attach(ids)
        contexts = [PartyContext(pid, plan.n, plan.t, trials, None if pid == CURATOR else x[:, pid], net,
                                 rng_factory, outboxes[pid]) for pid in ids]
        try:
            run_parties(plan.backend, plan.protocol, contexts, net)
        except BaseExceptionGroup as group:
            raise first_error(group) from None
        finally:
            if gc_was_enabled:
                gc.enable()
        return TransportRun(
            outputs={c.id: c._output for c in contexts if c._has_output},
            transcript=net.transcript if recorded is not None else None,
            draws={c.id: c._rng.draws for c in contexts if c._rng is not None and c._rng.draws is not None},
            messages=net.messages, bits=net.bits, rounds=net.rounds_used,
            done_rounds={c.id: c._done_round for c in contexts})
