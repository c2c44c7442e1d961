"""One authenticated TCP connection between two parties: handshake, framed send, checked receive.

The handshake (docs/architecture.md, "Runtimes"): the accepting end sends ``MAGIC`` and a
16-byte nonce, the connecting end answers with ``MAGIC``, its own nonce and a hello frame
naming itself and the receiver; the accepting end checks the hello's HMAC (run key over
both nonces, so a hello recorded on another connection fails) and that the sender is a
neighbour it still waits for, then answers with its own hello. After that every frame
carries the next sequence number of its direction: a replayed or reordered frame fails.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

import trio

from privsim.errors import PartyFailure
from privsim.transport.framing import HEADER, HELLO, MAGIC, TAG_BYTES, FrameError, Header, frame, parse_header, verify

__all__ = ["Link", "PeerClosed", "accept_peer", "connect_peer", "log"]

log = logging.getLogger("privsim.transport")
_NONCE = 16
_PREFACE = len(MAGIC) + _NONCE


class PeerClosed(Exception):
    """The other end closed the connection (``partial``: in the middle of a frame).

    >>> str(PeerClosed(partial=True))
    'connection closed in the middle of a frame'
    """

    def __init__(self, partial: bool) -> None:
        super().__init__("connection closed" + (" in the middle of a frame" if partial else ""))
        self.partial = partial


class _Reader:
    """Exact-size reads over a trio stream."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    async def exactly(self, size: int) -> bytes:
        while len(self.buf) < size:
            chunk = await self.stream.receive_some(max(65536, size - len(self.buf)))
            if not chunk:
                raise PeerClosed(partial=bool(self.buf))
            self.buf += chunk
        out = bytes(self.buf[:size])
        del self.buf[:size]
        return out


class Link:
    """An authenticated connection to ``peer`` (built by :func:`accept_peer` or :func:`connect_peer`).

    ``bytes_sent`` counts every byte this end wrote, handshake included.

    Examples
    --------
    The party runner opens one per neighbour (privsim/transport/party.py, ``open_links``).
    """

    def __init__(self, stream: trio.SocketStream, reader: _Reader, me: int | str, peer: int | str, key: bytes,
                 session: bytes, max_payload: int, bytes_sent: int) -> None:
        self.stream, self.reader = stream, reader
        self.me, self.peer = me, peer
        self.key, self.session, self.max_payload = key, session, max_payload
        self.send_seq = self.recv_seq = 1
        self.bytes_sent = bytes_sent

    async def send(self, kind: int, round: int, payload: bytes = b"") -> None:
        """Send one frame (the next sequence number of this direction)."""
        data = frame(self.key, self.session, kind, round, self.me, self.peer, self.send_seq, payload)
        self.send_seq += 1
        await self.stream.send_all(data)
        self.bytes_sent += len(data)

    async def receive(self) -> tuple[Header, bytes]:
        """The next frame from the peer, checked (tag, sequence, sender, receiver).

        Raises :class:`FrameError` for a bad frame and :class:`PeerClosed` at end of stream.
        """
        head, payload = await _read_frame(self.reader, self.key, self.session, self.max_payload)
        if head.seq != self.recv_seq:
            raise FrameError(f"frame with sequence number {head.seq}, expected {self.recv_seq} (replayed or "
                             "reordered)")
        if head.sender != self.peer or head.receiver != self.me:
            raise FrameError(f"frame from {head.sender} to {head.receiver} on the connection from {self.peer} "
                             f"to {self.me}")
        self.recv_seq += 1
        return head, payload

    async def close(self) -> None:
        """Close the connection now."""
        with trio.move_on_after(1):
            await self.stream.aclose()


async def _read_frame(reader: _Reader, key: bytes, session: bytes, max_payload: int) -> tuple[Header, bytes]:
    raw = await reader.exactly(HEADER.size)
    head = parse_header(raw, max_payload)
    body = await reader.exactly(head.length + TAG_BYTES)
    payload, tag = body[: head.length], body[head.length:]
    if not verify(key, session, raw, payload, tag):
        raise FrameError("frame failed authentication (bad HMAC: not signed with this run's key, or replayed "
                         "from another connection)")
    return head, payload


