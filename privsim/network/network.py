"""The synchronous network: a round barrier with bulk delivery, schedule enforcement, counters.

Every party sends without blocking (``send`` appends to its outbox) and then awaits
``end_round``. When the last live party arrives, the network checks every outbox against
the schedule, delivers all of the round's messages at once into per-party inboxes
ordered by sender, counts messages and bits, records the transcript, and wakes every
waiting party with its inbox. There is no awaited channel operation per message.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import trio

from privsim.errors import DeadlockError, ProtocolWarning, ScheduleViolation
from privsim.network.messages import CohortInbox, Inbox, Outbox, block_bits, message_bits, recorded_round, seal
from privsim.network.schedule import CURATOR, Schedule, id_key, sort_ids

if TYPE_CHECKING:
    from privsim.network.messages import CohortOutbox

__all__ = ["SyncNetwork", "check_outbox", "message_bits"]

_nbytes = attrgetter("nbytes")
_EMPTY = Inbox()


def _round_bits(values: list[Any], trials: int) -> int:
    # Fast path: arrays of one dtype with the trial axis; nbytes is one C-level attribute.
    try:
        first = values[0]
        if first.dtype != np.bool_ and first.ndim and first.shape[0] == trials:
            total = sum(map(_nbytes, values))
            if total == first.nbytes * len(values):
                return 8 * total // trials
    except AttributeError:
        pass
    return sum(message_bits(v, trials) for v in values)


def check_outbox(r: int, sender: int | str, tos: list, exp: list, *, finished: bool = False) -> None:
    """Check the receivers ``tos`` that ``sender`` sent to in round ``r`` against the schedule's ``exp``.

    Raises :class:`ScheduleViolation` naming round, sender and receiver (a message twice, a
    message off the schedule, or a scheduled message not sent; with ``finished`` the message
    adds that the sender's routine had returned). Shared by the in-process
    network and the TCP transport (privsim/transport), so both name a culprit alike.

    >>> check_outbox(1, 0, [2], [1])
    Traceback (most recent call last):
    privsim.errors.ScheduleViolation: round 1: message off the schedule (round 1, sender 0, receiver 2)
    """
    if tos == exp:
        return
    seen = set()
    for d in tos:
        if d in seen:
            raise ScheduleViolation(f"round {r}: party {sender} sent two messages to party {d} "
                                    f"(round {r}, sender {sender}, receiver {d})")
        seen.add(d)
    for d in sort_ids(seen):
        if d not in exp:
            raise ScheduleViolation(f"round {r}: message off the schedule (round {r}, sender {sender}, "
                                    f"receiver {d})")
    for d in exp:
        if d not in seen:
            tail = "; it had finished" if finished else ""
            raise ScheduleViolation(f"round {r}: party {sender} did not send its scheduled message to party "
                                    f"{d} (round {r}, sender {sender}, receiver {d}){tail}")


class _Cohort(NamedTuple):
    """What the network keeps of a cohort task: its members and its outbox, not its context
    (a context holds the network, and a cycle would keep every member's stream alive until
    a full collection: 0.6 s at n = 10^5)."""

    ids: np.ndarray
    outbox: CohortOutbox


class SyncNetwork:
    """Synchronous point-to-point network enforcing an oblivious :class:`Schedule`.

    Parameters
    ----------
    schedule:
        The declared pattern; anything off it is a :class:`ScheduleViolation`.
    trials:
        The trial axis length R (used for the bit count).
    record:
        ``"all"`` to keep every message, a container of party ids to keep only the
        messages sent to or by those parties, or ``None`` to keep none.

    Examples
    --------
    Used by :func:`privsim.simulate`; see there.
    """

    def __init__(self, schedule: Schedule, trials: int, record: str | Container | None = "all",
                 on_round: Any = None) -> None:
        self.schedule, self.trials, self.record = schedule, trials, record
        self.round = 1
        self.messages = self.bits = 0
        #: The last round in which a message was sent.
        self.rounds_used = 0
        #: Per round: receiver -> Inbox (sender -> value), as recorded.
        self.transcript: list[dict[int | str, Inbox]] = []
        self._ids: list[Any] = []  # the tasks: own-task party ids, then cohort keys
        self._outboxes: dict[int | str, Outbox] = {}
        self._cohorts: dict[Any, _Cohort] = {}
        self._live = self._arrived = 0
        self._waiting: set[int | str] = set()
        self._done: set[int | str] = set()
        self._ended: set[int | str] = set()  # parties that called end_round at least once
        self._warned: set[str] = set()  # the ProtocolWarnings given in this run (each once)
        self._lot = trio.lowlevel.ParkingLot()
        self._inboxes: dict[int | str, Inbox] = {}
        self._on_round = on_round

    def attach(self, ids: list[int | str], cohorts: Iterable[Any] = ()) -> dict[int | str, Outbox]:
        """Register the parties that run as their own tasks, in canonical id order, and the
        cohorts (:class:`~privsim.parties.cohort.CohortContext`, each one task for its members,
        docs/architecture.md, "Cohorts"); returns each own-task party's outbox."""
        self._outboxes = {pid: Outbox() for pid in ids}
        self._cohorts = {c.key: _Cohort(c.ids, c.outbox) for c in cohorts}
        n = self.schedule.n
        self._owner = np.full(n, -1, dtype=np.int64)  # party -> index of its cohort (-1: its own task)
        self._position = np.zeros(n, dtype=np.int64)  # party -> its position in the cohort
        for index, c in enumerate(self._cohorts.values()):
            self._owner[c.ids], self._position[c.ids] = index, np.arange(len(c.ids))
        self._keys = list(self._cohorts)
        self._ids = [*ids, *self._cohorts]
        self._live = len(self._ids)
        return self._outboxes

    # ------------------------------------------------------------------ barrier
    async def end_round(self, pid: int | str) -> Inbox:
        """Called by ``ctx.end_round()``: wait for the barrier, return ``pid``'s inbox."""
        self._ended.add(pid)
        self._arrived += 1
        if self._arrived == self._live:
            self._complete_round()
        else:
            self._waiting.add(pid)
            try:
                await self._lot.park()
            except BaseException:
                # Cancelled while parked (the run is failing): it never completed the round.
                if pid in self._waiting:
                    self._waiting.discard(pid)
                    self._arrived -= 1
                raise
        return self._inboxes.get(pid, _EMPTY)

    def depart(self, pid: int | str) -> None:
        """Called when a party routine returns: it takes part in no later round."""
        if pid not in self._ended and self.schedule.rounds and "never" not in self._warned:
            self._warned.add("never")
            _warn(f"party {pid} returned without calling end_round(): what it sent goes out only "
                  "because every party has finished; await ctx.end_round() after sending")
        self._done.add(pid)
        self._live -= 1
        if self._live and self._arrived == self._live:
            self._complete_round()
        elif not self._live:
            self._finish()

    def _complete_round(self) -> None:
        r = self.round
        ending = ([p for p in self._ids if p not in self._done and p not in self._cohorts]
                  if r > self.schedule.rounds and self._done else [])
        if ending and "extra" not in self._warned:
            # A round past the schedule that some parties ended while others had finished
            # (whatever order trio ran them in, the finished ones are those that did not end it).
            self._warned.add("extra")
            who = sort_ids(ending)[0]
            _warn(f"party {who} called end_round() for round {r}, after the schedule's last round "
                  f"({self.schedule.rounds}) while other parties had finished: one end_round() per round "
                  "(a second call ends a round nobody takes part in)")
        receivers, keep, trials = self.schedule.receivers, self.record, self.trials
        boxes: dict[int | str, dict] = {}  # plain dicts while filling; read-only Inboxes below
        for sender, outbox in self._outboxes.items():
            exp = receivers(r, sender)
            if not outbox.to:
                if exp:
                    check_outbox(r, sender, [], exp)  # names the first receiver it owed a message
                continue
            tos, vals, bits = outbox.take()
            if tos != exp:
                check_outbox(r, sender, tos, exp)
            for to, v in zip(tos, vals):
                box = boxes.get(to)
                if box is None:
                    box = boxes[to] = {}
                box[sender] = v
            self.messages += len(tos)
            self.bits += _round_bits(vals, trials)
            if bits:
                for to, b in bits.items():
                    self.bits += b - message_bits(vals[tos.index(to)], trials)
        cohort_in = self._cohort_round(r, boxes) if self._cohorts else {}
        inboxes = {d: Inbox(box, owner=d, round=r) for d, box in boxes.items()}
        if inboxes or any(cohort_in.values()):
            self.rounds_used = r
        if keep is not None:
            self.transcript.append(recorded_round(inboxes, keep, r))
        self._inboxes = {**inboxes, **cohort_in} if cohort_in else inboxes  # a new dict: the transcript keeps inboxes
        self.round = r + 1
        self._arrived = 0
        self._waiting.clear()
        self._lot.unpark_all()
        if self._on_round is not None:
            self._on_round(r)

    def _cohort_round(self, r: int, boxes: dict[int | str, dict]) -> dict[Any, CohortInbox]:
        """Check, count and deliver the cohorts' sends of round ``r``.

        ``boxes`` (receiver -> sender -> value) holds what own-task parties sent; it becomes the
        round's inboxes and transcript, so what a cohort sends to an own-task party is added to
        it, and so is what a cohort sends to a cohort member when the transcript keeps everything.
        """
        n, trials, keep_all = self.schedule.n, self.trials, self.record == "all"
        entries: dict[Any, list] = {key: [] for key in self._cohorts}
        for d, (key, pos) in [(d, m) for d in boxes if (m := self._member_of(d)) is not None]:
            box = boxes[d]  # own-task senders to a cohort member
            senders = np.array(list(box), dtype=object if CURATOR in box else np.int64)
            entries[key].append((pos, senders, np.stack(list(box.values()), axis=1)))
            if self.record is None:
                del boxes[d]
        extra: dict[int | str, list] = {}  # receiver -> [(sender ids, block)] for boxes
        for cohort in self._cohorts.values():
            ids = cohort.ids
            sends = [(to, ids if pos is None else ids[pos], block, bits)
                     for to, pos, block, bits in cohort.outbox.take()]
            codes = [senders * (n + 1) + (to if isinstance(to, np.ndarray) else n if to == CURATOR else to)
                     for to, senders, _, _ in sends]
            got = np.sort(np.concatenate(codes)) if codes else np.zeros(0, dtype=np.int64)
            if not np.array_equal(got, self.schedule.pair_codes(r, ids)):
                self._cohort_violation(r, ids, sends)
            for to, senders, block, bits in sends:
                self.messages += len(senders)
                self.bits += len(senders) * bits if bits is not None else block_bits(block, trials, len(senders))
                if isinstance(to, np.ndarray):  # send_each: message i to party to[i]
                    self._deliver_each(to, senders, block, entries, extra, boxes)
                    continue
                owner = self._member_of(to)
                if owner is not None:
                    entries[owner[0]].append((owner[1], senders, block))
                if owner is None or keep_all:
                    extra.setdefault(to, []).append((senders, block))
                elif self.record is not None:
                    boxes.setdefault(to, {})  # the transcript has the round's receivers, as per party
        for d, blocks in extra.items():
            box = boxes.get(d, {})
            for senders, block in blocks:
                # Each sender's message is a row of the block member-major: contiguous, as a party's
                # own would be (a strided column of a (trials, k) block costs a cache line a value to
                # whoever reads it); a block already member-major is not copied.
                box.update(zip(senders.tolist(), seal(np.ascontiguousarray(block.swapaxes(0, 1)))))
            keys = list(box)
            if any(type(s) is not int for s in keys) or any(a > b for a, b in zip(keys, keys[1:])):
                box = dict(sorted(box.items(), key=lambda item: id_key(item[0])))  # ordered by sender
            boxes[d] = box
        return {key: CohortInbox(len(c.ids), trials, entries[key]) for key, c in self._cohorts.items()}

    def _member_of(self, pid: int | str) -> tuple[Any, int] | None:
        """``(cohort key, position)`` of a cohort's member, None for an own-task party."""
        if isinstance(pid, str) or self._owner[pid] < 0:
            return None
        return self._keys[self._owner[pid]], int(self._position[pid])

    def _deliver_each(self, to: np.ndarray, senders: np.ndarray, block: np.ndarray, entries: dict, extra: dict,
                      boxes: dict) -> None:
        """Deliver a block whose message ``i`` goes to party ``to[i]`` (see :meth:`_cohort_round`)."""
        keys = self._keys
        owner = self._owner[to]  # the receiving cohort's index, -1 for an own-task party
        for ci in np.unique(owner).tolist():
            sel = np.flatnonzero(owner == ci)
            if ci >= 0:
                entries[keys[ci]].append((self._position[to[sel]], senders[sel], block[:, sel]))
            if ci < 0 or self.record == "all":
                for d, idx in _by_receiver(to[sel], sel):
                    extra.setdefault(d, []).append((senders[idx], block[:, idx]))
            elif self.record is not None:
                for d in np.unique(to[sel]).tolist():
                    boxes.setdefault(d, {})  # the transcript has the round's receivers, as per party

    def _cohort_violation(self, r: int, ids: np.ndarray, sends: list) -> None:
        """Name the first member whose sends differ from the schedule (as :func:`check_outbox` does)."""
        tos: dict[int, list] = {}
        for to, senders, _, _ in sends:
            receivers = to.tolist() if isinstance(to, np.ndarray) else [to] * len(senders)
            for s, d in zip(senders.tolist(), receivers):
                tos.setdefault(s, []).append(d)
        for s in ids.tolist():
            check_outbox(r, s, tos.get(s, []), self.schedule.receivers(r, s))

    def _finish(self) -> None:
        # All parties have returned: flush what was sent after the last barrier, then make
        # sure no later scheduled round was skipped.
        if any(box.to for box in self._outboxes.values()) or any(c.outbox.sends for c in self._cohorts.values()):
            self._complete_round()
        for r in range(self.round, self.schedule.rounds + 1):
            for s, ds in self.schedule.senders_in(r).items():
                check_outbox(r, s, [], ds, finished=True)

    async def watchdog(self) -> None:
        """Detect parties that can never reach the barrier (all other tasks blocked)."""
        import trio.testing

        while True:
            await trio.testing.wait_all_tasks_blocked()
            if not self._live:
                return
            self.check_stuck()

    def check_stuck(self) -> None:
        """Raise :class:`DeadlockError` if a live party is not at the barrier (called once every
        runnable task has blocked; the asyncio backend's watchdog calls it too)."""
        stuck = [pid for pid in self._ids if pid not in self._done and pid not in self._waiting]
        if stuck:
            raise DeadlockError(
                f"round {self.round}: part{'ies' if len(stuck) > 1 else 'y'} "
                f"{', '.join(map(str, stuck[:8]))}{' ...' if len(stuck) > 8 else ''} never finished the "
                "round (they wait on something other than end_round)")


def _by_receiver(tos: np.ndarray, index: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(receiver, the entries of index sent to it)`` for each receiver in ``tos``, in order.

    >>> [(d, i.tolist()) for d, i in _by_receiver(np.array([4, 2, 4]), np.array([7, 8, 9]))]
    [(2, [8]), (4, [7, 9])]
    """
    order = np.argsort(tos, kind="stable")
    sorted_tos = tos[order]
    cuts = [0, *(np.flatnonzero(np.diff(sorted_tos)) + 1).tolist(), len(tos)]
    return [(int(sorted_tos[a]), index[order[a:b]]) for a, b in zip(cuts[:-1], cuts[1:])]


def _warn(message: str) -> None:
    import warnings

    warnings.warn(message, ProtocolWarning, stacklevel=3)
