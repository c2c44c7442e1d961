"""What a party task can do: read its input, draw randomness, send, end the round, output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from privsim.network.messages import Inbox, Outbox, freeze
from privsim.network.schedule import CURATOR

if TYPE_CHECKING:
    from privsim.network.network import SyncNetwork
    from privsim.parties.rng import TrialRNG

__all__ = ["Inbox", "PartyContext"]


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
                 "_has_output")

    def __init__(self, pid: int | str, n: int, t: int, trials: int, input: np.ndarray | None,
                 net: SyncNetwork, rng_factory: Any, outbox: Outbox | None = None) -> None:
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
        self._has_output = False

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

        ``value`` carries the leading trial axis (or is a scalar, the same in every
        trial). The value is frozen when sent: the receiver, and the transcript, get it
        exactly as it is now, whatever the sender does with its array later. ``bits``
        overrides the per-run size used for the bit count (default: 1 bit
        per boolean element, the item size otherwise).
        """
        box = self._outbox  # Outbox.put, inlined: this runs once per message
        box.to.append(to)
        if value is not box._last:  # a broadcast value is frozen once (see Outbox.put)
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
        """Record this party's output (with the trial axis); frozen like a message."""
        self._output = freeze(value)
        self._has_output = True
