"""The noise kinds of continual release, as objects: sampler, variance, calibration, privacy map.

A continual release adds to the running sums A(1..T) the noise ``L z`` of a strategy
whose privacy is set by two sensitivities of its strategy matrix (Pagh & Sejer 2026,
section 2 and appendix B; :mod:`privsim.mechanisms.blt`):

- ``event``: one update changing by Delta moves the strategy's output by at most
  ``event * Delta^2`` in squared l2 norm (l1 norm ``event * Delta`` for Laplace nodes);
- ``stream``: one party's whole stream, changing by at most Delta at every step, moves it
  by at most ``stream * Delta^2`` (the tree: ||R v||^2 <= Delta^2 T^2/2, node by node: the
  root and each internal node carry half the stream mass of a subtree, a pair of sibling
  leaves at most Delta^2; attained by a constant stream. BLT: ||C 1||^2, exact, as every
  entry of C is >= 0; this also bounds a stream spread over the counters v_c of a sketch
  row: sum_c ||C v_c||^2 <= ||C sum_c |v_c| ||^2 <= change^2 ||C 1||^2, the cross terms
  being >= 0 and 0 <= sum_c |v_c| <= change at every step).

The whole-stream privacy bound is then one line for every kind: Gaussian nodes of scale
s^2 are ``S Delta^2 / (2 s^2)``-zCDP (Def. A.3) and Laplace nodes of scale b are
``S Delta / b``-DP, S the sensitivity of the neighbours in question; a source calibrated
to ``budget`` for one event is ``budget * change^2 * stream / event`` towards a stream
(``change`` in units of Delta, linear for Laplace).

Four kinds, one :class:`ContinualNoise` each, named by :func:`noise_kind`, the only place
the ``noise=`` and ``calibration=`` strings are read: :data:`TREE` (FastGaMe, the paper's
node variance), :data:`EXACT_TREE` (the same sampler, the node variance that spends rho
exactly, :mod:`privsim.mechanisms.calibration`), :data:`BLT` (buffered linear Toeplitz,
:class:`~privsim.mechanisms.BLTNoise`) and :data:`LAPLACE_TREE` (Laplace nodes, pure DP,
:class:`~privsim.mechanisms.LaplaceFastGaMe`). :class:`~privsim.mechanisms.ContinualCounter`,
the sketch counters (:mod:`privsim.mechanisms._counter_noise`) and the streaming protocols
(:mod:`privsim.protocols.continual_sum`, :mod:`privsim.protocols.continual_sketch`) read
everything they need from the kind.

Examples
--------
>>> kind = noise_kind("tree")
>>> kind.scale(1024, 0.5), kind.stream_loss(64, 1.0)          # (h + 2)/(8 rho); 2 T^2/(h + 2)
(3.0, 1024.0)
>>> noise_kind("laplace-tree").scale(1024, 1.0)              # (h + 2) Delta / (2 epsilon)
6.0
"""

from __future__ import annotations

from privsim.errors import ParameterError
from privsim.mechanisms._checks import positive
from privsim.mechanisms._seeding import SeedLike
from privsim.mechanisms.blt import DEFAULT_BUFFERS, BLTNoise, optimize_blt
from privsim.mechanisms.calibration import check_calibration, tree_sensitivity2, tree_sigma2
from privsim.mechanisms.noise_source import NoiseSource
from privsim.mechanisms.tree import FastGaMe, LaplaceFastGaMe, tree_height
from privsim.parties.rng import TrialRNG

__all__ = ["BLT", "EXACT_TREE", "LAPLACE_TREE", "NOISE_KINDS", "SKETCH_NOISE_KINDS", "TREE", "ContinualNoise",
           "noise_kind", "sketch_noise_kind"]

#: The noise sources of continual release, by the name ``noise=`` takes.
NOISE_KINDS: tuple[str, ...] = ("tree", "blt", "laplace-tree")

#: The noise sources the continual sketches take (their claims are zCDP: no Laplace tree).
SKETCH_NOISE_KINDS: tuple[str, ...] = ("tree", "blt")


