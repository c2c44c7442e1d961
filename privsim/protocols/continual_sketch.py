"""Streaming sketch protocols: continual range counting and continual join size (Pagh & Sejer, sections 4-5).

Parties stream updates to the curator C over T time steps (round s = step s, one message
per party per round, T rounds of n messages), and C feeds them to a dynamic mechanism of
:mod:`privsim.mechanisms` and releases its answer after every step:

- :class:`ContinualRange` ("continual-range"): every party may insert one point of
  [B]^d per step; C keeps a dynamic :class:`~privsim.mechanisms.RangeCounter` (one
  Private CountSketch per dyadic component, FastGaMe cell noise, Theorem 4.3) and
  releases the count of a fixed query box after every step.
- :class:`ContinualJoin` ("continual-join"): parties 0..ceil(n/2)-1 stream keys of
  relation R, the others keys of relation S, at most one key per party per step; C keeps
  a :class:`~privsim.mechanisms.JoinSizeEstimator` (shared hashes, independent tree
  noise, Theorem 5.6; each step is two of its time steps, R's updates then S's) and
  releases the estimated join size |R join S| = <x, y> after every step. By default every
  release reads every counter's tree release at that step (``refresh="all"``); the
  paper's lazy refresh (``refresh="touched"``) re-releases only the counters an update
  touches, which leaks which steps had updates (see :mod:`privsim.mechanisms.join`).

Inputs: shape (T, d) (range) or (T,) (join) integers per party; a row of -1 (a key -1)
means "no update at this step" (every party still sends a message: the pattern is
oblivious).

Trials: C collects the T rounds of updates, then runs the mechanism vectorized over the
trials of each seeding block of :data:`~privsim.parties.rng.TRIAL_BLOCK` trials (one
mechanism with ``trials=`` the block's size: own hashes and noise per trial, arrays of
shape (trials, ...)). The block's mechanism is seeded by the first of the 63-bit integers
C draws from ``ctx.rng`` with the trial axis; batches are whole blocks, so runs are
reproducible and batch-invariant. Cost (``privsim bench --only sketch``, CPU time): about
17 us per trial and step on continual-join at rows = 3, width = 64 (mostly the one standard
normal per counter and release), against about 2.4 ms when C looped over per-trial
mechanisms; continual-range draws noise only for the counters its box reads.

Neighbours and claims (:meth:`privacy`)
---------------------------------------
Event level (the paper's): adding or removing one point / one key of one party at one
step; the mechanisms are ``rho``-zCDP for it (:meth:`event_privacy`). The claim of
:meth:`privacy` is for the simulator's relation, one party's whole stream changing
(docs/architecture.md, "Claims and verdicts"): at each step its update can move (remove one point or key, add
another), a mass of at most 2 per sketch row, so by :func:`~privsim.protocols.continual_sum.stream_rho`
the releases are ``stream_rho(rho, T_mech, change=2)``-zCDP (``Privacy.zcdp``, reported
at ``delta``). This is also the claim towards the outside observer (coalition
``public``), who sees the released series (:meth:`publishes`). A coalition containing C:
``None`` (C receives the updates in the clear); a non-empty coalition of parties:
``Privacy(0)`` (parties receive nothing). With ``refresh="touched"`` every claim on the
releases holds only under the lazy refresh's assumption (``claim.assumption``), which the
data need not satisfy.

Noise (``noise``, ``calibration``): the mechanisms' options, calibrated to the event-level
``rho``. ``calibration="exact"`` (tree) spends rho exactly with a smaller node variance, so
its party-level claim is ``stream_rho`` at the paper's rho for that node variance (larger
than the paper's); ``noise="blt"`` has the party-level rho ``rho * 4 ||C 1||^2 / max ||C e||^2``
(BLT's C has positive entries: the worst stream moves all mass of a row the same way, see
:mod:`privsim.mechanisms.continual_kinds`). Both are upper bounds, as
the tree's is.

Examples
--------
>>> import privsim
>>> res = privsim.simulate(ContinualRange(T=8, B=8, d=1), n=4, trials=3, seed=1)
>>> res.messages, res.rounds, res.outputs["C"].shape
(32, 8, (3, 8))
>>> res = privsim.simulate(ContinualJoin(T=8, rho=1e6), n=4, trials=2, seed=1)
>>> bool(abs(res.estimate - res.true_value).max() < 1)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from privsim.errors import InputError, ParameterError
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.calibration import CALIBRATIONS
from privsim.mechanisms.continual_kinds import SKETCH_NOISE_KINDS, sketch_noise_kind
from privsim.mechanisms.join import REFRESH_MODES, TOUCHED_ASSUMPTION, JoinSizeEstimator
from privsim.mechanisms.range_counting import RangeCounter, dyadic_boxes
from privsim.network.schedule import CURATOR
from privsim.parties.context import PartyContext
from privsim.parties.rng import TRIAL_BLOCK
from privsim.protocols.base import AuditScoreContext, Param, Privacy
from privsim.protocols.continual_sum import MAX_T, _Stream, check_stream_inputs

__all__ = ["ContinualRange", "ContinualJoin"]

_SEED_HIGH = 1 << 63  # mechanism seeds: integers in [0, 2**63)


class _SketchStream(_Stream):
    """Shared skeleton: T rounds of party -> C updates, a per-trial mechanism, one release per step."""

    input_values = None
    input_dtype = np.int64

    T = Param(16, type=int, ge=2, le=MAX_T, power_of_two=True, doc="time steps = rounds, a power of two in [2, 2**16]")
    rho = Param(1.0, gt=0, doc="zCDP parameter of the released series (event level: one update)")
    delta = Param(1e-6, gt=0, lt=1, doc="delta of the (epsilon, delta) form of the rho-zCDP claims")
    noise = Param("tree", type=str, choices=list(SKETCH_NOISE_KINDS),
                  doc="the counters' noise: tree (the paper's) or blt (buffered Toeplitz, exact rho)")
    calibration = Param("paper", type=str, choices=list(CALIBRATIONS),
                        doc="tree node variance: the paper's or the exact one for the same rho (tree only)")

    #: Mechanism time steps per protocol step.
    steps_per_round: int = 1

    def validate(self) -> None:
        sketch_noise_kind(self.noise, self.calibration)  # T's range and power of two: its Param checks them

    # ------------------------------------------------------------ claims
    @property
    def rho_party(self) -> float:
        """zCDP towards one party's whole stream (its update may move at every step: mass 2 per row).

        For the source chosen (:meth:`~privsim.mechanisms.continual_kinds.ContinualNoise.stream_loss`:
        the tree's bound at its node variance, BLT's from its sensitivity, C >= 0).
        """
        return sketch_noise_kind(self.noise, self.calibration).stream_loss(self.steps_per_round * self.T, self.rho, 2.0)

    @property
    def assumption(self) -> str:
        """The assumption the claims on the releases need ("" for none)."""
        return ""

    def _claim(self, rho: float) -> Privacy:
        return Privacy.zcdp(rho, delta=self.delta).assuming(self.assumption)  # "": no assumption

    def event_privacy(self) -> Privacy:
        """The event-level guarantee (one update added or removed): rho-zCDP."""
        return self._claim(self.rho)

    # ------------------------------------------------------------ protocol
    async def curator(self, ctx: PartyContext) -> None:
        seeds = ctx.rng.integers(0, _SEED_HIGH, size=())  # (R,); a block's mechanism takes its first
        rounds = [(await ctx.end_round()).stack(axis=1) for _ in range(self.T)]  # each (R, n, ...)
        updates = np.stack(rounds, axis=2)  # (R, n, T, ...)
        released = np.empty((ctx.trials, self.T))
        # One vectorized mechanism per seeding block (batches are whole blocks: batch-invariant);
        # release s depends on the updates of steps <= s only.
        for lo in range(0, ctx.trials, TRIAL_BLOCK):
            hi = min(lo + TRIAL_BLOCK, ctx.trials)
            mech = self.mechanism(np.random.SeedSequence(int(seeds[lo])), trials=hi - lo)
            for s in range(self.T):
                released[lo:hi, s] = self.step(mech, updates[lo:hi, :, s], ctx.n)
        ctx.output(released)

    def mechanism(self, seed: SeedLike, trials: int | None = None) -> Any:
        """A fresh mechanism: one instance, or ``trials`` instances vectorized."""
        raise NotImplementedError

    def step(self, mech: Any, updates: np.ndarray, n: int) -> np.ndarray:
        """Feed one step's updates (shape (trials, n, ...)) to a vectorized mechanism; the releases (trials,)."""
        raise NotImplementedError


