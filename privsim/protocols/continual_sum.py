"""Continual counting as a streaming protocol: parties stream updates, the curator releases running sums.

Pagh & Sejer, "A Fast Gaussian Mechanism under Continual Observation" (2026), section 2 and
appendix B, in the simulator (docs/architecture.md, "Trials and seeds"). Each of n parties holds a
stream x_i(1..T) of updates; time step s is round s: every party sends its update for
step s to the curator C (n messages per round, T rounds), and C releases the running sum

    A(s) = sum_{i, s' <= s} x_i(s')  +  nu_s

after every step, nu_s the Gaussian binary tree noise of leaf bin(s - 1): one N(0, s^2)
per tree node, nu_s the sum over the root-to-leaf path (h + 1 nodes, T = 2^h). Every
release has Var nu_s = (h + 1) s^2 and Cov(nu_s, nu_s') = (m + 1) s^2, m the common-prefix
length of the two labels (Theorem 3.1).

Neighbouring inputs and calibration (``level``)
-----------------------------------------------
Updates are numbers with |x_i(s)| <= Delta (``sensitivity``; bits with ``domain="bits"``).

- ``level="event"`` (the paper's notion, the default): x and x' differ in ONE update of
  one party at one step, by at most Delta (adding or removing one update of norm <= Delta;
  a bit flip). Node variance s^2 = (h + 2) Delta^2 / (8 rho) (appendix B: the strategy
  matrix R has l2 sensitivity sqrt(h + 2)/2 per unit update), so the release is rho-zCDP
  for event-level neighbours; every step's error then has variance
  (h + 1)(h + 2) Delta^2 / (8 rho).
- ``level="party"`` (user-level): x and x' differ in one party's WHOLE stream, by at most
  Delta at every step (the party present or absent; a bit stream flipped). For such a
  change v, ||R v||^2 <= Delta^2 T^2 / 2 (appendix B's R, node by node: the root carries
  half the stream's total, an internal node half its sibling subtree's, a pair of leaves
  at most Delta^2; attained by v = Delta * 1), so s^2 = Delta^2 T^2 / (4 rho) makes the
  release rho-zCDP for party-level neighbours. :func:`stream_rho` converts between the two.

A change of more than Delta at one step (e.g. -Delta to +Delta) is two events: group
privacy, 4 rho. Both bounds come from the factorization and are upper bounds: the exact
divergence of the released Gaussian is smaller (at T = 16 about 0.75x for one event and
0.57x for a whole stream).

Noise (``noise``, ``calibration``)
----------------------------------
``noise="tree"`` (the default) is the tree above with the paper's node variance, or with
``calibration="exact"`` the node variance that spends exactly rho for event-level
neighbours (:mod:`privsim.mechanisms.calibration`; refused for ``level="party"``).
``noise="blt"`` is buffered linear Toeplitz noise (:mod:`privsim.mechanisms.blt`): its
event- and party-level rho are exact (C >= 0: the worst stream is the constant one).
``noise="laplace-tree"`` puts Laplace noise on the tree's nodes, b = (h + 2) Delta/(2 epsilon)
(appendix B's R in l1), and the claims are pure: epsilon per event, T epsilon per party
stream (triangle inequality); ``rho`` is then unused.

Who sees what, and the claim (:meth:`ContinualSum.privacy`)
-----------------------------------------------------------
The claim is for the simulator's neighbour relation (docs/architecture.md, "Claims and verdicts": x and x'
differ in one party outside the coalition, here by at most Delta per step), i.e. the
*party-level* rho of the chosen calibration, reported as (epsilon, delta) with
``zcdp_to_approx_dp(rho, delta)`` (Bun–Steinke Prop. 1.3) at the ``delta`` parameter:

- a coalition containing C: ``None`` -- this is the local-collection (trusted curator)
  model: C receives every update in the clear.
- the empty coalition (an observer of the releases), and any coalition of parties when
  ``broadcast=True`` (C sends each release to every party one round later): the
  release's party-level guarantee.
- a coalition of parties when ``broadcast=False``: ``Privacy(0)``; they receive nothing.

:meth:`ContinualSum.event_privacy` gives the event-level guarantee (the paper's).

Randomness
----------
The curator draws the node noises itself from ``ctx.rng`` (every draw with the trial
axis), keeping the root-to-leaf path of the current step as prefix sums: at step s the
nodes below the common prefix of bin(s - 2) and bin(s - 1) are fresh. This is the
path-keeping GaussianTree, the joint law FastGaMe reproduces (Theorem 3.1); when every
step is released each node is drawn once, 2T - 1 Gaussians in all (amortized < 2 per
step), as cheap as FastGaMe, whose O(1) advantage is for sparse, irregular queries over
many coordinates. (FastGaMe takes one Generator per instance, not a trial axis: one
instance with k = R coordinates would mix the trials' draws.) The number of draws per
step depends on s alone, never on the data or on R, so runs are reproducible and
batch-invariant: ``simulate_batches`` gives the ``simulate`` result bit for bit (the
curator's streams are per block of 1024 trials, and batches are whole blocks).

Output: the curator outputs the released series, shape (R, T); :meth:`estimate` is the
final release A(T) + nu_T and :meth:`true_value` the total sum (use :meth:`true_series`
for the whole series).

Examples
--------
>>> import privsim
>>> proto = ContinualSum(T=16, rho=0.5)
>>> res = privsim.simulate(proto, n=8, trials=500, seed=1)
>>> res.messages, res.rounds, res.outputs["C"].shape
(128, 16, (500, 16))
>>> proto.variance                             # (h + 1)(h + 2)/(8 rho) with h = 4
7.5
>>> bool(abs(res.error.mean()) < 5 * (proto.variance / 500) ** 0.5)
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from privsim.errors import InputError, ParameterError
from privsim.mechanisms.accounting import zcdp_to_approx_dp
from privsim.mechanisms.calibration import CALIBRATIONS
from privsim.mechanisms.continual_kinds import NOISE_KINDS, TREE, ContinualNoise, noise_kind
from privsim.mechanisms.noise_source import NoiseSource
from privsim.mechanisms.tree import FastGaMe, tree_height
from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.context import PartyContext
from privsim.parties.rng import TrialRNG
from privsim.protocols.base import Param, Privacy, Protocol

__all__ = ["ContinualSum", "stream_rho", "check_horizon", "check_stream_inputs", "MAX_T", "TreeNoise"]

#: Largest horizon of the streaming protocols: one round per step, n messages per round.
MAX_T = 1 << 16


def check_horizon(T: int) -> int:
    """Return h = log2 T for a horizon T of a streaming protocol, or raise a one-line error.

    Parameters
    ----------
    T:
        Number of time steps (rounds): a power of two in [2, 2**16]. T = 1 is refused
        because the appendix-B calibration (h + 2)/(8 rho) needs a sibling (h >= 1).

    Returns
    -------
    int
        The tree height h.

    Raises
    ------
    ParameterError
        Naming T and the allowed values.

    Examples
    --------
    >>> check_horizon(64)
    6
    >>> check_horizon(48)
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: T must be a power of two in 2, 4, 8, ..., 65536 (got 48)
    """
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or not 2 <= T <= MAX_T or T & (T - 1):
        raise ParameterError(f"T must be a power of two in 2, 4, 8, ..., {MAX_T} (got {T!r})")
    return int(T).bit_length() - 1


def check_stream_inputs(inputs: np.ndarray, ok: np.ndarray, allowed: str) -> np.ndarray:
    """Return ``inputs`` (shape (R, n, T, ...)) if ``ok`` holds everywhere, else name the first bad update.

    Parameters
    ----------
    inputs:
        The parties' streams, trial axis first, then party, then step.
    ok:
        Boolean array of the same shape: which entries are in the domain.
    allowed:
        The domain, for the message.

    Raises
    ------
    InputError
        "inputs: party P has V at step S, outside ALLOWED".

    Examples
    --------
    >>> x = np.array([[[0.0, 1.0], [0.0, 3.0]]])
    >>> check_stream_inputs(x, x <= 1, "{0, 1}")
    Traceback (most recent call last):
    ...
    privsim.errors.InputError: inputs: party 1 has 3.0 at step 2, outside {0, 1}
    """
    bad = ~np.asarray(ok)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise InputError(f"inputs: party {idx[1]} has {inputs[idx].item()!r} at step {idx[2] + 1}, "
                         f"outside {allowed}")
    return inputs


def stream_rho(rho_event: float, T: int, change: float = 1.0) -> float:
    """zCDP towards a change of a whole stream, for a tree calibrated to ``rho_event`` per event.

    The tree over T = 2^h steps with node variance s^2 = (h + 2) Delta^2/(8 rho_event) is
    rho_event-zCDP for one update changing by Delta (appendix B: ||R e||^2 = (h + 2)/4).
    A stream change v with |v_s| <= change * Delta at every step has
    ||R v||^2 <= change^2 Delta^2 T^2 / 2 (node by node: the root and each internal node
    carry half the stream mass of a subtree, a pair of sibling leaves at most
    change^2 Delta^2; attained by a constant stream), so by the Gaussian mechanism
    (Def. A.3) the same release is

        rho_stream = rho_event * change^2 * 2 T^2 / (h + 2)   -zCDP.

    The bound also holds for a stream spread over many counters when the per-step mass
    summed over a row of counters is at most change * Delta (the sketches of
    :mod:`privsim.protocols.continual_sketch`).

    Parameters
    ----------
    rho_event:
        zCDP of one event, > 0.
    T:
        Number of time steps of the tree, a power of two >= 2.
    change:
        Largest per-step change of the stream, in units of Delta (> 0).

    Returns
    -------
    float
        rho_stream.

    Examples
    --------
    >>> stream_rho(1.0, 64)        # 2 * 64^2 / 8
    1024.0
    >>> stream_rho(1.0, 2)         # T = 2: 2 * 4 / 3
    2.6666666666666665
    """
    tree_height(T, minimum=2)
    if not (rho_event > 0 and change > 0 and math.isfinite(rho_event) and math.isfinite(change)):
        raise ParameterError(f"rho_event and change must be finite and > 0 (got {rho_event!r}, {change!r})")
    return TREE.stream_loss(T, rho_event, change)  # ||R v||^2 / ||R e||^2 = (T^2/2) / ((h+2)/4)


class TreeNoise:
    """Deprecated: the curator's tree noise is now :class:`~privsim.mechanisms.FastGaMe` on a TrialRNG.

    Kept for scripts that built it directly: ``step(t)`` (t = 1, 2, ..., T in order)
    returns the noise of every trial, shape (R,), from a FastGaMe whose coordinates are
    the trials (one implementation of tree noise, in :mod:`privsim.mechanisms.tree`).

    Parameters
    ----------
    T:
        Number of steps, a power of two >= 2.
    sigma2:
        Node variance s^2 > 0.
    rng:
        A party's :class:`~privsim.parties.rng.TrialRNG` (draws carry the trial axis).

    Examples
    --------
    >>> import warnings
    >>> from privsim.parties.rng import StreamSeeder, block_range
    >>> rng = StreamSeeder(1, 1, block_range(3)).rng(0, 3, record=False)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     noise = TreeNoise(8, 1.0, rng)
    >>> [noise.step(t).shape for t in (1, 2)]
    [(3,), (3,)]
    """

    def __init__(self, T: int, sigma2: float, rng: TrialRNG) -> None:
        warnings.warn("TreeNoise is deprecated: use privsim.mechanisms.FastGaMe(T, sigma2, k=rng.trials, "
                      "seed=rng)", DeprecationWarning, stacklevel=2)
        self.h = check_horizon(T)
        self.T = int(T)
        self._source = FastGaMe(T, sigma2, k=rng.trials, seed=rng)
        self._all = np.arange(rng.trials)
        self._t = 0

    def step(self, t: int) -> np.ndarray:
        """The noise nu_t of every trial, shape (R,); t must be the previous step + 1."""
        if t != self._t + 1 or t > self.T:
            raise ParameterError(f"t must be the next step {self._t + 1} (got {t}); steps run 1..{self.T} in order")
        self._t = t
        return self._source.noise(t, self._all)


class _Stream(Protocol):
    """Shared skeleton of the streaming protocols: step s is round s, every party's update to C
    (subclasses give :meth:`message_bits`, ``rho_party`` and ``_claim``, the claim for a loss)."""

    has_curator = True
    broadcast = False  # ContinualSum's Param: C sends each release back to every party, one round later

    def message_bits(self) -> int | None:
        """Bits of one party's update message (None: the size of its value)."""
        raise NotImplementedError

    def input_shape(self) -> tuple[int, ...]:
        return (self.T,)  # one update per step

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        if CURATOR in coalition:
            return None  # C receives every update in the clear (local collection, trusted curator)
        if coalition and not self.broadcast:
            return Privacy(0.0)  # parties receive nothing: their view does not depend on others' inputs
        return self._claim(self.rho_party)

    def schedule(self, n: int, t: int) -> Schedule:
        up = [(i, CURATOR) for i in range(n)]
        down = [(CURATOR, i) for i in range(n)] if self.broadcast else []
        rounds = [up + (down if s > 1 else []) for s in range(1, self.T + 1)]
        if self.broadcast:
            rounds.append(down)
        return Schedule(n, rounds, curator=True)

    async def party(self, ctx: PartyContext) -> None:
        bits = self.message_bits()
        received = []
        for s in range(self.T):
            ctx.send(CURATOR, ctx.input[:, s], bits=bits)
            inbox = await ctx.end_round()
            if s > 0 and self.broadcast:
                received.append(inbox[CURATOR])
        if self.broadcast:
            received.append((await ctx.end_round())[CURATOR])
            ctx.output(np.stack(received, axis=1))

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        """The final release per trial, A(T) + nu_T for the sum (the whole series is ``outputs["C"]``,
        shape (R, T))."""
        return np.asarray(outputs[CURATOR], dtype=float)[:, -1]


