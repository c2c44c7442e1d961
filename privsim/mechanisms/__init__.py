"""Centralized mechanisms: noise (central and as distributed shares), secret sharing, the
Gaussian binary tree and FastGaMe for continual release (with exact calibration, BLT noise
and the pure-DP Laplace FastGaMe as further noise sources), continual counters, private
CountSketches, range counting, join size estimation, and privacy accounting.

Every mechanism keeps its state in an object, takes a seed (int, SeedSequence or
Generator) and never touches numpy's global random state.
"""

from __future__ import annotations

from privsim.mechanisms.accounting import (
    analytic_gaussian_sigma,
    approx_dp_to_zcdp,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_rho,
    gaussian_sigma_for_zcdp,
    pure_dp_to_zcdp,
    zcdp_to_approx_dp,
    zcdp_to_approx_dp_tight,
)
from privsim.mechanisms.blt import (
    DEFAULT_BUFFERS,
    BLTNoise,
    BLTParams,
    optimize_blt,
    sqrt_toeplitz_sums,
    write_blt_table,
)
from privsim.mechanisms.calibration import (
    CALIBRATIONS,
    Calibration,
    check_calibration,
    step_form,
    tree_rho,
    tree_sensitivity2,
    tree_sigma2,
)
from privsim.mechanisms.continual import (
    NOISE_KINDS,
    ContinualCounter,
    continual_noise,
    continual_sigma2,
    make_noise,
    noise_scale,
)
from privsim.mechanisms.hashing import (
    MERSENNE_PRIME,
    BucketHash,
    PolynomialHash,
    SignHash,
)
from privsim.mechanisms.join import (
    REFRESH_MODES,
    TOUCHED_ASSUMPTION,
    JoinSizeEstimator,
)
from privsim.mechanisms.noise import (
    discrete_laplace_cdf,
    discrete_laplace_mechanism,
    discrete_laplace_pmf,
    discrete_laplace_share,
    discrete_laplace_shares_variance,
    discrete_laplace_tail_bound,
    discrete_laplace_variance,
    gaussian_mechanism,
    gaussian_share,
    gaussian_shares_variance,
    gaussian_tail_bound,
    gaussian_variance,
    laplace_mechanism,
    laplace_scale,
    laplace_share,
    laplace_shares_variance,
    laplace_tail_bound,
    laplace_variance,
)
from privsim.mechanisms.noise_source import (
    NoiseSource,
    StateTable,
)
from privsim.mechanisms.range_counting import (
    RangeCounter,
    dyadic_boxes,
    dyadic_intervals,
)
from privsim.mechanisms.sharing import (
    MAX_MODULUS,
    add_mod,
    choose_modulus,
    decode_fixed,
    encode_fixed,
    reconstruct,
    share,
    to_signed,
)
from privsim.mechanisms.sketch import (
    CountSketch,
    PrivateCountSketch,
    SketchHashes,
)
from privsim.mechanisms.tree import (
    MAX_HEIGHT,
    FastGaMe,
    GaussianTree,
    LaplaceFastGaMe,
    LaplaceTree,
    common_prefix_length,
    tree_covariance,
    tree_height,
)

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
