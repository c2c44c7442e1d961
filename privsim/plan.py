"""One run, one plan: everything that runs, estimates, reports or transports a run reads it.

:func:`plan_run` checks a run's arguments once (trials, seed, t, the inputs, the
protocol's setting, the schedule, the recorded coalition, the backend and the transport)
and returns a frozen :class:`RunPlan`; :func:`plan_audit` adds an audit's neighbouring
inputs, its two seeds and its selection/estimation split (:class:`AuditPlan`). The
engine (:mod:`privsim.simulate`), the audit, the resource estimate and the command
line's progress bar all read these objects: no second derivation of batches,
coalitions, seeds or the split exists anywhere else (docs/architecture.md,
"One run, one plan").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from privsim.errors import InputError, ParameterError
from privsim.network.backend import check_backend
from privsim.network.messages import Inbox
from privsim.network.schedule import CURATOR, PUBLIC_COALITION, Schedule, parse_coalition, parse_party
from privsim.parties.rng import TRIAL_BLOCK
from privsim.privacy import Privacy
from privsim.protocols.base import Protocol, claim_for
from privsim.protocols.inputs import prepare_inputs

__all__ = ["AUDIT_BATCH_TRIALS", "BATCH_PARTY_TRIALS", "DEFAULT_AUDIT_TRIALS", "DEFAULT_SELECT_FRACTION",
           "MAX_SELECT_TRIALS", "MIN_ESTIMATE_TRIALS", "AuditPlan", "AuditSplit",
           "Batches", "RunPlan", "Transport", "TransportRun",
           "audit_claims", "audit_split", "batch_plan", "check_run_args", "derived_seed",
           "min_audit_trials", "neighbouring_inputs", "plan_audit", "plan_audit_batches", "plan_run", "plan_split",
           "prepare_inputs", "resolve_seed", "resolve_transport", "split_batches"]

Batch = tuple[int, int]  # (first seeding block, trials)

#: Party-trials per batch when a run is split (bounds memory: about this many values per message slot).
BATCH_PARTY_TRIALS = 1 << 23
#: Trials per audit batch (whole seeding blocks).
AUDIT_BATCH_TRIALS = 1 << 15
#: At most about this many trials per input choose the event (the rest estimate it),
#: whichever selectors compete. Measured at 10^6 trials (docs/audit/power.md): a cap of
#: 2^18 when several selectors compete, as before, gained nothing on any bundled scenario
#: or example leak and cost up to 0.08 where the estimation trials set the bound (the
#: share holders, the leaky view).
MAX_SELECT_TRIALS = 1 << 17
#: Share of the trials (per input) that :func:`plan_split` gives to event selection.
#: Measured on randomized response and the Laplace mechanism at 10^6 trials: 0.1 to
#: 0.3 all meet the power targets; 0.2 leaves room for harder, higher-dimensional views.
DEFAULT_SELECT_FRACTION = 0.2
#: An audit must leave at least this many trials per input to estimate the chosen event
#: (fewer make the Clopper-Pearson bounds too loose to certify anything).
MIN_ESTIMATE_TRIALS = 1000
#: Trials per input of ``privsim audit`` when neither the command line nor the scenario names them.
DEFAULT_AUDIT_TRIALS = 100_000


# ------------------------------------------------------------------ the transport
# The interface a plan names and the engine is handed; its implementations
# (privsim.transport: local, tcp) sit above the plan and register their names here as
# they are defined (privsim.simulate imports them), so that the plan imports none of them.
@dataclass(frozen=True)
class TransportRun:
    """What one batch produced: outputs, the transcript (one ``receiver -> inbox`` dict per
    round; ``None`` when not recorded), random tapes, and the counts.

    ``done_rounds`` maps a party to the round its routine returned in (where known: a
    missing output is then named with its round). ``wire_bytes`` is ``None`` in process.

    >>> TransportRun({}, None, {}, 0, 0, 0).wire_bytes is None
    True
    """

    outputs: dict[int | str, Any]
    transcript: list[dict[int | str, Inbox]] | None
    draws: dict[int | str, list[np.ndarray]]
    messages: int
    bits: int
    rounds: int
    wire_bytes: int | None = None
    done_rounds: dict[int | str, int | None] = field(default_factory=dict, repr=False)


class Transport(ABC):
    """How the parties of one batch run and talk (``name`` is what ``--transport`` calls it).

    Examples
    --------
    ``resolve_transport("local").name`` is ``"local"``; ``simulate(..., transport=TcpTransport())``
    hands the run to a transport object.
    """

    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("name"), str):
            _TRANSPORTS.setdefault(cls.name, cls)  # the first class of a name keeps it

    @abstractmethod
    def execute(self, plan: RunPlan) -> TransportRun:
        """Run the single batch ``plan`` describes; raise the run's error, if any."""

    def cohort_members(self, plan: RunPlan) -> list[tuple[str, np.ndarray]]:
        """The cohorts this transport would run ``plan``'s parties in: ``(role, ids)`` per
        cohort (docs/architecture.md, "Cohorts"); none unless the transport has cohorts. The
        resource estimate (:mod:`privsim.resources`) reads it."""
        return []


