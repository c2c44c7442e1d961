"""Secure sum against bulk numpy (issue 29): the cost of a message beside the cost of its arithmetic.

At n = 10^5 parties, t = 10, 4 trials, Laplace noise shares, three child processes (so
that each peak resident set is that run's own) each time a bulk numpy computation of the
same arithmetic and then one privsim run:

- ``bulk``: the arithmetic written by hand in numpy with one Generator: each party's
  Gamma(1/m, b) - Gamma(1/m, b) share, its fixed-point encoding mod q, t uniform shares
  and the last one, the holders' partial sums and party 0's total;
- ``unrecorded``: ``privsim.simulate(..., record=False)`` (what ``privsim run`` does), the
  parties in cohorts (the secure sum's cohort form: every message still delivered,
  counted and checked against the schedule, every party drawing from its own stream);
- ``recorded``: ``privsim.simulate(...)`` keeping every message and random tape (views of
  any coalition), in cohorts;
- ``per_party``: the unrecorded run with every party its own task
  (``LocalTransport(cohorts=False)``).

Figures: ``secure_sum_vs_bulk`` = unrecorded privsim CPU time / bulk CPU time (same
process, back to back, privsim's run after a small warm-up run, :func:`warm_up`; CPU time,
since the shared machine's wall clock also counts the other tenants),
``secure_sum_vs_per_party_streams`` = the same over :func:`per_stream_draws` (the parties'
draws alone, each from its own stream, in a numpy loop), ``recorded_vs_bulk`` and
``per_party_vs_bulk`` likewise, ``cohort_speedup`` = per-party CPU / cohort CPU
(``ck_sum_cohort_speedup``: the same for ck-sum; ``secagg_plus_cohort_speedup``: for SecAgg+
at n = 8192), ``same_results`` (estimates, messages and bits equal in every mode of each
protocol), microseconds of CPU per message, and each run's peak resident set
(``ru_maxrss``, MB). Run: ``python bench/bench_bulk.py`` (prints JSON);
``python bench/bench_bulk.py --n 1000000`` for the million (unrecorded only).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np

N = 10**5
T = 10
TRIALS = 4
SEED = 29


def bulk_secure_sum(inputs: np.ndarray, t: int, trials: int, *, b: float, digits: int, q: int,
                    rng: np.random.Generator) -> np.ndarray:
    """The released values of a secure sum with Laplace shares, computed in bulk (parties x trials).

    The arithmetic of :class:`privsim.protocols.secure_sum.SecureSum` without the parties:
    shares of x_i 2^d + rint(N_i 2^d) mod q, the holders' sums, party 0's total, decoded.

    >>> rng = np.random.default_rng(0)
    >>> float(bulk_secure_sum(np.ones(100, dtype=np.int64), 3, 2, b=1e-9, digits=4, q=2**16, rng=rng)[0])
    100.0
    """
    n = len(inputs)
    m = n - t
    scale = 2.0**digits
    noise = rng.gamma(1.0 / m, b, size=(n, trials)) - rng.gamma(1.0 / m, b, size=(n, trials))
    secret = (inputs[:, None].astype(np.int64) * int(scale) + np.rint(noise * scale).astype(np.int64)) % q
    uniform = rng.integers(0, q, size=(n, trials, t), dtype=np.int64)
    last = (secret - uniform.sum(axis=-1) % q) % q
    holders = (uniform.sum(axis=0) % q, last.sum(axis=0) % q)  # each holder's partial sum (trials, ...)
    total = (holders[0].sum(axis=-1) + holders[1]) % q
    signed = np.where(total >= (q + 1) // 2, total - q, total)
    return signed / scale


def per_stream_draws(n: int, t: int, trials: int, *, b: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The draws of the secure sum's parties, each from its own stream (privsim's seeding),
    in a plain numpy loop: the noise shares ``(trials, n)`` and the uniform shares ``(trials, n, t)``.
    The floor of any run that keeps per-party streams: one Generator per party, one call for
    its two Gamma draws, the uniform shares read from the words as the parties read them
    (:func:`~privsim.parties.rng.generator_call`)."""
    from privsim.parties.rng import StreamSeeder, block_range, generator_call

    seeder, m = StreamSeeder(seed, n, block_range(trials)), n - t
    noise, uniform = np.empty((trials, n)), np.empty((trials, n, t), dtype=np.int64)
    q = 2**34
    for p, gen in enumerate(seeder.generators(range(n))):
        pair = gen.gamma(1.0 / m, b, size=(2, trials))
        noise[:, p] = pair[0] - pair[1]
        uniform[:, p] = generator_call(gen, "integers", (0, q), {"dtype": np.int64}, (trials, t))
    return noise, uniform