def _parse_box(text: str, B: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """'lo:hi,lo:hi,...' -> (lo, hi) int arrays of length d; '' -> [0, B-1)^d."""
    if not text.strip():
        return np.zeros(d, dtype=np.int64), np.full(d, B - 1, dtype=np.int64)
    allowed = f"'lo:hi' per dimension, comma-separated, d={d} of them, 0 <= lo <= hi <= B={B}"
    try:
        pairs = [tuple(int(v) for v in part.split(":")) for part in text.split(",")]
    except ValueError:
        raise ParameterError(f"box must be {allowed} (got {text!r})") from None
    if len(pairs) != d or any(len(p) != 2 or not 0 <= p[0] <= p[1] <= B for p in pairs):
        raise ParameterError(f"box must be {allowed} (got {text!r})")
    lo, hi = np.array(pairs, dtype=np.int64).T
    return lo, hi


class ContinualRange(_SketchStream):
    """Parties stream points of [B]^d; C releases the private count of a fixed box after every step.

    Each party's input has shape (T, d): row s is the point it inserts at step s + 1, or
    a row of -1 for none. C keeps one dynamic :class:`~privsim.mechanisms.RangeCounter`
    per trial, vectorized (``T`` update steps, ``rows`` x ``width`` sketches; node variance
    rows L^d (log2 T + 2)/(8 rho), L = log2 B) and answers the query box after every
    step. Estimate: the final answer; true value: the exact count of inserted points in
    the box.

    With ``rows=1`` and a box whose dyadic pieces lie in distinct components (the default
    [0, B-1)^d: one piece per level and dimension), the answer's error is exactly
    ``noise + collisions``: the noise has variance ``query_boxes * cell_variance``, the
    sketch collisions add sum x_p^2/width over the other non-empty boxes p of each
    component used (2-wise independent buckets, 4-wise independent signs). With more rows
    the median is symmetric about the true count, so still unbiased.

    Parameters (``Param`` fields)
    -----------------------------
    T, rho, delta:
        Horizon (power of two), zCDP parameter (event level), delta of the reported claim.
    B, d:
        The grid [B]^d (B a power of two >= 2, B^d <= 2^60).
    rows, width:
        CountSketch rows and buckets per row of every dyadic component.
    box:
        The query ``'lo:hi,lo:hi,...'`` (half-open per dimension); empty: [0, B-1)^d.

    Examples
    --------
    >>> proto = ContinualRange(T=16, B=16, d=2, rows=1, width=64, rho=1.0)
    >>> proto.query_boxes, proto.cell_variance      # 4^2 pieces; 16 (4 + 1)(4 + 2)/8
    (16, 60.0)
    >>> ContinualRange(B=12)
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: B must be a power of two (got 12)
    """

    name = "continual-range"
    B = Param(16, type=int, ge=2, power_of_two=True, doc="grid side, a power of two >= 2")
    d = Param(1, type=int, ge=1, doc="dimension")
    rows = Param(1, type=int, ge=1, doc="CountSketch rows per dyadic component")
    width = Param(64, type=int, ge=1, le=2**32, doc="CountSketch buckets per row")
    box = Param("", type=str, doc="query box 'lo:hi,...' per dimension (half-open); empty = [0, B-1)^d")

    def validate(self) -> None:
        super().validate()
        self._lo, self._hi = _parse_box(self.box, self.B, self.d)
        self._cell_variance = self.mechanism(0).cell_variance  # the mechanism's own checks (B^d <= 2^60, ...)
        self._query_boxes = int(dyadic_boxes(self._lo, self._hi, self.B)[0].shape[0])

    @property
    def cell_variance(self) -> float:
        """Variance of the noise on one released sketch counter, (log2 T + 1) s_node^2 (BLT: at step T)."""
        return self._cell_variance

    @property
    def query_boxes(self) -> int:
        """Number of dyadic boxes the query box is cut into (at most (2 log2 B)^d)."""
        return self._query_boxes

    @property
    def query(self) -> tuple[np.ndarray, np.ndarray]:
        """The query box as (lo, hi) arrays (half-open)."""
        return self._lo.copy(), self._hi.copy()

    def input_shape(self) -> tuple[int, ...]:
        return (self.T, self.d)

    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        check_stream_inputs(inputs, (inputs >= -1) & (inputs < self.B),
                            f"[0, B={self.B}) (coordinates; a row of -1 for no point)")
        absent = inputs < 0
        mixed = absent.any(axis=-1) & ~absent.all(axis=-1)
        if mixed.any():
            idx = np.argwhere(mixed)[0]
            raise InputError(f"inputs: party {idx[1]} at step {idx[2] + 1} mixes -1 with coordinates; "
                             "a row is a point in [0, B)^d or all -1 (no point)")
        return inputs

    def default_inputs(self, n: int) -> np.ndarray:
        """Party i inserts a point at the steps s with i + s even; coordinate j is (i (2j+3) + s (j+5)) mod B.

        >>> ContinualRange(T=4, B=8, d=1).default_inputs(2)[:, :, 0].tolist()
        [[-1, 2, -1, 4], [0, -1, 2, -1]]
        """
        i = np.arange(n)[:, None, None]
        s = np.arange(1, self.T + 1)[None, :, None]
        j = np.arange(self.d)[None, None, :]
        points = (i * (2 * j + 3) + s * (j + 5)) % self.B
        return np.where((i + s) % 2 == 0, points, -1).astype(self.input_dtype)

    def _inside(self, inputs: np.ndarray) -> np.ndarray:
        x = np.asarray(inputs)
        return ((x >= self._lo) & (x < self._hi)).all(axis=-1) & (x[..., 0] >= 0)

    def true_value(self, inputs: np.ndarray) -> np.ndarray:
        """The exact number of inserted points in the box, per trial."""
        return self._inside(inputs).sum(axis=(1, 2)).astype(float)

    def true_series(self, inputs: np.ndarray) -> np.ndarray:
        """The exact count in the box after each step, shape (R, T).

        >>> p = ContinualRange(T=4, B=8, d=1)
        >>> p.true_series(p.default_inputs(2)[None]).tolist()
        [[1.0, 2.0, 3.0, 4.0]]
        """
        return np.cumsum(self._inside(inputs).sum(axis=1), axis=1).astype(float)

    def message_bits(self) -> int:
        return self.d * (self.B.bit_length() - 1) + 1  # the point, plus one bit for "none"

    def mechanism(self, seed: SeedLike, trials: int | None = None) -> RangeCounter:
        box = None if trials is None else (self._lo, self._hi)  # noise only for the counters the box reads
        return RangeCounter(self.B, self.d, self.rows, self.width, self.rho, T=self.T, seed=seed, trials=trials,
                            box=box, noise=self.noise, calibration=self.calibration)

    def step(self, mech: RangeCounter, updates: np.ndarray, n: int) -> np.ndarray:
        present = updates[..., 0] >= 0  # (R, n); an absent point is an update of weight 0
        mech.update(np.where(present[..., None], updates, 0), present.astype(np.float64))
        return mech.query(self._lo, self._hi)


class ContinualJoin(_SketchStream):
    """Two groups of parties stream keys of R and S; C releases the private join size after every step.

    Parties 0..ceil(n/2)-1 hold relation R, the others S; each party's input has shape
    (T,): the key it adds at step s + 1 (in [0, keys)), or -1 for none. C keeps one
    :class:`~privsim.mechanisms.JoinSizeEstimator` per trial, vectorized, over 2T time steps (step s
    of the protocol is its steps 2s - 1 (R's keys) and 2s (S's keys)), with node variance
    rows (log2 2T + 2)/(8 rho). Estimate: the final ``median_i <CS~_i(x), CS~_i(y)>``;
    true value: the exact join size <x, y>.

    With ``rows=1`` the estimate is unbiased with the variance of Lemma 5.2 (see
    :meth:`row_variance`); with more (odd) rows it is the median of independent rows,
    whose distribution need not be symmetric, so it can be slightly biased.

    Parameters (``Param`` fields)
    -----------------------------
    T, rho, delta:
        Horizon (power of two), zCDP parameter (event level: one key added or removed),
        delta of the reported claim.
    rows, width:
        Sketch rows k (odd) and buckets per row b.
    keys:
        The key domain [0, keys).
    refresh:
        ``"all"`` (default, rho-zCDP) or ``"touched"`` (the paper's lazy refresh).

    Examples
    --------
    >>> proto = ContinualJoin(T=16, rows=1, width=32, rho=2.0)
    >>> proto.sigma2                       # (log2 32 + 1) * 1 * (5 + 2)/(8 * 2)
    2.625
    >>> ContinualJoin(rows=2)
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: rows must be an odd integer >= 1 (got 2)
    """

    name = "continual-join"
    steps_per_round = 2
    rows = Param(3, type=int, ge=1, doc="sketch rows k (odd)")
    width = Param(64, type=int, ge=1, le=2**32, doc="sketch buckets per row")
    keys = Param(16, type=int, ge=1, le=2**40, doc="key domain [0, keys)")
    refresh = Param("all", type=str, choices=list(REFRESH_MODES),
                    doc="counters each release reads at its step: all (rho-zCDP) or touched (the paper's "
                        "lazy refresh; private only if which counters an update touches is public)")

    @property
    def assumption(self) -> str:
        """The lazy refresh's assumption with ``refresh="touched"``, else ""."""
        return TOUCHED_ASSUMPTION if self.refresh == "touched" else ""

    def validate(self) -> None:
        super().validate()
        self._sigma2 = self.mechanism(0).sigma2  # the mechanism's own checks (odd rows, ...)

    @property
    def sigma2(self) -> float:
        """Variance of the noise on each released counter, (log2 2T + 1) rows (log2 2T + 2)/(8 rho).

        With the paper's tree; the source's own (BLT: at the final step, the largest) otherwise.
        """
        return self._sigma2

    def row_variance(self, x: np.ndarray, y: np.ndarray) -> float:
        """Exact variance of one row estimate <CS~(x), CS~(y)> (join.py; Lemma 5.2's three terms).

        >>> ContinualJoin(T=4, rows=1, width=8, rho=1.0).row_variance(np.array([1, 0]), np.array([1, 1]))
        57.625
        """
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        xx, yy, xy = float(x @ x), float(y @ y), float(x @ y)
        sketch = (xx * yy + xy * xy - 2 * float(np.sum(x * x * y * y))) / self.width
        return sketch + self.sigma2 * (xx + yy) + self.width * self.sigma2**2

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        if n < 2:
            raise ParameterError(f"n must be >= 2 for continual-join: one party for R and one for S (got {n})")

    @staticmethod
    def group_size(n: int) -> int:
        """Number of parties holding relation R: ceil(n/2) (parties 0..ceil(n/2)-1).

        >>> ContinualJoin.group_size(5)
        3
        """
        return (n + 1) // 2

    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        return check_stream_inputs(inputs, (inputs >= -1) & (inputs < self.keys),
                                   f"[0, keys={self.keys}) (keys; -1 for no key)")

    def default_inputs(self, n: int) -> np.ndarray:
        """R parties add key (3i + s) mod keys at steps with i + s even; S parties (i + 5s) mod keys unless 3 | i + s.

        >>> ContinualJoin(T=4, keys=8).default_inputs(2).tolist()
        [[-1, 2, -1, 4], [6, -1, 0, 5]]
        """
        i = np.arange(n)[:, None]
        s = np.arange(1, self.T + 1)[None, :]
        r_keys = np.where((i + s) % 2 == 0, (3 * i + s) % self.keys, -1)
        s_keys = np.where((i + s) % 3 != 0, (i + 5 * s) % self.keys, -1)
        return np.where(i < self.group_size(n), r_keys, s_keys).astype(self.input_dtype)

    def frequencies(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The exact frequency vectors x (R) and y (S) per trial, each shape (R, keys).

        >>> x, y = ContinualJoin(T=4, keys=8).frequencies(np.array([[[1, 1, -1, 2], [1, -1, -1, -1]]]))
        >>> x.tolist(), y.tolist()
        ([[0, 2, 1, 0, 0, 0, 0, 0]], [[0, 1, 0, 0, 0, 0, 0, 0]])
        """
        x = np.asarray(inputs)
        m = self.group_size(x.shape[1])
        return self._counts(x[:, :m]), self._counts(x[:, m:])

    def _counts(self, part: np.ndarray) -> np.ndarray:
        flat = part.reshape(part.shape[0], -1)
        codes = (np.arange(flat.shape[0])[:, None] * self.keys + flat)[flat >= 0]  # trial r, key k: r keys + k
        return np.bincount(codes, minlength=flat.shape[0] * self.keys).reshape(flat.shape[0], self.keys)

    def true_value(self, inputs: np.ndarray) -> np.ndarray:
        """The exact join size <x, y> per trial."""
        x, y = self.frequencies(inputs)
        return np.einsum("rk,rk->r", x, y).astype(float)

    def message_bits(self) -> int:
        return max(1, math.ceil(math.log2(self.keys + 1)))  # a key in [0, keys) or "none"

    def audit_score(self, ctx: AuditScoreContext, *legacy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
        """With ``refresh="touched"``, the lazy refresh's leak: which releases are unchanged.

        Lazily, release s equals release s - 1 exactly when no party updates at step s
        (no counter is re-released; otherwise the new noise makes them differ with
        probability 1). The score counts the unchanged releases at the steps that are
        silent under x but not under x', minus those silent under x' but not under x:
        its expectation separates the inputs whenever their silent steps differ. With the
        default refresh no release is ever unchanged (every counter gets new noise), so
        this score would be 0 for both inputs; ``None`` then lets the audit choose its
        own event. Any score keeps the audit sound.
        """
        if self.refresh != "touched" or ctx.x is None or ctx.x_prime is None:
            return None
        idx = [ctx.index("output", party=CURATOR, element=s) for s in range(self.T)]
        if None in idx:
            return None
        silent_x, silent_xp = (np.all(np.asarray(v) < 0, axis=0)[1:] for v in (ctx.x, ctx.x_prime))  # steps 2..T
        weight = silent_x.astype(float) - silent_xp.astype(float)
        if not weight.any():
            return None

        def score(views: np.ndarray) -> np.ndarray:
            released = views[:, idx]
            return (released[:, 1:] == released[:, :-1]) @ weight

        return score

    def mechanism(self, seed: SeedLike, trials: int | None = None) -> JoinSizeEstimator:
        return JoinSizeEstimator(2 * self.T, self.rows, self.width, self.rho, seed=seed, refresh=self.refresh,
                                 trials=trials, noise=self.noise, calibration=self.calibration)

    def step(self, mech: JoinSizeEstimator, updates: np.ndarray, n: int) -> np.ndarray:
        m = self.group_size(n)
        for relation, part in (("R", updates[:, :m]), ("S", updates[:, m:])):
            present = part >= 0  # an absent key (-1) is an update of weight 0: it touches nothing
            mech.update(relation, np.where(present, part, 0), present.astype(np.float64))
        return mech.estimate()
