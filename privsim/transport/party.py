"""One party as its own process: connect to its neighbours, run its routine, report.

``privsim party --id I --peers FILE`` (or ``python -m privsim.transport``) runs
:func:`run_party` for party ``I`` of the run the peers file describes, on any host. The
party derives its random stream exactly as in process (same seed, same stream: see
privsim/parties/rng.py), connects to the parties it shares a channel with (it accepts
from parties with a larger id and connects to those with a smaller one; the curator
last), runs the protocol's routine through :class:`~privsim.transport.endpoint.TcpEndpoint`,
and returns a :class:`PartyReport`: its output, what it received, its random draws, its
counts and bytes on the wire, or the error that stopped it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import struct
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import trio

from privsim import errors, resources
from privsim.errors import ParameterError, PartyFailure, PrivsimError
from privsim.network.messages import Inbox
from privsim.network.schedule import CURATOR, Schedule, id_key, parse_party
from privsim.parties.context import PartyContext
from privsim.parties.rng import StreamSeeder, block_range
from privsim.parties.runner import first_error, run_cancellable
from privsim.parties.runner import run_party as run_party_routine
from privsim.protocols.inputs import prepare_inputs
from privsim.transport.endpoint import TcpEndpoint
from privsim.transport.framing import MAGIC, FrameError, decode_id, decode_value, encode_id, encode_value
from privsim.transport.link import Link, accept_peer, connect_peer, log
from privsim.transport.peers import PeersConfig, load_peers

__all__ = ["CONNECT_TIMEOUT", "LINGER", "PartyReport", "main", "run_party"]

#: Seconds a party waits for all its neighbours to connect (processes on several hosts
#: start by hand; the launcher on one host notices a dead process long before).
CONNECT_TIMEOUT = 60.0
#: Seconds a finished party keeps its connections open for its neighbours' bye (closing
#: with their bye unread would reset the connection under data they have not read yet).
LINGER = 60.0
_U32 = struct.Struct("!I")
_ERROR_TYPES = {name: getattr(errors, name) for name in errors.__all__}


@dataclass(frozen=True)
class PartyReport:
    """What one party process returns to whoever started it (no pickle: see :meth:`to_bytes`).

    ``inboxes`` maps each round with messages to this party's inbox; ``draws`` is the
    party's random tape (``None`` when not recorded); ``ready`` and ``done`` are
    ``time.monotonic()`` readings when its connections were up and when it had finished.
    ``error`` describes the failure that stopped it (``kind``, ``message``, ``party``,
    ``round`` and ``culprit``, the party it blames), or is ``None``.

    >>> r = PartyReport(0, np.arange(3), {1: Inbox({1: np.ones(3)})}, None, 1, 64, 1, 1, 500)
    >>> PartyReport.from_bytes(r.to_bytes()).inboxes[1][1].tolist()
    [1.0, 1.0, 1.0]
    """

    party: int | str
    output: Any
    inboxes: dict[int, Inbox]
    draws: list[np.ndarray] | None
    messages: int
    bits: int
    rounds_used: int
    rounds_done: int
    wire_bytes: int
    ready: float = 0.0
    done: float = 0.0
    error: dict[str, Any] | None = field(default=None)

    def to_bytes(self) -> bytes:
        """``MAGIC | u32 length | JSON head | encoded values`` (arrays by index into the values)."""
        values: list[Any] = []

        def ref(v: Any) -> int:
            values.append(v)
            return len(values) - 1

        head = {"party": encode_id(self.party), "output": None if self.output is None else ref(self.output),
                "inboxes": [[r, encode_id(s), ref(v)] for r, box in self.inboxes.items() for s, v in box.items()],
                "draws": None if self.draws is None else [ref(d) for d in self.draws],
                "counts": [self.messages, self.bits, self.rounds_used, self.rounds_done, self.wire_bytes],
                "times": [self.ready, self.done], "error": self.error}
        text = json.dumps(head).encode()
        return MAGIC + _U32.pack(len(text)) + text + encode_value(values)

    @classmethod
    def from_bytes(cls, data: bytes) -> PartyReport:
        """Parse :meth:`to_bytes`; raises :class:`FrameError` if malformed."""
        try:
            if data[:4] != MAGIC:
                raise FrameError("report: bad magic")
            size = _U32.unpack_from(data, 4)[0]
            head = json.loads(data[8:8 + size])
            values = decode_value(data[8 + size:])
            boxes: dict[int, dict[int | str, Any]] = {}
            for r, s, k in head["inboxes"]:
                boxes.setdefault(int(r), {})[decode_id(s)] = values[k]
            me = decode_id(head["party"])
            inboxes = {r: Inbox(box, owner=me, round=r) for r, box in boxes.items()}
            draws = None if head["draws"] is None else [values[k] for k in head["draws"]]
            return cls(me, None if head["output"] is None else values[head["output"]],
                       inboxes, draws, *map(int, head["counts"]), *map(float, head["times"]), error=head["error"])
        except (ValueError, KeyError, TypeError, IndexError, struct.error) as exc:
            raise FrameError(f"report: malformed ({exc})") from None

    def exception(self) -> PrivsimError | None:
        """The error this party stopped with, rebuilt as its privsim class (or ``None``)."""
        if self.error is None:
            return None
        cls = _ERROR_TYPES.get(self.error.get("kind"), PartyFailure)
        if issubclass(cls, PartyFailure):
            party = self.error.get("party")
            return cls(self.error["message"], None if party is None else decode_id(party), self.error.get("round"))
        return cls(self.error["message"])

    @property
    def culprit(self) -> int | str | None:
        """The party this party's error blames (itself for its own routine's failure)."""
        return None if self.error is None else decode_id(self.error["culprit"])


def _error_dict(exc: BaseException, me: int | str, round: int) -> dict[str, Any]:
    if not isinstance(exc, PrivsimError):
        traceback.print_exception(exc)
        exc = PartyFailure(f"party {me} failed in round {round}: internal error {type(exc).__name__}: {exc}", me,
                           round)
    party = getattr(exc, "party", None)
    culprit = getattr(exc, "culprit", party if party is not None else me)
    return {"kind": type(exc).__name__, "message": str(exc), "party": None if party is None else encode_id(party),
            "round": getattr(exc, "round", None) or round, "culprit": encode_id(culprit)}


def _listener(cfg: PeersConfig, me: int | str) -> socket.socket:
    host, port = cfg.addresses[me]
    try:
        return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                    backlog=cfg.n + 16)
    except OSError as exc:
        raise PartyFailure(f"party {me} cannot listen on {host}:{port} ({exc.strerror})", me, 0) from None


async def open_links(cfg: PeersConfig, me: int | str, schedule: Schedule,
                     sock: socket.socket | None) -> dict[int | str, Link]:
    """Connect to (and accept) every neighbour of ``me``; refuse anyone else with one logged line."""
    neighbours = schedule.neighbours(me)
    waiting: dict[int | str, bool] = {p: True for p in neighbours if id_key(p) > id_key(me)}
    links: dict[int | str, Link] = {}
    listener = None
    if waiting:
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(_listener(cfg, me) if sock is None else sock))
    elif sock is not None:  # nobody connects to this party: it need not listen
        sock.close()
    deadline = trio.current_time() + max(CONNECT_TIMEOUT, cfg.timeout)

    async def handshake(stream: trio.SocketStream, done: trio.CancelScope) -> None:
        try:
            where = "{}:{}".format(*stream.socket.getpeername()[:2])
        except OSError:
            where = "an unknown address"
        try:
            with trio.fail_after(cfg.timeout):
                link = await accept_peer(stream, me, cfg.key, waiting, cfg.max_payload)
        except Exception as exc:  # hostile bytes never stop the party: refuse with one line
            log.warning("party %s: refused a connection from %s: %s", me, where, exc or type(exc).__name__)
            with trio.move_on_after(1):
                await stream.aclose()
            return
        links[link.peer] = link
        if not waiting:
            done.cancel()

    async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            while waiting:
                stream = await listener.accept()  # type: ignore[union-attr]
                nursery.start_soon(handshake, stream, nursery.cancel_scope)

    async def connect(peer: int | str) -> None:
        links[peer] = await connect_peer(cfg.addresses[peer], me, peer, cfg.key, cfg.max_payload, deadline)

    try:
        with trio.move_on_at(deadline):
            async with trio.open_nursery() as nursery:
                if waiting:
                    await nursery.start(serve)
                for peer in neighbours:
                    if id_key(peer) < id_key(me):
                        nursery.start_soon(connect, peer)
    finally:
        if listener is not None:
            await listener.aclose()
    missing = [p for p in neighbours if p not in links]
    if missing:
        for link in links.values():
            await link.close()
        raise PartyFailure(f"party {missing[0]} did not connect to party {me} within "
                           f"{max(CONNECT_TIMEOUT, cfg.timeout):g} s", missing[0], 0)
    return links


async def run_party(cfg: PeersConfig, me: int | str, sock: socket.socket | None = None) -> PartyReport:
    """Run party ``me`` of the run ``cfg`` describes; never raises for the run's failures.

    Parameters
    ----------
    cfg:
        The run (see :class:`~privsim.transport.peers.PeersConfig`).
    me:
        This party's id.
    sock:
        A listening socket to accept on (the launcher passes one); ``None`` binds
        ``cfg.addresses[me]``.

    Returns
    -------
    PartyReport
        With ``error`` set if the run failed (the error names the party and round).

    Examples
    --------
    :func:`privsim.simulate` with ``transport="tcp"`` runs one of these per process.
    """
    state: dict[str, Any] = {"ctx": None, "endpoint": None, "links": {}, "ready": 0.0, "done": 0.0}
    error = None
    try:
        await _run(cfg, me, sock, state)
    except BaseExceptionGroup as group:
        error = first_error(group)
    except Exception as exc:
        error = exc
    finally:
        for link in state["links"].values():
            await link.close()
    ctx, endpoint = state["ctx"], state["endpoint"]
    if error is not None:
        state["done"] = time.monotonic()
        error = _error_dict(error, me, ctx.round if ctx is not None else 0)
    rng = ctx._rng if ctx is not None else None
    counts = (0, 0, 0, 0) if endpoint is None else (endpoint.messages, endpoint.bits, endpoint.rounds_used,
                                                     endpoint.rounds_done)
    inboxes = endpoint.inboxes if endpoint is not None and cfg.record else {}
    return PartyReport(me, None if ctx is None else ctx._output, inboxes,
                       None if rng is None else rng.draws, *counts,
                       sum(link.bytes_sent for link in state["links"].values()), state["ready"], state["done"],
                       error)


async def _run(cfg: PeersConfig, me: int | str, sock: socket.socket | None, state: dict[str, Any]) -> None:
    protocol = cfg.build()
    protocol.check_setting(cfg.n, cfg.t)
    schedule = protocol.cached_schedule(cfg.n, cfg.t)
    x = prepare_inputs(protocol, cfg.inputs, cfg.trials, cfg.n)
    seeder = StreamSeeder(cfg.seed, cfg.n, block_range(cfg.trials, cfg.block_offset))
    state["links"] = links = await open_links(cfg, me, schedule, sock)
    state["ready"] = time.monotonic()
    state["endpoint"] = endpoint = TcpEndpoint(me, schedule, cfg.trials, links, cfg.timeout)
    state["ctx"] = ctx = PartyContext(me, cfg.n, cfg.t, cfg.trials, None if me == CURATOR else x[:, me], endpoint,
                                      lambda pid: seeder.rng(pid, cfg.trials, record=cfg.record),
                                      endpoint.attach([me])[me])
    routine = protocol.curator if me == CURATOR else protocol.party
    async with trio.open_nursery() as nursery:
        for link in links.values():
            nursery.start_soon(endpoint.reader, link)
        await run_party_routine(routine, ctx, endpoint)
        await endpoint.finish()
        state["done"] = time.monotonic()  # its last scheduled message sent and received; the goodbyes follow
        await endpoint.close()
        nursery.cancel_scope.deadline = trio.current_time() + LINGER


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="privsim party", description="Run one party of a privsim run over TCP.")
    ap.add_argument("--id", required=True, help="this party's id (0..n-1, or C for the curator)")
    ap.add_argument("--peers", required=True, help="the run's peers file (JSON; holds the run's key)")
    ap.add_argument("--result", help="write this party's report here (binary, no pickle)")
    ap.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)  # a socket the launcher listens on
    ap.add_argument("--start-fds", help=argparse.SUPPRESS)  # READY_FD,GO_FD of the launcher's start barrier
    return ap.parse_args(argv)


def _start_barrier(fds: str) -> None:
    """Tell the launcher this party is set up, then wait until every party is (see launcher)."""
    ready, go = (int(f) for f in fds.split(","))
    os.write(ready, b".")
    os.close(ready)
    os.read(go, 1)  # end of file: the launcher has heard from every party
    os.close(go)


def _check_run(cfg: PeersConfig, result: str | None) -> None:
    """Refuse, before any work, a run this party cannot afford or whose report it cannot write."""
    # The run's floor (the trials' results, one batch of every party): a bound on this party's
    # share; the trials alone first, so that an absurd count is refused without planning batches.
    limit = resources.available_memory()
    resources.check_memory(resources.Estimate(resources.BASE_BYTES + cfg.trials * resources.TRIAL_BYTES, 0.0, 1),
                           limit)
    resources.check_memory(resources.floor_estimate(cfg.n, cfg.trials), limit)
    if result is not None:
        path = Path(result)
        folder = path.parent
        if path.is_dir():
            raise ParameterError(f"--result: {result} is a folder (give a file name)")
        if not folder.is_dir():
            raise ParameterError(f"--result: folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ParameterError(f"--result: folder {str(folder)!r} is not writable")


def main(argv: list[str] | None = None) -> int:
    """Run one party (``privsim party``); prints a one-line JSON summary, returns the exit code.

    Exit code 0 when the party finished, 2 when the run failed (the message names the
    party and round) or the peers file is wrong.

    Examples
    --------
    ``python -m privsim.transport --id 1 --peers peers.json --result 1.report``
    """
    args = _parse(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr, force=True)
    try:
        cfg = load_peers(args.peers)
        me = parse_party(args.id, cfg.n, True)
        if me not in cfg.addresses:
            raise PrivsimError(f"--id: party {me} has no address in {args.peers}")
        _check_run(cfg, args.result)
        cfg.build()  # imports the protocol's module before the start barrier
    except PrivsimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.start_fds:
        _start_barrier(args.start_fds)
    sock = None if args.listen_fd is None else socket.socket(fileno=args.listen_fd)
    report = run_cancellable(run_party, cfg, me, sock)  # Ctrl-C while waiting for peers: Interrupted
    assert report is not None  # (only an interrupt cancels it, and that raised)
    try:
        data = report.to_bytes()
    except PrivsimError as exc:  # an output the wire cannot carry
        report = replace(report, output=None, inboxes={}, draws=None, error=_error_dict(exc, me, report.rounds_done))
        data = report.to_bytes()
    if args.result:
        Path(args.result).write_bytes(data)
    print(json.dumps({"party": str(me), "messages": report.messages, "bits": report.bits,
                      "rounds": report.rounds_used, "wire_bytes": report.wire_bytes,
                      "error": None if report.error is None else report.error["message"]}))
    if report.error is not None:
        print(f"error: {report.error['message']}", file=sys.stderr)
    return 0 if report.error is None else 2

