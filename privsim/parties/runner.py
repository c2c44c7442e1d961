"""Run party routines: one party's routine with its failure named, and every party of a run.

Both runtimes use this module: the in-process engine (:mod:`privsim.transport.local`, on
trio or asyncio) and a party process over TCP (:mod:`privsim.transport.party`).

An interruption (:func:`privsim.interrupts.interrupt`, called by the ``privsim`` command's
SIGINT/SIGTERM handler) never raises inside a loop's machinery: while :func:`run_parties`
runs, it cancels the run (trio's cancel scope, asyncio's main task, from the signal handler
through the loop's thread-safe entry), the parties unwind through cancellation and
:class:`~privsim.interrupts.Interrupted` is raised once the loop has returned.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from privsim.errors import PartyFailure, PrivsimError
from privsim.interrupts import cancellable, on_cancel
from privsim.network.schedule import id_key
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext, PartyNetwork, _who

if TYPE_CHECKING:
    from privsim.network.network import SyncNetwork

T = TypeVar("T")

__all__ = ["first_error", "run_cancellable", "run_cohort", "run_parties", "run_party"]


async def run_party(routine: Any, ctx: PartyContext, net: PartyNetwork) -> None:
    """Await ``routine(ctx)``; a failure that is not privsim's becomes a :class:`PartyFailure`
    naming the party and the round. When the routine returns, the party departs ``net``.

    Examples
    --------
    :func:`run_parties` starts one of these per party.
    """
    try:
        await routine(ctx)
    except (PrivsimError, trio.Cancelled):
        raise
    except Exception as exc:
        hint = ""
        if isinstance(exc, ValueError) and "read-only" in str(exc):
            hint = ("; received messages and inputs are read-only (a view is what was sent): "
                    "copy before changing, e.g. np.array(value)")
        elif isinstance(exc, RuntimeError) and "bad yield" in str(exc) and "trio" in str(exc):
            hint = ("; the party awaited a trio primitive under the asyncio backend: use "
                    "--backend trio (the default) or asyncio's own primitives")
        raise PartyFailure(f"{_who(ctx.id)} failed in round {ctx.round}: {type(exc).__name__}: {exc}{hint}", ctx.id,
                           ctx.round) from exc
    ctx._done_round = ctx.round
    net.depart(ctx.id)


async def run_cohort(protocol: Any, cctx: CohortContext, net: PartyNetwork) -> None:
    """Await ``protocol.cohort(role, cctx)`` (as :func:`run_party` does a party's routine):
    a failure names the cohort, its members and the round; when it returns, the cohort departs.

    Examples
    --------
    :func:`run_parties` starts one of these per cohort (``tests/test_cohorts.py`` shows the
    failure it reports).
    """
    try:
        await protocol.cohort(cctx.role, cctx)
    except (PrivsimError, trio.Cancelled):
        raise
    except Exception as exc:
        ids = cctx.ids
        raise PartyFailure(f"cohort {cctx.role} (parties {ids[0]}..{ids[-1]}, {len(ids)} of them) failed in round "
                           f"{cctx.round}: {type(exc).__name__}: {exc}", int(ids[0]), cctx.round) from exc
    cctx._done_round = cctx.round
    net.depart(cctx.key)


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The error a failed run reports: the :class:`PartyFailure` at the earliest round (the
    lowest party id among equals), else the first privsim error, else the first error.

    >>> first_error(BaseExceptionGroup("run", [ValueError("x"), PartyFailure("late", 1, 3),
    ...                                        PartyFailure("early", 2, 1)]))
    PartyFailure('early')
    """
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        else:
            leaves.append(e)

    walk(group)
    failures = [e for e in leaves if isinstance(e, PartyFailure) and e.round is not None]
    if failures:
        return min(failures, key=lambda e: (e.round, id_key(e.party)))  # type: ignore[arg-type]
    for kind in (PrivsimError, Exception):
        for e in leaves:
            if isinstance(e, kind):
                return e
    return leaves[0]


def run_parties(backend: str, protocol: Any, contexts: list[PartyContext], net: SyncNetwork,
                cohorts: Sequence[CohortContext] = ()) -> None:
    """Run every party's routine (and every cohort's), and the network's watchdog, in one
    nursery on ``backend``'s loop.

    Failures leave as a ``BaseExceptionGroup`` on both loops (trio's strict groups,
    asyncio's TaskGroup), for the caller to pick :func:`first_error` from.

    Examples
    --------
    ``simulate(..., backend="asyncio")`` runs its parties through this on asyncio.
    """
    tasks = [(net.watchdog,), *((run_party, protocol.curator if ctx.is_curator else protocol.party, ctx, net)
                                for ctx in contexts), *((run_cohort, protocol, cctx, net) for cctx in cohorts)]

    async def main_trio() -> None:
        async with trio.open_nursery() as nursery:
            for fn, *args in tasks:
                nursery.start_soon(fn, *args)

    async def main_asyncio() -> None:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        on_cancel(lambda: loop.call_soon_threadsafe(task.cancel))  # type: ignore[union-attr]
        async with asyncio.TaskGroup() as group:
            for fn, *args in tasks:
                group.create_task(fn(*args))

    if backend == "trio":
        run_cancellable(main_trio)
        return
    import asyncio  # (only here: a trio run, a TCP party's included, does not import it)

    with cancellable():
        asyncio.run(main_asyncio())


def run_cancellable(main: Callable[..., Awaitable[T]], *args: Any) -> T | None:
    """``trio.run(main, *args)`` (strict exception groups) that an interrupt
    (:func:`privsim.interrupts.interrupt`) cancels: :class:`~privsim.interrupts.Interrupted`
    follows once ``main`` has unwound. Returns what ``main`` returns.

    Examples
    --------
    :func:`run_parties` runs its nursery through this; so does a TCP party process
    (``privsim party``), whose Ctrl-C while it waits for its peers unwinds the same way.
    """

    async def scoped() -> T | None:
        token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as scope:
            on_cancel(lambda: token.run_sync_soon(scope.cancel, idempotent=True))
            return await main(*args)
        return None  # cancelled: cancellable() raises Interrupted

    with cancellable():
        return trio.run(scoped, strict_exception_groups=True)
