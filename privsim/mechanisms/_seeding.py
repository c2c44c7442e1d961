"""Turn the ``seed`` argument of a mechanism into a numpy Generator.

Mechanisms hold their randomness in one :class:`numpy.random.Generator` built from a
:class:`numpy.random.SeedSequence`; nothing here touches numpy's global random state.
"""

from __future__ import annotations

import numpy as np

from privsim.errors import ParameterError

__all__ = ["SeedLike", "as_generator"]

#: What a mechanism accepts as ``seed``.
SeedLike = int | np.integer | np.random.SeedSequence | np.random.Generator | None


def as_generator(seed: SeedLike) -> np.random.Generator:
    """Return the Generator a mechanism draws from.

    Parameters
    ----------
    seed:
        ``None`` (fresh OS entropy), a non-negative int, a ``SeedSequence`` (PCG64 seeded
        from it) or a ``Generator`` (used as is, so its state is shared with the caller).

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ParameterError
        For anything else, e.g. a negative int or a float.

    Examples
    --------
    >>> a, b = as_generator(7), as_generator(np.random.SeedSequence(7))
    >>> float(a.standard_normal()) == float(b.standard_normal())
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence):
        return np.random.Generator(np.random.PCG64(seed))
    if seed is None:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence()))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)) and seed >= 0:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed))))
    raise ParameterError(
        "seed must be None, an int >= 0, a numpy SeedSequence or a numpy Generator "
        f"(got {seed!r})"
    )
