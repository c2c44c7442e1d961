"""What moves on the network: frozen message values, outboxes and read-only inboxes.

A view is what was sent (docs/architecture.md, "Where a message moves"): a value is frozen
when it is sent (a read-only array; a private copy when the sender still holds a
writable reference to its memory), and a party receives its messages as a read-only
:class:`Inbox`. So no party can rewrite the transcript that coalition views are built
from, whatever it does with what it holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.errors import PrivsimError

__all__ = ["CohortInbox", "CohortOutbox", "Inbox", "MessageFrozen", "Outbox", "block_bits", "freeze", "message_bits",
           "recorded_round", "seal"]


class MessageFrozen(PrivsimError, TypeError):
    """A party tried to change a message it received (messages are read-only).

    >>> issubclass(MessageFrozen, PrivsimError)
    True
    """


def _read_only_chain(arr: np.ndarray) -> bool:
    # An array is safe to share only if no writable array can reach its memory: itself
    # read-only and every base it views read-only too.
    while isinstance(arr, np.ndarray):
        if arr.flags.writeable:
            return False
        arr = arr.base
    return arr is None or isinstance(arr, bytes)


def seal(arr: np.ndarray) -> np.ndarray:
    """Make ``arr`` and every array it views read-only, in place (for memory the engine owns).

    >>> a = np.zeros(3); v = seal(a[1:])
    >>> a.flags.writeable, freeze(v) is v
    (False, True)
    """
    base: Any = arr
    while isinstance(base, np.ndarray):
        base.flags.writeable = False
        base = base.base
    return arr


def freeze(value: Any) -> Any:
    """``value`` as it is delivered: arrays read-only (copied if the sender can still write
    them), tuples and lists as tuples of frozen values, scalars unchanged.

    >>> a = np.array([1, 2])
    >>> f = freeze(a)
    >>> a[0] = 9; f.tolist(), f.flags.writeable
    ([1, 2], False)
    >>> freeze(f) is f
    True
    """
    if isinstance(value, np.ndarray):
        if _read_only_chain(value):
            return value
        out = value.copy()
        out.flags.writeable = False
        return out
    if isinstance(value, (tuple, list)):
        return tuple(freeze(v) for v in value)
    return value


def message_bits(value: Any, trials: int) -> int:
    """Bits per run of one message: 1 per boolean element, the item size otherwise.

    >>> message_bits(np.zeros(10, dtype=bool), 10), message_bits(np.zeros((10, 3)), 10)
    (1, 192)
    """
    if isinstance(value, np.ndarray):
        per_run = value.size // trials if (value.ndim and value.shape[0] == trials) else value.size
        return per_run * (1 if value.dtype == np.bool_ else value.dtype.itemsize * 8)
    if isinstance(value, (bool, np.bool_)):
        return 1
    if isinstance(value, (int, float, complex, np.generic)):
        return 64
    if isinstance(value, (tuple, list)):
        return sum(message_bits(v, trials) for v in value)
    arr = np.asarray(value)
    return message_bits(arr, trials) if arr.dtype != object else 64 * arr.size


class Inbox(dict):
    """The messages a party received in one round: ``sender -> value``, ordered by sender.

    Values carry the leading trial axis. An inbox is read-only, as is every value in it:
    changing either raises :class:`MessageFrozen` (or numpy's read-only error) naming the
    receiver and the round.

    >>> box = Inbox({0: np.array([1, 0]), 2: np.array([1, 1])})
    >>> box.stack().tolist(), box.total().tolist()
    ([[1, 1], [0, 1]], [2, 1])
    >>> box.pop(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.network.messages.MessageFrozen: inbox of party ? (round ?) is read-only: ...
    """

    __slots__ = ("owner", "round")

    def __init__(self, *args: Any, owner: int | str = "?", round: int | str = "?") -> None:
        super().__init__(*args)
        self.owner = owner
        self.round = round

    def _frozen(self, *_: Any, **__: Any) -> Any:
        raise MessageFrozen(f"inbox of party {self.owner} (round {self.round}) is read-only: received messages "
                            "cannot be changed; copy what you need (dict(inbox), np.array(value))")

    __setitem__ = __delitem__ = pop = popitem = clear = update = setdefault = __ior__ = _frozen  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (Inbox, (dict(self),), {"owner": self.owner, "round": self.round})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.owner, self.round = state["owner"], state["round"]

    def stack(self, axis: int = 1) -> np.ndarray:
        """The values stacked along ``axis`` (default: ``(trials, senders, ...)``)."""
        return np.stack(list(self.values()), axis=axis)

    def total(self) -> np.ndarray:
        """The elementwise sum of all received values (booleans are summed as int64)."""
        if not self:
            raise ValueError("empty inbox")
        stacked = np.stack(list(self.values()), axis=0)  # contiguous copy: faster than axis=1
        return stacked.sum(axis=0, dtype=np.int64 if stacked.dtype.kind in "bui" else None)


class Outbox:
    """What one party has queued in the current round, owned by the network.

    ``to`` and ``values`` are parallel lists; ``bits`` holds per-receiver overrides of
    the bit count (``None`` when there are none).

    :meth:`privsim.PartyContext.send` fills it (freezing each value, a broadcast value once:
    ``_last`` is the last value kept as it was); the network empties it with :meth:`take`.

    >>> box = Outbox(); box.to.append("C"); box.values.append(freeze(np.ones(2)))
    >>> to, values, bits = box.take()
    >>> to, values[0].flags.writeable, box.to
    (['C'], False, [])
    """

    __slots__ = ("to", "values", "bits", "_last")

    def __init__(self) -> None:
        self.to: list[int | str] = []
        self.values: list[Any] = []
        self.bits: dict[int | str, int] | None = None
        self._last: Any = None

    def take(self) -> tuple[list[int | str], list[Any], dict[int | str, int] | None]:
        """Empty the outbox, returning what it held."""
        out = (self.to, self.values, self.bits)
        self.to, self.values, self.bits, self._last = [], [], None, None
        return out


def recorded_round(inboxes: dict[int | str, Inbox], keep: Any, r: int) -> dict[int | str, Inbox]:
    """What a transcript keeps of round ``r``: everything (``keep == "all"``), or only the
    messages sent to or by a party in ``keep`` (what that coalition's view needs).

    >>> box = {"C": Inbox({0: 1, 1: 2}, owner="C", round=1)}
    >>> dict(recorded_round(box, {0}, 1)["C"])
    {0: 1}
    """
    if keep == "all":
        return inboxes
    return {d: (box if d in keep else Inbox(((s, v) for s, v in box.items() if s in keep), owner=d, round=r))
            for d, box in inboxes.items()}


class CohortInbox:
    """What the members of a cohort received in one round.

    Each entry is ``(member position, sender ids, values)``: the values, shaped
    ``(trials, len(senders), ...)``, that those senders sent to that member; or, with an
    array of positions (one per sender), message ``i`` went to member ``positions[i]``.

    >>> box = CohortInbox(2, 3, [(0, np.array([5, 6]), np.ones((3, 2), dtype=np.int64)),
    ...                          (1, np.array([5]), np.full((3, 1), 4))])
    >>> box.sum_mod(7)[0].tolist(), box.counts().tolist(), box.from_party(5)[0].tolist()
    ([2, 4], [2, 1], [1, 4])
    """

    __slots__ = ("k", "trials", "entries")

    def __init__(self, k: int, trials: int, entries: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
        self.k, self.trials, self.entries = k, trials, entries

    def __bool__(self) -> bool:
        return bool(self.entries)

    def counts(self) -> np.ndarray:
        """Messages received, per member: ``(k,)``."""
        out = np.zeros(self.k, dtype=np.int64)
        for pos, senders, _ in self.entries:
            if isinstance(pos, np.ndarray):
                np.add.at(out, pos, 1)
            else:
                out[pos] += len(senders)
        return out

    def sum_mod(self, q: int) -> np.ndarray:
        """Per member, the sum mod ``q`` of every value it received: ``(trials, k, ...)`` int64.

        Exact (integer residues in ``[0, q)``), so equal to any per-party order of summation.
        """
        if not self.entries:
            raise ValueError("empty cohort inbox")
        out = np.zeros((self.trials, self.k, *self.entries[0][2].shape[2:]), dtype=np.int64)
        chunk = max(1, (2**63 - 1) // max(int(q), 1) - 1)  # residues summed per int64 sum without overflow
        for pos, _, values in self.entries:
            values = np.asarray(values, dtype=np.int64)
            if isinstance(pos, np.ndarray):  # one message per sender, each to its own member
                for lo in range(0, values.shape[1], chunk):
                    part, at = values[:, lo:lo + chunk], pos[lo:lo + chunk]
                    acc = np.zeros_like(out)
                    np.add.at(acc, (slice(None), at), part)  # at most chunk residues per member: no overflow
                    out = (out + acc % q) % q
                continue
            part = out[:, pos]
            for lo in range(0, values.shape[1], chunk):
                part = (part + values[:, lo:lo + chunk].sum(axis=1)) % q
            out[:, pos] = part
        return out

    def from_party(self, sender: int | str) -> np.ndarray:
        """What ``sender`` sent to each member: ``(trials, k, ...)``.

        Raises
        ------
        KeyError
            Some member received nothing from ``sender``.
        """
        got: dict[int, np.ndarray] = {}
        for pos, senders, values in self.entries:
            # an int array holds parties' ids only; the curator is in an object array (an own-task box)
            hit = np.flatnonzero(senders == sender) if senders.dtype == object or not isinstance(sender, str) else []
            if isinstance(pos, np.ndarray):
                got.update(zip(pos[hit].tolist(), (values[:, i] for i in hit)))
            elif len(hit):
                got[pos] = values[:, hit[0]]
        if len(got) != self.k:
            raise KeyError(sender)
        return np.stack([got[j] for j in range(self.k)], axis=1)

    def from_each(self, senders: np.ndarray) -> np.ndarray:
        """What member ``j`` received from party ``senders[j]`` (int ids): ``(trials, k, ...)``;
        with ``senders`` of shape ``(k, d)``, from each of its ``d`` senders: ``(trials, k, d, ...)``.

        >>> box = CohortInbox(2, 1, [(0, np.array([5, 6]), np.array([[1, 2]])), (1, np.array([5]), np.array([[3]]))])
        >>> box.from_each(np.array([6, 5])).tolist(), box.from_each(np.array([[6, 5], [5, 5]])).tolist()
        ([[2, 3]], [[[2, 1], [3, 3]]])

        Raises
        ------
        KeyError
            Some member received nothing from one of its senders.
        """
        want = np.asarray(senders, dtype=np.int64)
        members = np.arange(self.k, dtype=np.int64).reshape(self.k, *[1] * (want.ndim - 1))
        asked = (members << 32 | want).ravel()  # (member, sender) as one key; ids < 2^31
        out, filled = None, np.zeros(asked.size, dtype=bool)
        for pos, who, values in self.entries:
            if who.dtype == object:  # an own-task party's box with the curator in it: the parties' messages
                keep = np.array([not isinstance(s, str) for s in who])
                who, values = who[keep].astype(np.int64), values[:, keep]
            if not len(who):
                continue
            keys = (pos if isinstance(pos, np.ndarray) else np.full(len(who), pos, dtype=np.int64)) << 32 | who
            order = np.argsort(keys, kind="stable")
            at = order[np.minimum(np.searchsorted(keys, asked, sorter=order), len(keys) - 1)]
            hit = keys[at] == asked
            if hit.any():
                if out is None:
                    out = np.empty((self.trials, asked.size, *values.shape[2:]), dtype=values.dtype)
                out[:, hit] = values[:, at[hit]]
                filled |= hit
        if out is None or not filled.all():
            raise KeyError(int(want.ravel()[np.argmin(filled)]))
        return out.reshape(self.trials, *want.shape, *out.shape[2:])


class CohortOutbox:
    """What a cohort queued in the current round: ``(to, member positions or None, values, bits)`` sends.

    >>> box = CohortOutbox(); box.sends.append((0, None, np.ones((2, 3)), None))
    >>> len(box.take()), box.sends
    (1, [])
    """

    __slots__ = ("sends",)

    def __init__(self) -> None:
        self.sends: list[tuple[int | str, np.ndarray | None, np.ndarray, int | None]] = []

    def take(self) -> list[tuple[int | str, np.ndarray | None, np.ndarray, int | None]]:
        """Empty the outbox, returning its sends."""
        out, self.sends = self.sends, []
        return out


def block_bits(values: np.ndarray, trials: int, senders: int) -> int:
    """Bits of ``senders`` messages held as one ``(trials, senders, ...)`` block (each sized as
    :func:`~privsim.network.messages.message_bits` sizes one ``values[:, j]``).

    >>> block_bits(np.zeros((4, 3, 2), dtype=np.int64), 4, 3), block_bits(np.zeros((4, 3), dtype=bool), 4, 3)
    (384, 3)
    """
    per_message = values[:, 0] if senders else values
    return senders * message_bits(per_message, trials)
