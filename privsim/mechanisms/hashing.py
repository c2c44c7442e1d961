"""Seeded k-wise independent hash and sign functions, vectorized with numpy.

The family is the classical polynomial (Carter–Wegman) family over the Mersenne prime
``p = 2**61 - 1``: a function with ``k`` coefficients ``c_0..c_{k-1}`` drawn uniformly
from ``Z_p`` maps a key ``x`` to

    g(x) = (c_{k-1} x^{k-1} + ... + c_1 x + c_0) mod p.

For distinct keys ``x_1..x_k`` in ``Z_p`` the values ``(g(x_1), .., g(x_k))`` are
uniform on ``Z_p^k`` (polynomial interpolation), so the family is exactly k-wise
independent over ``Z_p``. A bucket is ``g(x) mod width`` (each bucket has probability
within ``1/p`` of ``1/width``) and a sign is ``1 - 2 (g(x) mod 2)`` (bias ``1/(2p)``).
CountSketch's analysis [Charikar–Chen–Farach-Colton] needs 2-wise independent buckets
and 4-wise independent signs for its variance bounds (the fourth moments of the signs
enter the variance of inner-product estimates, Lemma 5.3 of Pagh–Sejer), so
:class:`BucketHash` uses degree 1 (``k = 2``) and :class:`SignHash` degree 3 (``k = 4``).

Arithmetic is exact: products of two values below ``2**61`` are formed from 32-bit
halves in ``uint64`` and folded with ``2**61 = 1 (mod p)``, never wrapping around.
Keys are integers; they are first reduced mod ``p`` (negative ``int64`` keys are read
as their two's-complement ``uint64`` value), so independence holds for keys that are
distinct mod ``p`` — in particular for all keys in ``[0, 2**61 - 1)``.

Coefficients are drawn from a numpy Generator built from a SeedSequence (``seed``: None,
an int >= 0, a SeedSequence or a Generator); global random state is never touched.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError
from privsim.mechanisms import _checks
from privsim.mechanisms._seeding import SeedLike, as_generator

__all__ = [
    "MERSENNE_PRIME",
    "PolynomialHash",
    "BucketHash",
    "SignHash",
]

#: The Mersenne prime ``2**61 - 1`` that the hash families work over.
MERSENNE_PRIME: int = (1 << 61) - 1

_P = np.uint64(MERSENNE_PRIME)
_LOW32 = np.uint64(0xFFFF_FFFF)
_LOW29 = np.uint64((1 << 29) - 1)
_U3, _U29, _U32, _U61 = (np.uint64(s) for s in (3, 29, 32, 61))
_BLOCK = 1 << 14  # elements per block of hash arithmetic: temporaries of 128 KiB


def _spawn_seeds(seed: SeedLike, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child seed sequences, determined by ``seed`` alone.

    One 128-bit entropy draw from ``as_generator(seed)`` roots a fresh
    :class:`~numpy.random.SeedSequence`, whose first ``n`` children are returned: the
    same int seed always gives the same children (and so the same hashes and noise).
    """
    entropy = as_generator(seed).integers(0, 1 << 32, size=4, dtype=np.uint64).tolist()
    return np.random.SeedSequence(entropy).spawn(n)


