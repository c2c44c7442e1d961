"""Accuracy statistics of a protocol's estimates over many runs."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.errors import ProtocolError

__all__ = ["accuracy_summary"]


def accuracy_summary(estimate: Any, true_value: Any) -> dict[str, float]:
    """Mean, spread and error of per-trial estimates against the exact values.

    Returns ``true_value`` (mean over trials), ``estimate_mean``, ``estimate_std``
    (sample standard deviation), ``abs_error_mean`` and ``rmse``.

    >>> accuracy_summary([1.0, 3.0], [2.0, 2.0])
    {'true_value': 2.0, 'estimate_mean': 2.0, 'estimate_std': 1.4142135623730951, 'abs_error_mean': 1.0, 'rmse': 1.0}
    """
    # One value per trial each (a single true value serves every trial); anything else
    # is a protocol's mistake, named here rather than as a numpy broadcasting error.
    est = np.asarray(estimate, dtype=float)
    truth = np.asarray(true_value, dtype=float)
    if est.ndim != 1 or truth.ndim > 1 or (truth.ndim == 1 and truth.shape != est.shape):
        raise ProtocolError(f"estimate and true_value must be one value per trial (expected shapes (trials,) "
                            f"and (trials,) or (), got {est.shape} and {truth.shape})")
    truth = np.broadcast_to(truth, est.shape)
    err = est - truth
    return {
        "true_value": float(np.mean(truth)),
        "estimate_mean": float(np.mean(est)),
        "estimate_std": float(np.std(est, ddof=1)) if est.size > 1 else 0.0,
        "abs_error_mean": float(np.mean(np.abs(err))),
        "rmse": float(np.sqrt(np.mean(err ** 2))),
    }

