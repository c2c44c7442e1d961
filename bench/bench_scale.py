"""Scale benchmarks (issue 6): processes and Dask speed-up on one audit; large n.

Each speed-up is the time of the same audit (same seed, same batches, identical result)
on one process divided by its time on the executor, measured in this process; worker
start-up is excluded (pools and clusters are started and warmed up first).
Run: ``python bench/bench_scale.py`` (prints JSON).
"""

from __future__ import annotations

import json
import resource
import time
import tracemalloc

import numpy as np

from privsim.analysis.audit import audit
from privsim.executors import DaskExecutor, ProcessExecutor
from privsim.plan import AUDIT_BATCH_TRIALS
from privsim.protocols import RandomizedResponse, get_protocol
from privsim.simulate import run_trials


def _timed_audit(executor, trials: int) -> tuple[float, dict]:
    # secure-sum with Laplace shares, n = 16, t = 3: the coalition {0, 1, 2} against party 5
    x = (np.arange(16) % 2).tolist()
    proto = get_protocol("secure-sum", noise="laplace", epsilon=1.0)
    t0 = time.perf_counter()
    r = audit(proto, x, coalition="0,1,2", neighbor=5, trials=trials, seed=7, t=3, executor=executor)
    return time.perf_counter() - t0, r.to_dict()


def _burn(_: int) -> float:
    rng = np.random.default_rng(0)
    for _ in range(30):
        rng.random(10**6).sum()
    return 0.0


def _ceiling(pool: ProcessExecutor) -> float:
    # Perfectly parallel numpy work: its time in this process over its time on the pool.
    t0 = time.perf_counter()
    for i in range(4 * pool.workers):
        _burn(i)
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    list(pool.map(_burn, range(4 * pool.workers)))
    return one / (time.perf_counter() - t0)


#: The warm-up audit: the smallest whose batches are as large as the timed one's (every
#: process then holds arrays of the timed audit's sizes before the timing: its heap is grown).
WARM_TRIALS = 10 * AUDIT_BATCH_TRIALS


def bracketed_speedups(local: list[float], runs: list[tuple[str, float]]) -> dict[str, list[float]]:
    """Each executor's speed-ups, one per run: the geometric mean of the one-process times
    just before and after the run (``local[k]`` and ``local[k + 1]`` for ``runs[k]``) over
    its time. A drift of the machine's speed by a steady factor per unit of time cancels.

    >>> out = bracketed_speedups([10.0, 12.0, 9.0], [("processes", 5.0), ("dask", 6.0)])
    >>> {name: [round(r, 3) for r in ratios] for name, ratios in out.items()}
    {'processes': [2.191], 'dask': [1.732]}
    """
    if len(local) != len(runs) + 1:
        raise ValueError(f"need one more one-process run than executor runs; got {len(local)} and {len(runs)}")
    out: dict[str, list[float]] = {}
    for k, (name, seconds) in enumerate(runs):
        out.setdefault(name, []).append(float(np.sqrt(local[k] * local[k + 1])) / seconds)
    return out


def audit_speedups(trials: int = 10**6, workers: int = 2, rounds: int = 5) -> dict[str, float]:
    """Speed-up of processes and Dask (LocalCluster) over one process on one 16-party audit
    (secure-sum, 10^6 trials per input), next to what this machine gives perfectly parallel work.

    A shared virtual machine's speed drifts by tens of percent within a minute, so every
    executor run is bracketed by one-process runs: the sequence is ``L P L D L P L D ... L``
    (``rounds`` runs of each executor), and each executor run is compared with the
    geometric mean of the one-process runs just before and after it (see
    :func:`bracketed_speedups`), which largely cancels a drift of the machine's speed that
    is steady over the bracket. The one-process runs happen while no pool or cluster is
    alive; each pool or cluster is started and warmed up (privsim imported, and an audit
    with batches of the timed audit's size run) outside the timing, as the one process is
    once at the start. Each processes run also measures the speed-up of
    perfectly parallel numpy work on the pool (the ceiling). Reported: the median over
    runs of the bracketing one-process time over the executor's time
    (``*_speedup_median``, the steady figure), the best time of each over the best
    one-process time (``*_speedup``), the median ceiling (``embarrassingly_parallel_speedup``)
    and the median of each run's speed-up over its ceiling (``*_of_ceiling_median``)."""
    makers = {"processes": lambda: ProcessExecutor(workers=workers),
              "dask": lambda: DaskExecutor(workers=workers)}
    local: list[float] = []
    runs: list[tuple[str, float]] = []
    ceilings: list[float] = []
    results = {}

    def one_process() -> None:
        seconds, results["local"] = _timed_audit(None, trials)
        local.append(seconds)

    _timed_audit(None, WARM_TRIALS)
    one_process()
    for k in range(2 * rounds):
        name = ("processes", "dask")[k % 2]
        with makers[name]() as ex:
            _timed_audit(ex, WARM_TRIALS)
            seconds, results[name] = _timed_audit(ex, trials)
            if name == "processes":
                ceilings.append(_ceiling(ex))
        runs.append((name, seconds))
        one_process()
    ratios = bracketed_speedups(local, runs)
    times = {name: [s for n, s in runs if n == name] for name in makers}
    out: dict[str, float] = {"audit_trials": trials, "audit_seconds_one_process": float(np.median(local)),
                             "embarrassingly_parallel_speedup": float(np.median(ceilings))}
    for name in makers:
        out[f"{name}_speedup"] = float(min(local) / min(times[name]))
        out[f"{name}_speedup_median"] = float(np.median(ratios[name]))
        out[f"{name}_of_ceiling_median"] = float(np.median(np.array(ratios[name]) / np.array(ceilings)))
        out[f"{name}_identical"] = float(results[name] == results["local"])
    out["workers"] = workers
    out["rounds"] = rounds
    return out


def large_n(n: int = 100_000, trials: int = 100) -> dict[str, float]:
    """Randomized response with n = 10^5 parties and 100 trials: time and peak memory."""
    x = (np.arange(n) % 2).astype(np.int64)
    proto = RandomizedResponse(epsilon=1.0)
    t0 = time.perf_counter()
    r = run_trials(proto, x, trials=trials, seed=1)
    seconds = time.perf_counter() - t0
    tracemalloc.start()  # a second run, traced (tracing slows it down)
    run_trials(proto, x, trials=trials, seed=1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"large_n_parties": n, "large_n_trials": trials, "large_n_seconds": seconds,
            "large_n_peak_traced_mib": peak / 2**20,
            "large_n_max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "large_n_rmse_over_paper_sd": float(np.sqrt(np.mean((r.estimate - r.true_value) ** 2))
                                                / np.sqrt(RandomizedResponse(epsilon=1.0).variance(n)))}


def main() -> dict[str, float]:
    """Run the scale benchmarks; returns named figures."""
    return {**audit_speedups(), **large_n()}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
