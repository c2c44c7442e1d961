"""The continual sketches' noise options: noise="tree"|"blt", calibration="paper"|"exact" (issue 16)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privsim
from privsim.errors import ParameterError
from privsim.mechanisms import JoinSizeEstimator, RangeCounter
from privsim.mechanisms.blt import optimize_blt
from privsim.mechanisms.calibration import tree_sigma2
from privsim.protocols.continual_sketch import ContinualJoin, ContinualRange
from privsim.protocols.continual_sum import stream_rho

OPTIONS = [("tree", "paper"), ("tree", "exact"), ("blt", "paper")]
T = 16
R = 4000  # trials per empirical variance


def _range_answers(noise: str, calibration: str, box: bool) -> tuple[np.ndarray, RangeCounter]:
    """R structures, T empty steps, then the box [0, 2) of [4]: one dyadic piece, one counter."""
    lo, hi = np.array([0]), np.array([2])
    rc = RangeCounter(B=4, d=1, rows=1, width=4, rho=1.0, T=T, seed=11, trials=R,
                      box=(lo, hi) if box else None, noise=noise, calibration=calibration)
    for _ in range(T):
        rc.update(np.zeros((R, 1, 1), dtype=np.int64), np.zeros((R, 1)))
    return np.asarray(rc.query(lo, hi)), rc


@pytest.mark.parametrize("box", [True, False])
@pytest.mark.parametrize(("noise", "calibration"), OPTIONS)
def test_range_counter_variance_matches_reported(noise: str, calibration: str, box: bool) -> None:
    # No points: the answer is +-(one counter's noise) at step T, variance cell_variance.
    answers, rc = _range_answers(noise, calibration, box)
    v = rc.cell_variance
    assert rc.cell_variance_at(T) == v
    # mean of R squares of N(0, v): mean v, sd v sqrt(2/R) (chi-square with R degrees of freedom)
    assert abs(np.mean(answers**2) - v) < 5 * v * math.sqrt(2.0 / R)


@pytest.mark.parametrize(("noise", "calibration"), OPTIONS)
def test_join_variance_matches_reported(noise: str, calibration: str) -> None:
    # rows = width = 1 and empty relations: the estimate is n m, n, m independent N(0, sigma2),
    # so E[est^2] = sigma2^2 and Var(est^2) = E[n^4] E[m^4] - sigma2^4 = 8 sigma2^4.
    js = JoinSizeEstimator(T, rows=1, width=1, rho=1.0, seed=5, trials=R, noise=noise, calibration=calibration)
    for step in range(T):
        js.update("R" if step % 2 == 0 else "S", np.zeros((R, 1), dtype=np.int64), np.zeros((R, 1)))
    est = np.asarray(js.estimate())
    v2 = js.sigma2**2
    assert js.sigma2_at(T) == js.sigma2
    assert abs(np.mean(est**2) - v2) < 5 * v2 * math.sqrt(8.0 / R)


def test_exact_and_blt_reported_variances() -> None:
    paper = JoinSizeEstimator(T, 3, 8, 1.0, noise="tree", calibration="paper")
    exact = JoinSizeEstimator(T, 3, 8, 1.0, noise="tree", calibration="exact")
    assert exact.sigma2 < paper.sigma2
    assert exact.sigma2_node == pytest.approx(tree_sigma2(T, 1.0, math.sqrt(3), "exact"))
    rc_paper = RangeCounter(4, 1, 1, 4, 1.0, T=T)
    rc_exact = RangeCounter(4, 1, 1, 4, 1.0, T=T, calibration="exact")
    assert rc_exact.cell_variance < rc_paper.cell_variance
    # BLT: Var z = rows sum c_i^2 / (2 rho); at step t, Var z sum_{i<t} b_i^2 (grows with t)
    blt = JoinSizeEstimator(T, 3, 8, 1.0, noise="blt")
    p = optimize_blt(T)
    assert blt.sigma2_node == pytest.approx(3 * p.sensitivity2(T) / 2.0)
    assert blt.sigma2_at(1) == pytest.approx(blt.sigma2_node)
    assert blt.sigma2 == pytest.approx(blt.sigma2_node * p.error2(T))
    assert blt.sigma2_at(2) < blt.sigma2


def test_defaults_unchanged_mechanisms() -> None:
    lo, hi = np.array([1]), np.array([7])
    answers = []
    for kw in ({}, {"noise": "tree", "calibration": "paper"}):
        rc = RangeCounter(8, 1, 3, 8, 1.0, T=8, seed=3, **kw)
        js = JoinSizeEstimator(8, 3, 8, 1.0, seed=3, refresh="touched", **kw)
        out = []
        for step in range(8):
            rc.update([[step]])
            out.append(rc.query(lo, hi))
            js.update("RS"[step % 2], [step, 1])
            out.append(js.estimate())
        answers.append(out)
    assert answers[0] == answers[1]


@pytest.mark.parametrize("cls", [ContinualRange, ContinualJoin])
def test_defaults_unchanged_protocols(cls: type) -> None:
    base = privsim.simulate(cls(T=8), n=4, trials=3, seed=2).outputs["C"]
    explicit = privsim.simulate(cls(T=8, noise="tree", calibration="paper"), n=4, trials=3, seed=2).outputs["C"]
    np.testing.assert_array_equal(base, explicit)
    blt = privsim.simulate(cls(T=8, noise="blt"), n=4, trials=3, seed=2).outputs["C"]
    assert blt.shape == base.shape and not np.array_equal(blt, base)


@pytest.mark.parametrize("cls", [ContinualRange, ContinualJoin])
def test_protocol_claims_per_source(cls: type) -> None:
    Tm = cls.steps_per_round * T
    paper, exact, blt = (cls(T=T, rho=0.5, noise=n, calibration=c) for n, c in OPTIONS)
    assert paper.rho_party == stream_rho(0.5, Tm, change=2.0)
    # exact tree: ||R v||^2 <= 4 Tm^2/2 per unit row sensitivity at node variance s^2 = tree_sigma2(exact)
    assert exact.rho_party == pytest.approx(4 * Tm**2 / 2 / (2 * tree_sigma2(Tm, 0.5, 1.0, "exact")))
    assert exact.rho_party > paper.rho_party
    # BLT, dense: C lower-triangular Toeplitz of c; worst stream: mass 2 at every step, one sign
    c = optimize_blt(Tm).c(Tm)
    C = np.array([[c[i - j] if i >= j else 0.0 for j in range(Tm)] for i in range(Tm)])
    assert (C > 0)[np.tril_indices(Tm)].all()
    assert blt.rho_party == pytest.approx(0.5 * np.sum((C @ np.full(Tm, 2.0)) ** 2) / np.sum(C[:, 0] ** 2))
    # and no stream spread over counters of a row with mass <= 2 per step does worse
    rng = np.random.default_rng(0)
    for _ in range(20):
        which = rng.integers(0, 3, size=Tm)
        v = np.zeros((3, Tm))
        v[which, np.arange(Tm)] = 2.0 * rng.choice([-1.0, 1.0], size=Tm)
        assert np.sum((v @ C.T) ** 2) <= np.sum((C @ np.full(Tm, 2.0)) ** 2) * (1 + 1e-12)
    assert blt.event_privacy() == paper.event_privacy()  # both calibrated to rho per event
    assert blt.mechanism(0).noise == "blt" and exact.mechanism(0).calibration == "exact"


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: JoinSizeEstimator(16, 1, 4, 1.0, noise="blt", calibration="exact"), "calibration"),
        (lambda: JoinSizeEstimator(16, 1, 4, 1.0, noise="laplace-tree"), "noise"),
        (lambda: JoinSizeEstimator(16, 1, 4, 1.0, calibration="tight"), "calibration"),
        (lambda: RangeCounter(4, 1, 1, 4, 1.0, T=16, noise="blt", calibration="exact"), "calibration"),
        (lambda: RangeCounter(4, 1, 1, 4, 1.0, T=16, noise="laplace-tree"), "noise"),
        (lambda: RangeCounter(4, 1, 1, 4, 1.0, noise="blt"), "noise"),
        (lambda: ContinualJoin(noise="blt", calibration="exact"), "calibration"),
        (lambda: ContinualRange(noise="laplace-tree"), "noise"),
    ],
)
def test_bad_combinations(make, field: str) -> None:
    with pytest.raises(ParameterError) as err:
        make()
    message = str(err.value)
    assert "\n" not in message and message.startswith(field)


def test_single_instance_blt_variance() -> None:
    # One structure (trials=None): BLT reads only the counters a query names (lazy coordinates).
    n, steps = 300, 4  # 5 sigma = 41%: still catches a factor of two
    answers = np.empty(n)
    for i in range(n):
        rc = RangeCounter(B=4, d=1, rows=1, width=2, rho=1.0, T=steps, seed=i, noise="blt")
        for _ in range(steps):
            rc.update([[0]], [0.0])
        answers[i] = rc.query(0, 2)
    v = rc.cell_variance
    assert abs(np.mean(answers**2) - v) < 5 * v * math.sqrt(2.0 / n)
    js = JoinSizeEstimator(steps, 1, 2, 1.0, seed=0, refresh="touched", noise="blt")
    js.update("R", [1])
    js.update("S", [1, 1])
    assert math.isfinite(js.estimate())
