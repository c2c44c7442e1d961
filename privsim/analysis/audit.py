"""The DP audit of a coalition's view: simulate under x and x', choose an event, bound epsilon.

:func:`audit` runs the protocol in batches under neighbouring inputs x and x' (x' = x with
the neighbour's input flipped) and turns the coalition's view of each batch into an
array. The first part of the batches chooses a distinguishing event
(:mod:`privsim.analysis.audit_selectors`), the rest estimate Pr[S | x] and Pr[S | x'] with
one-sided Clopper–Pearson bounds (:mod:`privsim.analysis.audit_bounds`), counted batch by
batch (:class:`~privsim.analysis.audit_events.EventCounts`). Batches stream: the
selection sample is the only one held, then one batch per task, counted where it runs.

One driver, :func:`_run`, serves both entry points: :func:`audit` (views simulated from a
protocol) and :func:`audit_batches` (views from any callable: mechanisms outside the
simulator, and tests of the statistics).

A protocol may supply a score (:meth:`~privsim.protocols.Protocol.audit_score`), e.g. its
own likelihood ratio or the statistic a coalition would use; the bound stays sound with
any score, since the event is fixed before the estimation batches are drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from privsim.analysis.audit_bounds import check_level, clopper_pearson
from privsim.analysis.audit_events import Event, EventCounts, ScoreFn
from privsim.analysis.audit_select import SelectionKind, check_views
from privsim.analysis.audit_selectors import Candidate, choose_events, searched_families
from privsim.errors import ParameterError
from privsim.executors import Executor, LocalExecutor, get_executor
from privsim.network.schedule import parse_coalition
from privsim.plan import (
    DEFAULT_AUDIT_TRIALS,
    DEFAULT_SELECT_FRACTION,
    MIN_ESTIMATE_TRIALS,
    AuditPlan,
    audit_claims,
    derived_seed,
    min_audit_trials,
    neighbouring_inputs,
    plan_audit,
    plan_audit_batches,
    plan_split,
)
from privsim.privacy import judge
from privsim.protocols.base import Protocol
from privsim.simulate import execute, simulate

__all__ = [
    "DEFAULT_AUDIT_TRIALS",
    "DEFAULT_SELECT_FRACTION",
    "MIN_ESTIMATE_TRIALS",
    "AuditResult",
    "AuditStatsResult",
    "audit",
    "audit_batches",
    "best_of",
    "fresh_views",
    "default_delta",
    "min_audit_trials",
    "neighbouring_inputs",
    "plan_audit_batches",
    "plan_split",
    "result_from_counts",
    "run_audit",
    "sample_views",
]

Pick = tuple[str, int]  # (which input: "x" or "xp", batch index)

@dataclass(frozen=True)
class AuditResult:
    """What an audit certifies about a coalition's view.

    Attributes
    ----------
    epsilon_lower:
        Lower bound on the privacy loss, valid with probability >= ``confidence``.
    epsilon_point:
        Plug-in estimate of the loss of the chosen event (not a bound).
    delta:
        The delta of the statement (by default the claim's: see :func:`audit`).
    epsilon_claimed, delta_claimed:
        The epsilon the protocol's claim for this coalition implies at ``delta``, and the
        claim's own delta (``None``: it claims nothing for this coalition, or implies
        nothing at ``delta``).
    claim:
        The claim as a dict (``measure`` and its values: pure, approx, zcdp, gaussian),
        ``None`` for no claim.
    paper_claim, paper_violated:
        The paper's own claim for the same view, where it differs from privsim's, and
        whether the bound contradicts it (``None`` without a paper claim).
    violated:
        ``epsilon_lower > epsilon_claimed`` at the same delta. Where the protocol claims
        nothing for the coalition, judged against its claim towards ``public`` (what it
        advertises to an outside observer), so a coalition that breaks the advertised
        guarantee shows as violated. ``None`` when the claim implies nothing at
        ``delta`` (an (epsilon, delta) claim at a smaller delta).
    reason:
        One sentence on how ``violated`` was decided (and, when nothing is violated,
        which families of events were searched: absence of evidence is not a proof).
    searched:
        The families of events the selection searched
        (:func:`~privsim.analysis.audit_selectors.searched_families`): the selectors,
        with ``"derived"`` spelled out as atoms, bits, parities, shares and magnitudes;
        ``["outcomes"]`` where a small discrete view was judged outcome by outcome (every
        event of the view).
    event, direction, selection:
        The distinguishing event (the winner among ``candidates``), which probability
        ratio it bounds, and what chose it.
    p_hat, q_hat:
        Estimated probabilities of the event under the numerator and denominator input.
    candidates, confidence_each:
        Every event carried into estimation (the selectors' proposals that the held-out
        half could not tell from the best after the cost of the confidence split, at most
        :data:`~privsim.analysis.audit_selectors.MAX_CARRIED`), each as ``selection``,
        ``event``, ``forecast`` and ``epsilon_lower``; each bound is at
        ``confidence_each = 1 - (1 - confidence) / len(candidates)``, so all hold at once
        with probability >= ``confidence`` and the reported bound, their largest, does too.

    Examples
    --------
    >>> from privsim.protocols import RandomizedResponse
    >>> r = audit(RandomizedResponse(epsilon=1.0), [0, 1, 0, 1], coalition="C", neighbor=1, trials=40_000, seed=1)
    >>> 0.4 < r.epsilon_lower < 0.70, r.violated
    (True, False)
    """

    protocol: str
    params: dict[str, Any]
    n: int
    t: int
    coalition: list[str]
    neighbor: int
    trials: int
    seed: int
    delta: float
    confidence: float
    epsilon_lower: float
    epsilon_point: float
    epsilon_claimed: float | None
    delta_claimed: float | None
    violated: bool | None
    event: str
    direction: str
    selection: str
    p_hat: float
    q_hat: float
    trials_select: int
    trials_estimate: int
    features: int
    claim: dict[str, Any] | None = None
    paper_claim: dict[str, Any] | None = None
    paper_violated: bool | None = None
    reason: str = ""
    searched: list[str] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    confidence_each: float | None = None

    #: The event object (for plots); not part of the JSON.
    event_object: Any = field(default=None, compare=False, repr=False)
    #: ``sampler(trials)`` draws fresh views ``(under x, under x')`` of the coalition, from
    #: seeds derived from the audit's (for figures: :mod:`privsim.display`); not in the JSON.
    sampler: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = field(default=None, compare=False,
                                                                            repr=False)

    def __repr__(self) -> str:
        from privsim.display import audit_repr

        return audit_repr(self)

    def _repr_html_(self) -> str:
        from privsim.display import audit_html

        return audit_html(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ``privsim audit --json`` (docs/reference/cli.md), plus details.

        Non-finite numbers (an event never seen under x') become ``None``: JSON has no infinity.
        """
        plain = replace(self, event_object=None, sampler=None)
        out = {k: v for k, v in asdict(plain).items() if k not in ("event_object", "sampler")}
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


