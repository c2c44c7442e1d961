"""Centralized mechanisms: noise (central and as distributed shares), secret sharing, the
Gaussian binary tree and FastGaMe for continual release (with exact calibration, BLT noise
and the pure-DP Laplace FastGaMe as further noise sources), continual counters, private
CountSketches, range counting, join size estimation, and privacy accounting.

Every mechanism keeps its state in an object, takes a seed (int, SeedSequence or
Generator) and never touches numpy's global random state.
"""

from __future__ import annotations

from privsim.mechanisms import (
    accounting,
    blt,
    calibration,
    continual,
    hashing,
    join,
    noise,
    noise_source,
    range_counting,
    sharing,
    sketch,
    tree,
)
from privsim.mechanisms.accounting import *  # noqa: F403
from privsim.mechanisms.blt import *  # noqa: F403
from privsim.mechanisms.calibration import *  # noqa: F403
from privsim.mechanisms.continual import *  # noqa: F403
from privsim.mechanisms.hashing import *  # noqa: F403
from privsim.mechanisms.join import *  # noqa: F403
from privsim.mechanisms.noise import *  # noqa: F403
from privsim.mechanisms.noise_source import *  # noqa: F403
from privsim.mechanisms.range_counting import *  # noqa: F403
from privsim.mechanisms.sharing import *  # noqa: F403
from privsim.mechanisms.sketch import *  # noqa: F403
from privsim.mechanisms.tree import *  # noqa: F403

__all__ = [*tree.__all__, *continual.__all__, *noise_source.__all__, *calibration.__all__, *blt.__all__,
           *accounting.__all__, *noise.__all__, *sharing.__all__, *hashing.__all__,
           *sketch.__all__, *range_counting.__all__, *join.__all__]