_TRANSPORTS: dict[str, type[Transport]] = {}


def resolve_transport(transport: Any) -> Transport:
    """``"local"``, ``"tcp"`` or a :class:`Transport` -> a transport object.

    >>> resolve_transport("tcp").timeout
    5.0
    >>> resolve_transport("udp")
    Traceback (most recent call last):
    privsim.errors.ParameterError: transport must be 'local' or 'tcp' (got 'udp')
    """
    if isinstance(transport, Transport):
        return transport
    if isinstance(transport, str) and transport in _TRANSPORTS:
        return _TRANSPORTS[transport]()
    names = " or ".join(repr(name) for name in sorted(_TRANSPORTS))
    raise ParameterError(f"transport must be {names} (got {transport!r})")


# ------------------------------------------------------------------ arguments
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


def derived_seed(seed: int, which: int) -> int:
    """An independent root seed derived from ``seed`` (the audit's x is 0, x' is 1; plots 2, 3).

    >>> derived_seed(1, 0) != derived_seed(1, 1)
    True
    """
    words = np.random.SeedSequence(seed, spawn_key=(0xA0D17, which)).generate_state(2, np.uint64)
    return int(words[0]) << 64 | int(words[1])


@dataclass(frozen=True, eq=False)
class Batches(Sequence[Batch]):
    """A run's batches, computed rather than stored: a sequence of ``(first seeding block,
    trials)`` pairs.

    Batch ``i`` starts at block ``first + i * size / TRIAL_BLOCK`` and holds ``size`` trials,
    the last one what is left. Three integers stand for any number of batches, so that
    building, estimating and pickling a plan cost the same at 10^12 trials (3 * 10^7
    batches) as at 10^4; a batch's pair is computed when it is asked for. Equal to any
    sequence of the same pairs.

    >>> b = Batches(first=4, size=2048, trials=5000)
    >>> len(b), b[1], b[-1], list(b[1:]) == [(6, 2048), (8, 904)], b[:2].trials
    (3, (6, 2048), (8, 904), True, 4096)
    >>> b == [(4, 2048), (6, 2048), (8, 904)]
    True
    """

    first: int
    #: Trials per full batch: whole seeding blocks whenever there is more than one batch.
    size: int
    #: Trials over all the batches.
    trials: int

    def __len__(self) -> int:
        return -(-self.trials // self.size)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            picked = range(len(self))[index]
            if picked.step != 1:
                return tuple(self[i] for i in picked)
            start, stop = picked.start, max(picked.start, picked.stop)
            return Batches(self.first + start * self.size // TRIAL_BLOCK, self.size,
                           min(self.trials, stop * self.size) - min(self.trials, start * self.size))
        i = range(len(self))[index]  # (an IndexError names the index, as a tuple's would)
        return self.first + i * self.size // TRIAL_BLOCK, min(self.size, self.trials - i * self.size)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Batches):  # the first pair fixes the size: the last one the rest
            return len(self) == len(other) and (not self or (self[0], self[-1]) == (other[0], other[-1]))
        if isinstance(other, (tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((len(self), self[0], self[-1]) if self else ())


def _batch_size(n: int, batch_trials: int | None) -> int:
    if batch_trials is None:
        batch_trials = max(TRIAL_BLOCK, BATCH_PARTY_TRIALS // max(n, 1))
    return max(1, batch_trials // TRIAL_BLOCK) * TRIAL_BLOCK


def batch_plan(trials: int, n: int, batch_trials: int | None = None) -> Batches:
    """Split ``trials`` into batches of whole seeding blocks: ``(block_offset, trials)`` pairs
    (a :class:`Batches`, computed as it is read).

    The result of a split run is identical to the unsplit run for the same seed.

    >>> list(batch_plan(3000, 10, batch_trials=2048))
    [(0, 2048), (2, 952)]
    """
    return Batches(0, _batch_size(n, batch_trials), int(trials))


# ------------------------------------------------------------------ a run
@dataclass(frozen=True)
class RunPlan:
    """A run, checked: what :func:`privsim.simulate` executes, batch by batch.

    Built by :func:`plan_run` (never by hand: the builder is where every check lives).

    Attributes
    ----------
    protocol, n, t, trials:
        What runs (``t`` resolved to the protocol's default when not given).
    inputs:
        ``(n, ...)`` when every trial shares them (``shared``), else ``(trials, n, ...)``.
    entropy:
        The root seed (fresh OS entropy when the caller gave none).
    schedule:
        The protocol's declared schedule for (n, t).
    recorded:
        What the transcript keeps: ``None`` (nothing), ``"all"``, or the frozenset of one
        coalition's members.
    batches:
        ``(first seeding block, trials)`` pairs, in order (a :class:`Batches`: computed, not stored).
    backend, transport:
        The in-process event loop, and the :class:`~privsim.transport.Transport` that runs a batch.

    >>> from privsim.protocols import RandomizedResponse
    >>> plan = plan_run(RandomizedResponse(), [0, 1, 1], trials=3000, seed=2, batch_trials=1024, split=True)
    >>> plan.n, plan.t, tuple(plan.batches)
    (3, 2, ((0, 1024), (1, 1024), (2, 952)))
    """

    protocol: Protocol
    inputs: np.ndarray
    shared: bool
    n: int
    t: int
    trials: int
    entropy: int
    schedule: Schedule = field(repr=False)
    recorded: Any
    batches: Batches
    backend: str = "trio"
    transport: Transport = field(default_factory=lambda: resolve_transport("local"))
    #: Called with each round completed (progress; in process only); not part of what runs.
    on_round: Callable[[int], None] | None = field(default=None, compare=False, repr=False)

    @property
    def trial_inputs(self) -> np.ndarray:
        """The inputs with their trial axis, ``(trials, n, ...)`` (a broadcast view when shared)."""
        return np.broadcast_to(self.inputs, (self.trials, *self.inputs.shape)) if self.shared else self.inputs

    @property
    def block_offset(self) -> int:
        """The first seeding block of the run."""
        return self.batches.first

    def batch(self, index: int) -> RunPlan:
        """The plan of batch ``index`` alone (same seed, its own seeding blocks).

        >>> from privsim.protocols import RandomizedResponse
        >>> plan_run(RandomizedResponse(), [0, 1], trials=3000, seed=1, batch_trials=1024, split=True).batch(2).batches
        Batches(first=2, size=952, trials=952)
        """
        offset, size = self.batches[index]
        if len(self.batches) == 1:
            return self
        return replace(self, trials=size, batches=Batches(offset, size, size))


def _schedule(protocol: Protocol, n: int, t: int) -> Schedule:
    schedule = protocol.cached_schedule(n, t)
    if schedule.n != n or schedule.curator != protocol.has_curator:
        raise ParameterError(f"{protocol.name}: schedule declared for n={schedule.n}, curator={schedule.curator}; "
                             f"expected n={n}, curator={protocol.has_curator}")
    return schedule


def plan_run(protocol: Protocol, inputs: Any = None, *, trials: int = 1, seed: int | None = None,
             t: int | None = None, n: int | None = None, coalition: str | Iterable[int | str] | None = None,
             record: bool = True, block_offset: int = 0, batch_trials: int | None = None, split: bool = False,
             backend: str = "trio", transport: Any = "local",
             on_round: Callable[[int], None] | None = None) -> RunPlan:
    """Check a run's arguments once and return its :class:`RunPlan`.

    The arguments are :func:`privsim.simulate`'s; ``split=True`` cuts the trials into
    batches (:func:`batch_plan` with ``batch_trials``), as :func:`privsim.run_trials`
    does, and then requires inputs shared by all trials.

    >>> from privsim.protocols import RandomizedResponse
    >>> plan_run(RandomizedResponse(), [0, 1], backend="curio")
    Traceback (most recent call last):
    privsim.errors.ParameterError: backend must be one of trio, asyncio (got 'curio')
    """
    if not isinstance(protocol, Protocol):
        raise ParameterError(f"protocol must be a Protocol instance (got {type(protocol).__name__})")
    trials = check_run_args(trials, seed, t)
    if block_offset < 0:
        raise ParameterError(f"block_offset must be >= 0 (got {block_offset})")
    x = prepare_inputs(protocol, inputs, 1 if split else trials, n)
    shared = split or x.strides[0] == 0
    n = x.shape[1]
    t = protocol.default_t(n) if t is None else int(t)
    protocol.check_setting(n, t)
    entropy = resolve_seed(seed)
    schedule = _schedule(protocol, n, t)
    members = parse_coalition(coalition, n, protocol.has_curator) if coalition is not None else None
    recorded: Any = None if not record else ("all" if members is None else frozenset(members))
    check_backend(backend)
    runner = resolve_transport(transport)
    if backend != "trio" and runner.name != "local":
        raise ParameterError(f"backend: {backend!r} applies only with transport 'local' (the parties of a "
                             f"{runner.name} run each run trio in their own process)")
    batches = Batches(block_offset, _batch_size(n, batch_trials) if split else trials, trials)
    return RunPlan(protocol=protocol, inputs=x[0] if shared else x, shared=shared, n=n, t=t, trials=trials,
                   entropy=entropy, schedule=schedule, recorded=recorded, batches=batches, backend=backend,
                   transport=runner, on_round=on_round)


# ------------------------------------------------------------------ an audit
def neighbouring_inputs(protocol: Protocol, x: np.ndarray, neighbor: int) -> np.ndarray:
    """x' = x with the neighbour's input changed: flipped for bits (1 - x_j), else +1.

    >>> from privsim.protocols import RandomizedResponse
    >>> neighbouring_inputs(RandomizedResponse(), np.array([0, 1, 1]), 2).tolist()
    [0, 1, 0]
    """
    xp = np.array(x, copy=True)
    vals = protocol.input_values
    if vals is not None and set(np.unique(vals).tolist()) == {0, 1}:
        xp[neighbor] = 1 - xp[neighbor]
    else:
        xp[neighbor] = xp[neighbor] + 1
        if vals is not None and not np.isin(xp[neighbor], vals).all():
            raise InputError(f"neighbor: cannot change party {neighbor}'s input within the domain; "
                             "give x' explicitly (x_prime=)")
    return xp


def plan_split(n_batches: int, select_fraction: float = DEFAULT_SELECT_FRACTION) -> tuple[int, int]:
    """Split a number of batches (per input) into selection and estimation batches.

    Parameters
    ----------
    n_batches:
        batches per input, at least 2.
    select_fraction:
        share given to selection, in (0, 1).

    Returns
    -------
    ``(n_batches_select, n_batches_estimate)``, each at least 1.

    >>> plan_split(50)
    (10, 40)
    """
    if n_batches < 2:
        raise ParameterError(f"an audit needs at least 2 batches per input, got {n_batches}")
    if not 0.0 < select_fraction < 1.0:
        raise ParameterError(f"select_fraction must be in (0, 1), got {select_fraction}")
    n_select = min(max(1, round(n_batches * select_fraction)), n_batches - 1)
    return n_select, n_batches - n_select


def plan_audit_batches(trials: int, n: int, batch_trials: int | None = None) -> Batches:
    """The batches (per input) of an audit: ``(block_offset, trials)`` pairs.

    By default a batch holds up to :data:`AUDIT_BATCH_TRIALS` trials and there are at
    least about ten batches, so that selection and estimation can be split.

    >>> len(plan_audit_batches(100_000, 8)), len(plan_audit_batches(20_000, 8))
    (11, 20)
    """
    trials = int(trials)
    if trials <= TRIAL_BLOCK:
        raise ParameterError(f"trials must be >= {min_audit_trials(n, batch_trials)} for an audit (got {trials}): "
                             f"the event is chosen on whole blocks of {TRIAL_BLOCK} trials, and at least "
                             f"{MIN_ESTIMATE_TRIALS} per input must remain to estimate it")
    if batch_trials is None:
        batch_trials = max(TRIAL_BLOCK, min(AUDIT_BATCH_TRIALS, trials // 10 // TRIAL_BLOCK * TRIAL_BLOCK))
    return batch_plan(trials, n, batch_trials)


def split_batches(plan: Sequence[Batch], select_fraction: float,
                  max_select: int = MAX_SELECT_TRIALS) -> tuple[int, int]:
    """Selection and estimation batches per input: :func:`plan_split`, with the selection
    capped near ``max_select`` trials.

    >>> split_batches(plan_audit_batches(4 * 10**6, 8), 0.2)
    (4, 119)
    """
    n_select, _ = plan_split(len(plan), select_fraction)
    # Beyond about 2^17 selection trials per input the chosen event hardly improves, while
    # the selection sample is held in memory and worked on sequentially: the rest estimates.
    n_select = min(n_select, max(1, -(-max_select // plan[0][1])))
    return n_select, len(plan) - n_select


def _estimation_trials(trials: int, n: int, batch_trials: int | None, select_fraction: float) -> int:
    if trials <= TRIAL_BLOCK:
        return 0
    try:
        plan = plan_audit_batches(trials, n, batch_trials)
        n_select, _ = split_batches(plan, select_fraction)
    except ParameterError:
        return 0
    return plan[n_select:].trials


def min_audit_trials(n: int, batch_trials: int | None = None,
                     select_fraction: float = DEFAULT_SELECT_FRACTION) -> int:
    """The fewest trials per input that leave :data:`MIN_ESTIMATE_TRIALS` to estimate with.

    >>> min_audit_trials(8)
    2024
    """
    lo, hi = 1, 1 << 20
    while _estimation_trials(hi, n, batch_trials, select_fraction) < MIN_ESTIMATE_TRIALS:
        lo, hi = hi, hi * 2
    while lo + 1 < hi:  # the estimation share grows with the trial count
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _estimation_trials(mid, n, batch_trials, select_fraction) >= MIN_ESTIMATE_TRIALS \
            else (mid, hi)
    return hi


@dataclass(frozen=True)
class AuditSplit:
    """An audit's batches per input and how they split: the first ``n_select`` choose the
    event, the next ``n_estimate`` estimate it. Built by :func:`audit_split`.

    >>> s = audit_split(4 * 10**6, 8)
    >>> s.n_select, s.select_trials, s.total_batches
    (4, 131072, 246)
    """

    batches: Batches
    n_select: int
    n_estimate: int

    @property
    def batch_trials(self) -> int:
        """Trials in a (full) batch."""
        return self.batches[0][1]

    @property
    def select_trials(self) -> int:
        """Trials per input that choose the event (the selection sample held in memory)."""
        return self.batches[:self.n_select].trials

    @property
    def total_batches(self) -> int:
        """Batches the audit simulates, both inputs (what the progress bar counts)."""
        return 2 * (self.n_select + self.n_estimate)


def audit_split(trials: int, n: int, batch_trials: int | None = None,
                select_fraction: float = DEFAULT_SELECT_FRACTION) -> AuditSplit:
    """The batches of an audit of ``trials`` per input and their selection/estimation split
    (the selection capped near :data:`MAX_SELECT_TRIALS`).

    >>> audit_split(2000, 8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    privsim.errors.ParameterError: trials must be >= 2024 for this audit (got 2000): the event is chosen on ...
    """
    batches = plan_audit_batches(trials, n, batch_trials)
    n_select, n_estimate = split_batches(batches, select_fraction)
    left = batches[n_select:].trials
    if left < MIN_ESTIMATE_TRIALS:
        least = min_audit_trials(n, batch_trials, select_fraction)
        raise ParameterError(f"trials must be >= {least} for this audit (got {trials}): the event is chosen on "
                             f"{trials - left} of them, and at least {MIN_ESTIMATE_TRIALS} per input must remain "
                             f"to estimate it (here {left})")
    return AuditSplit(batches, n_select, n_estimate)


def audit_claims(protocol: Protocol, members: Sequence[int | str], n: int, t: int
                 ) -> tuple[Privacy | None, Privacy | None]:
    """The claim for the coalition, and the one its verdict is judged against (that claim,
    or else the claim towards ``public``).

    >>> from privsim.protocols import RandomizedResponse
    >>> audit_claims(RandomizedResponse(epsilon=1.0), ("C",), 4, 3)
    (Privacy(epsilon=1.0, delta=0.0), Privacy(epsilon=1.0, delta=0.0))
    """
    claim = claim_for(protocol, members, n, t)
    return claim, claim if claim is not None else claim_for(protocol, PUBLIC_COALITION, n, t)


@dataclass(frozen=True)
class AuditPlan:
    """An audit, checked: the run under x, the neighbouring x', two seeds and the split.

    Built by :func:`plan_audit`. Batch ``i`` under ``"x"`` or ``"xp"`` is :meth:`batch`;
    ``split`` says which batches choose the event and which estimate it.

    >>> from privsim.protocols import RandomizedResponse
    >>> p = plan_audit(RandomizedResponse(), [0, 1, 0, 1], coalition="C", neighbor=1, trials=4 * 10**6, seed=1)
    >>> p.members, p.split.n_select, p.split.select_trials, p.split.total_batches
    (('C',), 4, 131072, 246)
    """

    run: RunPlan
    x_prime: np.ndarray
    members: tuple
    neighbor: int
    seeds: dict[str, int]
    split: AuditSplit
    delta: float
    claim: Privacy | None
    reference: Privacy | None
    selectors: tuple[str, ...] | None = None

    def batch(self, which: str, index: int) -> RunPlan:
        """The run of batch ``index`` under ``which`` (``"x"`` or ``"xp"``), recording the coalition."""
        run = self.run if which == "x" else replace(self.run, inputs=self.x_prime)
        return replace(run.batch(index), entropy=self.seeds[which])


def plan_audit(protocol: Protocol, inputs: Any = None, *, coalition: Any, neighbor: int, trials: int,
               seed: int | None = None, t: int | None = None, n: int | None = None, delta: float | None = None,
               x_prime: Any = None, batch_trials: int | None = None,
               select_fraction: float = DEFAULT_SELECT_FRACTION,
               selectors: Sequence[str] | None = None) -> AuditPlan:
    """Check an audit's arguments once and return its :class:`AuditPlan` (arguments as
    :func:`privsim.analysis.audit.audit`'s).

    >>> from privsim.protocols import RandomizedResponse
    >>> plan_audit(RandomizedResponse(), [0, 1], coalition="C", neighbor="C", trials=10**4)
    Traceback (most recent call last):
    privsim.errors.ParameterError: neighbor: the curator has no input; pick a party 0..n-1
    """
    check_run_args(trials, seed, t)
    x = prepare_inputs(protocol, inputs, 1, n)[0]
    n = x.shape[0]
    t = protocol.default_t(n) if t is None else int(t)
    protocol.check_setting(n, t)
    members = parse_coalition(coalition, n, protocol.has_curator)
    if not members:
        raise ParameterError("coalition: give at least one party id (e.g. 0,1 or C)")
    j = parse_party(str(neighbor), n, protocol.has_curator, field="neighbor")
    if j == CURATOR:
        raise ParameterError("neighbor: the curator has no input; pick a party 0..n-1")
    if j in members:
        raise ParameterError(f"neighbor: party {j} is inside the coalition; x and x' must differ outside it")
    xp = neighbouring_inputs(protocol, x, j) if x_prime is None else prepare_inputs(protocol, x_prime, 1, n)[0]
    diff = np.nonzero((x != xp).reshape(n, -1).any(axis=1))[0].tolist()
    if diff != [j]:
        raise InputError(f"x_prime: x and x' must differ in exactly party {j} (they differ in {diff})")
    # The claims first: a malformed one fails before anything runs, and they set the delta.
    claim, reference = audit_claims(protocol, members, n, t)
    if delta is None:
        delta = 0.0 if reference is None else reference.delta
    if not 0.0 <= float(delta) < 1.0:
        raise ParameterError(f"delta must be in [0, 1) (got {delta})")
    entropy = resolve_seed(seed)
    split = audit_split(trials, n, batch_trials, select_fraction)
    run = RunPlan(protocol=protocol, inputs=x, shared=True, n=n, t=t, trials=int(trials), entropy=entropy,
                  schedule=_schedule(protocol, n, t), recorded=frozenset(members), batches=split.batches)
    return AuditPlan(run=run, x_prime=xp, members=members, neighbor=j,
                     seeds={"x": derived_seed(entropy, 0), "xp": derived_seed(entropy, 1)}, split=split,
                     delta=float(delta), claim=claim, reference=reference,
                     selectors=None if selectors is None else tuple(selectors))
