"""Run a protocol: every party (and the curator) as a trio task, R trials at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from privsim.accuracy import accuracy_summary
from privsim.errors import PartyFailure, ProtocolError, ViewNotRecorded
from privsim.network.schedule import CURATOR, PUBLIC_COALITION, Schedule, id_key, parse_coalition
from privsim.parties.rng import block_range
from privsim.plan import (
    BATCH_PARTY_TRIALS,
    RunPlan,
    batch_plan,
    check_run_args,
    plan_run,
    prepare_inputs,
    resolve_seed,
)
from privsim.protocols.base import Protocol
from privsim.transport import LocalTransport  # noqa: F401  # the built-in transports register their names
from privsim.views import View

__all__ = ["BATCH_PARTY_TRIALS", "RunSummary", "SimulationResult", "batch_plan", "check_run_args", "execute",
           "prepare_inputs", "resolve_seed", "run_plan", "run_trials", "simulate", "simulate_batches"]


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
    def transcript(self) -> list | None:
        """The recorded rounds, one ``receiver -> Inbox`` dict per round (what the recorded
        coalition's view needs; everything with ``coalition=None``), or ``None`` with ``record=False``."""
        return self._transcript

    @property
    def draws(self) -> dict[int | str, list[np.ndarray]]:
        """The recorded parties' random tapes: ``party id -> arrays drawn``, in order."""
        return self._draws

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
            # The outside observer sees the published outputs and nothing else: no input, no
            # seed, no message (docs/architecture.md, "Claims and verdicts").
            published = self.protocol.publishes(self.n, self.t)
            return View(coalition=PUBLIC_COALITION, trials=self.trials, inputs={}, seeds={}, randomness={},
                        messages=[], outputs={p: self.outputs[p] for p in published if p in self.outputs})
        if self._transcript is None:
            raise ViewNotRecorded("this run recorded no transcript (record=False)")
        mem = set(members)
        if self._recorded != "all" and not mem <= set(self._recorded):
            raise ViewNotRecorded(
                f"this run recorded the view of coalition {','.join(map(str, self._recorded))} only; "
                "pass that coalition (or none) to simulate")
        # (round, sender, receiver) is unique: the sort alone fixes the order
        messages = sorted(((r, s, d, v) for r, inboxes in enumerate(self._transcript, start=1)
                           for d, box in inboxes.items() for s, v in box.items() if s in mem or d in mem),
                          key=lambda m: (m[0], id_key(m[1]), id_key(m[2])))
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

    def summary(self) -> dict[str, Any]:
        """The fields of the ``privsim run --json`` contract (README, "CLI reference")."""
        return {
            **_run_fields(self),
            **accuracy_summary(self.estimate, self.true_value),
            **({} if self.wire_bytes is None else {"wire_bytes": self.wire_bytes}),
            **{k: float(np.mean(v)) for k, v in (self.protocol.run_counts(self.outputs, self.n, self.t) or {}).items()},
        }


def _run_fields(res: SimulationResult | RunSummary) -> dict[str, Any]:
    # What both summaries open with, in the contract's order.
    return {"protocol": res.protocol.name, "n": res.n, "t": res.t, "trials": res.trials, "seed": res.seed,
            "params": res.protocol.parameters, "rounds": res.rounds, "messages": res.messages, "bits": res.bits}


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
        The in-process event loop: ``"trio"`` (default) or ``"asyncio"``; same results
        (with ``transport="tcp"`` only ``"trio"``: each party process runs trio).
    transport:
        ``"local"`` (default: every party a task of this process), or ``"tcp"`` (or a
        :class:`privsim.transport.TcpTransport`, or any :class:`privsim.transport.Transport`):
        every party its own OS process, over TCP on loopback; the same outputs and
        transcript, plus ``wire_bytes``.

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
    return execute(plan_run(protocol, inputs, trials=trials, seed=seed, t=t, n=n, coalition=coalition,
                            record=record, block_offset=block_offset, backend=backend, transport=transport,
                            on_round=on_round))


def execute(plan: RunPlan) -> SimulationResult:
    """Run a one-batch :class:`~privsim.plan.RunPlan` on its transport (``plan.batch(i)`` of a split one).

    >>> from privsim.plan import plan_run
    >>> from privsim.protocols import RandomizedResponse
    >>> plan = plan_run(RandomizedResponse(), [0, 1], trials=3000, seed=1, batch_trials=1024, split=True)
    >>> execute(plan.batch(2)).trials
    952
    """
    if len(plan.batches) != 1:
        raise ValueError("execute runs one batch: pass plan.batch(i), or use run_plan")
    run = plan.transport.execute(plan)
    protocol, x = plan.protocol, plan.trial_inputs
    truth = np.asarray(protocol.run_true_value(x, run.outputs))
    estimate = _checked_estimate(protocol, run.outputs, run.done_rounds, truth, plan.n, plan.t, plan.trials)
    return SimulationResult(
        protocol=protocol, n=plan.n, t=plan.t, trials=plan.trials, seed=plan.entropy, schedule=plan.schedule,
        inputs=x, outputs=run.outputs, estimate=estimate, true_value=truth, messages=run.messages, bits=run.bits,
        rounds=run.rounds, block_offset=plan.block_offset, wire_bytes=run.wire_bytes, _transcript=run.transcript,
        _draws=run.draws, _recorded=plan.recorded,
    )


def _checked_estimate(protocol: Protocol, outputs: dict[int | str, Any], done_rounds: dict[int | str, int | None],
                      truth: np.ndarray, n: int, t: int, trials: int) -> np.ndarray:
    """``protocol.estimate``, with one-line errors for a party that never output (the
    estimator's ``KeyError``) and for an estimate not shaped like ``true_value``."""
    name = protocol.name or type(protocol).__name__
    try:
        estimate = np.asarray(protocol.estimate(outputs, n, t))
    except KeyError as exc:
        missing = exc.args[0] if exc.args else None
        if missing not in done_rounds or missing in outputs:
            raise
        who = "the curator" if missing == CURATOR else f"party {missing}"
        raise PartyFailure(f"{who}, round {done_rounds[missing]}: finished without an output, which "
                           f"{name}.estimate reads (expected ctx.output(...) before the routine returns, "
                           "got none)", missing, done_rounds[missing]) from None
    want = truth.shape if truth.ndim else (trials,)
    if estimate.shape != want:
        raise ProtocolError(f"{name}.estimate returned shape {estimate.shape} (expected {want}, the shape of "
                            f"true_value: one value per trial of {trials}; got {estimate.shape})")
    return estimate


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
    plan = plan_run(protocol, inputs, trials=trials, seed=seed, t=t, n=n, coalition=coalition, record=record,
                    batch_trials=batch_trials, split=True)
    for index in range(len(plan.batches)):
        yield execute(plan.batch(index))


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
    #: Means per run of the protocol's own counts (:meth:`~privsim.Protocol.run_counts`), e.g. ``absent_messages``.
    counts: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The fields of the ``privsim run --json`` contract (README, "CLI reference"), plus details."""
        return {
            **_run_fields(self), "schedule_messages": self.schedule_messages,
            **accuracy_summary(self.estimate, self.true_value),
            "executor": self.executor, "batches": self.batches,
            **({} if self.series_error_std is None else {
                "series_steps": int(self.series_error_std.size),
                "series_error_std_mean": float(np.mean(self.series_error_std)),
                "series_error_std_max": float(np.max(self.series_error_std)),
                "series_abs_error_mean_max": float(np.max(np.abs(self.series_error_mean)))}),
            **({} if self.wire_bytes is None else {"wire_bytes": self.wire_bytes}), **self.counts,
        }


@dataclass(frozen=True)
class _RunJob:
    plan: RunPlan

    def __call__(self, index: int) -> dict[str, Any]:
        res = execute(self.plan.batch(index))
        est = np.asarray(res.estimate, dtype=float)
        out = {"messages": res.messages, "bits": res.bits, "rounds": res.rounds, "wire_bytes": res.wire_bytes,
               "estimate": est,
               "true_value": np.broadcast_to(np.asarray(res.true_value, dtype=float), est.shape).copy()}
        counts = self.plan.protocol.run_counts(res.outputs, res.n, res.t)
        if counts:  # summed here, averaged per run over all batches by run_plan
            out["counts"] = {k: float(np.sum(v)) for k, v in counts.items()}
        series = self.plan.protocol.series(res.outputs, res.inputs)
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
    ``transport`` are passed to :func:`simulate` for every batch. The plan is
    :func:`privsim.plan.plan_run`'s, run by :func:`run_plan`.

    The result is identical for one seed whatever the executor, the batch size, the
    backend and the transport.

    >>> from privsim.protocols import RandomizedResponse
    >>> r = run_trials(RandomizedResponse(), [0, 1, 1], trials=3000, seed=2, batch_trials=1024)
    >>> r.batches, r.estimate.shape, r.messages
    (3, (3000,), 3)
    """
    plan = plan_run(protocol, inputs, trials=trials, seed=seed, t=t, n=n, record=False, batch_trials=batch_trials,
                    split=True, backend=backend, transport=transport, on_round=on_round)
    return run_plan(plan, executor=executor, scheduler=scheduler, workers=workers, progress=progress)


def run_plan(plan: RunPlan, *, executor: Any = None, scheduler: str | None = None, workers: int | None = None,
             progress: Callable[[int], None] | None = None) -> RunSummary:
    """Run every batch of ``plan`` on an executor and merge them (see :func:`run_trials`).

    >>> from privsim.plan import plan_run
    >>> from privsim.protocols import RandomizedResponse
    >>> run_plan(plan_run(RandomizedResponse(), [0, 1], trials=2048, seed=2, record=False, split=True)).batches
    1
    """
    from privsim.executors import get_executor

    own = executor is None or isinstance(executor, str)
    ex = get_executor(executor or "local", scheduler=scheduler, workers=workers)
    parts = []
    try:
        job = _RunJob(plan if ex.name == "local" else replace(plan, on_round=None))
        for k, part in enumerate(ex.map(job, range(len(plan.batches))), start=1):
            parts.append(part)
            if progress is not None:
                progress(k)
    finally:
        if own:
            ex.close()
    first = parts[0]
    series: dict[str, Any] = {}
    if "series_err_sum" in first:
        total = float(plan.trials)
        mean = sum(p["series_err_sum"] for p in parts) / total
        var = sum(p["series_err_sq"] for p in parts) / total - mean**2
        series = {"series_error_mean": mean, "series_error_std": np.sqrt(np.maximum(var, 0) * total /
                                                                         max(total - 1, 1)),
                  "series_example": first["series_example"]}
    return RunSummary(
        protocol=plan.protocol, n=plan.n, t=plan.t, trials=plan.trials, seed=plan.entropy,
        messages=first["messages"], bits=first["bits"], rounds=first["rounds"],
        schedule_messages=plan.schedule.messages,
        estimate=np.concatenate([p["estimate"] for p in parts]),
        true_value=np.concatenate([p["true_value"] for p in parts]), executor=ex.name, batches=len(plan.batches),
        wire_bytes=None if first["wire_bytes"] is None else sum(p["wire_bytes"] for p in parts), **series,
        counts={k: sum(p["counts"][k] for p in parts) / plan.trials for k in first.get("counts", {})},
    )