@dataclass(frozen=True)
class AuditStatsResult:
    """What an audit certifies.

    Attributes
    ----------
    epsilon_lower:
        lower bound on epsilon, valid with probability >= confidence.
    epsilon_point:
        plug-in estimate ``ln((p_hat - delta)/q_hat)`` (not a bound).
    confidence, delta:
        the level of the statement.
    event:
        description of the event E attaining the bound.
    direction:
        ``"x over x'"`` (``Pr[E|x] <= e^eps Pr[E|x'] + delta`` is what is
        tested) or ``"x' over x"``.
    p_hat, q_hat:
        estimated Pr[E | numerator input] and Pr[E | denominator input].
    p_lower, q_upper:
        their one-sided Clopper–Pearson bounds.
    trials:
        trials per input (selection plus estimation).
    trials_select, trials_estimate:
        trials per input spent on each part
        (for x; x' is the same when batches are equal-sized).
    selection:
        what chose the event: the view rule's kind (discrete, score, column or
        logistic) or another selector (naive-bayes, logistic-lr, pairs, trees).
    confidence_each:
        the confidence of each candidate's bound: ``1 - (1 - confidence) / k`` for k
        candidates carried into estimation (Bonferroni: all k hold at once with
        probability >= ``confidence``, so their largest does); ``p_lower`` and
        ``q_upper`` are at this level.
    candidates:
        every event carried into estimation, the winner (this result's event) among
        them: ``selection``, ``event``, ``forecast`` (held-out; ``None`` if none was
        made) and ``epsilon_lower`` (at ``confidence_each``).

    >>> r = AuditStatsResult(0.68, 0.69, 0.95, 0.0, "z3 == 1", "x over x'", 0.67, 0.33,
    ...                      0.66, 0.34, 10**6, 2 * 10**5, 8 * 10**5, "discrete")
    >>> r.epsilon_lower > 0.5
    True
    """

    epsilon_lower: float
    epsilon_point: float
    confidence: float
    delta: float
    event: str
    direction: str
    p_hat: float
    q_hat: float
    p_lower: float
    q_upper: float
    trials: int
    trials_select: int
    trials_estimate: int
    selection: str
    confidence_each: float = math.nan
    candidates: tuple[dict[str, Any], ...] = ()
    #: The event itself (for plots and re-use).
    event_object: Event | None = field(default=None, compare=False, repr=False)


