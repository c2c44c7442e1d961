"""Interrupts that unwind: one place holds the signal caught and how to stop the work under way.

The ``privsim`` command's SIGINT/SIGTERM handler (:func:`privsim.cli_support.interruptible`)
calls :func:`interrupt`. Inside a party loop (:func:`cancellable`, entered by
:func:`privsim.parties.runner.run_parties`) that cancels the loop, and :class:`Interrupted`
is raised once the parties have unwound; anywhere else it is raised at once. Code that
waits for work done elsewhere (an executor's results) calls :func:`check_interrupted`
between results, so a signal that landed where Python only reports an exception (a
``__del__``) still stops the command at the next result.

Examples
--------
>>> interrupted() is None
True
>>> with cancellable():
...     pass
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

__all__ = ["Interrupted", "cancellable", "check_interrupted", "interrupt", "interrupted", "on_cancel"]


class Interrupted(BaseException):
    """SIGINT or SIGTERM, raised once the run has unwound (a BaseException: no ``except Exception`` stops it).

    >>> Interrupted(2).signum, issubclass(Interrupted, Exception)
    (2, False)
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_CAUGHT: list[int] = []  # the signal caught (one), until interrupted(clear=True)
_LOOP: list[Callable[[], None]] = []  # cancels the party loop running now, if any


def interrupt(signum: int) -> None:
    """Stop the run on signal ``signum`` (from a signal handler, in the main thread).

    Inside :func:`cancellable` the loop is cancelled and :class:`Interrupted` follows when
    it has unwound; elsewhere :class:`Interrupted` is raised here. A second call does nothing.

    Examples
    --------
    ``privsim.cli_support.interruptible`` installs a handler that calls this.
    """
    if _CAUGHT:
        return
    _CAUGHT.append(signum)
    if not _LOOP:
        raise Interrupted(signum)
    for cancel in _LOOP:
        cancel()


def interrupted(clear: bool = False) -> int | None:
    """The signal :func:`interrupt` caught (None if none); ``clear`` forgets it.

    >>> interrupted()
    """
    signum = _CAUGHT[0] if _CAUGHT else None
    if clear:
        _CAUGHT.clear()
    return signum


def check_interrupted() -> None:
    """Raise :class:`Interrupted` if a signal was caught (and not yet reported).

    >>> check_interrupted()
    """
    if _CAUGHT:
        raise Interrupted(_CAUGHT[0])


def on_cancel(cancel: Callable[[], object]) -> None:
    """Inside :func:`cancellable`, from the running loop: ``cancel()`` stops it (called
    from the signal handler; it must be safe there, as trio's ``run_sync_soon`` and
    asyncio's ``call_soon_threadsafe`` are).

    Example (how :func:`privsim.parties.runner.run_parties` uses it on trio)::

        token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as scope:
            on_cancel(lambda: token.run_sync_soon(scope.cancel, idempotent=True))
            ...
    """

    def safely() -> None:
        with suppress(RuntimeError):  # the loop has just finished (trio.RunFinishedError, a closed asyncio loop)
            cancel()

    _LOOP[:] = [safely]
    if _CAUGHT:  # caught before the loop could be cancelled
        safely()


@contextmanager
def cancellable() -> Iterator[None]:
    """Run a party loop whose interruption cancels it (the loop registers :func:`on_cancel`);
    :class:`Interrupted` is raised on leaving, once the loop has unwound.

    Example (as :func:`privsim.parties.runner.run_parties` runs its loop)::

        with cancellable():
            trio.run(main)   # main calls on_cancel(...) first
    """
    check_interrupted()  # caught where raising could not stop the command (a __del__, a swallowing except)
    _LOOP[:] = [lambda: None]  # from here on a signal only cancels (the loop may not be cancellable yet)
    try:
        yield
    except BaseException:
        if not _CAUGHT:
            raise
    finally:
        _LOOP.clear()
    check_interrupted()  # the parties have unwound