async def _preface(stream: trio.SocketStream, accepting: bool) -> tuple[_Reader, bytes]:
    """Send our magic and nonce, read the other end's; returns the reader and the session (acceptor's nonce first)."""
    reader = _Reader(stream)
    ours = secrets.token_bytes(_NONCE)
    await stream.send_all(MAGIC + ours)
    data = await reader.exactly(_PREFACE)
    if data[: len(MAGIC)] != MAGIC:
        raise FrameError(f"connection preface {data[:len(MAGIC)]!r} is not {MAGIC!r}")
    theirs = data[len(MAGIC):]
    return reader, ours + theirs if accepting else theirs + ours


async def accept_peer(stream: trio.SocketStream, me: int | str, key: bytes, waiting: dict[int | str, Any],
                      max_payload: int) -> Link:
    """Run the accepting end of the handshake; ``waiting`` holds the neighbours not yet connected.

    Raises :class:`FrameError` (with the reason) for anything but a neighbour's valid hello.

    Examples
    --------
    See ``test_unknown_peer_is_refused`` in tests/test_transport.py.
    """
    reader, session = await _preface(stream, accepting=True)
    head, _ = await _read_frame(reader, key, session, 0)
    if head.kind != HELLO or head.seq != 0 or head.receiver != me:
        raise FrameError(f"expected a hello to party {me} (got kind {head.kind}, seq {head.seq}, "
                         f"receiver {head.receiver})")
    if head.sender not in waiting:
        raise FrameError(f"unknown peer: party {head.sender} has no channel to party {me} in this run, or is "
                         "already connected")
    claim = waiting.pop(head.sender)  # claimed now: a second connection in the meantime is refused
    reply = frame(key, session, HELLO, 0, me, head.sender, 0)
    try:
        await stream.send_all(reply)
    except BaseException:
        waiting[head.sender] = claim
        raise
    return Link(stream, reader, me, head.sender, key, session, max_payload, _PREFACE + len(reply))


async def connect_peer(address: tuple[str, int], me: int | str, peer: int | str, key: bytes, max_payload: int,
                       deadline: float) -> Link:
    """Connect to ``peer`` at ``address`` (retrying until ``deadline``) and run the handshake.

    Raises :class:`~privsim.errors.PartyFailure` naming ``peer`` if it cannot be reached
    or authenticated.

    Examples
    --------
    See ``test_an_authenticated_peer_cannot_break_the_schedule`` in tests/test_transport.py.
    """
    host, port = address
    # An ASCII host as bytes: getaddrinfo would encode a str with the idna codec, whose first
    # use imports encodings.idna and stringprep (40 ms of a party's CPU at n = 32, each party).
    target = host.encode("ascii") if host.isascii() else host
    while True:
        try:
            stream = await trio.open_tcp_stream(target, port)
            break
        except OSError as exc:
            if trio.current_time() > deadline:
                raise PartyFailure(f"party {me} could not connect to party {peer} at {host}:{port} ({exc})",
                                   peer, 0) from None
            await trio.sleep(0.05)
    try:
        reader, session = await _preface(stream, accepting=False)
        hello = frame(key, session, HELLO, 0, me, peer, 0)
        await stream.send_all(hello)
        head, _ = await _read_frame(reader, key, session, 0)
        if head.kind != HELLO or head.sender != peer or head.receiver != me:
            raise FrameError(f"the answer came from party {head.sender}, not {peer}")
    except (FrameError, PeerClosed, trio.BrokenResourceError) as exc:
        await stream.aclose()
        raise PartyFailure(f"party {me} could not authenticate party {peer} at {host}:{port} ({exc}); is the "
                           "peers file the same on both hosts?", peer, 0) from None
    return Link(stream, reader, me, peer, key, session, max_payload, _PREFACE + len(hello))
