"""Stochastic quantization of bounded reals for a secure sum in Z_M (as Flower's SecAgg+ does it).

A client clips x to [-c, c] (``clipping_range``), maps it to [0, Q] (``quantization_range``)
by y = (clip(x) + c) Q / (2c), and rounds stochastically: ceil(y) - 1 with probability
ceil(y) - y, else ceil(y), so that E[round(y)] = y. The server, holding the sum of the
survivors' quantized values (exact in Z_M when M > n Q), undoes the map once per
survivor: total 2c/Q - c - (count - 1) c. These are the formulas of Flower's
``quantize``/``dequantize`` and of its SecAgg+ server's offset
(``flwr.common.secure_aggregation.quantization``, ``SecAggPlusWorkflow.unmask_stage``),
checked value for value in ``tests/test_secagg_flower.py``; privsim draws the rounding
from the party's own stream where Flower uses numpy's global state.

>>> rng = np.random.default_rng(0)
>>> q = quantize(rng, np.array([-1.0, 0.0, 1.0]), 1.0, 8)
>>> q.tolist(), float(dequantize_sum(q.sum(), 3, 1.0, 8))
([0, 4, 8], 0.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["dequantize_sum", "quantize"]


def quantize(rng: Any, x: Any, clipping_range: float, quantization_range: int) -> np.ndarray:
    """Integers in [0, Q] with mean (clip(x, -c, c) + c) Q / (2c); ``rng`` a Generator or trial rng.

    >>> quantize(np.random.default_rng(1), np.array([0.5, 9.0]), 1.0, 4).tolist()  # 3 exactly; 9 clips to 4
    [3, 4]
    """
    pre = (np.clip(np.asarray(x, dtype=float), -clipping_range, clipping_range) + clipping_range) * (
        quantization_range / (2 * clipping_range))
    up = np.ceil(pre)
    u = rng.random(size=np.shape(pre)) if isinstance(rng, np.random.Generator) else rng.random(size=np.shape(pre)[1:])
    return (up - (u < up - pre)).astype(np.int64)


def dequantize_sum(total: Any, count: Any, clipping_range: float, quantization_range: int) -> np.ndarray:
    """The sum of ``count`` clients' reals from the sum of their quantized values.

    >>> float(dequantize_sum(12, 2, 1.0, 8))  # (6 + 6) -> 0.5 + 0.5
    1.0
    """
    step = (2 * clipping_range) / quantization_range
    return (np.asarray(total, dtype=float) * step + (-clipping_range)) - (np.asarray(count) - 1) * clipping_range
