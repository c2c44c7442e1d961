"""Noise variance at the same claim, published bound vs the exact law (issue 26).

Run ``python bench/bench_exact_integer.py`` (prints JSON), or ``privsim bench --only exact_integer``.
For the secure sum on the integers (granularity 1), n parties, t = 3, target (1, 1e-6),
D = 1: the released noise's variance when the m = n - t honest shares are calibrated by
the published bound ([KLS21] Prop. 14 through the tight zCDP conversion for
discrete-gaussian, [AKL21] Thm. 3.5 for skellam) and by the exact hockey-stick
divergence of the honest total's pmf (:mod:`privsim.mechanisms.exact_integer`, the
protocols' calibration), and the analytic Gaussian's variance for reference. No timing:
exact numbers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

try:
    from privsim.mechanisms import exact_integer as X
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from privsim.mechanisms import exact_integer as X

from privsim.mechanisms import integer_noise as I
from privsim.mechanisms import noise
from privsim.mechanisms.accounting import approx_dp_to_zcdp

EPS, DELTA, T = 1.0, 1e-6, 3


def main() -> dict[str, float]:
    out: dict[str, float] = {}
    for n in (100, 1000):
        m = n - T
        out[f"gaussian_variance_n{n}"] = round(noise.gaussian_variance(1.0, epsilon=EPS, delta=DELTA) * n / m, 2)
        s2_paper = I.ddg_sigma_for_rho(approx_dp_to_zcdp(EPS, DELTA, tight=True), m)
        s2_exact = X.ddg_sigma2_for(EPS, DELTA, m, 1, s2_paper)
        out[f"ddg_variance_paper_n{n}"] = round(n * I.discrete_gaussian_variance(s2_paper), 2)
        out[f"ddg_variance_exact_n{n}"] = round(n * I.discrete_gaussian_variance(s2_exact), 2)
        mu_paper = I.skellam_variance_for(EPS, DELTA)
        mu_exact = X.skellam_mu_for(EPS, DELTA, 1, mu_paper)
        out[f"skellam_variance_paper_n{n}"] = round(mu_paper * n / m, 2)
        out[f"skellam_variance_exact_n{n}"] = round(mu_exact * n / m, 2)
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
