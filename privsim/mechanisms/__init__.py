"""Centralized mechanisms: noise (central and as distributed shares), secret sharing, the
Gaussian binary tree and FastGaMe for continual release, continual counters, private
CountSketches, range counting, join size estimation, and privacy accounting.

Every mechanism keeps its state in an object, takes a seed (int, SeedSequence or
Generator) and never touches numpy's global random state.
"""

from __future__ import annotations

from privsim.mechanisms import accounting, continual, noise, sharing, tree
from privsim.mechanisms.accounting import *  # noqa: F403
from privsim.mechanisms.continual import *  # noqa: F403
from privsim.mechanisms.noise import *  # noqa: F403
from privsim.mechanisms.sharing import *  # noqa: F403
from privsim.mechanisms.tree import *  # noqa: F403

__all__ = [*tree.__all__, *continual.__all__, *accounting.__all__, *noise.__all__, *sharing.__all__]
