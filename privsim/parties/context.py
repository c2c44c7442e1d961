"""What a party task can do: read its input, draw randomness, send, end the round, output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from privsim.errors import PartyFailure
from privsim.network.messages import Inbox, Outbox, freeze
from privsim.network.schedule import CURATOR

if TYPE_CHECKING:
    from privsim.parties.rng import TrialRNG

__all__ = ["Inbox", "PartyContext", "PartyNetwork"]


class PartyNetwork(Protocol):
    """What a party's context needs from the network it runs on: the in-process
    :class:`~privsim.network.SyncNetwork` and a TCP party's
    :class:`~privsim.transport.endpoint.TcpEndpoint` both provide it.

    Examples
    --------
    ``PartyContext(pid, n, t, trials, x, net, rng_factory, outbox)`` with ``net`` either of them.
    """

    @property
    def round(self) -> int:
        """The current round, from 1."""

    async def end_round(self, pid: int | str) -> Inbox:
        """Deliver ``pid``'s round and return its inbox once the round is complete."""

    def depart(self, pid: int | str) -> None:
        """``pid``'s routine returned: it takes part in no further round."""


class PartyContext:
    """The handle a party routine receives.

    Attributes
    ----------
    id:
        The party id: an int in 0..n-1, or ``"C"`` for the curator.
    n, t:
        Number of parties and the coalition-size threshold of the run.
    trials:
        Number of trials R simulated at once; every array carries this leading axis.
    input:
        This party's input with the trial axis, shape ``(trials, *input_shape)``
        (``None`` for the curator).
    round:
        The current round, from 1.

    Examples
    --------
    Inside a protocol's ``party`` routine::

        bit = ctx.input                      # (R,)
        keep = ctx.rng.random() < 0.75       # (R,)
        ctx.send("C", np.where(keep, bit, 1 - bit))
        inbox = await ctx.end_round()
    """

    __slots__ = ("id", "n", "t", "trials", "input", "_net", "_outbox", "_rng", "_rng_factory", "_output",
                 "_output_round", "_done_round")

    def __init__(self, pid: int | str, n: int, t: int, trials: int, input: np.ndarray | None,
                 net: PartyNetwork, rng_factory: Any, outbox: Outbox | None = None) -> None:
        self.id = pid
        self.n = n
        self.t = t
        self.trials = trials
        self.input = None if input is None else freeze(input)
        self._net = net
        self._outbox = Outbox() if outbox is None else outbox
        self._rng: TrialRNG | None = None
        self._rng_factory = rng_factory
        self._output: Any = None
        self._output_round: int | None = None
        self._done_round: int | None = None  # the round in which the routine returned

    @property
    def round(self) -> int:
        """The current round, from 1."""
        return self._net.round

    @property
    def is_curator(self) -> bool:
        """Whether this context is the curator's."""
        return self.id == CURATOR

    @property
    def rng(self) -> TrialRNG:
        """This party's private random stream (numpy Generator API with a trial axis)."""
        if self._rng is None:
            self._rng = self._rng_factory(self.id)
        return self._rng

    def send(self, to: int | str, value: Any, bits: int | None = None) -> None:
        """Queue ``value`` for ``to``; it is delivered when the round ends.

        ``value`` carries the leading trial axis (a constant is sent as ``ctx.full(v)``;
        anything else fails the run naming party and round). The value is frozen when
        sent: the receiver, and the transcript, get it exactly as it is now, whatever the
        sender does with its array later. ``bits``
        overrides the per-run size used for the bit count (default: 1 bit
        per boolean element, the item size otherwise).
        """
        box = self._outbox  # runs once per message: kept inline
        box.to.append(to)
        if value is not box._last:  # a broadcast value is frozen (and checked) once; a writable one may change
            _check_trial_value(self, value, to)
            frozen = freeze(value)
            box._last = value if frozen is value else None
            value = frozen
        box.values.append(value)
        if bits is not None:
            if box.bits is None:
                box.bits = {}
            box.bits[to] = int(bits)

    def send_many(self, tos: list[int | str], values: Any) -> None:
        """Send ``values[:, i]`` to ``tos[i]`` (values shaped ``(trials, len(tos), ...)``)."""
        for i, to in enumerate(tos):
            self.send(to, values[:, i])

    async def end_round(self) -> Inbox:
        """Wait for the round barrier; returns this party's inbox for the round."""
        return await self._net.end_round(self.id)

    def output(self, value: Any) -> None:
        """Record this party's output (with the trial axis), once; frozen like a message.

        Raises
        ------
        PartyFailure
            The value has no leading trial axis, or this party already output.
        """
        _check_trial_value(self, value)
        if self._output_round is not None:
            self._fail(f"output a second time (the first was in round {self._output_round})",
                       "one ctx.output(...) per party", "a second one")
        self._output = freeze(value)
        self._output_round = self.round
    # ------------------------------------------------------------------ less ceremony
    async def idle(self, rounds: int = 1) -> None:
        """Sit out ``rounds`` rounds: end them (the current one first) sending nothing more.

        A party calls :meth:`end_round` once per round, also in rounds where it has
        nothing to send, until its last round; ``await ctx.idle(k)`` is ``k`` such calls.
        Whatever was already queued with :meth:`send` goes out with the current round.

        Raises
        ------
        PartyFailure
            A message arrived while idling (it would be lost: read it with ``end_round``).

        Examples
        --------
        Party ``i`` of a relay receives in round ``i``::

            await ctx.idle(ctx.id - 1)          # rounds 1 .. i-1
            total = (await ctx.end_round())[ctx.id - 1]
        """
        for _ in range(int(rounds)):
            r = self.round
            inbox = await self.end_round()
            if inbox:
                senders = ", ".join(map(_who, inbox))
                self._fail(f"received a message while idling (from {senders})", "no message",
                           f"{len(inbox)} message(s); read them with `await ctx.end_round()`", round=r)

    def zeros(self, *shape: int, dtype: Any = np.float64) -> np.ndarray:
        """Zeros of shape ``(trials, *shape)``: a value with the trial axis.

        >>> ctx = PartyContext(0, 2, 1, 3, None, None, None)
        >>> ctx.zeros().shape, ctx.zeros(2, dtype=np.int64).shape
        ((3,), (3, 2))
        """
        return np.zeros((self.trials, *shape), dtype=dtype)

    def ones(self, *shape: int, dtype: Any = np.float64) -> np.ndarray:
        """Ones of shape ``(trials, *shape)``.

        >>> PartyContext(0, 2, 1, 2, None, None, None).ones(dtype=np.int64).tolist()
        [1, 1]
        """
        return np.ones((self.trials, *shape), dtype=dtype)

    def full(self, value: Any, *shape: int, dtype: Any = None) -> np.ndarray:
        """``value`` in every trial: shape ``(trials, *shape)`` (the way to send a constant).

        >>> PartyContext(0, 2, 1, 3, None, None, None).full(7).tolist()
        [7, 7, 7]
        """
        return np.full((self.trials, *shape), value, dtype=dtype)

    def _fail(self, what: str, expected: str, got: str, round: int | None = None) -> None:
        r = self.round if round is None else round
        raise PartyFailure(f"{_who(self.id)}, round {r}: {what} (expected {expected}, got {got})", self.id, r)


