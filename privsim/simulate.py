"""Run a protocol: every party (and the curator) as a trio task, R trials at once."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import trio

from privsim.accuracy import accuracy_summary
from privsim.errors import InputError, ParameterError, PartyFailure, PrivsimError, ProtocolError, ViewNotRecorded
from privsim.network.backend import check_backend, network_class, run_engine
from privsim.network.messages import recorded_round, seal
from privsim.network.network import SyncNetwork
from privsim.network.schedule import CURATOR, PUBLIC_COALITION, Schedule, id_key, parse_coalition, party_ids, sort_ids
from privsim.parties.context import PartyContext
from privsim.parties.rng import StreamSeeder, block_range
from privsim.protocols.base import Protocol
from privsim.views import View

__all__ = ["RunSummary", "SimulationResult", "batch_plan", "check_run_args", "prepare_inputs", "resolve_seed",
           "run_trials", "simulate",
           "simulate_batches"]


def check_run_args(trials: Any = 1, seed: Any = None, t: Any = None, name: str = "trials") -> int:
    """Check the types of a run's ``trials``, ``seed`` and ``t``; returns ``trials`` as an int.

    Integers only (numpy integers too): ``trials=2.5``, ``"3"`` or ``True`` would otherwise be
    coerced silently (2.5 runs twice).

    >>> check_run_args(3, seed=1, t=None)
    3
    >>> check_run_args(2.5)
    Traceback (most recent call last):
    privsim.errors.ParameterError: trials must be >= 1, an int (got 2.5)
    """
    def whole(value: Any) -> bool:
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))

    def shown(value: Any) -> str:
        return repr(value.item() if isinstance(value, np.generic) else value)

    if not whole(trials) or trials < 1:
        raise ParameterError(f"{name} must be >= 1, an int (got {shown(trials)})")
    if seed is not None and (not whole(seed) or seed < 0):
        raise ParameterError(f"seed must be >= 0, an int or None (got {shown(seed)})")
    if t is not None and not whole(t):
        raise ParameterError(f"t must be an int or None (got {shown(t)})")
    return int(trials)


def resolve_seed(seed: int | None) -> int:
    """The root entropy of a run: ``seed`` itself, or fresh OS entropy when ``None``.

    >>> resolve_seed(5)
    5
    """
    if seed is None:
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    seed = int(seed)
    if seed < 0:
        raise ParameterError(f"seed must be >= 0 (got {seed})")
    return seed


def prepare_inputs(protocol: Protocol, inputs: Any, trials: int, n: int | None = None) -> np.ndarray:
    """Inputs as a ``(trials, n, *input_shape)`` array (a broadcast view when shared by all trials).

    ``inputs`` may be ``(n, *input_shape)`` (the same in every trial) or
    ``(trials, n, *input_shape)``; ``None`` takes the protocol's default inputs for ``n``.

    >>> from privsim.protocols import RandomizedResponse
    >>> prepare_inputs(RandomizedResponse(), [0, 1, 1], trials=2).shape
    (2, 3)
    """
    if inputs is None:
        if n is None:
            raise ParameterError("n is required when no inputs are given")
        inputs = protocol.default_inputs(n)
    try:
        arr = np.asarray(inputs)
    except ValueError as exc:  # ragged lists
        raise InputError(f"inputs: not a rectangular array of numbers ({exc})") from None
    shape = protocol.input_shape()
    target = np.dtype(protocol.input_dtype)
    if arr.dtype.kind not in "biuf":
        raise InputError(f"inputs: expected numbers (got dtype {arr.dtype})")
    if target.kind in "iu" and arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.round(arr)):
            bad = np.argwhere(~np.isfinite(arr) | (arr != np.round(arr)))[0]
            raise InputError(f"inputs: {protocol.name} takes integer inputs; got {arr[tuple(bad)].item()!r} "
                             f"at index {tuple(int(i) for i in bad)}")
    arr = arr.astype(target)
    if arr.ndim == len(shape) + 1:
        if tuple(arr.shape[1:]) != tuple(shape):
            raise InputError(f"inputs: each party's input must have shape {shape} (got {arr.shape[1:]})")
        protocol.validate_inputs(arr[None])
        arr = np.broadcast_to(arr, (trials, *arr.shape))
    elif arr.ndim == len(shape) + 2:
        if arr.shape[0] != trials or tuple(arr.shape[2:]) != tuple(shape):
            raise InputError(f"inputs: expected shape (trials={trials}, n, *{shape}) (got {arr.shape})")
        protocol.validate_inputs(arr)
    else:
        raise InputError(f"inputs: expected an array of shape (n, *{shape}) or (trials, n, *{shape}) "
                         f"(got {arr.shape})")
    if n is not None and arr.shape[1] != n:
        raise InputError(f"inputs: {arr.shape[1]} parties given but n = {n}")
    if arr.shape[1] < 1:
        raise InputError("inputs: at least one party is needed")
    return arr


@dataclass(frozen=True)
class SimulationResult:
    """The outcome of :func:`simulate`: R runs of one protocol on one input.

    Attributes
    ----------
    protocol, n, t, trials, seed:
        What was run (``seed`` is the root entropy: pass it back to reproduce the run).
    schedule:
        The protocol's declared :class:`~privsim.network.Schedule`.
    inputs:
        ``(trials, n, ...)`` inputs.
    outputs:
        ``party id -> output`` (each with the trial axis).
    estimate, true_value:
        ``(trials,)`` arrays: the protocol's estimate and the exact value.
    messages, bits, rounds:
        Counts per run, from what was actually sent.

    Examples
    --------
    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> res = privsim.simulate(RandomizedResponse(epsilon=1.0), [1, 0, 1, 1], trials=1000, seed=3)
    >>> res.messages, res.rounds, res.estimate.shape
    (4, 1, (1000,))
    """

    protocol: Protocol
    n: int
    t: int
    trials: int
    seed: int
    schedule: Schedule
    inputs: np.ndarray
    outputs: dict[int | str, Any]
    estimate: np.ndarray
    true_value: np.ndarray
    messages: int
    bits: int
    rounds: int
    block_offset: int = 0
    #: Bytes the parties wrote to their sockets (``transport="tcp"``; all trials), else ``None``.
    wire_bytes: int | None = None
    _transcript: list | None = field(default=None, repr=False)
    _draws: dict = field(default_factory=dict, repr=False)
    _recorded: Any = field(default=None, repr=False)

    @property
    def error(self) -> np.ndarray:
        """Per-trial error ``estimate - true_value``."""
        return np.asarray(self.estimate, dtype=float) - np.asarray(self.true_value, dtype=float)

    def view(self, coalition: str | Iterable[int | str]) -> View:
        """The view of ``coalition`` (``"0,1"``, ``"C"``, ``[0, "C"]``, or ``"public"``: only
        what the protocol publishes, :meth:`~privsim.Protocol.publishes`) over all trials.

        Raises :class:`ViewNotRecorded` when the run recorded nothing or only another
        coalition's view.
        """
        members = parse_coalition(coalition, self.n, self.protocol.has_curator)
        if members == PUBLIC_COALITION:
            return self._public_view()
        if self._transcript is None:
            raise ViewNotRecorded("this run recorded no transcript (record=False)")
        if self._recorded != "all" and not set(members) <= set(self._recorded):
            raise ViewNotRecorded(
                f"this run recorded the view of coalition {','.join(map(str, self._recorded))} only; "
                "pass that coalition (or none) to simulate")
        mem = set(members)
        messages = []
        for r, inboxes in enumerate(self._transcript, start=1):
            for d in sort_ids(inboxes):
                for s, v in inboxes[d].items():
                    if s in mem or d in mem:
                        messages.append((r, s, d, v))
        messages.sort(key=lambda m: (m[0], id_key(m[1]), id_key(m[2])))
        blocks = block_range(self.trials, self.block_offset)
        seeds = {m: {"entropy": self.seed, "family": 1 if m == CURATOR else 0,
                     "slot": 0 if m == CURATOR else m, "blocks": [b for b, _, _ in blocks]} for m in members}
        return View(
            coalition=members,
            trials=self.trials,
            inputs={m: self.inputs[:, m] for m in members if m != CURATOR},
            seeds=seeds,
            randomness={m: list(self._draws.get(m, [])) for m in members},
            messages=messages,
            outputs={m: self.outputs[m] for m in members if m in self.outputs},
        )

    def _public_view(self) -> View:
        # The outside observer sees the published outputs and nothing else: no input, no
        # seed, no message (docs/architecture.md, "Claims and verdicts").
        published = self.protocol.publishes(self.n, self.t)
        return View(coalition=PUBLIC_COALITION, trials=self.trials, inputs={}, seeds={}, randomness={},
                    messages=[], outputs={p: self.outputs[p] for p in published if p in self.outputs})

    def summary(self) -> dict[str, Any]:
        """The fields of the ``privsim run --json`` contract (README, "CLI reference")."""
        return {
            "protocol": self.protocol.name,
            "n": self.n,
            "t": self.t,
            "trials": self.trials,
            "seed": self.seed,
            "params": self.protocol.parameters,
            "rounds": self.rounds,
            "messages": self.messages,
            "bits": self.bits,
            **accuracy_summary(self.estimate, self.true_value),
            **({} if self.wire_bytes is None else {"wire_bytes": self.wire_bytes}),
        }


async def _run_party(routine: Any, ctx: PartyContext, net: SyncNetwork) -> None:
    try:
        await routine(ctx)
    except (PrivsimError, trio.Cancelled):
        raise
    except Exception as exc:
        who = "the curator" if ctx.id == CURATOR else f"party {ctx.id}"
        hint = ""
        if isinstance(exc, ValueError) and "read-only" in str(exc):
            hint = ("; received messages and inputs are read-only (a view is what was sent): "
                    "copy before changing, e.g. np.array(value)")
        raise PartyFailure(f"{who} failed in round {ctx.round}: {type(exc).__name__}: {exc}{hint}", ctx.id,
                           ctx.round) from exc
    ctx._done_round = ctx.round
    net.depart(ctx.id)


async def _main(protocol: Protocol, contexts: list[PartyContext], net: SyncNetwork) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(net.watchdog)
        for ctx in contexts:
            routine = protocol.curator if ctx.id == CURATOR else protocol.party
            nursery.start_soon(_run_party, routine, ctx, net)


def _first_error(group: BaseExceptionGroup) -> BaseException:
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        else:
            leaves.append(e)

    walk(group)
    failures = [e for e in leaves if isinstance(e, PartyFailure) and e.round is not None]
    if failures:
        return min(failures, key=lambda e: (e.round, id_key(e.party)))  # type: ignore[arg-type]
    for kind in (PrivsimError, Exception):
        for e in leaves:
            if isinstance(e, kind):
                return e
    return leaves[0]


def simulate(protocol: Protocol, inputs: Any = None, *, trials: int = 1, seed: int | None = None,
             t: int | None = None, coalition: str | Iterable[int | str] | None = None, n: int | None = None,
             record: bool = True, block_offset: int = 0,
             on_round: Callable[[int], None] | None = None, backend: str = "trio",
             transport: Any = "local") -> SimulationResult:
    """Run ``protocol`` on ``inputs`` for ``trials`` independent runs at once.

    Parameters
    ----------
    protocol:
        A :class:`~privsim.protocols.Protocol` instance.
    inputs:
        ``(n, ...)`` inputs shared by all trials, or ``(trials, n, ...)``; ``None`` uses the
        protocol's default inputs for ``n``.
    trials:
        Number of runs R; every value carries a leading axis of length R.
    seed:
        Root seed (``None``: fresh entropy, reported in the result). Same seed, same
        transcript, bit for bit.
    t:
        Coalition-size threshold (default: the protocol's ``default_t(n)``).
    coalition:
        Record only what this coalition's view needs (saves memory); ``None`` records all.
    n:
        Number of parties, needed only when ``inputs`` is ``None``.
    record:
        ``False`` keeps no transcript and no random tapes (fastest; no views).
    block_offset:
        First seeding block (batches of a split run start at different blocks).
    on_round:
        Called with the round number each time a round completes (progress bars; in process only).
    backend:
        The in-process event loop: ``"trio"`` (default) or ``"asyncio"``; same results.
    transport:
        ``"local"`` (default: every party a task of this process), or ``"tcp"`` (or a
        :class:`privsim.transport.TcpTransport`): every party its own OS process, over
        TCP on loopback; the same outputs and transcript, plus ``wire_bytes``.

    Returns
    -------
    SimulationResult

    Raises
    ------
    ParameterError, InputError
        Bad parameters or inputs.
    ScheduleViolation
        A message off the schedule, or a scheduled message not sent.
    PartyFailure
        A party's routine raised (the message names the party and the round).
    DeadlockError
        A party waits on something other than the round barrier.

    Examples
    --------
    >>> import privsim
    >>> from privsim.protocols import RandomizedResponse
    >>> res = privsim.simulate(RandomizedResponse(epsilon=2.0), [1] * 50 + [0] * 50, trials=200, seed=1)
    >>> bool(abs(res.estimate.mean() - 50) < 5)
    True
    """
    if not isinstance(protocol, Protocol):
        raise ParameterError(f"protocol must be a Protocol instance (got {type(protocol).__name__})")
    trials = check_run_args(trials, seed, t)
    if block_offset < 0:
        raise ParameterError(f"block_offset must be >= 0 (got {block_offset})")
    x = prepare_inputs(protocol, inputs, trials, n)
    n = x.shape[1]
    t = protocol.default_t(n) if t is None else int(t)
    protocol.check_setting(n, t)
    entropy = resolve_seed(seed)
    schedule = protocol.cached_schedule(n, t)
    if schedule.n != n or schedule.curator != protocol.has_curator:
        raise ParameterError(f"{protocol.name}: schedule declared for n={schedule.n}, curator={schedule.curator}; "
                             f"expected n={n}, curator={protocol.has_curator}")
    members = parse_coalition(coalition, n, protocol.has_curator) if coalition is not None else None
    recorded: Any = None if not record else ("all" if members is None else frozenset(members))

    check_backend(backend)
    if transport != "local":
        return _over_transport(transport, protocol, x, t, entropy, schedule, recorded, block_offset)
    net = network_class(backend)(schedule, trials, record=recorded, on_round=on_round)
    seeder = StreamSeeder(entropy, n, block_range(trials, block_offset))

    def rng_factory(pid: int | str) -> Any:
        return seeder.rng(pid, trials, record=recorded == "all" or (recorded is not None and pid in recorded))

    # Hundreds of thousands of live contexts and tasks make the cyclic GC rescan everything
    # again and again (2x the run time at n = 10^5); nothing cyclic needs collecting mid-run.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    ids = party_ids(n, protocol.has_curator)
    seal(x)  # the engine's own copy: each party's input is a read-only slice of it, not a copy
    outboxes = net.attach(ids)
    contexts = [PartyContext(pid, n, t, trials, None if pid == CURATOR else x[:, pid], net, rng_factory,
                             outboxes[pid]) for pid in ids]
    try:
        run_engine(backend, protocol, contexts, net, _run_party, _main)
    except BaseExceptionGroup as group:
        raise _first_error(group) from None
    finally:
        if gc_was_enabled:
            gc.enable()

    outputs = {c.id: c._output for c in contexts if c._has_output}
    draws = {c.id: c._rng.draws for c in contexts if c._rng is not None and c._rng.draws is not None}
    return _result(protocol, x, t, entropy, schedule, block_offset, recorded, outputs, net.messages, net.bits,
                   net.rounds_used, net.transcript if recorded is not None else None, draws, contexts=contexts)


def _result(protocol: Protocol, x: np.ndarray, t: int, entropy: int, schedule: Schedule, block_offset: int,
            recorded: Any, outputs: dict, messages: int, bits: int, rounds: int, transcript: list | None,
            draws: dict, wire_bytes: int | None = None, contexts: list[PartyContext] | None = None,
            ) -> SimulationResult:
    n = x.shape[1]
    truth = np.asarray(protocol.true_value(x))
    estimate = _checked_estimate(protocol, outputs, contexts or [], truth, n, t, x.shape[0])
    return SimulationResult(
        protocol=protocol, n=n, t=t, trials=x.shape[0], seed=entropy, schedule=schedule, inputs=x,
        outputs=outputs, estimate=estimate, true_value=truth, messages=messages, bits=bits, rounds=rounds,
        block_offset=block_offset, wire_bytes=wire_bytes, _transcript=transcript, _draws=draws, _recorded=recorded,
    )


def _over_transport(transport: Any, protocol: Protocol, x: np.ndarray, t: int, entropy: int, schedule: Schedule,
                    recorded: Any, block_offset: int) -> SimulationResult:
    """Run with every party its own process (privsim/transport); record what ``recorded`` asks."""
    from privsim.transport.launcher import resolve_transport

    shared = x.strides[0] == 0  # the same inputs in every trial: send them once
    run = resolve_transport(transport).run(protocol, x[0] if shared else x, t=t, trials=x.shape[0], seed=entropy,
                                           block_offset=block_offset, record=recorded is not None)
    transcript, draws = run.transcript, run.draws
    if recorded is not None and recorded != "all":  # keep what the coalition's view needs, as in process
        transcript = [recorded_round(inboxes, recorded, r) for r, inboxes in enumerate(transcript, 1)]
        draws = {pid: d for pid, d in draws.items() if pid in recorded}
    return _result(protocol, x, t, entropy, schedule, block_offset, recorded, run.outputs, run.messages, run.bits,
                   run.rounds, transcript, draws, run.wire_bytes)


def _checked_estimate(protocol: Protocol, outputs: dict[int | str, Any], contexts: list[PartyContext],
                      truth: np.ndarray, n: int, t: int, trials: int) -> np.ndarray:
    """``protocol.estimate``, with one-line errors for a party that never output (the
    estimator's ``KeyError``) and for an estimate not shaped like ``true_value``."""
    name = protocol.name or type(protocol).__name__
    try:
        estimate = np.asarray(protocol.estimate(outputs, n, t))
    except KeyError as exc:
        missing = next((c for c in contexts if exc.args and c.id == exc.args[0] and c.id not in outputs), None)
        if missing is None:
            raise
        who = "the curator" if missing.id == CURATOR else f"party {missing.id}"
        raise PartyFailure(f"{who}, round {missing._done_round}: finished without an output, which "
                           f"{name}.estimate reads (expected ctx.output(...) before the routine returns, "
                           "got none)", missing.id, missing._done_round) from None
    want = truth.shape if truth.ndim else (trials,)
    if estimate.shape != want:
        raise ProtocolError(f"{name}.estimate returned shape {estimate.shape} (expected {want}, the shape of "
                            f"true_value: one value per trial of {trials}; got {estimate.shape})")
    return estimate


#: Party-trials per batch when a run is split (bounds memory: about this many values per message slot).
BATCH_PARTY_TRIALS = 1 << 23


def batch_plan(trials: int, n: int, batch_trials: int | None = None) -> list[tuple[int, int]]:
    """Split ``trials`` into batches of whole seeding blocks: ``(block_offset, trials)`` pairs.

    The result of a split run is identical to the unsplit run for the same seed.

    >>> batch_plan(3000, 10, batch_trials=2048)
    [(0, 2048), (2, 952)]
    """
    from privsim.parties.rng import TRIAL_BLOCK

    if batch_trials is None:
        batch_trials = max(TRIAL_BLOCK, BATCH_PARTY_TRIALS // max(n, 1))
    blocks_per = max(1, batch_trials // TRIAL_BLOCK)
    size = blocks_per * TRIAL_BLOCK
    return [(start // TRIAL_BLOCK, min(size, trials - start)) for start in range(0, trials, size)]


def simulate_batches(protocol: Protocol, inputs: Any = None, *, trials: int, seed: int | None = None,
                     t: int | None = None, n: int | None = None, batch_trials: int | None = None,
                     coalition: str | Iterable[int | str] | None = None, record: bool = False,
                     ) -> Iterable[SimulationResult]:
    """Run ``trials`` runs as a sequence of batches (see :func:`batch_plan`), yielding each result.

    Inputs must be shared by all trials (shape ``(n, ...)``). ``seed=None`` draws one root
    seed for the whole run.

    >>> from privsim.protocols import RandomizedResponse
    >>> parts = list(simulate_batches(RandomizedResponse(), [0, 1], trials=3000, seed=1, batch_trials=1024))
    >>> [p.trials for p in parts]
    [1024, 1024, 952]
    """
    check_run_args(trials, seed, t)
    entropy = resolve_seed(seed)
    x = prepare_inputs(protocol, inputs, 1, n)[0]
    for offset, size in batch_plan(trials, x.shape[0], batch_trials):
        yield simulate(protocol, x, trials=size, seed=entropy, t=t, coalition=coalition, record=record,
                       block_offset=offset)


@dataclass(frozen=True)
class RunSummary:
    """The merged outcome of a batched run: counts per run and every trial's estimate.

    Built by :func:`run_trials`; ``summary()`` gives the ``privsim run --json`` fields.

    >>> from privsim.protocols import RandomizedResponse
    >>> run_trials(RandomizedResponse(), [0, 1], trials=10, seed=1).summary()["messages"]
    2
    """

    protocol: Protocol
    n: int
    t: int
    trials: int
    seed: int
    messages: int
    bits: int
    rounds: int
    schedule_messages: int
    estimate: np.ndarray
    true_value: np.ndarray
    executor: str = "local"
    batches: int = 1
    #: Per-step error mean and standard deviation for protocols that release a series.
    series_error_mean: np.ndarray | None = None
    series_error_std: np.ndarray | None = None
    #: The first trial's released series and the exact one (for plots).
    series_example: tuple[np.ndarray, np.ndarray] | None = None
    #: Bytes on the wire over all batches (``transport="tcp"``), else ``None``.
    wire_bytes: int | None = None

    def summary(self) -> dict[str, Any]:
        """The fields of the ``privsim run --json`` contract (README, "CLI reference"), plus details."""
        return {
            "protocol": self.protocol.name, "n": self.n, "t": self.t, "trials": self.trials, "seed": self.seed,
            "params": self.protocol.parameters, "rounds": self.rounds, "messages": self.messages, "bits": self.bits,
            "schedule_messages": self.schedule_messages, **accuracy_summary(self.estimate, self.true_value),
            "executor": self.executor, "batches": self.batches,
            **({} if self.series_error_std is None else {
                "series_steps": int(self.series_error_std.size),
                "series_error_std_mean": float(np.mean(self.series_error_std)),
                "series_error_std_max": float(np.max(self.series_error_std)),
                "series_abs_error_mean_max": float(np.max(np.abs(self.series_error_mean)))}),
            **({} if self.wire_bytes is None else {"wire_bytes": self.wire_bytes}),
        }


@dataclass(frozen=True)
class _RunJob:
    protocol: Protocol
    inputs: np.ndarray
    seed: int
    t: int | None
    on_round: Callable[[int], None] | None = None
    backend: str = "trio"
    transport: Any = "local"

    def __call__(self, batch: tuple[int, int]) -> dict[str, Any]:
        offset, size = batch
        res = simulate(self.protocol, self.inputs, trials=size, seed=self.seed, t=self.t, record=False,
                       block_offset=offset, on_round=self.on_round, backend=self.backend, transport=self.transport)
        est = np.asarray(res.estimate, dtype=float)
        out = {"n": res.n, "t": res.t, "messages": res.messages, "bits": res.bits, "rounds": res.rounds,
               "wire_bytes": res.wire_bytes,
               "schedule_messages": res.schedule.messages, "estimate": est,
               "true_value": np.broadcast_to(np.asarray(res.true_value, dtype=float), est.shape).copy()}
        series = self.protocol.series(res.outputs, res.inputs)
        if series is not None:  # streaming per-step error moments, plus one example trial
            released, exact = series
            err = released - exact
            out.update(series_err_sum=err.sum(axis=0), series_err_sq=(err**2).sum(axis=0),
                       series_example=(released[0].copy(), exact[0].copy()))
        return out


def run_trials(protocol: Protocol, inputs: Any = None, *, trials: int, seed: int | None = None,
               t: int | None = None, n: int | None = None, batch_trials: int | None = None,
               executor: Any = None, scheduler: str | None = None, workers: int | None = None,
               progress: Callable[[int], None] | None = None,
               on_round: Callable[[int], None] | None = None, backend: str = "trio",
               transport: Any = "local") -> RunSummary:
    """Run ``trials`` runs in batches on an executor and merge them (only estimates are kept).

    ``progress`` is called with the number of batches done; ``on_round`` with each round
    completed (local executor only: worker processes cannot report rounds). ``backend`` and
    ``transport`` are passed to :func:`simulate` for every batch.

    The result is identical for one seed whatever the executor, the batch size, the
    backend and the transport.

    >>> from privsim.protocols import RandomizedResponse
    >>> r = run_trials(RandomizedResponse(), [0, 1, 1], trials=3000, seed=2, batch_trials=1024)
    >>> r.batches, r.estimate.shape, r.messages
    (3, (3000,), 3)
    """
    from privsim.executors import get_executor

    trials = check_run_args(trials, seed, t)
    entropy = resolve_seed(seed)
    x = prepare_inputs(protocol, inputs, 1, n)[0]
    t_used = protocol.default_t(x.shape[0]) if t is None else int(t)
    protocol.check_setting(x.shape[0], t_used)
    plan = batch_plan(int(trials), x.shape[0], batch_trials)
    own = executor is None or isinstance(executor, str)
    ex = get_executor(executor or "local", scheduler=scheduler, workers=workers)
    parts = []
    try:
        job = _RunJob(protocol, x, entropy, t_used, on_round if ex.name == "local" else None, backend, transport)
        for k, part in enumerate(ex.map(job, plan), start=1):
            parts.append(part)
            if progress is not None:
                progress(k)
    finally:
        if own:
            ex.close()
    first = parts[0]
    series: dict[str, Any] = {}
    if "series_err_sum" in first:
        total = float(trials)
        mean = sum(p["series_err_sum"] for p in parts) / total
        var = sum(p["series_err_sq"] for p in parts) / total - mean**2
        series = {"series_error_mean": mean, "series_error_std": np.sqrt(np.maximum(var, 0) * total /
                                                                         max(total - 1, 1)),
                  "series_example": first["series_example"]}
    return RunSummary(
        protocol=protocol, n=first["n"], t=first["t"], trials=int(trials), seed=entropy,
        messages=first["messages"], bits=first["bits"], rounds=first["rounds"],
        schedule_messages=first["schedule_messages"],
        estimate=np.concatenate([p["estimate"] for p in parts]),
        true_value=np.concatenate([p["true_value"] for p in parts]), executor=ex.name, batches=len(plan),
        wire_bytes=None if first["wire_bytes"] is None else sum(p["wire_bytes"] for p in parts), **series,
    )
