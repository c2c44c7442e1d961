"""Secure sum against bulk numpy (issue 29): the cost of a message beside the cost of its arithmetic.

One child process (so that its peak resident set is the run's own) times, at n = 10^5
parties, t = 10, 4 trials, Laplace noise shares:

- ``privsim``: ``privsim.simulate`` of the secure sum (every party a task, every message
  delivered, counted and checked against the schedule);
- ``bulk``: the same arithmetic written by hand in numpy with one Generator: each party's
  Gamma(1/m, b) - Gamma(1/m, b) share, its fixed-point encoding mod q, t uniform shares
  and the last one, the holders' partial sums and party 0's total.

Figures: ``secure_sum_vs_bulk`` = privsim CPU time / bulk CPU time (one process, back to
back; CPU time, since the shared machine's wall clock also counts the other tenants), both
times in CPU and wall seconds, microseconds of privsim CPU per message, and
``peak_rss_mb``, the child's peak resident set (``ru_maxrss``) after both. Run: ``python bench/bench_bulk.py`` (prints
JSON); ``python bench/bench_bulk.py --n 1000000`` for the million.
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


def measure(n: int) -> dict[str, Any]:
    """Both timings and the peak resident set, in this process (call it in a fresh one)."""
    import privsim
    from privsim.protocols.secure_sum import SecureSum

    proto = SecureSum(noise="laplace", epsilon=1.0)
    inputs = (np.arange(n) % 2).astype(np.int64)
    q = proto.modulus_for(n, T)
    w0, c0 = time.perf_counter(), time.process_time()
    bulk = bulk_secure_sum(inputs, T, TRIALS, b=proto.laplace_b, digits=proto.digits, q=q,
                           rng=np.random.default_rng(SEED))
    w1, c1 = time.perf_counter(), time.process_time()
    res = privsim.simulate(proto, inputs.tolist(), trials=TRIALS, seed=SEED, t=T)
    w2, c2 = time.perf_counter(), time.process_time()
    bulk_s, privsim_s = c1 - c0, c2 - c1
    sd = (proto.noise_variance(n, T) + proto.rounding_bound(n) ** 2) ** 0.5
    true = float(inputs.sum())
    return {
        "n": n,
        "secure_sum_vs_bulk": privsim_s / bulk_s,
        "privsim_cpu_s": privsim_s,
        "bulk_cpu_s": bulk_s,
        "privsim_wall_s": w2 - w1,
        "bulk_wall_s": w1 - w0,
        "us_per_message": 1e6 * privsim_s / res.messages,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "estimates_within_6sd": bool(np.all(np.abs(np.asarray(res.estimate) - true) < 6 * sd)
                                     and np.all(np.abs(bulk - true) < 6 * sd)),
    }


def main(n: int = N) -> dict[str, Any]:
    """Run :func:`measure` in a child process; returns its figures."""
    out = subprocess.run([sys.executable, __file__, "--child", "--n", str(n)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=N)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    print(json.dumps(measure(args.n) if args.child else main(args.n), indent=2))