class ContinualNoise:
    """One noise kind of continual release: its sampler, calibration and privacy map.

    Subclasses give the two sensitivities (:meth:`event`, :meth:`stream`) and the sampler
    (:meth:`source`); the calibration (:meth:`scale`, :meth:`stream_scale`) and the privacy
    map (:meth:`loss`, :meth:`stream_loss`) follow from them (module docstring).

    Attributes
    ----------
    name, calibration:
        The ``noise=`` and ``calibration=`` values that name the kind.
    pure:
        True for Laplace nodes: budgets and losses are epsilon (pure DP), else rho (zCDP).
    lockstep:
        True if the sampler can keep many coordinates in lockstep (one history for all,
        :class:`~privsim.mechanisms.FastGaMe`).

    Examples
    --------
    >>> kind = noise_kind("tree")
    >>> s2 = kind.scale(16, 0.5)                 # (h + 2)/(8 rho) = 1.5
    >>> s2, kind.loss(16, s2), kind.source(16, s2).variance
    (1.5, 0.5, 7.5)
    """

    name: str = ""
    calibration: str = "paper"
    pure: bool = False
    lockstep: bool = False

    def __repr__(self) -> str:
        return f"noise_kind({self.name!r}, {self.calibration!r})"

    def event(self, T: int) -> float:
        """Sensitivity of the strategy to one update of size 1 (squared l2; l1 for Laplace)."""
        raise NotImplementedError

    def stream(self, T: int) -> float:
        """Sensitivity of the strategy to a whole stream changing by <= 1 at every step."""
        raise NotImplementedError

    def source(self, T: int, scale: float, k: int = 1, seed: SeedLike | TrialRNG = None, *,
               buffers: int = DEFAULT_BUFFERS, lockstep: bool = True) -> NoiseSource:
        """The lazy sampler over T steps and k coordinates (a TrialRNG makes them the trials)."""
        raise NotImplementedError

    def _map(self, sens: float, sensitivity: float, scale: float) -> float:
        # Gaussian mechanism (Def. A.3) or Laplace mechanism: loss <-> scale, either way
        return sens * sensitivity / scale if self.pure else sens * sensitivity**2 / (2.0 * scale)

    def scale(self, T: int, budget: float, sensitivity: float = 1.0, *, buffers: int = DEFAULT_BUFFERS) -> float:
        """The scale (s^2, Var z, or the Laplace b) that makes one update's release ``budget``-private.

        ``buffers`` is BLT's d (ignored by the trees).

        Examples
        --------
        >>> BLT.scale(16, 1.0, buffers=2) == optimize_blt(16, 2).sensitivity2(16) / 2
        True
        """
        return self._map(self.event(T), sensitivity, budget)

    def stream_scale(self, T: int, budget: float, sensitivity: float = 1.0) -> float:
        """The scale that makes a whole stream's release ``budget``-private.

        Examples
        --------
        >>> TREE.stream_scale(1024, 1.0)              # Delta^2 T^2 / (4 rho)
        262144.0
        """
        return self._map(self.stream(T), sensitivity, budget)

    def loss(self, T: int, scale: float, sensitivity: float = 1.0, *, stream: bool = False) -> float:
        """The privacy map: rho (epsilon for Laplace) of a source of this scale, per update or per stream.

        Examples
        --------
        >>> TREE.loss(1024, 3.0), TREE.loss(64, 1.0, stream=True)     # (h + 2)/(8 s^2); T^2/(4 s^2)
        (0.5, 1024.0)
        """
        return self._map(self.stream(T) if stream else self.event(T), sensitivity, scale)

    def event_loss(self, T: int, scale: float, sensitivity: float, budget: float) -> float:
        """The loss towards one update of a source that :meth:`scale` calibrated to ``budget``.

        The trees claim the budget itself (their calibration is the claim); BLT and the
        Laplace tree report :meth:`loss` at the scale (the budget up to rounding).
        """
        return self.loss(T, scale, sensitivity)

    def stream_loss(self, T: int, budget: float, change: float = 1.0) -> float:
        """The loss towards a stream changing by <= ``change`` Delta per step, of a source calibrated to ``budget``.

        Examples
        --------
        >>> TREE.stream_loss(2, 1.0)                  # 2 T^2 / (h + 2) = 8/3
        2.6666666666666665
        """
        change = positive("change", change, scalar=True)
        return budget * (change if self.pure else change**2) * self.stream(T) / self.event(T)

    def sigma2(self, scale: float) -> float:
        """The variance of one node (or of BLT's z) at this scale."""
        return 2.0 * scale**2 if self.pure else scale


class _Tree(ContinualNoise):
    name, lockstep = "tree", True

    def event(self, T: int) -> float:
        return (tree_height(T, minimum=2) + 2) / 4.0  # ||R e||^2 = (h + 2)/4 (appendix B)

    def stream(self, T: int) -> float:
        tree_height(T, minimum=2)
        return T * T / 2.0  # ||R v||^2 <= T^2/2 (module docstring)

    def scale(self, T: int, budget: float, sensitivity: float = 1.0, *, buffers: int = DEFAULT_BUFFERS) -> float:
        return tree_sigma2(T, budget, sensitivity, self.calibration)

    def event_loss(self, T: int, scale: float, sensitivity: float, budget: float) -> float:
        return budget

    def source(self, T: int, scale: float, k: int = 1, seed: SeedLike | TrialRNG = None, *,
               buffers: int = DEFAULT_BUFFERS, lockstep: bool = True) -> NoiseSource:
        return FastGaMe(T, scale, k=k, seed=seed, lockstep=lockstep)