def result_from_counts(
    counts: EventCounts, delta: float, confidence: float, trials_select: int, selection: str
) -> AuditStatsResult:
    """Turn the final (merged) counts into the reported bound, event and direction.

    >>> from privsim.analysis.audit_events import ThresholdEvent
    >>> counts = EventCounts(ThresholdEvent(0.5, ">=", column=0, name="z"))
    >>> counts.add(np.array([[1.0]] * 70 + [[0.0]] * 30), np.array([[1.0]] * 30 + [[0.0]] * 70))
    >>> r = result_from_counts(counts, 0.0, 0.95, 0, "column")
    >>> r.event, 0 < r.epsilon_lower < r.epsilon_point
    ('z >= 0.5', True)
    """
    bound = counts.bound(delta, confidence, oriented=True)
    alpha_each = (1.0 - confidence) / 2
    p_lo = clopper_pearson(counts.hits_x, counts.trials_x, alpha_each, "lower")
    q_hi = clopper_pearson(counts.hits_xp, counts.trials_xp, alpha_each, "upper")
    if bound.direction == "event, x over x'":
        event, direction = counts.event, "x over x'"
        p_hat, q_hat, p_lower, q_upper = counts.p_hat, counts.q_hat, p_lo, q_hi
    else:  # "complement, x' over x": E = not S, numerator x'
        event, direction = counts.event.complement(), "x' over x"
        p_hat, q_hat, p_lower, q_upper = 1 - counts.q_hat, 1 - counts.p_hat, 1 - q_hi, 1 - p_lo
    return AuditStatsResult(
        epsilon_lower=bound.epsilon_lower,
        epsilon_point=bound.epsilon_point,
        confidence=confidence,
        delta=delta,
        event=event.describe(),
        direction=direction,
        p_hat=float(p_hat),
        q_hat=float(q_hat),
        p_lower=float(p_lower),
        q_upper=float(q_upper),
        trials=trials_select + counts.trials_x,
        trials_select=trials_select,
        trials_estimate=counts.trials_x,
        selection=selection,
        event_object=event,
    )


def best_of(counts: Sequence[EventCounts], candidates: Sequence[Candidate], delta: float, confidence: float,
            trials_select: int) -> AuditStatsResult:
    """The largest of the candidates' bounds, each at ``1 - (1 - confidence) / k`` (Bonferroni
    over the k candidates: all k bounds hold at once with probability >= ``confidence``).

    The first candidate wins ties (the best forecast). The result states ``confidence``
    and lists every candidate's bound.

    >>> from privsim.analysis.audit_events import ThresholdEvent
    >>> events = [ThresholdEvent(c, ">=", column=0, name="z") for c in (0.5, 1.5)]
    >>> counts = [EventCounts(e) for e in events]
    >>> for c in counts:
    ...     c.add(np.array([[1.0]] * 70 + [[0.0]] * 30), np.array([[1.0]] * 30 + [[0.0]] * 70))
    >>> r = best_of(counts, [Candidate(e, "column") for e in events], 0.0, 0.95, 0)
    >>> r.event, r.confidence, r.confidence_each, len(r.candidates)
    ('z >= 0.5', 0.95, 0.975, 2)
    """
    each = 1.0 - (1.0 - confidence) / len(candidates)
    results = [result_from_counts(c, delta, each, trials_select, cand.selection) for c, cand in zip(counts, candidates)]
    listed = tuple({"selection": r.selection, "event": r.event,
                    "forecast": round(c.forecast, 6) if math.isfinite(c.forecast) else None,
                    "epsilon_lower": r.epsilon_lower} for r, c in zip(results, candidates))
    winner = max(results, key=lambda r: r.epsilon_lower)  # the first of equals
    return replace(winner, confidence=confidence, confidence_each=each, candidates=listed)


