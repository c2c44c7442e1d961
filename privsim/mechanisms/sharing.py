"""Additive secret sharing modulo q, and the encodings that put numbers into Z_q.

A secret ``x`` in ``[0, q)`` is split into ``parties`` shares: all but the last are
independent and uniform on ``[0, q)``, the last is ``x - (their sum) mod q``. Any
``parties - 1`` shares are then independent and uniform whatever ``x`` is (perfect
secrecy), and all of them sum to ``x`` mod q. Sums of secrets are sums of shares, which
is how the secure-sum and DIST_alpha protocols add inputs (and noise shares) without
anyone seeing an addend.

Arithmetic stays in int64 for every modulus ``q <= 2^62``: every value is reduced into
``[0, q)`` after each addition, and two such values add to less than ``2^63``.

Signed values (sums of noise, fixed-point reals) live in the centred range:
:func:`to_signed` maps ``[0, q)`` back to ``[-floor(q/2), ceil(q/2) - 1]``, which is
exact for every ``|v| < q/2``. :func:`choose_modulus` picks the smallest power of two
``q > 2 * bound``, so a total whose absolute value stays within ``bound`` decodes
exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError
from privsim.mechanisms import _checks

__all__ = [
    "MAX_MODULUS",
    "share",
    "reconstruct",
    "add_mod",
    "to_signed",
    "choose_modulus",
    "encode_fixed",
    "decode_fixed",
    "share_unchecked",
    "reconstruct_unchecked",
    "encode_fixed_unchecked",
]

MAX_MODULUS = 2**62
"""The largest modulus: two residues below it add to less than 2^63 (no int64 overflow)."""


def _modulus(q: Any) -> int:
    return _checks.integer("q", q, 2, MAX_MODULUS)


def _residues(name: str, v: ArrayLike, q: int) -> NDArray[np.int64]:
    return _checks.integer_values(name, v, 0, q - 1)


_INT64_MAX = 2**63 - 1


def _sum_mod(values: NDArray[np.int64], q: int) -> NDArray[np.int64]:
    """Sum residues mod q along the last axis.

    One int64 sum and one ``% q`` when ``count (q - 1) < 2^63`` (no partial sum can
    overflow); otherwise pairwise, reducing after every addition. Both give the exact
    sum mod q.
    """
    count = values.shape[-1]
    if count == 0:
        return np.zeros(values.shape[:-1], dtype=np.int64)
    if count * (q - 1) <= _INT64_MAX:
        return values.sum(axis=-1, dtype=np.int64) % q
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        paired = (values[..., :half] + values[..., half : 2 * half]) % q  # < 2q <= 2^63
        values = np.concatenate([paired, values[..., 2 * half :]], axis=-1)
    return values[..., 0]


def share(
    rng: np.random.Generator, x: ArrayLike, q: int, parties: int, *, size: Any = None
) -> NDArray[np.int64]:
    """Split integer secrets ``x`` in ``[0, q)`` into ``parties`` additive shares mod q.

    ``shares[..., i]`` for ``i < parties - 1`` are drawn uniformly from ``[0, q)`` in one
    call ``rng.integers(0, q, size=(*size, parties - 1), dtype=np.int64)`` (exactly
    uniform); the last is ``x - sum mod q``. The joint law of any ``parties - 1`` shares
    is uniform on ``[0, q)^(parties - 1)`` for every ``x``.

    Parameters
    ----------
    rng
        a numpy ``Generator`` or a party's trial rng.
    x
        the secrets, an integer array of any shape with entries in ``[0, q)``.
    q
        the modulus, an integer in ``[2, 2^62]``.
    parties
        the number of shares, an integer >= 1.
    size
        the shape of one trial's secrets; ``None`` means ``np.shape(x)``, right for
        a ``Generator``. With a trial rng and an ``x`` that carries the trial axis,
        pass ``x.shape[1:]``.

    Returns
    -------
        int64 shares with a trailing axis of length ``parties``: shape
        ``(*x.shape, parties)`` (``(R, *size, parties)`` with a trial rng).

    Raises
    ------
    ParameterError
        if ``q``, ``parties`` or ``size`` is out of range, or ``x`` does
        not fit the shape of the draws.
    InputError
        if ``x`` is not integer-valued in ``[0, q)``.

    >>> rng = np.random.default_rng(3)
    >>> s = share(rng, np.array([0, 7, 12]), 13, 4)
    >>> s.shape
    (3, 4)
    >>> reconstruct(s, 13)
    array([ 0,  7, 12])
    """
    q = _modulus(q)
    parties = _checks.integer("parties", parties, 1)
    x = _residues("x", x, q)
    size = tuple(np.shape(x)) if size is None else _checks.shape("size", size)
    uniform = np.asarray(rng.integers(0, q, size=(*size, parties - 1), dtype=np.int64), dtype=np.int64)
    lead = uniform.shape[:-1]
    if np.broadcast_shapes(x.shape, lead) != lead:
        raise ParameterError(
            f"size must be the shape of one trial's secrets (x has shape {x.shape}, the draws {lead})"
        )
    return _complete_shares(uniform, x, q)


def _complete_shares(uniform: NDArray[np.int64], x: NDArray[np.int64], q: int) -> NDArray[np.int64]:
    last = (x - _sum_mod(uniform, q)) % q  # in (-q, q) before the reduction
    return np.concatenate([uniform, last[..., None]], axis=-1)


def share_unchecked(rng: Any, x: NDArray[np.int64], q: int, parties: int, size: tuple[int, ...]) -> NDArray[np.int64]:
    """:func:`share` without its checks, for a protocol that validated ``q``, ``parties`` and ``size`` once per run.

    ``x`` must be int64 residues in ``[0, q)`` of the draws' shape; the draws and the
    result are exactly those of :func:`share` with the same arguments.

    >>> a = share(np.random.default_rng(3), np.array([0, 7, 12]), 13, 4)
    >>> b = share_unchecked(np.random.default_rng(3), np.array([0, 7, 12]), 13, 4, (3,))
    >>> bool((a == b).all())
    True
    """
    return _complete_shares(rng.integers(0, q, size=(*size, parties - 1), dtype=np.int64), x, q)


def reconstruct_unchecked(shares: NDArray[np.int64], q: int) -> NDArray[np.int64]:
    """:func:`reconstruct` without its checks: ``shares`` are int64 residues in ``[0, q)``, shares last.

    >>> reconstruct_unchecked(np.array([[2**61, 2**61 + 5]]), 2**62)
    array([5])
    """
    return _sum_mod(shares, q)


def reconstruct(shares: ArrayLike, q: int) -> NDArray[np.int64]:
    """The secrets: the sum of the shares mod q along the last axis.

    Parameters
    ----------
    shares
        integer residues in ``[0, q)``, shares along the last axis (at least 1-D).
    q
        the modulus, an integer in ``[2, 2^62]``.

    Returns
    -------
        int64 residues in ``[0, q)`` of shape ``shares.shape[:-1]``.

    Raises
    ------
    ParameterError
        if ``q`` is out of range or ``shares`` is 0-dimensional.
    InputError
        if a share is not an integer in ``[0, q)``.

    >>> reconstruct(np.array([[2**61, 2**61 + 5]]), 2**62)
    array([5])
    """
    q = _modulus(q)
    shares = _residues("shares", shares, q)
    if shares.ndim == 0:
        raise ParameterError("shares must have at least one axis (the shares' axis)")
    return _sum_mod(shares, q)


def add_mod(a: ArrayLike, b: ArrayLike, q: int) -> NDArray[np.int64]:
    """``(a + b) mod q`` for residues ``a, b`` in ``[0, q)``, without int64 overflow.

    Parameters
    ----------
    a
        integer residues in ``[0, q)``.
    b
        integer residues in ``[0, q)``, broadcastable against ``a``.
    q
        the modulus, an integer in ``[2, 2^62]``.

    Returns
    -------
        int64 residues in ``[0, q)``.

    Raises
    ------
    ParameterError
        if ``q`` is out of range.
    InputError
        if ``a`` or ``b`` is not an integer in ``[0, q)``.

    >>> add_mod(np.array([3, 4]), 4, 5)
    array([2, 3])
    """
    q = _modulus(q)
    return (_residues("a", a, q) + _residues("b", b, q)) % q


def to_signed(v: ArrayLike, q: int) -> NDArray[np.int64]:
    """Map residues in ``[0, q)`` to the centred range ``[-floor(q/2), ceil(q/2) - 1]``.

    ``v >= ceil(q/2)`` becomes ``v - q``. Every integer ``s`` with ``|s| < q/2`` comes back
    from ``s mod q``, so a total of signed terms (inputs plus noise) decodes exactly while
    its absolute value stays below ``q/2``.

    Parameters
    ----------
    v
        integer residues in ``[0, q)``.
    q
        the modulus, an integer in ``[2, 2^62]``.

    Returns
    -------
        int64 signed values.

    Raises
    ------
    ParameterError
        if ``q`` is out of range.
    InputError
        if ``v`` is not an integer in ``[0, q)``.

    >>> to_signed(np.array([0, 1, 7, 8, 15]), 16)
    array([ 0,  1,  7, -8, -1])
    """
    q = _modulus(q)
    v = _residues("v", v, q)
    return np.where(v >= (q + 1) // 2, v - q, v)


def choose_modulus(max_abs_value: float, noise_bound: float = 0.0) -> int:
    """The smallest power of two ``q`` with ``q > 2 * (max_abs_value + noise_bound)``.

    The rule: ``bound = max_abs_value + noise_bound``, where ``max_abs_value`` bounds the
    absolute value of the noiseless total and ``noise_bound`` is a tail bound on the
    absolute value of the total noise, e.g. from
    :func:`privsim.mechanisms.noise.laplace_tail_bound` (and its Gaussian and discrete
    siblings), which the noise exceeds with probability at most ``2^-40`` by default.
    Then every total with ``|total| <= bound`` satisfies ``|total| < q/2`` and
    :func:`to_signed` recovers it exactly; the sum wraps around only with that tail
    probability. Bounds are rounded up to integers first (the totals are integers; for
    fixed point, give the bounds in encoded units, i.e. times ``2^digits``).

    Parameters
    ----------
    max_abs_value
        a bound >= 0 on ``|sum of the true values|``.
    noise_bound
        a bound >= 0 on ``|sum of the noise|`` (0 for no noise).

    Returns
    -------
        ``q``, a power of two in ``[2, 2^62]``.

    Raises
    ------
    ParameterError
        if a bound is negative or not finite, or ``q`` would exceed
        ``2^62``.

    >>> choose_modulus(100)
    256
    >>> choose_modulus(100, noise_bound=28)  # e.g. discrete_laplace_tail_bound(1.0)
    512
    """
    total = 0
    for name, value in (("max_abs_value", max_abs_value), ("noise_bound", noise_bound)):
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{name} must be a finite number >= 0 (got {value!r})") from None
        if not (np.isfinite(v) and v >= 0):
            raise ParameterError(f"{name} must be a finite number >= 0 (got {v!r})")
        total += int(np.ceil(v))
    q = max(2, 1 << (2 * total).bit_length())  # smallest power of two > 2 * total
    if q > MAX_MODULUS:
        raise ParameterError(f"max_abs_value + noise_bound must be < 2^61 so that q <= 2^62 (got {total})")
    return q


def _digits(digits: Any) -> int:
    return _checks.integer("digits", digits, 0, 61)


def encode_fixed(x: ArrayLike, digits: int, q: int) -> NDArray[np.int64]:
    """Encode reals as residues mod q in fixed point: ``round(x * 2^digits) mod q``.

    Rounds to the nearest integer (ties to even). DIST_alpha shares ``x_i + Y_i`` this way
    with ``digits = ceil(log2 n)`` binary digits after the point ("log n digits", footnote
    6 of Beimel-Nissim-Omri), so a sum of ``L`` encodings is off by at most
    ``L 2^-(digits+1)``; rounding after the noise is added is post-processing.

    Parameters
    ----------
    x
        real numbers with ``round(x * 2^digits)`` in ``[-floor(q/2), ceil(q/2) - 1]``.
    digits
        binary digits after the point, an integer in ``[0, 61]``.
    q
        the modulus, an integer in ``[2, 2^62]``.

    Returns
    -------
        int64 residues in ``[0, q)``.

    Raises
    ------
    ParameterError
        if ``digits`` or ``q`` is out of range.
    InputError
        if ``x`` is not finite or does not fit the modulus.

    >>> encode_fixed(np.array([1.25, -0.5]), 2, 64)
    array([ 5, 62])
    """
    digits = _digits(digits)
    q = _modulus(q)
    scaled = np.rint(np.asarray(x, dtype=np.float64) * 2.0**digits)
    low, high = -(q // 2), (q - 1) // 2
    # check in float first (so the int64 cast cannot overflow), then exactly in int64
    if not np.all(np.isfinite(scaled) & (np.abs(scaled) <= 2.0**62)):
        raise InputError(f"x * 2^digits must be finite and in [{low}, {high}]")
    ints = scaled.astype(np.int64)
    if ints.size and (ints.min() < low or ints.max() > high):
        raise InputError(
            f"x * 2^digits must lie in [{low}, {high}] for q = {q} "
            f"(got values in [{ints.min()}, {ints.max()}])"
        )
    return ints % q


def encode_fixed_unchecked(x: NDArray[np.float64], digits: int, q: int) -> NDArray[np.int64]:
    """:func:`encode_fixed` without its checks: ``rint(x 2^digits) mod q`` for finite ``x``.

    For a protocol that checked ``digits`` and ``q`` once per run. A value outside the
    centred range is reduced mod q instead of refused (the encoding is a homomorphism, so
    a sum of encodings is still exact mod q; only the decoded total must fit).

    >>> encode_fixed_unchecked(np.array([1.25, -0.5]), 2, 64)
    array([ 5, 62])
    """
    return np.rint(x * 2.0**digits).astype(np.int64) % q


def decode_fixed(v: ArrayLike, digits: int, q: int) -> NDArray[np.float64]:
    """Decode fixed-point residues: ``to_signed(v, q) / 2^digits``.

    Parameters
    ----------
    v
        integer residues in ``[0, q)`` (e.g. a reconstructed sum of encodings).
    digits
        binary digits after the point, an integer in ``[0, 61]``.
    q
        the modulus, an integer in ``[2, 2^62]``.

    Returns
    -------
        float64 values.

    Raises
    ------
    ParameterError
        if ``digits`` or ``q`` is out of range.
    InputError
        if ``v`` is not an integer in ``[0, q)``.

    >>> q = 2**20
    >>> float(decode_fixed(add_mod(encode_fixed(1.25, 4, q), encode_fixed(-3.5, 4, q), q), 4, q))
    -2.25
    """
    digits = _digits(digits)
    return to_signed(v, q) / 2.0**digits
