"""Integer noise as accurate as real noise: the secure sum's rmse on its default grid (issue 26).

Run ``python bench/bench_granularity.py`` (prints JSON), or ``privsim bench --only granularity``.
For n = 1000 and 10^4 parties, t = 3, (1, 1e-6): the measured rmse of the released noise
(the sum of the n parties' shares drawn by each family's own sampler, over ``trials``
draws, divided by the grid's units) of discrete-gaussian and skellam, as a ratio to the
real Gaussian's measured the same way in the same process; and the exact ratio of the
standard deviations (``noise_variance``). Both noises are calibrated to their exact law,
whose default grid is the integers; ``*_grid16`` is the same on the grid Z/16
(granularity 1/16), where the laws are closer to the Gaussian.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

try:
    from privsim.protocols.secure_sum import SecureSum
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from privsim.protocols.secure_sum import SecureSum

T = 3


def measured_rmse(proto: SecureSum, n: int, trials: int, seed: int) -> float:
    """rmse of the released noise: n shares summed, in units of the sum."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    fam, units = proto.family_for(n, T), (1 if proto.fixed_point else proto.units(n, T))
    total = np.zeros(trials)
    for _ in range(n):  # party by party: memory trials, not trials x n
        total += np.asarray(fam.share(rng, n - T, size=(trials,)), dtype=float)
    return float(math.sqrt(np.mean((total / units) ** 2)))


def main(trials: int = 2000) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in (1000, 10_000):
        r = trials if n <= 1000 else trials // 4
        gauss = SecureSum(noise="gaussian", epsilon=1.0, delta=1e-6)
        g = measured_rmse(gauss, n, r, seed=n)
        out[f"gaussian_rmse_n{n}"] = round(g, 3)
        for noise in ("discrete-gaussian", "skellam"):
            key = noise.replace("-", "_")
            for suffix, params in (("", {}), ("_grid16", {"granularity": 1 / 16})):
                p = SecureSum(noise=noise, epsilon=1.0, delta=1e-6, **params)
                out[f"{key}{suffix}_rmse_ratio_n{n}"] = round(measured_rmse(p, n, r, seed=n + 1) / g, 3)
                out[f"{key}{suffix}_sd_ratio_exact_n{n}"] = round(
                    math.sqrt(p.noise_variance(n, T) / gauss.noise_variance(n, T)), 4)
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