class ContinualSum(_Stream):
    """Parties stream updates to the curator C, who releases the running sum after every step.

    T rounds of n messages (party -> C); with ``broadcast`` each release also goes back to
    every party one round later (2nT messages, T + 1 rounds). Noise: the Gaussian binary
    tree over T steps (see the module docstring for the neighbour relation, the
    calibration and the claims).

    Parameters (``Param`` fields)
    -----------------------------
    T:
        Time steps, a power of two in [2, 2**16] (round s = step s).
    rho:
        zCDP parameter for the chosen ``level`` of neighbours.
    level:
        ``"event"`` (one update changes; the paper's) or ``"party"`` (one party's whole stream).
    domain:
        ``"bits"`` (updates in {0, 1}) or ``"real"`` (updates in [-sensitivity, sensitivity]).
    sensitivity:
        Delta, the largest change of one update between neighbours (>= 1 for bits).
    delta:
        The delta at which the rho-zCDP claims are reported as (epsilon, delta)-DP.
    broadcast:
        C sends each release to every party (so a coalition of parties sees the outputs).

    Examples
    --------
    >>> proto = ContinualSum(T=64, rho=1.0)
    >>> proto.sigma2, proto.variance, proto.rho_party
    (1.0, 7.0, 1024.0)
    >>> proto.privacy(["C"], 16, 15) is None, proto.privacy([0, 1], 16, 15)
    (True, Privacy(epsilon=0.0, delta=0.0))
    >>> round(proto.event_privacy().epsilon, 3)
    8.434
    >>> ContinualSum(T=48)
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: T must be a power of two in 2, 4, 8, ..., 65536 (got 48)
    """

    name = "continual-sum"
    input_values = (0, 1)  # domain="bits"; set per instance in validate()
    input_dtype = np.float64

    T = Param(64, type=int, ge=2, le=MAX_T, power_of_two=True, doc="time steps = rounds, a power of two in [2, 2**16]")
    rho = Param(1.0, gt=0, doc="zCDP parameter of the released series, for the chosen level")
    level = Param("event", type=str, choices=["event", "party"],
                  doc="neighbours: one update (event, the paper's) or one party's whole stream (party)")
    domain = Param("bits", type=str, choices=["bits", "real"],
                   doc="updates are bits {0,1} or reals in [-sensitivity, sensitivity]")
    sensitivity = Param(1.0, gt=0, doc="Delta: largest change of one update between neighbours")
    delta = Param(1e-6, gt=0, lt=1, doc="delta of the (epsilon, delta) form of the rho-zCDP claims")
    broadcast = Param(False, type=bool, doc="C sends each release to every party one round later")
    noise = Param("tree", type=str, choices=list(NOISE_KINDS),
                  doc="the curator's noise: tree (FastGaMe), blt (buffered Toeplitz) or laplace-tree (pure DP)")
    calibration = Param("paper", type=str, choices=list(CALIBRATIONS),
                        doc="tree node variance: the paper's (h+2)/(8 rho) or the exact one for the same rho")
    epsilon = Param(1.0, gt=0, doc="pure-DP budget for noise=laplace-tree (rho is then unused)")

    def validate(self) -> None:
        self.h = check_horizon(self.T)
        if self.domain == "bits" and self.sensitivity < 1:
            raise ParameterError(f"sensitivity must be >= 1 with domain=bits: a flip changes the sum by 1 "
                                 f"(got {self.sensitivity})")
        if self.calibration == "exact" and self.level == "party":
            raise ParameterError("calibration=exact needs level=event (the exact worst case over whole "
                                 "streams is a box-constrained maximum privsim does not compute); "
                                 "use calibration=paper")
        self.input_values = (0, 1) if self.domain == "bits" else None  # type: ignore[misc]

    # ------------------------------------------------------------ calibration
    @property
    def kind(self) -> ContinualNoise:
        """The curator's noise kind (sampler, calibration, privacy map)."""
        return noise_kind(self.noise, self.calibration)

    @property
    def pure(self) -> bool:
        """True for Laplace nodes: the claims are pure epsilon-DP, not zCDP."""
        return self.kind.pure

    @property
    def _budget(self) -> float:
        return self.epsilon if self.pure else self.rho

    @property
    def scale(self) -> float:
        """The noise scale: s^2 (tree, blt) or the Laplace scale b, for the chosen level."""
        if self.level == "event":
            return self.kind.scale(self.T, self._budget, self.sensitivity)
        # party level: the worst whole-stream change instead of one update
        return self.kind.stream_scale(self.T, self._budget, self.sensitivity)

    @property
    def sigma2(self) -> float:
        """Node variance s^2 (tree: (h + 2) Delta^2/(8 rho) for event, Delta^2 T^2/(4 rho) for party
        with the paper's calibration), the variance of z (blt), or 2 b^2 (laplace-tree)."""
        return self.kind.sigma2(self.scale)

    def make_noise(self, k: int = 1, seed: object = None) -> NoiseSource:
        """The curator's noise source (k coordinates; a TrialRNG seed makes them the trials)."""
        return self.kind.source(self.T, self.scale, k=k, seed=seed)  # type: ignore[arg-type]

    @property
    def variance(self) -> float:
        """Largest variance of a step's error: (h + 1) s^2 for the trees (section 2), at t = T for blt."""
        return self.make_noise().variance

    def _loss(self, stream: bool) -> float:
        """rho (Gaussian) or epsilon (Laplace) towards one update (False) or one party's stream (True)."""
        if self.level == "event" and not stream:
            return self.kind.event_loss(self.T, self.scale, self.sensitivity, self._budget)
        return self.kind.loss(self.T, self.scale, self.sensitivity, stream=stream)

    @property
    def rho_event(self) -> float:
        """zCDP of the released series towards one update changing by <= Delta (epsilon for laplace-tree)."""
        return self._loss(False)

    @property
    def rho_party(self) -> float:
        """zCDP of the released series towards one party's stream changing by <= Delta per step."""
        return self._loss(True)

    def _claim(self, loss: float) -> Privacy:
        if self.pure:
            return Privacy(loss)
        return Privacy(zcdp_to_approx_dp(loss, self.delta), self.delta)  # [BS16] Prop. 1.3

    def event_privacy(self) -> Privacy:
        """The event-level (paper's) guarantee of the releases, as (epsilon, delta) (pure for laplace-tree).

        >>> ContinualSum(T=8, rho=0.5, delta=1e-5).event_privacy().delta
        1e-05
        """
        return self._claim(self.rho_event)

    # ------------------------------------------------------------ inputs
    def validate_inputs(self, inputs: np.ndarray) -> np.ndarray:
        if self.domain == "bits":
            return check_stream_inputs(inputs, (inputs == 0) | (inputs == 1), "the domain {0, 1} (domain=bits)")
        return check_stream_inputs(inputs, np.abs(inputs) <= self.sensitivity,  # False for NaN too
                                   f"the domain [-{self.sensitivity:g}, {self.sensitivity:g}] (sensitivity)")

    def default_inputs(self, n: int) -> np.ndarray:
        """Party i sends 1 at the steps s with i + s divisible by 3, else 0: shape (n, T).

        >>> ContinualSum(T=4).default_inputs(2).tolist()
        [[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
        """
        i, s = np.arange(n)[:, None], np.arange(1, self.T + 1)[None, :]
        return ((i + s) % 3 == 0).astype(self.input_dtype)

    def true_series(self, inputs: np.ndarray) -> np.ndarray:
        """The exact running sums A(1..T) per trial, shape (R, T), from inputs (R, n, T).

        >>> ContinualSum(T=4).true_series(np.ones((1, 2, 4))).tolist()
        [[2.0, 4.0, 6.0, 8.0]]
        """
        return np.cumsum(np.asarray(inputs, dtype=float).sum(axis=1), axis=1)

    # ------------------------------------------------------------ protocol
    def message_bits(self) -> int | None:
        return 1 if self.domain == "bits" else None

    async def curator(self, ctx: PartyContext) -> None:
        # One source whose coordinates are the trials, each drawn from its own block
        # stream: the releases do not depend on how the trials are split into batches.
        noise = self.make_noise(ctx.trials, ctx.rng)
        total = ctx.zeros()
        released = np.empty((ctx.trials, self.T))
        for s in range(1, self.T + 1):
            if self.broadcast and s > 1:
                for i in range(ctx.n):
                    ctx.send(i, released[:, s - 2])
            total = total + (await ctx.end_round()).total()
            released[:, s - 1] = total + noise.noise(s)  # A(s) + nu_s (all trials)
        if self.broadcast:
            for i in range(ctx.n):
                ctx.send(i, released[:, -1])
            await ctx.end_round()
        ctx.output(released)

    def series(self, outputs: dict, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The released running sums and the exact ones, each (R, T)."""
        return np.asarray(outputs[CURATOR], dtype=float), self.true_series(inputs)