def _count(job: _AuditJob | _SampledBatches, events: tuple[Event, ...],
           pick: Pick) -> list[tuple[int, int, int, int]]:
    """The events' counts (:attr:`EventCounts.totals`) in one batch: the batch is simulated
    once and counted where it runs, and only its counts travel."""
    views = job.views(pick)[0]
    out = []
    for event in events:
        counts = EventCounts(event)
        counts.add(views if pick[0] == "x" else None, views if pick[0] == "xp" else None)
        out.append(counts.totals)
    return out


@dataclass(frozen=True)
class _AuditJob:
    """What a worker needs to simulate one audit batch (pickled to processes / Dask): the plan."""

    plan: AuditPlan

    def views(self, pick: Pick) -> tuple[np.ndarray, list[str]]:
        view = execute(self.plan.batch(*pick)).view(self.plan.members)
        return view.to_array(), view.columns()


@dataclass(frozen=True)
class _SampledBatches:
    """Batches from a callable ``sample_batch(which, index) -> views`` (see :func:`audit_batches`)."""

    sample_batch: Callable[[str, int], np.ndarray]
    columns: tuple[str, ...]

    def views(self, pick: Pick) -> tuple[np.ndarray, list[str]]:
        return check_views(self.sample_batch(*pick), self.columns, "x" if pick[0] == "x" else "x'"), list(self.columns)


