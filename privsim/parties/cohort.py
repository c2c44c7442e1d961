"""Cohorts: the honest parties of one role run as one task, with a party axis beside the trial axis.

A protocol that defines :meth:`~privsim.Protocol.cohorts` and
:meth:`~privsim.Protocol.cohort` can have the in-process engine run the parties of a role,
other than the recorded coalition's (docs/architecture.md, "Cohorts"), as one task: a
:class:`CohortContext` whose values carry ``(trials, k, ...)``, column ``j`` being party
``ids[j]``'s. What the run produces is exactly what the per-party run produces for the
same seed: each member draws from its own stream (:class:`CohortRNG` makes the per-party
draws and stacks them), every message is counted, sized and checked against the schedule
as if its sender had sent it alone, and a message to or from a recorded party is in the
transcript as it would be. Only the event-loop work per party (a task, a context, an
inbox per round) and the per-message Python calls are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privsim.errors import PartyFailure
from privsim.network.messages import CohortInbox, CohortOutbox, freeze
from privsim.parties.rng import NamedDraws, TrialRNG, _shape, generator_call, generator_calls

__all__ = ["CohortContext", "CohortInbox", "CohortRNG"]  # CohortInbox: privsim.network.messages


class CohortRNG(NamedDraws):
    """The members' random streams, drawn member by member and stacked on axis 1.

    Every method of :class:`~privsim.parties.rng.TrialRNG` with the same arguments: ``size``
    is the shape per party and per trial, and the draw has shape ``(trials, k, *size)``;
    column ``j`` is exactly what member ``j``'s own :class:`TrialRNG` would have drawn. An
    array argument of shape ``(trials, k, *size)`` is that member's column, anything else
    is passed to every member as is.

    >>> from privsim.parties.rng import StreamSeeder, block_range
    >>> s = StreamSeeder(5, 4, block_range(3))
    >>> rng = CohortRNG([s.rng(p, 3, record=False) for p in (1, 3)])
    >>> alone = s.rng(3, 3, record=False).normal(size=2)
    >>> bool((rng.normal(size=2)[:, 1] == alone).all())
    True
    """

    __slots__ = ("_rngs", "_direct", "_trials")

    def __init__(self, rngs: list[TrialRNG]) -> None:
        self._rngs = rngs
        self._trials = rngs[0].trials if rngs else 0
        # One seeding block and no tape: each member's one Generator is called directly
        # (what TrialRNG._draw does then, without its per-call bookkeeping).
        self._direct = [r._gens[0] for r in rngs] if all(len(r._gens) == 1 and r.draws is None for r in rngs) else None

    @classmethod
    def of_generators(cls, gens: list[np.random.Generator], trials: int) -> CohortRNG:
        """The cohort of members whose whole stream is one Generator each (a batch of one
        seeding block, nothing recorded: :meth:`~privsim.parties.rng.StreamSeeder.generators`),
        without a TrialRNG per member (a third of a secure-sum member's cost at n = 10^5).

        >>> from privsim.parties.rng import StreamSeeder, block_range
        >>> s = StreamSeeder(5, 4, block_range(3))
        >>> rng = CohortRNG.of_generators(s.generators([1, 3]), 3)
        >>> bool((rng.normal(size=2)[:, 1] == s.rng(3, 3, record=False).normal(size=2)).all())
        True
        """
        self = cls.__new__(cls)
        self._rngs, self._direct, self._trials = [], gens, trials
        return self

    def _draw(self, name: str, args: tuple, kwargs: dict, size: Any, repeat: int = 0) -> np.ndarray:
        k = len(self._rngs) if self._direct is None else len(self._direct)
        per_member = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim >= 2 and a.shape[1] == k]
        kw_member = [key for key, a in kwargs.items() if isinstance(a, np.ndarray) and a.ndim >= 2
                     and a.shape[1] == k]
        axis = 2 if repeat else 1  # the members' axis: after the repeats' and the trials'
        if self._direct is not None:
            full = (repeat, self._trials, *_shape(size)) if repeat else (self._trials, *_shape(size))
            if not per_member and not kw_member:
                return np.moveaxis(generator_calls(self._direct, name, args, kwargs, full), 0, axis)
            parts = [generator_call(g, name, *self._column(j, args, kwargs, per_member, kw_member), full)
                     for j, g in enumerate(self._direct)]
        else:
            parts = [rng._draw(name, *self._column(j, args, kwargs, per_member, kw_member), size, repeat)
                     for j, rng in enumerate(self._rngs)]
        # Member-major in memory (a view with the members' axis moved, not a transposing
        # copy): each member's values stay contiguous, as its own draws were, so a message
        # per member, a column, is one contiguous run for whoever reads it.
        return np.moveaxis(np.stack(parts), 0, axis)

    @staticmethod
    def _column(j: int, args: tuple, kwargs: dict, per_member: list, kw_member: list) -> tuple[tuple, dict]:
        """Member ``j``'s arguments: its column of the per-member arrays, the rest as they are."""
        a = args if not per_member else tuple(x[:, j] if i in per_member else x for i, x in enumerate(args))
        kw = kwargs if not kw_member else {key: (v[:, j] if key in kw_member else v) for key, v in kwargs.items()}
        return a, kw


class CohortContext:
    """The handle a protocol's :meth:`~privsim.Protocol.cohort` routine receives.

    Attributes
    ----------
    role:
        The role name (a key of :meth:`~privsim.Protocol.cohorts`).
    ids:
        The members' party ids, ascending: ``(k,)`` int64.
    n, t, trials:
        As in :class:`~privsim.PartyContext`.
    input:
        The members' inputs, ``(trials, k, *input_shape)`` (read-only).
    rng:
        A :class:`CohortRNG`: each member's own stream.

    Examples
    --------
    The secure sum's non-holders, all at once::

        shares = share_unchecked(cctx.rng, secrets, q, t + 1, ())   # (trials, k, t+1)
        for j in range(t + 1):
            cctx.send(j, shares[:, :, j])                            # every member to holder j
        await cctx.end_round()
    """

    def __init__(self, role: str, ids: np.ndarray, n: int, t: int, trials: int, inputs: np.ndarray | None,
                 net: Any, rngs: Callable[[], CohortRNG]) -> None:
        self.role = role
        self.ids = ids
        self.key = ("cohort", role, int(ids[0]) if len(ids) else -1)  # a role may run as several tasks
        self.n, self.t, self.trials = n, t, trials
        self.input = None if inputs is None else freeze(inputs)
        self._net = net
        self._rngs = rngs
        self._rng: CohortRNG | None = None
        self.outbox = CohortOutbox()
        self.outputs: np.ndarray | None = None
        self._output_round: int | None = None
        self._done_round: int | None = None

    @property
    def k(self) -> int:
        """The number of members."""
        return len(self.ids)

    @property
    def round(self) -> int:
        """The current round, from 1."""
        return self._net.round

    @property
    def rng(self) -> CohortRNG:
        """The members' random streams (:class:`CohortRNG`)."""
        if self._rng is None:
            self._rng = self._rngs()
        return self._rng

    def send(self, to: int | str, values: np.ndarray, *, members: np.ndarray | None = None,
             bits: int | None = None) -> None:
        """Every member (or those at positions ``members``) sends its column of ``values`` to ``to``.

        ``values`` has shape ``(trials, k, ...)`` (``(trials, len(members), ...)`` with
        ``members``); ``bits`` overrides each message's size as in :meth:`PartyContext.send`.
        """
        arr = values if isinstance(values, np.ndarray) else np.asarray(values)
        want = self.k if members is None else len(members)
        if arr.ndim < 2 or arr.shape[0] != self.trials or arr.shape[1] != want or arr.dtype.kind not in "biufc":
            raise PartyFailure(f"cohort {self.role}, round {self.round}: message to {to} has shape {arr.shape} "
                               f"dtype {arr.dtype} (expected a numeric array of shape (trials={self.trials}, "
                               f"{want}, ...))", None, self.round)
        pos = None if members is None else np.asarray(members, dtype=np.int64)
        self.outbox.sends.append((to, pos, freeze(arr), None if bits is None else int(bits)))

    def send_each(self, tos: np.ndarray, values: np.ndarray, *, members: np.ndarray | None = None,
                  bits: int | None = None) -> None:
        """Member ``j`` (or the one at ``members[j]``) sends ``values[:, j]`` to party ``tos[j]``:
        one message per member, each to its own receiver (party ids, ints)."""
        tos = np.asarray(tos, dtype=np.int64)
        want = self.k if members is None else len(members)
        if tos.shape != (want,):
            raise PartyFailure(f"cohort {self.role}, round {self.round}: send_each got receivers of shape "
                               f"{tos.shape} for {want} senders", None, self.round)
        self.send(tos, values, members=members, bits=bits)  # type: ignore[arg-type]

    async def end_round(self) -> CohortInbox:
        """Wait for the round barrier; returns what the members received (:class:`CohortInbox`)."""
        return await self._net.end_round(self.key)

    async def idle(self, rounds: int = 1) -> None:
        """Sit out ``rounds`` rounds (as :meth:`PartyContext.idle`): a message arriving meanwhile fails the run."""
        for _ in range(int(rounds)):
            r = self.round
            if await self.end_round():
                raise PartyFailure(f"cohort {self.role}, round {r}: received a message while idling", None, r)

    def output(self, values: np.ndarray) -> None:
        """Record every member's output: ``(trials, k, ...)``, column ``j`` for member ``j``; once."""
        arr = np.asarray(values)
        if arr.ndim < 2 or arr.shape[:2] != (self.trials, self.k):
            raise PartyFailure(f"cohort {self.role}, round {self.round}: output has shape {arr.shape} (expected "
                               f"(trials={self.trials}, {self.k}, ...))", None, self.round)
        if self._output_round is not None:
            raise PartyFailure(f"cohort {self.role}, round {self.round}: output a second time", None, self.round)
        self.outputs = freeze(arr)
        self._output_round = self.round