def warm_up(proto: Any, n: int = 1000, **kw: Any) -> None:
    """One small run of ``proto`` (``n`` parties) before the timed one: the modules a run
    imports on first use (scipy.special for the noise's tail bound, ~0.5 s) are loaded once
    per process, not per party, and are not the cost of a message (the start-up is measured
    by ``bench_transport``)."""
    import privsim

    privsim.simulate(proto, np.zeros(n, dtype=np.int64), trials=TRIALS, seed=SEED + 1, **kw)


def measure(n: int, mode: str) -> dict[str, Any]:
    """The bulk timing and one privsim run (``mode``), in this process (call it in a fresh one)."""
    import privsim
    from privsim.protocols.secure_sum import SecureSum
    from privsim.transport.local import LocalTransport

    proto = SecureSum(noise="laplace", epsilon=1.0)
    inputs = (np.arange(n) % 2).astype(np.int64)
    q = proto.modulus_for(n, T)
    w0, c0 = time.perf_counter(), time.process_time()
    bulk = bulk_secure_sum(inputs, T, TRIALS, b=proto.laplace_b, digits=proto.digits, q=q,
                           rng=np.random.default_rng(SEED))
    bulk_cpu, bulk_wall = time.process_time() - c0, time.perf_counter() - w0
    streams_s = None
    if mode == "unrecorded":
        c = time.process_time()
        per_stream_draws(n, T, TRIALS, b=proto.laplace_b, seed=SEED)
        streams_s = time.process_time() - c
    kw: dict[str, Any] = {"record": mode == "recorded"}
    if mode == "per_party":
        kw["transport"] = LocalTransport(cohorts=False)
    warm_up(proto, t=T, **kw)
    w1, c1 = time.perf_counter(), time.process_time()
    res = privsim.simulate(proto, inputs, trials=TRIALS, seed=SEED, t=T, **kw)
    w2, c2 = time.perf_counter(), time.process_time()
    sd = (proto.noise_variance(n, T) + proto.rounding_bound(n) ** 2) ** 0.5
    true = float(inputs.sum())
    return {
        "mode": mode, "bulk_cpu_s": bulk_cpu, "bulk_wall_s": bulk_wall, "streams_cpu_s": streams_s,
        "cpu_s": c2 - c1, "wall_s": w2 - w1,
        "messages": res.messages, "bits": res.bits, "estimate": np.asarray(res.estimate).tolist(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "estimates_within_6sd": bool(np.all(np.abs(np.asarray(res.estimate) - true) < 6 * sd)
                                     and np.all(np.abs(bulk - true) < 6 * sd)),
    }


def measure_ck(n: int, mode: str) -> dict[str, Any]:
    """ck-sum (the same noise, t and trials), unrecorded, in cohorts or per party: CPU seconds and results."""
    import privsim
    from privsim.protocols.ck_sum import CKSum
    from privsim.transport.local import LocalTransport

    inputs = (np.arange(n) % 2).astype(np.int64)
    kw: dict[str, Any] = {"transport": LocalTransport(cohorts=False)} if mode == "ck_per_party" else {}
    proto = CKSum(noise="laplace", epsilon=1.0)
    warm_up(proto, t=T, record=False, **kw)
    c0 = time.process_time()
    res = privsim.simulate(proto, inputs, trials=TRIALS, seed=SEED, t=T, record=False, **kw)
    return {"mode": mode, "cpu_s": time.process_time() - c0, "messages": res.messages, "bits": res.bits,
            "estimate": np.asarray(res.estimate).tolist(),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


#: SecAgg+'s clients (a Harary graph of degree k = O(log n)): cohorts against per party.
SECAGG_N = 8192


def measure_secagg(mode: str) -> dict[str, Any]:
    """SecAgg+ (discrete-Gaussian shares, no dropout, its default t) at n = :data:`SECAGG_N`, the trials
    above, unrecorded, in cohorts or per party: CPU seconds and results."""
    import privsim
    from privsim.protocols.secagg import SecAggPlus
    from privsim.transport.local import LocalTransport

    inputs = (np.arange(SECAGG_N) % 2).astype(np.int64)
    kw: dict[str, Any] = {"transport": LocalTransport(cohorts=False)} if mode == "secagg_per_party" else {}
    proto = SecAggPlus(noise="discrete-gaussian", epsilon=1.0)
    warm_up(proto, n=64, record=False, **kw)
    c0 = time.process_time()
    res = privsim.simulate(proto, inputs, trials=TRIALS, seed=SEED, record=False, **kw)
    return {"mode": mode, "cpu_s": time.process_time() - c0, "messages": res.messages, "bits": res.bits,
            "estimate": np.asarray(res.estimate).tolist(),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def child(n: int, mode: str) -> dict[str, Any]:
    """:func:`measure` in a fresh child process."""
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--n", str(n)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def main(n: int = N) -> dict[str, Any]:
    """Every mode in its own child process (only the unrecorded one above 10^5); the figures."""
    modes = ("unrecorded", "recorded", "per_party") if n <= N else ("unrecorded",)
    runs = {mode: child(n, mode) for mode in modes}
    base = runs["unrecorded"]
    out: dict[str, Any] = {
        "n": n,
        "secure_sum_vs_bulk": base["cpu_s"] / base["bulk_cpu_s"],
        "secure_sum_vs_per_party_streams": base["cpu_s"] / base["streams_cpu_s"],
        "per_party_streams_vs_bulk": base["streams_cpu_s"] / base["bulk_cpu_s"],
        "privsim_cpu_s": base["cpu_s"], "bulk_cpu_s": base["bulk_cpu_s"], "privsim_wall_s": base["wall_s"],
        "us_per_message": 1e6 * base["cpu_s"] / base["messages"],
        "peak_rss_mb": base["peak_rss_mb"],
        "estimates_within_6sd": all(r["estimates_within_6sd"] for r in runs.values()),
    }
    for mode in modes[1:]:
        run = runs[mode]
        out.update({f"{mode}_vs_bulk": run["cpu_s"] / run["bulk_cpu_s"], f"{mode}_cpu_s": run["cpu_s"],
                    f"{mode}_peak_rss_mb": run["peak_rss_mb"]})
    if "per_party" in runs:
        out["cohort_speedup"] = runs["per_party"]["cpu_s"] / base["cpu_s"]
        ck = {mode: child(n, mode) for mode in ("ck_cohort", "ck_per_party")}
        out.update(ck_sum_cohort_speedup=ck["ck_per_party"]["cpu_s"] / ck["ck_cohort"]["cpu_s"],
                   ck_sum_cohort_cpu_s=ck["ck_cohort"]["cpu_s"], ck_sum_per_party_cpu_s=ck["ck_per_party"]["cpu_s"])
        sa = {mode: child(n, mode) for mode in ("secagg_cohort", "secagg_per_party")}
        out.update(secagg_plus_cohort_speedup=sa["secagg_per_party"]["cpu_s"] / sa["secagg_cohort"]["cpu_s"],
                   secagg_plus_cohort_cpu_s=sa["secagg_cohort"]["cpu_s"],
                   secagg_plus_per_party_cpu_s=sa["secagg_per_party"]["cpu_s"])
        same = [(r["estimate"], r["messages"], r["bits"]) for r in runs.values()]
        pairs = [[(r["estimate"], r["messages"], r["bits"]) for r in group.values()] for group in (ck, sa)]
        out["same_results"] = all(x == same[0] for x in same) and all(a == b for a, b in pairs)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=N)
    ap.add_argument("--child", choices=("unrecorded", "recorded", "per_party", "ck_cohort", "ck_per_party",
                                        "secagg_cohort", "secagg_per_party"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child and args.child.startswith("secagg_"):
        print(json.dumps(measure_secagg(args.child), indent=2))
    elif args.child:
        print(json.dumps((measure_ck if args.child.startswith("ck_") else measure)(args.n, args.child), indent=2))
    else:
        print(json.dumps(main(args.n), indent=2))