def _who(pid: int | str) -> str:
    return "the curator" if pid == CURATOR else f"party {pid}"


#: The dtype kinds a message or output may have: those the TCP transport carries.
_KINDS = frozenset("biufc")


def _check_trial_value(ctx: PartyContext, value: Any, to: Any = None) -> None:
    """A message (to ``to``) or an output (``to=None``) carries the leading trial axis
    (tuples/lists: each part); otherwise a one-line :class:`PartyFailure`."""
    if type(value) is np.ndarray and value.ndim and value.shape[0] == ctx.trials and value.dtype.kind in _KINDS:
        return  # the fast path of every message
    if isinstance(value, (tuple, list)) and value:
        for part in value:
            _check_trial_value(ctx, part, to)
        return
    arr = value if isinstance(value, np.ndarray) else None
    what = "output" if to is None else f"message to {_who(to)}"
    if arr is not None and arr.dtype.kind not in _KINDS:
        # Refused here as over TCP (privsim.transport.framing): the same protocol runs on both.
        ctx._fail(f"{what} has dtype {arr.dtype}", "a numeric or boolean array (bool, int, uint, float, complex)",
                  f"dtype {arr.dtype}")
    if arr is not None and arr.ndim and arr.shape[0] == ctx.trials:
        return  # an ndarray subclass
    got = (f"shape {arr.shape}" if arr is not None and arr.ndim else
           f"a scalar {type(value).__name__}" if np.ndim(value) == 0 else f"a {type(value).__name__}")
    ctx._fail(f"{what} has no trial axis of length {ctx.trials}",
              f"an array of shape (trials={ctx.trials}, ...); ctx.full(v) repeats a constant", got)

