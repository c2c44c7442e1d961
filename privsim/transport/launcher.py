"""Start every party of a run as its own OS process on this host, and gather what they report.

:class:`TcpTransport` is what ``simulate(..., transport="tcp")`` and ``privsim run
--transport tcp`` use. It binds one listening socket per party on the loopback interface
(and hands each process its own, so no port can be taken in between), writes the peers
file with a fresh key, forks (or spawns, ``python -m privsim.transport``) one process
per party, lets them all start their rounds together once every one is set up, and
waits. When a process fails, the others notice within the timeout (a peer's closed
connection at once, a silent one after ``timeout`` seconds); whatever still runs a
moment later is killed, every process is reaped, and the error that started it is
raised: the one that blames a party with no error of its own (the party that died or
hung), at the earliest round.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privsim.errors import ParameterError, PartyFailure, ResourceError
from privsim.network.messages import Inbox, recorded_round
from privsim.network.schedule import id_key, party_ids, sort_ids
from privsim.plan import Transport, TransportRun
from privsim.protocols.base import Protocol
from privsim.transport.framing import FrameError
from privsim.transport.link import log
from privsim.transport.party import CONNECT_TIMEOUT, PartyReport, main
from privsim.transport.peers import DEFAULT_TIMEOUT, PeersConfig

if TYPE_CHECKING:
    from privsim.plan import RunPlan

__all__ = ["TcpRun", "TcpTransport"]

#: Descriptors the launcher opens beside the listening sockets: the start barrier's two pipes
#: (four ends), and while a spawned party starts its log file and Popen's error pipe (three).
_LAUNCHER_FDS = 7
#: A party's own beside its connections: its listening socket, the barrier's two ends,
#: /dev/null, its log, its report, and a spare for the interpreter (e.g. a lazy import).
_PARTY_FDS = 7

_KILLED = -(1 << 16)  # the exit "code" of a process the launcher killed because it outlived a failure


@dataclass(frozen=True)
class TcpRun(TransportRun):
    """What a run over TCP produced: a :class:`~privsim.transport.TransportRun` and its timings.

    ``transcript`` has one entry per round (receiver -> inbox), as the in-process network
    records it; ``wire_bytes`` counts every byte the parties wrote to their sockets
    (handshakes, headers and tags included) for all trials; ``wall_s`` is the launcher's
    wall time, ``protocol_s`` the time from the last party being connected to the last
    one done (its last scheduled message sent and received; the goodbyes on its links
    after that are not counted, as MPyC's protocol time stops before its shutdown).

    Examples
    --------
    Returned by :meth:`TcpTransport.run`; :func:`privsim.simulate` turns it into a
    :class:`~privsim.simulate.SimulationResult`.
    """

    wall_s: float = 0.0
    protocol_s: float = 0.0
    reports: dict[int | str, PartyReport] = field(repr=False, default_factory=dict)


@dataclass(frozen=True)
class TcpTransport(Transport):
    """Every party (and the curator) its own process, talking TCP on ``host``.

    Parameters
    ----------
    host:
        The interface the parties listen on (loopback by default).
    timeout:
        Seconds a party waits for a scheduled message before it names the silent party
        and stops; also how long the launcher lets the others stop by themselves after a
        failure before it kills them.
    start:
        ``"fork"`` (default where the OS has it): each party process is forked from this
        one, with every module already imported; ``"spawn"``: each is a fresh
        ``python -m privsim.transport`` (``privsim party``), exactly what a
        party on another host runs, at the cost of an interpreter start-up (about 0.3 s
        of CPU each on a quiet machine: importing numpy, scipy and trio).
    python:
        The interpreter that ``spawn`` starts.

    Examples
    --------
    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> res = privsim.simulate(RandomizedResponse(), [0, 1, 1], trials=4, seed=1, transport=TcpTransport(timeout=10))
    >>> res.messages, res.wire_bytes > res.messages * 62  # each frame: 30-byte header, 32-byte tag
    (3, True)
    """

    name: ClassVar[str] = "tcp"
    host: str = "127.0.0.1"
    timeout: float = DEFAULT_TIMEOUT
    start: str = "fork" if hasattr(os, "fork") else "spawn"
    python: str = sys.executable

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ParameterError(f"timeout must be > 0 seconds (got {self.timeout})")
        if self.start not in ("fork", "spawn"):
            raise ParameterError(f"start must be 'fork' or 'spawn' (got {self.start!r})")

    def run(self, protocol: Protocol, inputs: np.ndarray, *, t: int, trials: int, seed: int, block_offset: int = 0,
            record: bool = True) -> TcpRun:
        """Run ``protocol`` with one process per party; raises the run's error, if any."""
        n = inputs.shape[inputs.ndim - 1 - len(protocol.input_shape())]
        ids = party_ids(n, protocol.has_curator)
        check_descriptors(protocol.cached_schedule(n, t).triples(), len(ids))
        socks = {pid: socket.create_server((self.host, 0), family=socket.AF_INET6 if ":" in self.host
                                           else socket.AF_INET, backlog=n + 16) for pid in ids}
        try:
            cfg = PeersConfig.create(protocol, inputs, t=t, trials=trials, seed=seed, block_offset=block_offset,
                                     record=record, timeout=self.timeout,
                                     addresses={pid: s.getsockname()[:2] for pid, s in socks.items()})
            with tempfile.TemporaryDirectory(prefix="privsim-tcp-") as tmp:
                start = time.perf_counter()
                reports, codes = self._launch(cfg, ids, socks, Path(tmp))
                wall = time.perf_counter() - start
        finally:
            for s in socks.values():
                s.close()
        _raise_root_cause(reports, codes)
        return _assemble(reports, record, wall)

    def execute(self, plan: RunPlan) -> TransportRun:
        """Run the batch ``plan`` describes (the engine's entry point); records what ``plan.recorded`` asks."""
        recorded = plan.recorded
        run = self.run(plan.protocol, plan.inputs, t=plan.t, trials=plan.trials, seed=plan.entropy,
                       block_offset=plan.block_offset, record=recorded is not None)
        if run.transcript is None or recorded == "all":
            return run
        # what the coalition's view needs, as in process
        return replace(
            run, transcript=[recorded_round(inboxes, recorded, r) for r, inboxes in enumerate(run.transcript, 1)],
            draws={pid: d for pid, d in run.draws.items() if pid in recorded})

    def _launch(self, cfg: PeersConfig, ids: list[int | str], socks: dict[int | str, socket.socket],
                tmp: Path) -> tuple[dict[int | str, PartyReport | None], dict[int | str, int]]:
        peers = cfg.write(tmp / "peers.json")
        procs: dict[int | str, Any] = {}
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        try:
            for pid in ids:
                fd = socks[pid].fileno()
                argv = ["--id", str(pid), "--peers", str(peers), "--listen-fd", str(fd),
                        "--result", str(tmp / f"{pid}.report"), "--start-fds", f"{ready_w},{go_r}"]
                log_path = tmp / f"{pid}.log"
                if self.start == "fork":
                    with _signals_held() as mask:
                        procs[pid] = _Forked(argv, log_path, [s for p, s in socks.items() if p != pid],
                                             (ready_r, go_w), mask)
                else:
                    procs[pid] = _spawn(self.python, argv, (fd, ready_w, go_r), log_path)
            for sock in socks.values():
                sock.close()  # the parties' processes hold them now
            os.close(ready_w)
            os.close(go_r)
            ready_w = go_r = -1
            _start_barrier(procs, ready_r, max(CONNECT_TIMEOUT, self.timeout))
            os.close(go_w)  # every party is set up: go (round timeouts never count a slow start)
            go_w = -1
            codes = self._wait(procs)
        finally:
            for fd in (ready_r, ready_w, go_r, go_w):
                if fd >= 0:
                    os.close(fd)
            for proc in procs.values():  # no process outlives the run, whatever happened
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
        for pid in ids:
            log_file = tmp / f"{pid}.log"
            for line in log_file.read_text(errors="replace").splitlines() if log_file.exists() else []:
                if line.strip() and not line.startswith("error: "):
                    log.warning("%s", line)
        return {pid: _read_report(tmp / f"{pid}.report") for pid in ids}, codes

    def _wait(self, procs: dict[int | str, Any]) -> dict[int | str, int]:
        """Wait for every process; after the first failure, give the others ``timeout``
        seconds to stop (and report) by themselves, then kill them."""
        codes: dict[int | str, int] = {}
        kill_at = None
        while len(codes) < len(procs):
            for pid, proc in procs.items():
                if pid not in codes and proc.poll() is not None:
                    codes[pid] = proc.returncode
                    if proc.returncode != 0 and kill_at is None:
                        kill_at = time.monotonic() + self.timeout + 0.5
            if kill_at is not None and time.monotonic() > kill_at:
                for pid, proc in procs.items():
                    if pid not in codes:
                        proc.kill()
                        proc.wait()
                        codes[pid] = _KILLED
            time.sleep(0.005)
        return codes


def check_descriptors(triples: Any, parties: int) -> None:
    """Refuse (:class:`~privsim.errors.ResourceError`), before any socket or process exists,
    a run that needs more open files than ``ulimit -n`` allows.

    The count: the descriptors open now, plus the larger of the launcher's (one listening
    socket per party, held until every party has started, and :data:`_LAUNCHER_FDS`) and
    a party's (a forked party starts with the launcher's and closes the others'; then one
    connection per neighbour of the busiest party in ``triples``, the schedule's
    ``(round, sender, receiver)``, and :data:`_PARTY_FDS`).

    >>> check_descriptors([(1, 0, 1)], 2)  # two parties, one channel: a handful of files
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return
    channels = {frozenset((s, d)) for _, s, d in triples if s != d}
    busiest = max(Counter(p for pair in channels for p in pair).values(), default=0)
    need = _open_descriptors() + max(parties + _LAUNCHER_FDS, busiest + _PARTY_FDS)
    if need > soft:
        raise ResourceError(f"ulimit -n: a TCP run of {parties} parties needs about {need} open files ({parties} "
                            f"listening sockets, up to {busiest} connections per party), above this shell's limit "
                            f"of {soft}; raise it with ulimit -n {need} (or run fewer parties)")


def _open_descriptors() -> int:
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder)) - 1  # listdir's own descriptor
        except OSError:
            continue
    return 3


def _start_barrier(procs: dict[int | str, Any], ready: int, limit: float) -> None:
    """Wait until every party has written its byte to ``ready`` (set up, modules imported),
    or one has exited, or ``limit`` seconds have passed (the run's failure is then found
    and reported by :meth:`TcpTransport._wait`)."""
    heard, deadline = 0, time.monotonic() + limit
    while heard < len(procs) and time.monotonic() < deadline:
        if select.select([ready], [], [], 0.05)[0]:
            got = os.read(ready, len(procs))
            if not got:
                return  # every writer is gone
            heard += len(got)
        elif any(proc.poll() is not None for proc in procs.values()):
            return


def _spawn(python: str, argv: list[str], fds: tuple[int, ...], log_path: Path) -> subprocess.Popen:
    """A fresh interpreter running ``python -m privsim.transport``, as another host would."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the caller's modules
    with open(log_path, "wb") as err:
        return subprocess.Popen([python, "-m", "privsim.transport", *argv], pass_fds=fds,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)


_HELD = {signal.SIGINT, signal.SIGTERM}


@contextmanager
def _signals_held() -> Iterator[set[signal.Signals]]:
    # SIGINT and SIGTERM held while a party is forked and put in the launcher's list: one that
    # lands inside os.fork() is raised in its at-fork hooks (logging's _releaseLock), where
    # Python only reports it and a script's run went on; held, it is raised once the party is
    # listed, which the launcher then kills. Yields the mask the child restores.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield mask
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


class _Forked:
    """A party process forked from this one (no interpreter start-up, modules already
    imported), with the part of the :class:`subprocess.Popen` interface the launcher uses."""

    def __init__(self, argv: list[str], log_path: Path, others: list[socket.socket],
                 parent_fds: tuple[int, ...], mask: set[signal.Signals]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.returncode: int | None = None
        self.pid = os.fork()
        if self.pid:
            return
        code = 70  # the child: never returns into the caller's code
        try:
            # a party process as a spawned one starts: Ctrl-C is KeyboardInterrupt, SIGTERM ends it
            # (not the caller's handlers: the launcher ends its parties itself)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # (held while it was forked)
            for sock in others:
                sock.close()
            for fd in parent_fds:  # the launcher's ends of the start barrier
                os.close(fd)
            null = os.open(os.devnull, os.O_RDWR)
            err = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            for target, source in ((0, null), (1, null), (2, err)):
                os.dup2(source, target)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            code = main(argv)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


def _read_report(path: Path) -> PartyReport | None:
    try:
        return PartyReport.from_bytes(path.read_bytes())
    except (OSError, FrameError):
        return None


def _describe_exit(pid: int | str, code: int) -> str:
    if code == _KILLED:
        return f"party {pid} was still running after the others had stopped (killed)"
    if code < 0:
        try:
            return f"party {pid} was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"party {pid} was killed by signal {-code}"
    return f"party {pid} exited with code {code} without a report"


def _raise_root_cause(reports: dict[int | str, PartyReport | None], codes: dict[int | str, int]) -> None:
    failed = {pid: r for pid, r in reports.items() if r is not None and r.error is not None}
    silent = [pid for pid in sort_ids(reports) if reports[pid] is None]
    if not failed and not silent:
        return
    # The root cause blames a party that has no error of its own: itself (its routine
    # failed) or a party that died or hung (no report, or killed while others waited).
    roots = [r for pid, r in failed.items() if r.culprit == pid or r.culprit not in failed]
    if roots:
        first = min(roots, key=lambda r: (r.error.get("round") or 0, id_key(r.culprit)))  # type: ignore[union-attr]
        exc = first.exception()
        culprit = first.culprit
        died = codes.get(culprit, 0) < 0 and codes.get(culprit) != _KILLED  # by itself, not killed by us
        if culprit != first.party and died and isinstance(exc, PartyFailure):
            exc = PartyFailure(f"{_describe_exit(culprit, codes[culprit])} in round {exc.round}: {exc}", culprit,
                               exc.round)
        raise exc  # type: ignore[misc]
    if failed:
        raise min(failed.values(), key=lambda r: id_key(r.party)).exception()  # type: ignore[misc]
    pid = silent[0]
    raise PartyFailure(f"{_describe_exit(pid, codes.get(pid, -9))}; the other parties finished", pid, None)


def _assemble(reports: dict[int | str, PartyReport | None], record: bool, wall: float) -> TcpRun:
    done: dict[int | str, PartyReport] = {pid: r for pid, r in reports.items() if r is not None}
    transcript: list[dict[int | str, Inbox]] | None = None
    if record:
        transcript = [{} for _ in range(max((r.rounds_done for r in done.values()), default=0))]
        for pid in sort_ids(done):
            for r, box in done[pid].inboxes.items():
                transcript[r - 1][pid] = Inbox(box, owner=pid, round=r)
    ready = max((r.ready for r in done.values()), default=0.0)
    return TcpRun(
        outputs={pid: r.output for pid, r in done.items() if r.output is not None},
        transcript=transcript,
        draws={pid: r.draws for pid, r in done.items() if r.draws is not None},
        messages=sum(r.messages for r in done.values()), bits=sum(r.bits for r in done.values()),
        rounds=max((r.rounds_used for r in done.values()), default=0),
        wire_bytes=sum(r.wire_bytes for r in done.values()), wall_s=wall,
        done_rounds={pid: r.rounds_done + 1 for pid, r in done.items()},  # the round its routine returned in
        protocol_s=max((r.done for r in done.values()), default=0.0) - ready, reports=done)


