"""The :class:`Protocol` base class: parameters, schedule, party routines, estimator, privacy claim.

A new protocol is a short subclass. Parameters are declared with :class:`Param` and
validated when the protocol is constructed; the privacy claim travels with the code that
makes it (:meth:`Protocol.privacy`), as OpenDP pairs a measurement with its privacy map.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privsim.errors import InputError, ParameterError, ProtocolError
from privsim.network.schedule import CURATOR, PUBLIC_COALITION, Schedule
from privsim.privacy import Privacy, as_claim
from privsim.protocols.columns import Column

if TYPE_CHECKING:
    from privsim.parties.cohort import CohortContext
    from privsim.parties.context import PartyContext

__all__ = ["AuditScoreContext", "Param", "Privacy", "Protocol", "REQUIRED", "check_rho_or_epsilon", "claim_for"]

REQUIRED: Any = object()


@dataclass(frozen=True)
class AuditScoreContext:
    """What :meth:`Protocol.audit_score` is told about the view it may score.

    Attributes
    ----------
    columns:
        The view's column names (:meth:`privsim.View.columns`), for display.
    coalition:
        The coalition's members, in canonical order.
    neighbor:
        The party whose input differs between ``x`` and ``x_prime``.
    n, t:
        The setting.
    x, x_prime:
        The two neighbouring inputs, shape ``(n, ...)`` (``None`` when not known).

    Examples
    --------
    >>> ctx = AuditScoreContext(("msg r1 0->C", "msg r1 1->C", "output C"), ("C",), 1, 2, 1)
    >>> ctx.index("msg", sender=1, receiver="C"), ctx.find("output"), ctx.records[0].round
    (1, [2], 1)
    """

    columns: tuple[str, ...]
    coalition: tuple[int | str, ...]
    neighbor: int
    n: int
    t: int
    x: np.ndarray | None = None
    x_prime: np.ndarray | None = None

    @functools.cached_property
    def records(self) -> tuple[Column, ...]:
        """The columns as :class:`~privsim.protocols.columns.Column` records (kind, round, sender, receiver, ...)."""
        return tuple(Column.parse(c) for c in self.columns)

    def find(self, kind: str | None = None, **fields: Any) -> list[int]:
        """Indices of the columns of ``kind`` whose record fields equal ``fields``."""
        if kind is not None:
            fields["kind"] = kind
        return [i for i, rec in enumerate(self.records) if rec.matches(**fields)]

    def index(self, kind: str | None = None, **fields: Any) -> int | None:
        """The index of the first column :meth:`find` matches, or ``None``."""
        found = self.find(kind, **fields)
        return found[0] if found else None


def _legacy_audit_score(method: Callable) -> bool:
    # Old overrides take (columns, coalition, neighbor, n, t, x=None, x_prime=None); new
    # ones take one context object.
    params = [p for p in inspect.signature(method).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(params) > 1 and params[0].name != "ctx"


class Param:
    """Declares one protocol parameter, its type, default and allowed range.

    Parameters
    ----------
    default:
        The default value (omit for a required parameter).
    type:
        ``float``, ``int``, ``str`` or ``bool``; strings from the CLI are converted.
    gt, ge, lt, le:
        Bounds (exclusive / inclusive).
    choices:
        Allowed values for a string parameter.
    power_of_two:
        The value must be a power of two (e.g. the horizon T).
    doc:
        One line for ``--help`` and the docs.

    Examples
    --------
    >>> class Coin(Protocol):
    ...     name = "coin"
    ...     bias = Param(0.5, ge=0, le=1, doc="probability of heads")
    >>> Coin(bias="0.25").bias
    0.25
    >>> Coin(bias=2)
    Traceback (most recent call last):
    privsim.errors.ParameterError: bias must be <= 1 (got 2.0)
    """

    def __init__(self, default: Any = REQUIRED, *, type: type = float, gt: float | None = None,
                 ge: float | None = None, lt: float | None = None, le: float | None = None,
                 choices: Sequence[Any] | None = None, power_of_two: bool = False, doc: str = "") -> None:
        self.default = default
        self.type = type
        self.gt, self.ge, self.lt, self.le = gt, ge, lt, le
        self.choices = tuple(choices) if choices is not None else None
        self.power_of_two = power_of_two
        self.doc = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def allowed(self) -> str:
        """A short description of the allowed values, for error messages and help.

        Integer bounds print as integers (large powers of two as ``2^k``), and a power of
        two between bounds as an interval.

        >>> Param(64, type=int, ge=2, le=2**62, power_of_two=True).allowed()
        'int, a power of two in [2, 2^62]'
        >>> Param(1, type=int, ge=1, le=2**16).allowed()
        'int >= 1 and <= 2^16'
        """
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        if self.power_of_two:
            lo = self.ge if self.ge is not None else (self.gt + 1 if self.gt is not None else 1)
            hi = self.le if self.le is not None else (self.lt - 1 if self.lt is not None else None)
            where = f" in [{_bound_text(lo, True)}, {_bound_text(hi, True)}]" if hi is not None else \
                f" >= {_bound_text(lo, True)}"
            return f"{self.type.__name__}, a power of two{where}"
        whole = self.type is int
        parts = [f"{sym} {_bound_text(bound, whole)}" for bound, sym in
                 ((self.gt, ">"), (self.ge, ">="), (self.lt, "<"), (self.le, "<=")) if bound is not None]
        return f"{self.type.__name__} " + " and ".join(parts) if parts else f"any {self.type.__name__}"

    def convert(self, value: Any) -> Any:
        """Convert and check ``value``; raises :class:`ParameterError` naming the field."""
        name = self.name
        if isinstance(value, np.generic):
            value = value.item()  # messages show 2, not np.int64(2)
        if self.type in (int, float) and isinstance(value, bool):
            raise ParameterError(f"{name} must be {self.allowed()} (got {value!r}, a bool)")
        try:
            if self.type is bool and isinstance(value, str):
                low = value.strip().lower()
                if low not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                value = low in ("true", "1", "yes")
            elif self.type is int:
                if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
                    value = int(value)  # exact, also above 2^53
                elif not isinstance(value, (int, np.integer)):
                    f = float(value)
                    if not f.is_integer():
                        raise ValueError
                    value = int(f)
                value = int(value)
            else:
                value = self.type(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{name} must be {self.allowed()} (got {value!r})") from None
        if self.type in (int, float):
            if isinstance(value, float) and not math.isfinite(value):
                raise ParameterError(f"{name} must be finite (got {value})")
            if isinstance(value, float) and 0 < abs(value) < sys.float_info.min:
                # Subnormal: no noise scale, log or reciprocal of it is computed accurately.
                raise ParameterError(f"{name} = {value!r} is too small to compute with (below "
                                     f"{sys.float_info.min:.3g}, the smallest normal float)")
            self._check_power_range(value)
            for op, bound, sym in ((lambda a, b: a > b, self.gt, ">"), (lambda a, b: a >= b, self.ge, ">="),
                                   (lambda a, b: a < b, self.lt, "<"), (lambda a, b: a <= b, self.le, "<=")):
                if bound is not None and not op(value, bound):
                    raise ParameterError(f"{name} must be {sym} {_bound_text(bound, self.type is int)} "
                                         f"(got {value!r})")
            if self.power_of_two and (value < 1 or int(value) & (int(value) - 1)):
                raise ParameterError(f"{name} must be a power of two (got {value!r})")
        if self.choices is not None and value not in self.choices:
            raise ParameterError(f"{name} must be one of {', '.join(map(str, self.choices))} (got {value!r})")
        return value

    def _check_power_range(self, value: Any) -> None:
        # A power of two between two bounds (a horizon T): one message listing them.
        if not (self.power_of_two and self.ge is not None and self.le is not None):
            return
        lo, hi = int(self.ge), int(self.le)
        if not (lo <= value <= hi and float(value).is_integer() and int(value) & (int(value) - 1) == 0):
            raise ParameterError(f"{self.name} must be a power of two in {lo}, {2 * lo}, {4 * lo}, ..., {hi} "
                                 f"(got {value!r})")


def _check_domain(inputs: np.ndarray, bad: np.ndarray, domain: str) -> np.ndarray:
    # A protocol's validate_inputs: ``inputs``, or an error naming the first party outside ``domain``.
    if bad.any():
        idx = np.argwhere(bad)[0]
        raise InputError(f"inputs: party {idx[1]} has {inputs[tuple(idx)].item()!r}, outside the domain {domain}")
    return inputs


def _bound_text(bound: float, whole: bool) -> str:
    # Integers as integers; powers of two from 2^10 on as 2^k (2^62, not 4.61169e+18).
    if whole or float(bound).is_integer() and abs(bound) < 1e6:
        k = int(bound)
        return f"2^{k.bit_length() - 1}" if k >= 1024 and k & (k - 1) == 0 else str(k)
    return f"{bound:g}"


class Protocol:
    """Base class of every protocol.

    Subclasses set ``name`` (the CLI name), declare :class:`Param` fields, and implement
    :meth:`schedule`, :meth:`party` (and :meth:`curator` when ``has_curator``),
    :meth:`true_value`, :meth:`estimate` and :meth:`privacy`.

    Class attributes
    ----------------
    name:
        The protocol's CLI name (``privsim run --protocol NAME``).
    has_curator:
        Whether the curator role ``"C"`` (no input) takes part.
    input_values:
        The allowed input values (e.g. ``(0, 1)`` for bits), or ``None`` for any number.
    input_dtype:
        The dtype inputs are converted to.
    seconds_per_value:
        For the resource estimate (:mod:`privsim.resources`): the protocol's own seconds of
        work per message and trial, where it is far above the engine's average (SecAgg's key
        agreement and PRG, about 1-2 us); ``None``: the average.

    Examples
    --------
    A complete protocol (every party sends its bit to the curator, who adds them up)::

        class Tally(Protocol):
            name = "tally"
            has_curator = True

            def schedule(self, n, t):
                return Schedule.star_to(n)

            async def party(self, ctx):
                ctx.send("C", ctx.input)
                await ctx.end_round()

            async def curator(self, ctx):
                ctx.output((await ctx.end_round()).total())

            def estimate(self, outputs, n, t):
                return outputs["C"]

    See the README for one with noise and a privacy claim.
    """

    name: ClassVar[str] = ""
    has_curator: ClassVar[bool] = False
    input_values: ClassVar[tuple | None] = (0, 1)
    input_dtype: ClassVar[Any] = np.int64
    seconds_per_value: ClassVar[float | None] = None
    params: ClassVar[dict[str, Param]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.params = {k: v for base in reversed(cls.__mro__) for k, v in vars(base).items() if isinstance(v, Param)}
        for k, v in vars(cls).items():  # a default outside its own bound fails here, not in round 1
            if isinstance(v, Param) and v.default is not REQUIRED and v.default is not None:
                try:
                    v.convert(v.default)
                except ParameterError as exc:
                    raise ParameterError(f"{cls.__name__}.{k}: its default is not allowed: {exc}") from None

    def __init__(self, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            allowed = ", ".join(self.params) or "none"
            raise ParameterError(f"unknown parameter {unknown[0]!r} for {self.name or type(self).__name__} "
                                 f"(allowed: {allowed})")
        for key, spec in self.params.items():
            if key in params:
                value = spec.convert(params[key])
            elif spec.default is REQUIRED:
                raise ParameterError(f"{key} is required ({spec.allowed()})")
            else:
                value = spec.default
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_building", True)
        try:
            self.validate()
        finally:
            object.__setattr__(self, "_building", False)

    def __setattr__(self, key: str, value: Any) -> None:
        # A claim is computed from the parameters when asked for, while the noise was
        # calibrated when the protocol was built: letting a parameter change afterwards
        # would let the two disagree (docs/architecture.md, "Claims and verdicts").
        if key in self.params and not self.__dict__.get("_building", True):
            raise ParameterError(f"{type(self).__name__}: parameter {key!r} cannot be changed after "
                                 f"construction; use protocol.replace({key}=...) for a new, re-validated protocol")
        object.__setattr__(self, key, value)

    def __delattr__(self, key: str) -> None:
        if key in self.params:
            raise ParameterError(f"{type(self).__name__}: parameter {key!r} cannot be deleted")
        object.__delattr__(self, key)

    def replace(self, **changes: Any) -> Protocol:
        """A new protocol of the same class with ``changes`` applied, validated afresh.

        >>> from privsim.protocols import RandomizedResponse
        >>> p = RandomizedResponse(epsilon=1.0)
        >>> p.replace(epsilon=0.5).epsilon, p.epsilon
        (0.5, 1.0)
        >>> p.epsilon = 0.1  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        privsim.errors.ParameterError: RandomizedResponse: parameter 'epsilon' cannot be changed after ...
        """
        return type(self)(**{**self.parameters, **changes})

    def validate(self) -> None:
        """Cross-field checks; raise :class:`ParameterError`. Called after construction."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameter values, by name."""
        return {k: getattr(self, k) for k in self.params}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------------ setting
    def default_t(self, n: int) -> int:
        """The coalition-size threshold used when none is given (default: n - 1)."""
        return n - 1

    def check_setting(self, n: int, t: int) -> None:
        """Check n and t for this protocol; raise :class:`ParameterError`."""
        if n < 1:
            raise ParameterError(f"n must be >= 1 (got {n})")
        if not 0 <= t < n:
            raise ParameterError(f"t must satisfy 0 <= t < n = {n} (got {t})")

    def precomputed(self, n: int, t: int) -> dict[str, Any]:
        """Values every party derives from the parameters and (n, t) before its first round,
        costly enough to compute once for all (default: none).

        The launcher of a run over TCP writes them to the peers file, and each party
        process takes them with :meth:`adopt_precomputed` instead of deriving them again
        (e.g. secure-sum's modulus, whose tail bound imports scipy). JSON values only.

        >>> from privsim.protocols import RandomizedResponse
        >>> RandomizedResponse().precomputed(4, 1)
        {}
        """
        return {}

    def adopt_precomputed(self, n: int, t: int, values: dict[str, Any]) -> None:
        """Take :meth:`precomputed`'s ``values`` (from the peers file) for (n, t); raise
        :class:`ParameterError` for a name or value this protocol does not take."""
        if values:
            raise ParameterError(f"{self.name or type(self).__name__} takes no precomputed values "
                                 f"(got {sorted(values)})")

    def input_shape(self) -> tuple[int, ...]:
        """The shape of one party's input in one trial (default: a scalar)."""
        return ()

    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        """Check the domain of ``inputs`` (shape ``(trials, n, *input_shape)``)."""
        if self.input_values is None:
            return inputs
        return _check_domain(inputs, ~np.isin(inputs, self.input_values),
                             f"{{{', '.join(map(str, self.input_values))}}}")

    def default_inputs(self, n: int) -> np.ndarray:
        """Inputs used when a run names none: the first half of the parties hold 1."""
        return (np.arange(n) < n // 2).astype(self.input_dtype)

    # ------------------------------------------------------------------ protocol
    def _memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        # A value derived from the parameters alone, computed once per key: they never change.
        memos = self.__dict__.setdefault("_memos", {})
        if key not in memos:
            memos[key] = compute()
        return memos[key]

    def cached_schedule(self, n: int, t: int) -> Schedule:
        """:meth:`schedule`, computed once per (n, t) for this instance (batches reuse it)."""
        schedule = self._memo(("schedule", n, t), lambda: self.schedule(n, t))
        if not isinstance(schedule, Schedule):
            raise ProtocolError(f"{self.name or type(self).__name__}.schedule(n={n}, t={t}) returned "
                                 f"{type(schedule).__name__} (expected a privsim.Schedule, e.g. "
                                 f"Schedule(n, rounds, curator=...), got {schedule!r:.60})")
        return schedule

    def schedule(self, n: int, t: int) -> Schedule:
        """The exact (round, sender, receiver) triples, from the parameters alone."""
        raise NotImplementedError

    async def party(self, ctx: PartyContext) -> None:
        """The routine of party ``ctx.id`` (0..n-1)."""
        raise NotImplementedError

    async def curator(self, ctx: PartyContext) -> None:
        """The curator's routine (only when ``has_curator``)."""
        raise NotImplementedError

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """Optional cohort form (docs/architecture.md, "Cohorts"): role name -> the parties that
        run the same steps, which :meth:`cohort` then runs for many of them at once.

        The in-process engine runs the parties of a role (other than a recorded coalition's) as one task
        (same results, views and counts for a seed as the per-party run). Default: no roles,
        every party its own task.

        >>> Protocol().cohorts(4, 1)
        {}
        """
        return {}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """The routine of a cohort of ``role`` (:class:`~privsim.parties.cohort.CohortContext`):
        what :meth:`party` does, for ``cctx.ids`` at once (values ``(trials, k, ...)``)."""
        raise NotImplementedError

    def has_cohort_form(self) -> bool:
        """Whether :meth:`cohort` is written for this class's :meth:`party` and :meth:`schedule`.

        A subclass that overrides :meth:`party` (or :meth:`schedule`) but not :meth:`cohort`
        (say a variant of randomized response with a second round) runs per party: the
        inherited cohort form would do what the parent's parties do.

        >>> from privsim.protocols.leaky import LeakyRR
        >>> from privsim.protocols.randomized_response import RandomizedResponse
        >>> RandomizedResponse().has_cohort_form(), LeakyRR().has_cohort_form(), Protocol().has_cohort_form()
        (True, False, False)
        """
        mro = type(self).__mro__

        def owner(name: str) -> type:
            return next(k for k in mro if name in vars(k))

        cohort = owner("cohort")
        return cohort is not Protocol and all(issubclass(cohort, owner(name)) for name in ("party", "schedule"))

    def cohort_roles(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """:meth:`cohorts` where :meth:`has_cohort_form`, else none: the roles the engine runs in cohorts.

        >>> from privsim.protocols.leaky import LeakyRR
        >>> LeakyRR().cohorts(3, 0), LeakyRR().cohort_roles(3, 0)
        ({'parties': range(0, 3)}, {})
        """
        return self.cohorts(n, t) if self.has_cohort_form() else {}

    def true_value(self, inputs: np.ndarray) -> np.ndarray:
        """The exact value the protocol estimates, per trial: inputs ``(trials, n, ...)`` -> ``(trials,)``."""
        return inputs.reshape(inputs.shape[0], -1).sum(axis=1)

    def run_true_value(self, inputs: np.ndarray, outputs: dict[int | str, Any]) -> np.ndarray:
        """The exact value a run estimates, per trial; default :meth:`true_value` of the inputs.

        A protocol whose run decides what it sums (SecAgg's survivors, after dropouts)
        overrides this to read that from the outputs.
        """
        return self.true_value(inputs)

    def round_stages(self, n: int, t: int) -> list[str] | None:
        """Optional names of the protocol's stages, one per round of :meth:`schedule`
        (``privsim views`` shows them beside the round); default ``None``.

        >>> Protocol().round_stages(4, 1) is None
        True
        """
        return None

    def run_counts(self, outputs: dict[int | str, Any], n: int, t: int) -> dict[str, np.ndarray] | None:
        """Optional per-trial counts a run reports beside messages (``(trials,)`` arrays by name),
        e.g. SecAgg's ``absent_messages``; ``privsim run`` prints their means per run. Default ``None``."""
        return None

    def estimate(self, outputs: dict[int | str, Any], n: int, t: int) -> np.ndarray:
        """The protocol's estimate per trial, from the parties' outputs."""
        raise NotImplementedError

    def series(self, outputs: dict[int | str, Any], inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """For protocols that release a value at every step: ``(released, exact)``, each
        ``(trials, steps)``; ``None`` (the default) for one-shot protocols. Used for the
        per-step error of ``privsim run`` and its plot."""
        return None

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        """The privacy this protocol claims for ``coalition``'s view, or ``None`` for no claim.

        The claim for the empty coalition is the guarantee to an outside observer of the
        outputs; the audit judges coalitions the protocol claims nothing for against it.
        """
        return None

    def publishes(self, n: int, t: int) -> tuple[int | str, ...]:
        """The parties whose outputs the protocol publishes: what coalition ``public`` sees.

        Default: the curator's release when there is a curator, else every party's
        output. A protocol whose parties' outputs stay private overrides this.
        """
        return (CURATOR,) if self.has_curator else tuple(range(n))

    def public_privacy(self, n: int, t: int) -> Privacy | None:
        """The claim towards the outside observer (coalition ``public``), or ``None``.

        Default: the claim for the empty coalition, :meth:`privacy` of ``()``.
        """
        return self.privacy((), n, t)

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
        """Optionally, a score of the coalition's view array for the audit (higher: likelier under x).

        ``ctx`` (:class:`AuditScoreContext`) holds the view's columns (as names and as
        records: ``ctx.index("msg", sender=j, receiver="C")``), the coalition, the
        neighbour j, n, t and the two neighbouring inputs ``ctx.x`` and ``ctx.x_prime``. A
        protocol that knows which statistic carries the neighbour's input (its likelihood
        ratio, or the value a coalition would look at) returns it here; ``None`` lets the
        audit choose. Any score keeps the audit sound: it only affects its power.

        Overrides with the old signature ``(columns, coalition, neighbor, n, t, x=None,
        x_prime=None)`` keep working (with a :class:`DeprecationWarning`); callers go
        through :meth:`make_audit_score`, which accepts both.
        """
        return None

    def make_audit_score(self, columns: Sequence[str], coalition: Sequence[int | str], neighbor: int, n: int,
                         t: int, x: np.ndarray | None = None,
                         x_prime: np.ndarray | None = None) -> Callable[[np.ndarray], np.ndarray] | None:
        """The audit's entry point to :meth:`audit_score`, for new- and old-style overrides.

        >>> from privsim.protocols import RandomizedResponse
        >>> score = RandomizedResponse().make_audit_score(["msg r1 0->C", "msg r1 1->C", "output C"],
        ...                                               ["C"], 1, 2, 1)
        >>> score(np.array([[0.0, 1.0, 1.0]])).tolist()
        [1.0]
        """
        ctx = AuditScoreContext(tuple(columns), tuple(coalition), int(neighbor), int(n), int(t), x, x_prime)
        if _legacy_audit_score(self.audit_score):
            warnings.warn(f"{type(self).__name__}.audit_score(columns, coalition, neighbor, n, t, x, x_prime) is "
                          "deprecated: take one AuditScoreContext, audit_score(self, ctx)", DeprecationWarning,
                          stacklevel=2)
            return self.audit_score(list(ctx.columns), ctx.coalition, ctx.neighbor, ctx.n, ctx.t,  # type: ignore[call-arg]
                                    ctx.x, ctx.x_prime)
        return self.audit_score(ctx)


def check_rho_or_epsilon(protocol: Protocol) -> None:
    """Refuse ``rho > 0`` beside an epsilon other than its default: rho calibrates the
    noise, so that epsilon would be silently ignored (``--param rho=0.5 --param epsilon=3``).

    >>> from privsim.protocols.central import CentralGaussian
    >>> CentralGaussian(rho=0.5, epsilon=3.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: rho, epsilon: give one (rho = 0.5 calibrates the noise, so epsilon = 3.0 ...
    """
    default = protocol.params["epsilon"].default
    if protocol.rho > 0 and protocol.epsilon != default:  # type: ignore[attr-defined]
        raise ParameterError(f"rho, epsilon: give one (rho = {protocol.rho!r} calibrates the noise, so "  # type: ignore[attr-defined]
                             f"epsilon = {protocol.epsilon!r} would be ignored; set rho = 0 to calibrate to "  # type: ignore[attr-defined]
                             "(epsilon, delta))")


def claim_for(protocol: Protocol, members: Sequence[int | str], n: int, t: int) -> Privacy | None:
    """The protocol's claim for a coalition (``public`` included), checked to be a claim.

    >>> from privsim.protocols import get_protocol
    >>> claim_for(get_protocol("central-laplace", epsilon=0.5), ("public",), 4, 3)
    Privacy(epsilon=0.5, delta=0.0)
    """
    if tuple(members) == PUBLIC_COALITION:
        return as_claim(protocol.public_privacy(n, t), f"{protocol.name or type(protocol).__name__}.public_privacy()")
    return as_claim(protocol.privacy(members, n, t), f"{protocol.name or type(protocol).__name__}.privacy()")
