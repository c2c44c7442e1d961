"""Peak memory and time of a run or an audit, estimated before it starts.

The CLI refuses a run whose estimated peak memory exceeds the memory available (or
``--max-memory``), or whose estimated time exceeds ``--max-time`` (a day by default), and
says on stderr when it expects a run to take over a minute. The model reads the run's plan
(:mod:`privsim.plan`: its batches, and an audit's selection sample) and counts what a batch
holds: every party's trio task, context and random stream (a party run inside a cohort,
docs/architecture.md "Cohorts", only its stream and its slices of the cohort's arrays: the
transport says which, :meth:`~privsim.transport.Transport.cohort_members`), the values of the busiest round's
messages (one per trial each), the schedule itself, every trial's estimate, which a run
keeps, and what it keeps per batch (an audit's estimation picks, and with workers every
submitted task: at 10^12 audit trials these are gigabytes; the plan's batches are computed,
not stored). Time is per party-round (the task switches of the engine), per message and per
message-trial value. The constants were fitted on the runs of ``bench/calibrate_resources.py``
on the 2-core reference machine; docs/tutorials/scale.md says how close the estimates came.

Before the schedule is built (which for n = 10^9 would itself take minutes and gigabytes)
:func:`floor_estimate` bounds memory from n and trials alone, so that a hopeless run is
refused at once.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privsim.errors import ResourceError
from privsim.plan import AuditPlan, AuditSplit, RunPlan, batch_plan, plan_run

__all__ = ["Estimate", "available_memory", "check_memory", "check_time", "cpu_workers",
           "estimate", "estimate_run", "floor_estimate", "format_bytes", "format_seconds", "has_cohort_form",
           "parse_duration", "parse_size"]

#: An interpreter with numpy, trio, scipy and privsim imported (RSS).
BASE_BYTES = 110 << 20
#: Per party and batch: its trio task, PartyContext and random stream (README "Scale": about 4 KiB).
PARTY_BYTES = 4300
#: Per party run inside a cohort (docs/architecture.md, "Cohorts") and batch: its random stream and
#: its slices of the cohort's arrays, in place of a task and a context.
COHORT_MEMBER_BYTES = 1200
#: Seconds per cohort member and batch (seeding its stream) and per draw it makes (one numpy call
#: per member: each stream stays its own).
COHORT_MEMBER_SECONDS = 1e-5
#: Seconds per message a cohort sends (one array operation for the cohort, not one call each).
COHORT_MESSAGE_SECONDS = 1e-6
#: Per message a cohort has in flight: its pair code and position in the cohort's block (the
#: values are counted per trial as for any message).
COHORT_MESSAGE_BYTES = 24
#: Per message of the declared schedule (its pairs in dicts and lists, the round's pair codes, the
#: network's per-receiver bookkeeping).
SCHEDULE_BYTES = 100
#: Per message in flight: its array object and inbox entry.
MESSAGE_BYTES = 300
#: Per message value and trial: the value (8 bytes), the sender's temporaries and the delivered copy.
VALUE_BYTES = 16
#: Per trial of a run: its estimate and true value, kept, concatenated, and the accuracy summary's temporaries.
TRIAL_BYTES = 150
#: Seconds per party and round (a task switch through the round barrier).
PARTY_ROUND_SECONDS = 1e-5
#: Seconds per message sent (outbox, schedule check, delivery).
MESSAGE_SECONDS = 2.5e-5
#: Seconds per message value and trial (random draws and arithmetic in numpy; a protocol whose own
#: work is far above it says so in ``Protocol.seconds_per_value``).
VALUE_SECONDS = 7.4e-8
#: Fixed seconds per batch (contexts, seeding, estimator).
BATCH_SECONDS = 0.01
#: Fixed seconds per run (the first trio run, lazy imports, the schedule).
START_SECONDS = 0.25
#: An audit also imports and runs its selection (scikit-learn, scipy): memory and time on top.
AUDIT_BASE_BYTES = 40 << 20
AUDIT_START_SECONDS = 0.5
#: The recorded views of an audit batch (transcript, draws, the array) per feature value, as
#: multiples of the 8 bytes of the array alone.
AUDIT_VIEW_COPIES = 2
#: An audit records views and builds arrays from them: slower per value than a run.
AUDIT_VALUE_FACTOR = 5.0
#: Per batch an audit estimates on, per input: its (input, index) pick in the estimation map's list
#: (measured: 81 bytes). At 10^12 trials an audit has 3 * 10^7 batches per input.
PICK_BYTES = 80
#: Executors with workers submit every item of a map at once: per item, its task (the map's
#: function is pickled once and shared) and the pool's future and work item (measured: 2156 bytes
#: per pick of an audit's estimation map on a process pool).
TASK_BYTES = 2200


@dataclass(frozen=True)
class Estimate:
    """The estimated peak memory (bytes) and time (seconds) of a run, and its batches.

    >>> e = Estimate(memory=3 << 30, seconds=90.0, batches=4)
    >>> e.describe()
    'about 3.0 GiB of memory and 1.5 min (4 batches)'
    """

    memory: int
    seconds: float
    batches: int

    def describe(self) -> str:
        """One phrase for messages: memory, time and batches."""
        return (f"about {format_bytes(self.memory)} of memory and {format_seconds(self.seconds)} "
                f"({self.batches} batches)")


def format_bytes(size: float) -> str:
    """Bytes in binary units with one decimal.

    >>> format_bytes(1536), format_bytes(7.5 * 2**40)
    ('1.5 KiB', '7.5 TiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def format_seconds(seconds: float) -> str:
    """A duration for people: seconds, minutes, hours or days.

    >>> format_seconds(12.3), format_seconds(5400), format_seconds(3 * 86400)
    ('12 s', '1.5 h', '3.0 days')
    """
    for limit, unit, size in ((60, "s", 1), (3600, "min", 60), (86400, "h", 3600)):
        if seconds < limit:
            return f"{seconds:.0f} s" if unit == "s" else f"{seconds / size:.1f} {unit}"
    return f"{seconds / 86400:.1f} days"


def parse_size(text: str) -> int:
    """A memory size such as ``512M``, ``6G``, ``6GiB`` or ``1000000`` (bytes), as bytes.

    >>> parse_size("6G"), parse_size("512MiB"), parse_size("1000")
    (6442450944, 536870912, 1000)
    >>> parse_size("lots")
    Traceback (most recent call last):
    privsim.errors.ResourceError: max-memory must be a size like 512M, 6G or 1T (got 'lots')
    """
    raw = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(_quantity(text, raw, units, "max-memory must be a size", "like 512M, 6G or 1T"))


def parse_duration(text: str) -> float:
    """A duration such as ``90s``, ``30m``, ``24h``, ``7d`` or ``600`` (seconds), in seconds.

    >>> parse_duration("24h"), parse_duration("90s"), parse_duration("1.5d")
    (86400.0, 90.0, 129600.0)
    >>> parse_duration("soon")
    Traceback (most recent call last):
    privsim.errors.ResourceError: max-time must be a duration like 90s, 30m, 24h or 7d (got 'soon')
    """
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return _quantity(text, str(text).strip().lower(), units, "max-time must be a duration", "like 90s, 30m, 24h or 7d")


def _quantity(text: str, raw: str, units: dict[str, int], what: str, like: str) -> float:
    # A number > 0 in raw (text normalised), times the unit its last letter names (none: 1).
    scale = units.get(raw[-1:], 1)
    try:
        value = float(raw[:-1] if raw[-1:] in units else raw)
    except ValueError:
        raise ResourceError(f"{what} {like} (got {text!r})") from None
    if not math.isfinite(value) or value <= 0:
        raise ResourceError(f"{what} > 0 {like} (got {text!r})")
    return value * scale


def _cgroup_room() -> int | None:
    # cgroup v2 (containers, systemd slices): the limit minus what the group already uses.
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None


def available_memory() -> int | None:
    """The memory a run may use: the least of MemAvailable, the cgroup's room and RLIMIT_AS
    (``None`` when none of them can be read).

    >>> m = available_memory(); m is None or m > 0
    True
    """
    limits: list[int] = []
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as fh:
        limits.extend(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:"))
    room = _cgroup_room()
    if room is not None:
        limits.append(room)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        limits.append(int(soft))
    return min(limits) if limits else None


def floor_estimate(n: int, trials: int, *, workers: int = 1, audit: AuditSplit | None = None,
                   cohorts: bool = False) -> Estimate:
    """A lower bound from n and trials alone (one message per party, one round), cheap for any n.

    ``audit``: the audit's split (:func:`privsim.plan.audit_split`), for an audit's bound;
    ``cohorts``: the protocol has a cohort form (:func:`has_cohort_form`), so that its parties
    may cost only what a cohort member costs.

    >>> floor_estimate(10**9, 10).memory > 4 * 2**40   # four TiB of party tasks alone
    True
    >>> floor_estimate(10**9, 10, cohorts=True).memory > 2**40   # a TiB of cohort members
    True
    """
    batches = audit.batches if audit is not None else batch_plan(trials, n)
    return _estimate(n + 1, batches[0][1], len(batches), trials, rounds=1, schedule_messages=n, peak_round=n,
                     workers=workers, audit=audit, features=1, cohorts=int(cohorts), in_cohorts=n if cohorts else 0)


def has_cohort_form(protocol: Any) -> bool:
    """Whether ``protocol``'s parties may run in cohorts (:meth:`~privsim.Protocol.has_cohort_form`).

    >>> from privsim.protocols import get_protocol
    >>> has_cohort_form(get_protocol("leaky-rr")), has_cohort_form(get_protocol("secure-sum"))
    (False, True)
    """
    return bool(protocol.has_cohort_form())


def estimate(plan: RunPlan | AuditPlan, *, workers: int = 1) -> Estimate:
    """Peak memory and time of the run (or audit) ``plan`` describes, from its batches and schedule.

    >>> from privsim.plan import plan_audit
    >>> from privsim.protocols import RandomizedResponse
    >>> est = estimate(plan_audit(RandomizedResponse(), n=4, coalition="C", neighbor=1, trials=4 * 10**6))
    >>> est.batches
    246
    """
    audit = plan if isinstance(plan, AuditPlan) else None
    run = plan.run if isinstance(plan, AuditPlan) else plan
    schedule = run.schedule
    per_round = schedule.messages_per_round() or [0]
    features = 1
    if audit is not None:
        members = set(audit.members)
        features = 1 + sum(1 for _, s, d in schedule.triples() if s in members or d in members)
    cohorts = run.transport.cohort_members(run)
    own = run.protocol.seconds_per_value
    return _estimate(run.n + int(run.protocol.has_curator), run.batches[0][1], len(run.batches), run.trials,
                     rounds=max(schedule.rounds, 1), schedule_messages=schedule.messages, peak_round=max(per_round),
                     workers=workers, audit=None if audit is None else audit.split, features=features,
                     cohorts=len(cohorts), in_cohorts=sum(len(ids) for _, ids in cohorts),
                     value_seconds=VALUE_SECONDS if own is None else max(float(own), VALUE_SECONDS))


def estimate_run(protocol: Any, n: int, t: int | None, trials: int, *, workers: int = 1) -> Estimate:
    """Peak memory and time of ``run_trials`` of ``protocol`` on its default inputs (see :func:`estimate`).

    Builds the protocol's schedule (cached on the protocol); call :func:`floor_estimate`
    first when n may be huge.

    >>> from privsim.protocols import RandomizedResponse
    >>> e = estimate_run(RandomizedResponse(), 1000, None, 2000)
    >>> e.batches, 100 << 20 < e.memory < 1 << 30, e.seconds < 10
    (1, True, True)
    """
    return estimate(plan_run(protocol, n=n, t=t, trials=trials, record=False, split=True), workers=workers)


def _estimate(ids: int, size: int, batches: int, trials: int, *, rounds: int, schedule_messages: int,
              peak_round: int, workers: int, audit: AuditSplit | None, features: int, cohorts: int = 0,
              in_cohorts: int = 0, value_seconds: float = VALUE_SECONDS) -> Estimate:
    sims = batches * (2 if audit is not None else 1)  # an audit simulates every batch under x and x'
    workers = max(1, min(workers, sims))
    # A cohort is one task for its members; their messages (in proportion, as an estimate) cost
    # one array operation per send for the cohort.
    tasks = ids - in_cohorts + cohorts
    cohort_messages = schedule_messages * in_cohorts // max(ids, 1)
    cohort_peak = peak_round * in_cohorts // max(ids, 1)
    batch = (tasks * PARTY_BYTES + in_cohorts * COHORT_MEMBER_BYTES + peak_round * size * VALUE_BYTES
             + (peak_round - cohort_peak) * MESSAGE_BYTES + cohort_peak * COHORT_MESSAGE_BYTES)
    memory = BASE_BYTES + schedule_messages * SCHEDULE_BYTES
    if audit is not None:
        # The recorded views of a batch, and the selection sample (both inputs, exactly the
        # audit's: privsim.plan.audit_split) with one copy.
        batch += AUDIT_VIEW_COPIES * features * size * 8
        memory += AUDIT_BASE_BYTES + AUDIT_VIEW_COPIES * 2 * (audit.select_trials + size) * features * 8
    else:
        memory += trials * TRIAL_BYTES
    # What grows with the number of batches, not their size (the plan's are computed, not
    # stored): an audit's picks, and with workers every submitted task.
    memory += (sims * PICK_BYTES if audit is not None else 0) + (sims * TASK_BYTES if workers > 1 else 0)
    # Worker processes each hold an interpreter and one batch; the local executor one batch.
    memory += batch if workers == 1 else workers * (BASE_BYTES + batch)
    value_seconds *= AUDIT_VALUE_FACTOR if audit is not None else 1.0
    per_batch = (BATCH_SECONDS + tasks * rounds * PARTY_ROUND_SECONDS + in_cohorts * COHORT_MEMBER_SECONDS
                 + (schedule_messages - cohort_messages) * MESSAGE_SECONDS + cohort_messages * COHORT_MESSAGE_SECONDS
                 + schedule_messages * size * value_seconds)
    start = START_SECONDS + (AUDIT_START_SECONDS if audit is not None else 0.0)
    return Estimate(memory=int(memory), seconds=float(start + per_batch * sims / workers), batches=sims)


def check_memory(estimate: Estimate, limit: int | None, *, given: bool = False) -> None:
    """Refuse (:class:`~privsim.errors.ResourceError`) a run whose estimated peak exceeds ``limit``.

    ``given``: the limit came from ``--max-memory`` (else from what the machine has free).

    >>> check_memory(Estimate(2 << 30, 1.0, 1), 1 << 30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.errors.ResourceError: n, trials: this run needs about 2.0 GiB of memory (estimated), above ...
    """
    if limit is None or estimate.memory <= limit:
        return
    where = "--max-memory" if given else "available"
    raise ResourceError(f"n, trials: this run needs about {format_bytes(estimate.memory)} of memory (estimated), "
                        f"above the {format_bytes(limit)} {where}; lower n or trials, or set --max-memory")


def check_time(estimate: Estimate, limit: float | None) -> None:
    """Refuse (:class:`~privsim.errors.ResourceError`) a run estimated to take longer than
    ``limit`` seconds (``--max-time``): a run that cannot reasonably finish is refused before
    it starts, not announced and left to run.

    >>> check_time(Estimate(1 << 20, 3.6e6, 7), 86400.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.errors.ResourceError: n, trials: this run would take about 41.7 days (estimated), above --max-time ...
    """
    if limit is None or estimate.seconds <= limit:
        return
    raise ResourceError(f"n, trials: this run would take about {format_seconds(estimate.seconds)} (estimated), "
                        f"above --max-time ({format_seconds(limit)}); lower n or trials, or raise --max-time")


def cpu_workers(executor: str | None, workers: int | None) -> int:
    """How many batches run at once under ``executor`` (processes/dask: workers, one per core).

    >>> cpu_workers("local", None), cpu_workers("processes", 3)
    (1, 3)
    """
    if (executor or "local") == "local":
        return 1
    return int(workers or os.cpu_count() or 1)
