"""Sketch benchmarks: vectorized CountSketch vs plain Python, the private join's cost, trial vectorization.

Every figure is measured in this process; ratios compare against a baseline run here too,
so they hold on any machine. Run: ``python bench/bench_sketch.py`` (prints JSON).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import numpy as np

import privsim
from privsim.mechanisms.hashing import MERSENNE_PRIME
from privsim.mechanisms.join import JoinSizeEstimator
from privsim.mechanisms.range_counting import RangeCounter
from privsim.mechanisms.sketch import CountSketch
from privsim.protocols.continual_sketch import ContinualJoin, ContinualRange


def best_of(fn: Callable[[], object], repeat: int = 3, clock: Callable[[], float] = time.perf_counter) -> float:
    """Best time of ``repeat`` calls (seconds; wall time unless ``clock`` says otherwise)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def _python_sketch(cs: CountSketch) -> tuple[Callable, Callable]:
    """Plain-Python update and estimate with the same hash functions (Python ints, lists)."""
    p, w = MERSENNE_PRIME, cs.width
    bucket_c = cs.hashes.buckets.polynomial.coefficients.tolist()  # [[c0 per row], [c1 per row]]
    sign_c = cs.hashes.signs.polynomial.coefficients.tolist()
    rows = range(cs.rows)

    def locate(key: int, r: int) -> tuple[int, int]:
        x = key % p
        bucket = (bucket_c[0][r] + bucket_c[1][r] * x) % p % w
        g = (sign_c[0][r] + x * (sign_c[1][r] + x * (sign_c[2][r] + x * sign_c[3][r]))) % p
        return bucket, 1 - 2 * (g & 1)

    def update(table: list[list[float]], keys: list[int], deltas: list[float]) -> None:
        for key, delta in zip(keys, deltas, strict=True):
            for r in rows:
                bucket, sign = locate(key, r)
                table[r][bucket] += sign * delta

    def estimate(table: list[list[float]], keys: list[int]) -> list[float]:
        out = []
        for key in keys:
            vals = sorted(table[r][b] * s for r in rows for b, s in [locate(key, r)])
            out.append(vals[len(vals) // 2])
        return out

    return update, estimate


def countsketch_vs_python(n: int = 20_000, rows: int = 5, width: int = 4096) -> dict[str, float]:
    """CountSketch update and estimate throughput, vectorized vs a plain-Python loop."""
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 1 << 62, size=n)
    deltas = rng.normal(size=n)
    cs = CountSketch(rows, width, seed=2)
    py_update, py_estimate = _python_sketch(cs)
    keys_l, deltas_l = keys.tolist(), deltas.tolist()

    def vec() -> None:
        CountSketch(rows, width, hashes=cs.hashes).update(keys, deltas)

    def plain() -> None:
        py_update([[0.0] * width for _ in range(rows)], keys_l, deltas_l)

    t_vec, t_py = best_of(vec), best_of(plain, repeat=1)
    cs.update(keys, deltas)
    table = [[0.0] * width for _ in range(rows)]
    py_update(table, keys_l, deltas_l)
    same = np.allclose(cs.table, np.array(table), atol=1e-9)
    probe = keys[:2000]
    t_est = best_of(lambda: cs.estimate(probe))
    t_est_py = best_of(lambda: py_estimate(table, probe.tolist()), repeat=1)
    same_est = np.allclose(cs.estimate(probe), py_estimate(table, probe.tolist()), atol=1e-9)
    return {
        "countsketch_update_keys_per_second": n / t_vec,
        "countsketch_update_speedup_vs_python_loop": t_py / t_vec,
        "countsketch_estimate_speedup_vs_python_loop": t_est_py / t_est,
        "countsketch_same_results_as_python": float(same and same_est),
        "countsketch_rows": float(rows),
    }


def join_refresh_cost(rows: int = 5, steps: int = 100) -> dict[str, float]:
    """CPU ns per one-key update step plus estimate, private default vs the paper's lazy refresh.

    ``refresh="all"`` reads every counter's tree release at each estimate: O(k b) per
    estimate, so its cost grows with the width; ``refresh="touched"`` (Theorem 5.6's lazy
    refresh, private only if which counters an update touches is public) is O(k).
    """

    def per_step(width: int, refresh: str) -> float:
        js = JoinSizeEstimator(1 << 10, rows, width, rho=1.0, seed=3, refresh=refresh)
        js.update("R", [0])  # the first step releases all counters once: not timed
        js.estimate()
        keys = np.arange(1, steps + 1)
        t0 = time.thread_time()
        for i in range(steps):
            js.update("R" if i % 2 else "S", keys[i : i + 1])
            js.estimate()
        return (time.thread_time() - t0) / steps

    out: dict[str, float] = {}
    for width in (64, 1 << 16):
        lazy = min(per_step(width, "touched") for _ in range(2))
        full = min(per_step(width, "all") for _ in range(2))
        out[f"join_lazy_ns_per_update_width_{width}"] = lazy * 1e9
        out[f"join_default_ns_per_update_width_{width}"] = full * 1e9
        out[f"join_default_vs_lazy_width_{width}"] = full / lazy
    return out


def _per_trial_loop(proto: ContinualJoin | ContinualRange, x: np.ndarray, trials: int) -> None:
    """The curator's loop before vectorization: one mechanism per trial, fed one trial's updates.

    Kept as the baseline. For continual-join it runs the lazy refresh, as the old code did
    (O(k) per update through FastGaMe).
    """
    n = x.shape[0]
    for r in range(trials):
        if isinstance(proto, ContinualJoin):
            mech = JoinSizeEstimator(2 * proto.T, proto.rows, proto.width, proto.rho, seed=r, refresh="touched")
            m = proto.group_size(n)
            for s in range(proto.T):
                for relation, part in (("R", x[:m, s]), ("S", x[m:, s])):
                    mech.update(relation, part[part >= 0])
                mech.estimate()
        else:
            mech = proto.mechanism(r)
            lo, hi = proto.query
            for s in range(proto.T):
                mech.update(x[:, s][x[:, s, 0] >= 0])
                mech.query(lo, hi)


def continual_sketch_vectorized(trials: int = 4096, old_trials: int = 64) -> dict[str, float]:
    """CPU ns per trial and step of continual-join and continual-range: vectorized protocol vs the old loop.

    continual-join at the issue's setting (n = 4, T = 8, rows = 3, width = 64, keys = 16,
    rho = 0.01), continual-range at n = 4, T = 8, B = 16, d = 2, rows = 3, width = 64. The
    protocol runs ``trials`` trials through ``privsim.simulate`` (trio, network, curator);
    the old path runs ``old_trials`` per-trial mechanisms, the curator's loop before
    vectorization, without the simulator around it (so the ratio understates the speed-up).
    """
    out: dict[str, float] = {}
    for name, proto in (("join", ContinualJoin(T=8, rows=3, width=64, keys=16, rho=0.01)),
                        ("range", ContinualRange(T=8, B=16, d=2, rows=3, width=64, rho=0.01))):
        x = proto.default_inputs(4)
        new = best_of(lambda proto=proto, x=x: privsim.simulate(proto, x, trials=trials, seed=1, record=False),
                      repeat=2, clock=time.thread_time) / (trials * proto.T)
        old = best_of(lambda proto=proto, x=x: _per_trial_loop(proto, x, old_trials), repeat=1,
                      clock=time.thread_time) / (old_trials * proto.T)
        out[f"{name}_protocol_ns_per_trial_step"] = new * 1e9
        out[f"{name}_old_loop_ns_per_trial_step"] = old * 1e9
        out[f"{name}_vectorized_speedup"] = old / new
    return out


def range_counting(n: int = 2_000) -> dict[str, float]:
    """Point updates per second and the cost of continual (FastGaMe) noise on queries, d = 2."""
    rng = np.random.default_rng(4)
    points = rng.integers(0, 1024, size=(n, 2))
    static = RangeCounter(1024, 2, rows=5, width=256, rho=1.0, seed=5)
    dynamic = RangeCounter(1024, 2, rows=5, width=256, rho=1.0, T=1 << 12, seed=5)
    t_update = best_of(lambda: RangeCounter(1024, 2, rows=5, width=256, rho=1.0, seed=5).update(points), 2)
    static.update(points)
    dynamic.update(points)
    boxes = [(rng.integers(0, 512, size=2), rng.integers(512, 1024, size=2)) for _ in range(20)]

    def queries(rc: RangeCounter) -> None:
        for lo, hi in boxes:
            rc.query(lo, hi)

    t_static = best_of(lambda: queries(static))
    t_dynamic = best_of(lambda: queries(dynamic))
    return {
        "range_update_points_per_second_d2": n / t_update,
        "range_query_seconds_d2": t_static / len(boxes),
        "range_query_dynamic_vs_static_d2": t_dynamic / t_static,
    }


def main() -> dict[str, float]:
    """Run the sketch benchmarks; returns named figures."""
    return {**countsketch_vs_python(), **join_refresh_cost(), **continual_sketch_vectorized(), **range_counting()}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
