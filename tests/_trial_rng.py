"""A stand-in for a party's trial rng, for testing samplers outside a simulation.

Each method behaves like the numpy ``Generator`` method of the same name but returns a
leading trial axis of length ``trials``: trial r draws from its own ``Generator`` with
array parameters broadcast against ``(trials, *size)`` and sliced at r. The real trial rng
lives with the parties; the samplers in privsim.mechanisms must work with both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_PASS_THROUGH = {"dtype", "endpoint"}


class TrialRng:
    def __init__(self, seed: int, trials: int) -> None:
        children = np.random.SeedSequence(seed).spawn(trials)
        self.trials = trials
        self._generators = [np.random.default_rng(child) for child in children]

    def __getattr__(self, name: str) -> Callable[..., np.ndarray]:
        methods = [getattr(g, name) for g in self._generators]

        def call(*args: Any, size: Any = None, **kwargs: Any) -> np.ndarray:
            per_trial = () if size is None else tuple(np.atleast_1d(size))
            full = (self.trials, *per_trial)

            def at(value: Any, r: int) -> Any:
                return value if np.ndim(value) == 0 else np.broadcast_to(value, full)[r]

            return np.stack(
                [
                    method(
                        *(at(a, r) for a in args),
                        size=size,
                        **{k: v if k in _PASS_THROUGH else at(v, r) for k, v in kwargs.items()},
                    )
                    for r, method in enumerate(methods)
                ]
            )

        return call
