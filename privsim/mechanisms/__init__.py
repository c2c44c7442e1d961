"""Centralized mechanisms: noise (central and as distributed shares), secret sharing, the
Gaussian binary tree and FastGaMe for continual release (with exact calibration, BLT noise
and the pure-DP Laplace FastGaMe as further noise sources), continual counters, private
CountSketches, range counting, join size estimation, and privacy accounting.

Every mechanism keeps its state in an object, takes a seed (int, SeedSequence or
Generator) and never touches numpy's global random state.
"""

from __future__ import annotations

import importlib
from typing import Any

# Names load on first use (PEP 562): a party process that needs secret sharing does not
# import scipy, the BLT optimiser or the sketches (docs/architecture.md, "Where a message moves").
_LAZY = {
    "analytic_gaussian_sigma": "accounting",
    "approx_dp_to_zcdp": "accounting",
    "gaussian_delta": "accounting",
    "gaussian_epsilon": "accounting",
    "gaussian_rho": "accounting",
    "gaussian_sigma_for_zcdp": "accounting",
    "pure_dp_to_zcdp": "accounting",
    "zcdp_to_approx_dp": "accounting",
    "zcdp_to_approx_dp_tight": "accounting",
    "DEFAULT_BUFFERS": "blt",
    "BLTNoise": "blt",
    "BLTParams": "blt",
    "optimize_blt": "blt",
    "sqrt_toeplitz_sums": "blt",
    "write_blt_table": "blt",
    "CALIBRATIONS": "calibration",
    "Calibration": "calibration",
    "check_calibration": "calibration",
    "step_form": "calibration",
    "tree_rho": "calibration",
    "tree_sensitivity2": "calibration",
    "tree_sigma2": "calibration",
    "NOISE_KINDS": "continual",
    "ContinualCounter": "continual",
    "continual_noise": "continual",
    "continual_sigma2": "continual",
    "make_noise": "continual",
    "noise_scale": "continual",
    "MERSENNE_PRIME": "hashing",
    "BucketHash": "hashing",
    "PolynomialHash": "hashing",
    "SignHash": "hashing",
    "REFRESH_MODES": "join",
    "TOUCHED_ASSUMPTION": "join",
    "JoinSizeEstimator": "join",
    "discrete_laplace_cdf": "noise",
    "discrete_laplace_mechanism": "noise",
    "discrete_laplace_pmf": "noise",
    "discrete_laplace_share": "noise",
    "discrete_laplace_shares_variance": "noise",
    "discrete_laplace_tail_bound": "noise",
    "discrete_laplace_variance": "noise",
    "gaussian_mechanism": "noise",
    "gaussian_share": "noise",
    "gaussian_shares_variance": "noise",
    "gaussian_tail_bound": "noise",
    "gaussian_variance": "noise",
    "laplace_mechanism": "noise",
    "laplace_scale": "noise",
    "laplace_share": "noise",
    "laplace_shares_variance": "noise",
    "laplace_tail_bound": "noise",
    "laplace_variance": "noise",
    "NoiseSource": "noise_source",
    "StateTable": "noise_source",
    "RangeCounter": "range_counting",
    "dyadic_boxes": "range_counting",
    "dyadic_intervals": "range_counting",
    "MAX_MODULUS": "sharing",
    "add_mod": "sharing",
    "choose_modulus": "sharing",
    "decode_fixed": "sharing",
    "encode_fixed": "sharing",
    "reconstruct": "sharing",
    "share": "sharing",
    "to_signed": "sharing",
    "CountSketch": "sketch",
    "PrivateCountSketch": "sketch",
    "SketchHashes": "sketch",
    "MAX_HEIGHT": "tree",
    "FastGaMe": "tree",
    "GaussianTree": "tree",
    "LaplaceFastGaMe": "tree",
    "LaplaceTree": "tree",
    "common_prefix_length": "tree",
    "tree_covariance": "tree",
    "tree_height": "tree",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'privsim.mechanisms' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"privsim.mechanisms.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BLTNoise", "BLTParams", "BucketHash", "CALIBRATIONS", "Calibration", "ContinualCounter", "CountSketch",
    "DEFAULT_BUFFERS", "FastGaMe", "GaussianTree", "JoinSizeEstimator", "LaplaceFastGaMe", "LaplaceTree",
    "MAX_HEIGHT", "MAX_MODULUS", "MERSENNE_PRIME", "NOISE_KINDS", "NoiseSource", "PolynomialHash",
    "PrivateCountSketch", "REFRESH_MODES", "RangeCounter", "SignHash", "SketchHashes", "StateTable",
    "TOUCHED_ASSUMPTION", "add_mod", "analytic_gaussian_sigma", "approx_dp_to_zcdp", "check_calibration",
    "choose_modulus", "common_prefix_length", "continual_noise", "continual_sigma2", "decode_fixed",
    "discrete_laplace_cdf", "discrete_laplace_mechanism", "discrete_laplace_pmf", "discrete_laplace_share",
    "discrete_laplace_shares_variance", "discrete_laplace_tail_bound", "discrete_laplace_variance",
    "dyadic_boxes", "dyadic_intervals", "encode_fixed", "gaussian_delta", "gaussian_epsilon",
    "gaussian_mechanism", "gaussian_rho", "gaussian_share", "gaussian_shares_variance",
    "gaussian_sigma_for_zcdp", "gaussian_tail_bound", "gaussian_variance", "laplace_mechanism", "laplace_scale",
    "laplace_share", "laplace_shares_variance", "laplace_tail_bound", "laplace_variance", "make_noise",
    "noise_scale", "optimize_blt", "pure_dp_to_zcdp", "reconstruct", "share", "sqrt_toeplitz_sums", "step_form",
    "to_signed", "tree_covariance", "tree_height", "tree_rho", "tree_sensitivity2", "tree_sigma2",
    "write_blt_table", "zcdp_to_approx_dp", "zcdp_to_approx_dp_tight",
]