def _gather(arrivals: Iterable[tuple[Pick, tuple[np.ndarray, list[str]]]], rows: int | None,
            tick: Callable[[int], None]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The selection sample, per input, filled in place as batches arrive.

    ``rows``: the expected rows per input (an array that size is made for each at its
    first batch: no concatenation at the end); with ``None``, or a batch that does not
    fit, the array grows (rare). Arrays are column-major, as views are: each column is
    copied in one run.
    """
    select: dict[str, np.ndarray] = {}
    filled = {"x": 0, "xp": 0}
    columns: list[str] = []
    for (which, _), (arr, cols) in arrivals:
        if which not in select:
            columns = cols
            select[which] = np.empty((rows or len(arr), arr.shape[1]), dtype=arr.dtype, order="F")
        start, stop = filled[which], filled[which] + len(arr)
        if stop > len(select[which]) or arr.shape[1:] != select[which].shape[1:]:
            select[which] = np.concatenate([select[which][:start], arr])
        else:
            select[which][start:stop] = arr
        filled[which] = stop
        del arr
        tick(1)
    return {w: a[:filled[w]] for w, a in select.items()}, columns


def _run(job: _AuditJob | _SampledBatches, n_select: int, n_estimate: int, ex: Executor,
         score_for: Callable[[list[str]], ScoreFn | None], delta: float, confidence: float, *,
         kind: SelectionKind = "auto", selectors: Sequence[str] | None = None, rows: int | None = None,
         tick: Callable[[int], None] = lambda k: None) -> tuple[AuditStatsResult, list[str]]:
    """The one audit driver: two plain maps. Select on batches ``0 .. n_select - 1``; then
    count the chosen events (an argument of every task; each batch simulated once) on the
    next ``n_estimate``, and report the best of their split-confidence bounds (:func:`best_of`).

    ``score_for(columns)`` gives the optional score; ``rows`` the selection rows per
    input, if known. The event is chosen before any estimation batch is drawn, so the
    bound holds whatever the selection did (docs/architecture.md, "Trials and seeds").
    """
    selected = estimated = iter(())
    try:
        # Selection: the views of the first batches under x and x' (held in memory).
        picks = [(w, i) for w in ("x", "xp") for i in range(n_select)]
        selected = ex.map(job.views, picks)
        select, columns = _gather(zip(picks, selected), rows, tick)
        candidates = choose_events(select["x"], select["xp"], columns, n_select, n_estimate, score_for(columns),
                                   delta=delta, confidence=confidence, kind=kind, selectors=selectors)
        trials_select = len(select["x"])
        del select
        # Estimation: every batch is simulated and counted where it runs; only counts return.
        events = tuple(c.event for c in candidates)
        later = [(w, i) for i in range(n_select, n_select + n_estimate) for w in ("x", "xp")]
        estimated = ex.map(partial(_count, job, events), later)
        counts = [EventCounts(event) for event in events]
        for totals in estimated:
            for one, made in zip(counts, totals):
                one.add_totals(made)
            tick(1)
    finally:
        for results in (selected, estimated):
            getattr(results, "close", lambda: None)()
    return best_of(counts, candidates, delta, confidence, trials_select), columns


def audit_batches(
    sample_batch: Callable[[str, int], np.ndarray],
    n_batches_select: int,
    n_batches_estimate: int,
    columns: Sequence[str],
    score: ScoreFn | None = None,
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    kind: SelectionKind = "auto",
    selectors: Sequence[str] | None = None,
) -> AuditStatsResult:
    """Run the audit statistics over streamed batches of views.

    Batches ``0 .. n_batches_select - 1`` of each input form the selection sample, which
    chooses the event (:func:`~privsim.analysis.audit_selectors.choose_event`) and is then dropped; batches
    ``n_batches_select .. n_batches_select + n_batches_estimate - 1`` are drawn one per
    input at a time and only counted (:class:`EventCounts`). Each ``(which, index)`` is
    requested exactly once. Memory: the selection sample, plus (for a logistic score) a
    standardized copy of its fitting half, plus one batch per input. The result holds at
    the stated confidence: the event is independent of the estimation batches, and the
    two oriented directions share the bounds p_lo and q_hi, each at
    ``(1 - confidence) / 2``.

    Parameters
    ----------
    sample_batch:
        ``sample_batch(which, index)`` returns the views of batch
        ``index`` under ``which`` (``"x"`` or ``"xp"``), a 2-D array with one column
        per name in ``columns``. Different indices must be independent draws.
    n_batches_select, n_batches_estimate:
        batches per input for each part (see
        :func:`plan_split`).
    columns:
        the view's column names.
    score:
        optional score callable, see :func:`select_event`.
    delta, confidence:
        the level of the statement.
    kind, selectors:
        how to choose the event, see
        :func:`~privsim.analysis.audit_selectors.choose_event`.

    Returns
    -------
    An :class:`AuditStatsResult`.

    Raises
    ------
    ParameterError
        for bad counts, levels or mis-shaped batches.

    >>> rng = np.random.default_rng(np.random.SeedSequence(5))
    >>> def batch(which: str, index: int) -> np.ndarray:
    ...     return rng.laplace(1.0 if which == "x" else 0.0, 1.0, size=(50_000, 1))
    >>> r = audit_batches(batch, 2, 8, ["y"])
    >>> r.selection, 0.9 < r.epsilon_lower <= 1.0
    ('column', True)
    """
    check_level(delta, confidence)
    if n_batches_select < 1 or n_batches_estimate < 1:
        raise ParameterError(
            "n_batches_select and n_batches_estimate must be at least 1, got "
            f"{n_batches_select} and {n_batches_estimate}"
        )
    job = _SampledBatches(sample_batch, tuple(columns))
    return _run(job, n_batches_select, n_batches_estimate, LocalExecutor(), lambda _: score, delta, confidence,
                kind=kind, selectors=selectors)[0]


def sample_views(protocol: Protocol, inputs: Any, *, coalition: Any, trials: int, seed: int, t: int | None = None,
                 block_offset: int = 0) -> tuple[np.ndarray, list[str]]:
    """One batch of a coalition's views as an array with its column names (e.g. for plots).

    >>> from privsim.protocols import RandomizedResponse
    >>> arr, cols = sample_views(RandomizedResponse(), [0, 1], coalition="C", trials=5, seed=1)
    >>> arr.shape, cols
    ((5, 3), ['msg r1 0->C', 'msg r1 1->C', 'output C'])
    """
    res = simulate(protocol, inputs, trials=trials, seed=seed, t=t, coalition=coalition, block_offset=block_offset)
    view = res.view(coalition)
    return view.to_array(), view.columns()


def fresh_views(protocol: Protocol, inputs: Any, x_prime: Any, coalition: Any, t: int, seed: int,
                trials: int) -> tuple[np.ndarray, np.ndarray]:
    """``trials`` fresh views of ``coalition`` under ``inputs`` and under ``x_prime``, from seeds
    derived from ``seed`` (as ``privsim audit --plot`` draws them): for figures, never for bounds.

    >>> from privsim.protocols import RandomizedResponse
    >>> vx, vxp = fresh_views(RandomizedResponse(), [0, 1], [0, 0], "C", 0, 1, 8)
    >>> vx.shape, vxp.shape
    ((8, 3), (8, 3))
    """
    vx, _ = sample_views(protocol, inputs, coalition=coalition, trials=trials, seed=derived_seed(seed, 2), t=t)
    vxp, _ = sample_views(protocol, x_prime, coalition=coalition, trials=trials, seed=derived_seed(seed, 3), t=t)
    return vx, vxp


def audit(protocol: Protocol, inputs: Any = None, *, coalition: Any, neighbor: int, trials: int,
          seed: int | None = None, t: int | None = None, n: int | None = None, delta: float | None = None,
          confidence: float = 0.95, x_prime: Any = None, batch_trials: int | None = None,
          select_fraction: float = DEFAULT_SELECT_FRACTION, selectors: Sequence[str] | None = None,
          progress: Callable[[int], None] | None = None, executor: str | Executor | None = None,
          scheduler: str | None = None, workers: int | None = None) -> AuditResult:
    """Audit the view of ``coalition`` against party ``neighbor``: a sound epsilon lower bound.

    Parameters
    ----------
    protocol:
        The protocol, with its parameters.
    inputs:
        Base inputs x, shape ``(n, ...)`` (``None``: the protocol's default for ``n``).
    coalition:
        The curious parties (``"0,1"``, ``"C"``, ``[0, "C"]``), or ``"public"``: the
        outside observer, who sees only what the protocol publishes.
    neighbor:
        The party outside the coalition whose input differs between x and x'.
    trials:
        Runs per input, selection and estimation together.
    seed:
        Root seed (``None``: fresh, reported in the result).
    t:
        The protocol's threshold (default: its ``default_t(n)``).
    delta, confidence:
        The level of the statement: with probability >= confidence,
        epsilon >= epsilon_lower for (epsilon, delta)-DP. ``delta=None`` (the default)
        audits at the delta of the claim the verdict is judged against
        (:func:`default_delta`), so that ``violated`` compares like with like.
    x_prime:
        Explicit neighbouring inputs (default: :func:`neighbouring_inputs`).
    batch_trials:
        Trials per batch (memory: the selection sample, then one batch per task).
    select_fraction:
        Share of the batches used to choose the event.
    selectors:
        Which selectors compete for the event (default: all of
        :data:`~privsim.analysis.audit_selectors.SELECTORS`; ``("view",)`` is the former
        rule alone), see :func:`~privsim.analysis.audit_selectors.choose_event`.
    progress:
        Called with the number of batches done, for progress bars.
    executor, scheduler, workers:
        Where batches run: ``"local"`` (default), ``"processes"`` or ``"dask"`` (with an
        optional scheduler address), or an :class:`~privsim.executors.Executor`. The result
        is identical under every executor for one seed.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> from privsim.protocols import RandomizedResponse
    >>> r = audit(RandomizedResponse(epsilon=1.0), [0, 1, 0, 1], coalition="C", neighbor=1, trials=20_000, seed=3)
    >>> r.epsilon_claimed, r.violated, "msg r1 1->C" in r.event
    (1.0, False, True)

    Raises
    ------
    ParameterError
        A coalition id that does not exist, a neighbour inside the coalition or unknown,
        too few trials (fewer than :data:`MIN_ESTIMATE_TRIALS` would be left to estimate
        the event), a bad delta or confidence.
    """
    plan = plan_audit(protocol, inputs, coalition=coalition, neighbor=neighbor, trials=trials, seed=seed, t=t, n=n,
                      delta=delta, x_prime=x_prime, batch_trials=batch_trials, select_fraction=select_fraction,
                      selectors=selectors)
    return run_audit(plan, confidence=confidence, progress=progress, executor=executor, scheduler=scheduler,
                     workers=workers)


def run_audit(plan: AuditPlan, *, confidence: float = 0.95, progress: Callable[[int], None] | None = None,
              executor: str | Executor | None = None, scheduler: str | None = None,
              workers: int | None = None) -> AuditResult:
    """Run the audit ``plan`` describes (:func:`privsim.plan.plan_audit`); see :func:`audit`.

    >>> from privsim.plan import plan_audit
    >>> from privsim.protocols import RandomizedResponse
    >>> plan = plan_audit(RandomizedResponse(epsilon=1.0), [0, 1], coalition="C", neighbor=1, trials=8000, seed=3)
    >>> run_audit(plan).trials_select == plan.split.select_trials
    True
    """
    run, members, j, delta, claim = plan.run, plan.members, plan.neighbor, plan.delta, plan.claim
    check_level(delta, confidence)
    done = [0]

    def tick(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0])

    def score_for(columns: list[str]) -> ScoreFn | None:
        return run.protocol.make_audit_score(columns, members, j, run.n, run.t, run.inputs, plan.x_prime)

    # Choosing and counting the event use matrix products of a few million terms: one
    # BLAS thread does them as fast, while idle BLAS threads spin against the simulation
    # (a one-process audit ran 10-25% faster without them) and against the workers.
    with threadpool_limits(1, user_api="blas"):
        ex = get_executor(executor or "local", scheduler=scheduler, workers=workers)
        try:
            split = plan.split
            stats, columns = _run(_AuditJob(plan), split.n_select, split.n_estimate, ex, score_for, delta, confidence,
                                  tick=tick, selectors=plan.selectors, rows=split.select_trials)
        finally:
            if executor is None or isinstance(executor, str):
                ex.close()
    violated, reason = judge(plan.reference, stats.epsilon_lower, delta, own=claim is not None)
    searched = ["outcomes"] if stats.selection == "discrete" else searched_families(plan.selectors)
    if violated is False:
        reason = (f"{reason.rstrip('.')}. Searched: {', '.join(searched)}; absence of evidence is not a "
                  "proof (a leak of another shape may remain).")
    protocol = run.protocol
    return AuditResult(
        protocol=protocol.name, params=protocol.parameters, n=run.n, t=run.t, coalition=[str(m) for m in members],
        neighbor=j, trials=run.trials, seed=run.entropy, delta=delta, confidence=confidence,
        epsilon_lower=stats.epsilon_lower, epsilon_point=stats.epsilon_point,
        epsilon_claimed=None if claim is None else claim.epsilon_at(delta),
        delta_claimed=None if claim is None else claim.delta, violated=violated, event=stats.event,
        direction=stats.direction, selection=stats.selection, p_hat=stats.p_hat, q_hat=stats.q_hat,
        trials_select=stats.trials_select, trials_estimate=stats.trials_estimate, features=len(columns),
        claim=None if claim is None else claim.to_dict(),
        paper_claim=None if claim is None or claim.paper is None else claim.paper.to_dict(),
        paper_violated=None if claim is None or claim.paper is None else judge(claim.paper, stats.epsilon_lower,
                                                                                delta)[0],
        reason=reason, searched=searched, candidates=[dict(c) for c in stats.candidates],
        confidence_each=stats.confidence_each, event_object=stats.event_object,
        sampler=partial(fresh_views, protocol, run.inputs, plan.x_prime, members, run.t, run.entropy),
    )


def default_delta(protocol: Protocol, coalition: Any, n: int, t: int) -> float:
    """The delta an audit runs at when given none: that of the claim it is judged against
    (0 when there is none: then nothing is compared).

    >>> from privsim.protocols import RandomizedResponse
    >>> default_delta(RandomizedResponse(), "C", 4, 3)
    0.0
    """
    members = parse_coalition(coalition, n, protocol.has_curator)
    _, reference = audit_claims(protocol, members, n, t)
    return 0.0 if reference is None else reference.delta
