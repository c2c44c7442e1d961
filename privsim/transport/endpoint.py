"""One party's side of the synchronous network over TCP: the interface PartyContext calls.

:class:`TcpEndpoint` offers what :class:`~privsim.network.SyncNetwork` offers a context
(``attach``, ``end_round``, ``depart``), for the one party of this process. A round ends
for a party when it has sent its round's messages (checked against the schedule first)
and received every message the schedule sends it in that round; there is no global
barrier, and because the pattern is oblivious (Beimel–Nissim–Omri, Section 2) each party
knows exactly what to wait for. A message off the schedule, twice, or missing is a
:class:`ScheduleViolation` naming round, sender and receiver; a peer that disconnects or
stays silent for ``timeout`` seconds is a :class:`PartyFailure` naming it and the round.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import trio

from privsim.errors import PartyFailure, ScheduleViolation
from privsim.network.messages import Inbox, Outbox, message_bits
from privsim.network.network import check_outbox
from privsim.network.schedule import Schedule, sort_ids
from privsim.transport.framing import BYE, MESSAGE, FrameError, decode_value, encode_value
from privsim.transport.link import Link, PeerClosed, log

__all__ = ["TcpEndpoint"]

_BYE, _LOST = "bye", "lost"


def _blame(exc: Exception, culprit: int | str) -> Exception:
    exc.culprit = culprit  # type: ignore[attr-defined]  # the launcher reports the root cause by it
    return exc


class TcpEndpoint:
    """The network of one party process.

    Parameters
    ----------
    me:
        This party's id.
    schedule:
        The run's schedule (what to send, and what to wait for, in every round).
    trials:
        The trial axis length (for the bit count).
    links:
        ``peer -> Link``: one authenticated connection per neighbour.
    timeout:
        Seconds without any frame before a missing scheduled message fails the run.

    Examples
    --------
    Built by :func:`privsim.transport.party.run_party`; see there.
    """

    def __init__(self, me: int | str, schedule: Schedule, trials: int, links: dict[int | str, Link],
                 timeout: float) -> None:
        self.me, self.schedule, self.trials, self.links, self.timeout = me, schedule, trials, links, timeout
        #: round -> sender -> value received.
        self.slots: dict[int, dict[int | str, Any]] = {}
        #: round -> this party's inbox (rounds with messages only).
        self.inboxes: dict[int, Inbox] = {}
        self.closed: dict[int | str, str] = {}
        self.messages = self.bits = self.rounds_used = self.rounds_done = 0
        self._expected = {r: [s for s, ds in schedule.senders_in(r).items() if me in ds]
                          for r in range(1, schedule.rounds + 1)}
        self._wakeup = trio.Event()
        self._round = 1
        self._completed: set[int] = set()
        self.outbox = Outbox()

    def attach(self, ids: list[int | str]) -> dict[int | str, Outbox]:
        """Register this process's party (``ids == [me]``); returns its outbox."""
        if list(ids) != [self.me]:
            raise ValueError(f"a TCP endpoint serves one party ({self.me}), not {ids}")
        return {self.me: self.outbox}

    @property
    def round(self) -> int:
        """This party's current round, from 1 (``ctx.round`` reads it)."""
        return self._round

    # ------------------------------------------------------------------ PartyContext interface
    async def end_round(self, pid: int | str) -> Inbox:
        """Send the round's messages, then wait for the round's inbox."""
        r = self._round
        await self._send_outbox(r)
        inbox = await self._collect(r)
        self.rounds_done = r
        self._round = r + 1
        return inbox

    def depart(self, pid: int | str) -> None:
        """Called when the routine returns; :meth:`finish` completes the departure."""

    async def finish(self) -> None:
        """After the routine: flush what it sent last, check it owes nothing later, receive
        what is still scheduled for it (the transcript records it, as in process); the
        protocol is then over for this party (:meth:`close` says bye)."""
        r = self._round
        if self.outbox.to:
            await self._send_outbox(r)
            self.rounds_done = r
            r += 1
        for later in range(r, self.schedule.rounds + 1):
            check_outbox(later, self.me, [], self.schedule.receivers(later, self.me), finished=True)
        for later in range(self._round, self.schedule.rounds + 1):
            if self._expected[later]:
                await self._collect(later)

    async def close(self) -> None:
        """Say bye on every link and close its sending side (after :meth:`finish`)."""
        for link in self.links.values():
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):  # a peer gone needs nothing more
                await link.send(BYE, 0)
                await link.stream.send_eof()

    # ------------------------------------------------------------------ sending
    async def _send_outbox(self, r: int) -> None:
        tos, vals, override = self.outbox.take()
        check_outbox(r, self.me, tos, self.schedule.receivers(r, self.me))
        for to, v in zip(tos, vals):
            payload = encode_value(v)
            try:
                await self.links[to].send(MESSAGE, r, payload)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise _blame(PartyFailure(f"party {to} disconnected in round {r} before party {self.me} could send "
                                          "it its message", to, r), to) from None
            self.bits += override[to] if override and to in override else message_bits(v, self.trials)
        if tos:
            self.messages += len(tos)
            self.rounds_used = r

    # ------------------------------------------------------------------ receiving
    async def _collect(self, r: int) -> Inbox:
        """Wait until every message scheduled to this party in round ``r`` is in."""
        expected = self._expected.get(r, [])
        got = self.slots.setdefault(r, {})
        for s in expected:  # in order: the first sender still missing is the one named
            while s not in got:
                state = self.closed.get(s)
                if state == _BYE:
                    raise _blame(ScheduleViolation(
                        f"round {r}: party {s} did not send its scheduled message to party {self.me} (round {r}, "
                        f"sender {s}, receiver {self.me}); it had finished"), s)
                if state is not None:
                    detail = "" if state == _LOST else f" ({state.removeprefix(_LOST + ': ')})"
                    raise _blame(PartyFailure(f"party {s} disconnected in round {r} before sending its message to "
                                              f"party {self.me}{detail}", s, r), s)
                self._wakeup = trio.Event()
                with trio.move_on_after(self.timeout) as scope:
                    await self._wakeup.wait()
                if scope.cancelled_caught:
                    raise _blame(PartyFailure(
                        f"party {s} sent nothing in round {r} for {self.timeout:g} s (party {self.me} waits for its "
                        "message; it hangs, or is slower than the timeout allows)", s, r), s)
        inbox = Inbox(((s, got[s]) for s in sort_ids(expected)), owner=self.me, round=r)
        del self.slots[r]
        self._completed.add(r)
        if inbox:
            self.inboxes[r] = inbox
        return inbox

    async def reader(self, link: Link) -> None:
        """Receive ``link``'s frames until the peer closes; a bad frame fails the run cleanly."""
        peer = link.peer
        try:
            while True:
                head, payload = await link.receive()
                if self.closed.get(peer) == _BYE:
                    raise FrameError("frame after the peer's bye")
                if head.kind == BYE:
                    self.closed[peer] = _BYE
                elif head.kind == MESSAGE:
                    self._store(peer, head.round, payload)
                else:
                    raise FrameError(f"unexpected frame kind {head.kind} after the handshake")
                self._wakeup.set()
        except PeerClosed as exc:
            self.closed.setdefault(peer, _LOST if not exc.partial else f"{_LOST}: {exc}")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self.closed.setdefault(peer, f"{_LOST}: {exc or type(exc).__name__}")
        except FrameError as exc:
            log.warning("party %s: refused a frame from party %s in round %s: %s", self.me, peer, self._round, exc)
            raise _blame(PartyFailure(f"party {self.me} refused a frame from party {peer} in round {self._round} "
                                      f"({exc})", peer, self._round), peer) from None
        self._wakeup.set()

    def _store(self, peer: int | str, r: int, payload: bytes) -> None:
        if r in self._completed or self.me not in self.schedule.receivers(r, peer):
            log.warning("party %s: refused an out-of-round message from party %s for round %s", self.me, peer, r)
            raise _blame(ScheduleViolation(f"round {r}: message off the schedule (round {r}, sender {peer}, "
                                           f"receiver {self.me})"), peer)
        got = self.slots.setdefault(r, {})
        if peer in got:
            log.warning("party %s: refused a second message from party %s in round %s", self.me, peer, r)
            raise _blame(ScheduleViolation(f"round {r}: party {peer} sent two messages to party {self.me} "
                                           f"(round {r}, sender {peer}, receiver {self.me})"), peer)
        got[peer] = decode_value(payload)
