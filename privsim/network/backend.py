"""The in-process engine on asyncio: the same network, another event loop under the barrier.

:class:`~privsim.network.SyncNetwork` touches its event loop in exactly one place, the
round barrier: a party that is not the last to arrive parks, and the last one wakes them
all (``park()`` / ``unpark_all()`` of trio's ParkingLot). :class:`AsyncioNetwork` keeps
every other line (schedule checks, bulk delivery, counters, transcript) and swaps in
:class:`AsyncioParkingLot`, the same two operations on asyncio futures, and an asyncio
watchdog for parties that wait on something other than the barrier. Why a seam and not
anyio: docs/architecture.md, "Runtimes".

Results are identical for the same seed: nothing depends on which task runs first
(each party draws from its own stream; inboxes are ordered by sender).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from privsim.errors import ParameterError
from privsim.network.network import SyncNetwork

if TYPE_CHECKING:
    import asyncio  # imported where a run on asyncio needs it (a TCP party's start-up does not)

__all__ = ["BACKENDS", "AsyncioNetwork", "AsyncioParkingLot", "check_backend", "network_class"]

#: The event loops the in-process engine runs on.
BACKENDS = ("trio", "asyncio")
#: Loop iterations with no party arriving, departing or finishing a round before the
#: watchdog decides that the parties not at the barrier wait on something else.
IDLE_ITERATIONS = 3


def check_backend(backend: str) -> str:
    """Validate a backend name.

    >>> check_backend("asyncio")
    'asyncio'
    >>> check_backend("curio")
    Traceback (most recent call last):
    privsim.errors.ParameterError: backend must be one of trio, asyncio (got 'curio')
    """
    if backend not in BACKENDS:
        raise ParameterError(f"backend must be one of {', '.join(BACKENDS)} (got {backend!r})")
    return backend


class AsyncioParkingLot:
    """``park()`` and ``unpark_all()`` of :class:`trio.lowlevel.ParkingLot`, on asyncio futures.

    >>> import asyncio
    >>> async def demo():
    ...     lot = AsyncioParkingLot()
    ...     waiter = asyncio.ensure_future(lot.park())
    ...     await asyncio.sleep(0)
    ...     lot.unpark_all()
    ...     await waiter
    ...     return len(lot)
    >>> asyncio.run(demo())
    0
    """

    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future] = []

    def __len__(self) -> int:
        return len(self._waiters)

    async def park(self) -> None:
        """Wait until :meth:`unpark_all` (cancellation propagates, as in trio)."""
        import asyncio

        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut

    def unpark_all(self) -> None:
        """Wake every parked task."""
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():  # a cancelled waiter is already done
                fut.set_result(None)


class AsyncioNetwork(SyncNetwork):
    """:class:`~privsim.network.SyncNetwork` with its barrier on asyncio (same arguments).

    Examples
    --------
    Used by :func:`privsim.simulate` with ``backend="asyncio"``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lot = AsyncioParkingLot()  # the one event-loop primitive SyncNetwork uses

    async def watchdog(self) -> None:
        """Raise :class:`~privsim.errors.DeadlockError` when the parties not at the barrier stop making progress.

        asyncio has no ``wait_all_tasks_blocked``; a loop iteration in which no party
        arrived, departed or finished a round is an idle one, and
        :data:`IDLE_ITERATIONS` of them in a row mean every runnable party is at the
        barrier and the rest wait on something else (as trio's watchdog decides it).
        """
        import asyncio

        idle, last = 0, None
        while self._live:
            await asyncio.sleep(0)
            now = (self.round, self._arrived, len(self._done))
            idle = idle + 1 if now == last else 0
            last = now
            if idle >= IDLE_ITERATIONS:
                self.check_stuck()
                idle = 0


def network_class(backend: str) -> type[SyncNetwork]:
    """The network class of ``backend``.

    >>> network_class("asyncio").__name__, network_class("trio").__name__
    ('AsyncioNetwork', 'SyncNetwork')
    """
    return AsyncioNetwork if check_backend(backend) == "asyncio" else SyncNetwork
