"""What a party task can do: read its input, draw randomness, send, end the round, output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from privsim.network.schedule import CURATOR

if TYPE_CHECKING:
    from privsim.network.network import SyncNetwork
    from privsim.parties.rng import TrialRNG

__all__ = ["Inbox", "PartyContext"]


class Inbox(dict):
    """The messages a party received in one round: ``sender -> value``, ordered by sender.

    Values carry the leading trial axis.

    >>> box = Inbox({0: np.array([1, 0]), 2: np.array([1, 1])})
    >>> box.stack().tolist(), box.total().tolist()
    ([[1, 1], [0, 1]], [2, 1])
    """

    def stack(self, axis: int = 1) -> np.ndarray:
        """The values stacked along ``axis`` (default: ``(trials, senders, ...)``)."""
        return np.stack(list(self.values()), axis=axis)

    def total(self) -> np.ndarray:
        """The elementwise sum of all received values (booleans are summed as int64)."""
        if not self:
            raise ValueError("empty inbox")
        stacked = np.stack(list(self.values()), axis=0)  # contiguous copy: faster than axis=1
        return stacked.sum(axis=0, dtype=np.int64 if stacked.dtype.kind in "bui" else None)


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

    __slots__ = ("id", "n", "t", "trials", "input", "round", "_net", "_rng", "_rng_factory",
                 "_out_to", "_out_val", "_out_bits", "_waiting", "_done", "_output")

    def __init__(self, pid: int | str, n: int, t: int, trials: int, input: np.ndarray | None,
                 net: SyncNetwork, rng_factory: Any) -> None:
        self.id = pid
        self.n = n
        self.t = t
        self.trials = trials
        self.input = input
        self.round = 1
        self._net = net
        self._rng: TrialRNG | None = None
        self._rng_factory = rng_factory
        self._out_to: list[int | str] = []
        self._out_val: list[Any] = []
        self._out_bits: dict[int | str, int] | None = None
        self._waiting = False
        self._done = False
        self._output: Any = None

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
        trial). ``bits`` overrides the per-run size used for the bit count (default: 1 bit
        per boolean element, the item size otherwise).
        """
        self._out_to.append(to)
        self._out_val.append(value)
        if bits is not None:
            if self._out_bits is None:
                self._out_bits = {}
            self._out_bits[to] = int(bits)

    def send_many(self, tos: list[int | str], values: Any) -> None:
        """Send ``values[:, i]`` to ``tos[i]`` (values shaped ``(trials, len(tos), ...)``)."""
        for i, to in enumerate(tos):
            self.send(to, values[:, i])

    async def end_round(self) -> Inbox:
        """Wait for the round barrier; returns this party's inbox for the round."""
        return await self._net.end_round(self)

    def output(self, value: Any) -> None:
        """Record this party's output (with the trial axis)."""
        self._output = value
