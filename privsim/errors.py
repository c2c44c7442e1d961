"""The privsim error family: every error a user can cause is a :class:`PrivsimError`.

The CLI prints the message of a :class:`PrivsimError` on one line and exits with code 2;
anything else is a bug in privsim and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "PrivsimError",
    "ParameterError",
    "InputError",
    "ScheduleViolation",
    "PartyFailure",
    "DeadlockError",
    "ViewNotRecorded",
    "ExecutorError",
    "ProtocolError",
    "ResourceError",
    "ProtocolWarning",
]


class PrivsimError(Exception):
    """Base class of every error privsim raises for bad input or a misbehaving protocol.

    >>> issubclass(ParameterError, PrivsimError)
    True
    """


class ParameterError(PrivsimError, ValueError):
    """A parameter is missing, unknown, of the wrong type or outside its allowed range.

    >>> from privsim.protocols import RandomizedResponse
    >>> RandomizedResponse(epsilon=0)
    Traceback (most recent call last):
    privsim.errors.ParameterError: epsilon must be > 0 (got 0.0)
    """


class InputError(PrivsimError, ValueError):
    """The parties' inputs have the wrong shape or lie outside the protocol's domain.

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> privsim.simulate(RandomizedResponse(), [0, 2])
    Traceback (most recent call last):
    privsim.errors.InputError: inputs: party 1 has 2, outside the domain {0, 1}
    """


class ScheduleViolation(PrivsimError):
    """A message was sent off the declared schedule, or a scheduled message was not sent.

    The message names the round, sender and receiver. Example message:
    ``round 1: message off the schedule (round 1, sender 0, receiver 2)``.
    """


class PartyFailure(PrivsimError):
    """A party's routine raised; the message names the party and the round.

    ``party`` and ``round`` hold them too; when several parties fail, the run reports the
    earliest round and the lowest party id, so the error does not depend on task order.

    Example message: ``party 3 failed in round 2: RuntimeError: boom``.
    """

    def __init__(self, message: str, party: int | str | None = None, round: int | None = None) -> None:
        super().__init__(message)
        self.party = party
        self.round = round

    def __reduce__(self):  # keep party and round across processes
        return (type(self), (str(self), self.party, self.round))


class DeadlockError(PrivsimError):
    """Some parties can never finish the current round (they wait on something else).

    Example message: ``round 2: party 1 never finished the round (they wait on something
    other than end_round)``.
    """


class ViewNotRecorded(PrivsimError):
    """A coalition view was asked for that the simulation did not record.

    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> privsim.simulate(RandomizedResponse(), [0, 1], record=False).view("C")
    Traceback (most recent call last):
    privsim.errors.ViewNotRecorded: this run recorded no transcript (record=False)
    """


class ExecutorError(PrivsimError):
    """A batch failed on a worker (or the worker died twice); the run reports no partial result.

    Example message: ``batch 0: a worker process died twice; the run is incomplete and no
    result is reported``.
    """


class ProtocolError(PrivsimError):
    """A protocol's own method returned something of the wrong kind or shape.

    The message names the method, what was expected and what it got. Example message:
    ``relay-sum.estimate returned shape (4, 2) (expected (trials=4,), as true_value, got (4, 2))``.
    """


class ResourceError(PrivsimError):
    """A run would need more memory than there is (estimated before it starts), or a bad limit.

    >>> from privsim.resources import Estimate, check_memory
    >>> check_memory(Estimate(8 << 40, 1e6, 10), 6 << 30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.errors.ResourceError: n, trials: this run needs about 8.0 TiB of memory (estimated), above the 6.0 GiB ...
    """


class ProtocolWarning(UserWarning):
    """A protocol did something legal but almost certainly unintended (the run goes on).

    For example a party that calls ``ctx.end_round()`` beyond the schedule's last round
    (twice in a one-round protocol), or that returns without ever calling it. Turn it into
    an error with ``python -W error::privsim.errors.ProtocolWarning`` while writing a protocol.
    """