class _ExactTree(_Tree):
    calibration = "exact"

    def event(self, T: int) -> float:
        return tree_sensitivity2(tree_height(T, minimum=2))  # the exact worst case (calibration)

    def stream_loss(self, T: int, budget: float, change: float = 1.0) -> float:
        # the node variance c_h Delta^2/(2 rho) is the paper's for rho' = rho (h + 2)/(4 c_h)
        return TREE.stream_loss(T, budget * TREE.event(T) / self.event(T), change)


class _BLT(ContinualNoise):
    name, calibration = "blt", "exact"

    def event(self, T: int) -> float:
        return optimize_blt(T).sensitivity2(T)

    def stream(self, T: int) -> float:
        return optimize_blt(T).stream2(T)

    def scale(self, T: int, budget: float, sensitivity: float = 1.0, *, buffers: int = DEFAULT_BUFFERS) -> float:
        tree_height(T, minimum=2)
        return optimize_blt(T, buffers).sensitivity2(T) * sensitivity**2 / (2.0 * budget)

    def source(self, T: int, scale: float, k: int = 1, seed: SeedLike | TrialRNG = None, *,
               buffers: int = DEFAULT_BUFFERS, lockstep: bool = True) -> NoiseSource:
        return BLTNoise(T, scale, k=k, seed=seed, params=optimize_blt(T, buffers))


class _LaplaceTree(ContinualNoise):
    name, pure = "laplace-tree", True

    def event(self, T: int) -> float:
        return (tree_height(T, minimum=2) + 2) / 2.0  # ||R e||_1 = (h + 2)/2 (appendix B's R)

    def stream(self, T: int) -> float:
        return T * (tree_height(T, minimum=2) + 2) / 2.0  # triangle inequality over the T steps

    def source(self, T: int, scale: float, k: int = 1, seed: SeedLike | TrialRNG = None, *,
               buffers: int = DEFAULT_BUFFERS, lockstep: bool = True) -> NoiseSource:
        return LaplaceFastGaMe(T, scale, k=k, seed=seed)


#: The Gaussian tree with the paper's node variance (h + 2) Delta^2/(8 rho) (FastGaMe).
TREE: ContinualNoise = _Tree()
#: The Gaussian tree with the node variance that spends rho exactly.
EXACT_TREE: ContinualNoise = _ExactTree()
#: Buffered linear Toeplitz noise, rho exact from its sensitivity.
BLT: ContinualNoise = _BLT()
#: The tree with Laplace nodes, epsilon-DP.
LAPLACE_TREE: ContinualNoise = _LaplaceTree()

_KINDS: dict[str, ContinualNoise] = {"tree": TREE, "blt": BLT, "laplace-tree": LAPLACE_TREE}


def noise_kind(noise: str, calibration: str = "paper") -> ContinualNoise:
    """The kind named by ``noise=`` and ``calibration=`` (``"exact"`` changes the tree only).

    BLT's rho is always exact and the Laplace tree always classical, so they take either
    calibration (:func:`sketch_noise_kind` refuses BLT with ``"exact"``).

    Raises
    ------
    ParameterError
        For an unknown noise or calibration.

    Examples
    --------
    >>> noise_kind("tree", "exact") is EXACT_TREE, noise_kind("blt", "exact") is BLT
    (True, True)
    """
    if noise not in _KINDS:
        raise ParameterError(f"noise must be one of {', '.join(NOISE_KINDS)} (got {noise!r})")
    check_calibration(calibration)
    return EXACT_TREE if (noise, calibration) == ("tree", "exact") else _KINDS[noise]


def sketch_noise_kind(noise: str, calibration: str = "paper") -> ContinualNoise:
    """The kind for the continual sketches' counters: the tree (either calibration) or BLT.

    Raises
    ------
    ParameterError
        Naming the field, the value and what is allowed.

    Examples
    --------
    >>> sketch_noise_kind("blt", "exact")
    Traceback (most recent call last):
    ...
    privsim.errors.ParameterError: calibration must be paper with noise=blt (got 'exact'); BLT's rho is always exact
    """
    if noise not in SKETCH_NOISE_KINDS:
        raise ParameterError(f"noise must be one of {', '.join(SKETCH_NOISE_KINDS)} (got {noise!r}); "
                             "the sketches' claims are zCDP, so laplace-tree is not offered")
    kind = noise_kind(noise, calibration)
    if kind is BLT and calibration != "paper":
        raise ParameterError(f"calibration must be paper with noise=blt (got {calibration!r}); "
                             "BLT's rho is always exact")
    return kind