def _fold(s: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """``s mod p`` for any ``uint64`` s, using ``2**61 = 1 (mod p)`` (in place)."""
    s = _fold_partial(s)  # < 2**61 + 8
    # s - p wraps around to a huge value exactly when s < p, so the minimum is s mod p.
    return np.minimum(s, s - _P, out=s)


def _fold_partial(s: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """A value ``= s (mod p)`` below ``2**61 + 8``, for any ``uint64`` s (in place)."""
    high = s >> _U61
    s &= _P
    s += high
    return s


def _split(a: NDArray[np.uint64]) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """High 29 and low 32 bits of values below ``2**61``."""
    return a >> _U32, a & _LOW32


def _mulmod_partial(
    a_hi: NDArray[np.uint64], a_lo: NDArray[np.uint64], x_hi: NDArray[np.uint64], x_lo: NDArray[np.uint64]
) -> NDArray[np.uint64]:
    """A value ``= a * x (mod p)`` below ``2**61 + 8``, from the halves of ``a, x < 2**61``.

    ``a x = hh 2**64 + mid 2**32 + ll`` with ``hh = a_hi x_hi < 2**58``,
    ``mid = a_hi x_lo + a_lo x_hi < 2**62`` and ``ll = a_lo x_lo < 2**64``: no product
    wraps around. Then ``2**64 = 8`` and ``mid 2**32 = (mid >> 29) + (mid mod 2**29) 2**32``
    (mod p), and the sum of the folded parts stays below ``3 * 2**61 + 2**34``.
    """
    mid = a_hi * x_lo
    mid += a_lo * x_hi
    s = a_hi * x_hi
    s <<= _U3
    s += mid >> _U29
    mid &= _LOW29
    mid <<= _U32
    s += mid
    s += _fold_partial(a_lo * x_lo)
    return _fold_partial(s)


def _mulmod(a: NDArray[np.uint64], x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """``(a * x) mod p`` exactly, for ``a, x`` in ``[0, p)``."""
    return _fold(_mulmod_partial(*_split(a), *_split(x)))


def _keys_mod_p(keys: ArrayLike) -> NDArray[np.uint64]:
    """Integer keys as ``uint64`` residues mod p (int64 keys read as two's complement)."""
    arr = np.asarray(keys)
    if arr.size == 0:  # [] comes out float64
        return np.zeros(arr.shape, dtype=np.uint64)
    if not isinstance(keys, np.ndarray) and arr.dtype.kind in "fO":
        # A list mixing int64-range and larger Python ints comes out float64 or object:
        # take the ints exactly, modulo 2**64 like the int64 view below.
        items = np.asarray(keys, dtype=object)
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items.flat):
            arr = np.array([int(v) % (1 << 64) for v in items.flat], dtype=np.uint64).reshape(items.shape)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"keys must be integers (got dtype {arr.dtype})")
    if np.issubdtype(arr.dtype, np.signedinteger):
        arr = arr.astype(np.int64, copy=False).view(np.uint64)
    return _fold(arr.astype(np.uint64).reshape(-1)).reshape(arr.shape)


class PolynomialHash:
    """A batch of independent functions from a k-wise independent family over ``Z_p``.

    Each function is ``g(x) = (c_{k-1} x^{k-1} + ... + c_0) mod p`` with ``p = 2**61 - 1``
    and coefficients uniform in ``Z_p``: exactly k-wise independent for keys that are
    distinct mod ``p``. ``shape`` sets how many independent functions the batch holds
    (e.g. one per CountSketch row).

    Parameters
    ----------
    independence:
        ``k`` in ``[1, 7]``, the number of coefficients (degree ``k - 1``).
    shape:
        The batch shape: an int or a tuple of ints.
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator.

    Examples
    --------
    >>> g = PolynomialHash(2, 3, seed=1)
    >>> g([0, 1, 2**63]).shape
    (3, 3)
    >>> bool(g([5]).max() < MERSENNE_PRIME)
    True
    """

    def __init__(self, independence: int, shape: int | Sequence[int], seed: SeedLike = None) -> None:
        k = _checks.integer("independence", independence, 1, 7)
        batch = _checks.shape("shape", shape)
        self._coefficients = as_generator(seed).integers(0, MERSENNE_PRIME, size=(k, *batch), dtype=np.uint64)

    @property
    def independence(self) -> int:
        """``k``: any ``k`` distinct keys get independent uniform values."""
        return int(self._coefficients.shape[0])

    @property
    def shape(self) -> tuple[int, ...]:
        """The batch shape: how many independent functions, arranged how."""
        return tuple(self._coefficients.shape[1:])

    @property
    def coefficients(self) -> NDArray[np.uint64]:
        """The coefficients ``c_0..c_{k-1}`` (axis 0), read-only, shape ``(k, *shape)``."""
        view = self._coefficients.view()
        view.flags.writeable = False
        return view

    def __getitem__(self, index: object) -> PolynomialHash:
        """The sub-batch ``index`` (any numpy index into the batch shape)."""
        obj = copy.copy(self)
        obj._coefficients = self._coefficients[(slice(None), *np.index_exp[index])]  # type: ignore[misc]
        return obj

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolynomialHash):
            return NotImplemented
        a, b = self._coefficients, other._coefficients
        return a.shape == b.shape and bool(np.array_equal(a, b))

    __hash__ = None  # type: ignore[assignment]

    def __call__(self, keys: ArrayLike) -> NDArray[np.uint64]:
        """Evaluate every function on the keys: values in ``[0, p)``.

        The coefficients broadcast as an array of shape ``(*shape, 1)`` against ``keys``:
        1-D keys of length n give shape ``(*shape, n)``; keys of shape ``(*shape, n)``
        (or broadcastable to it) give each function its own keys.
        """
        x = np.atleast_1d(_keys_mod_p(keys))  # a scalar key broadcasts like one 1-D key
        c = self._coefficients[..., None]
        try:
            out = np.empty(np.broadcast_shapes(c.shape[1:], x.shape), dtype=np.uint64)
        except ValueError:
            raise InputError(
                f"keys of shape {x.shape} do not broadcast against the functions, shape {(*self.shape, 1)}"
            ) from None
        if out.size == 0:
            return out
        coef_halves = [_split(c[j]) for j in range(1, c.shape[0])]
        # Blocks along the last axis (the keys' own: out's is theirs) keep temporaries small
        # (cache-sized, no page faults). sum_j c_j x^j with the key powers shared by all
        # functions of the batch; every term is below 2**61 + 8, so c_0 plus k - 1 <= 6 terms
        # stay below 2**64 until the fold.
        n = out.shape[-1]
        step = max(1, _BLOCK // (out.size // n))
        for start in range(0, n, step):
            block = slice(start, start + step)
            acc = np.broadcast_to(c[0], out[..., block].shape).copy()
            power = xb = x[..., block]
            for j, (c_hi, c_lo) in enumerate(coef_halves):
                power = _mulmod(power, xb) if j else xb
                acc += _mulmod_partial(c_hi, c_lo, *_split(power))
            out[..., block] = _fold(acc)
        return out


class _OfPolynomial:
    """Functions of :class:`PolynomialHash` batches (``polynomial``; a SketchHashes' buckets and
    signs): their shape, sub-batches, equality."""

    polynomial: PolynomialHash

    @property
    def shape(self) -> tuple[int, ...]:
        """The batch shape of the functions."""
        return self.polynomial.shape

    def __getitem__(self, index: object) -> Self:
        """The sub-batch ``index`` of the functions (rows, for a SketchHashes)."""
        obj = copy.copy(self)
        for name, batch in vars(self).items():
            if isinstance(batch, (PolynomialHash, _OfPolynomial)):
                setattr(obj, name, batch[index])
        return obj

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return vars(self) == vars(other)  # the batches, and the width of a BucketHash

    __hash__ = None  # type: ignore[assignment]


class BucketHash(_OfPolynomial):
    """Independent 2-wise independent bucket functions ``h(x) = ((a x + b) mod p) mod width``.

    Carter–Wegman with ``a, b`` uniform in ``Z_p``, ``p = 2**61 - 1``: for distinct
    keys (mod p) the pair of values mod p is uniform on ``Z_p^2``, so two keys collide
    with probability ``1/width`` up to ``width/p``. This is all the CountSketch
    variance bound needs from the buckets.

    Parameters
    ----------
    shape:
        How many independent functions (an int, e.g. the sketch rows, or a tuple).
    width:
        The number of buckets, an integer in ``[1, 2**32]``.
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator.

    Examples
    --------
    >>> h = BucketHash(4, width=16, seed=0)
    >>> b = h([1, 2, 3])
    >>> b.shape, bool(b.min() >= 0 and b.max() < 16)
    ((4, 3), True)
    """

    def __init__(self, shape: int | Sequence[int], width: int, seed: SeedLike = None) -> None:
        self.width: int = _checks.integer("width", width, 1, 1 << 32)
        self.polynomial = PolynomialHash(2, shape, seed)

    def __call__(self, keys: ArrayLike) -> NDArray[np.intp]:
        """Buckets in ``[0, width)``; shapes broadcast as in :meth:`PolynomialHash.__call__`."""
        return (self.polynomial(keys) % np.uint64(self.width)).astype(np.intp)


class SignHash(_OfPolynomial):
    """Independent 4-wise independent sign functions ``s(x) = 1 - 2 (g(x) mod 2)``.

    ``g`` is a degree-3 polynomial over ``Z_p``, ``p = 2**61 - 1``, so the signs of any
    four distinct keys (mod p) are independent, each ``+1`` with probability
    ``1/2 + 1/(2p)``.

    Parameters
    ----------
    shape:
        How many independent functions (an int or a tuple).
    seed:
        None, an int >= 0, a numpy SeedSequence or a numpy Generator.

    Examples
    --------
    >>> s = SignHash(2, seed=0)
    >>> sorted(set(s(range(100)).ravel().tolist()))
    [-1, 1]
    """

    def __init__(self, shape: int | Sequence[int], seed: SeedLike = None) -> None:
        self.polynomial = PolynomialHash(4, shape, seed)

    def __call__(self, keys: ArrayLike) -> NDArray[np.int8]:
        """Signs in ``{-1, +1}`` (int8); shapes broadcast as in :meth:`PolynomialHash.__call__`."""
        low_bit = (self.polynomial(keys) & np.uint64(1)).astype(np.int8)
        return 1 - 2 * low_bit
