"""The arithmetic of SecAgg (Bonawitz et al., CCS 2017): key agreement, a PRG, Shamir shares.

Everything is vectorized over a leading trial axis, as every message in privsim is.

The substitution (stated, as the issue allows)
----------------------------------------------
SecAgg needs a Diffie-Hellman key agreement (X25519 in Flower), a PRG (AES-CTR or
ChaCha20) and an authenticated encryption of the shares. Real X25519 from
``cryptography`` costs about 50 us per exchange; SecAgg needs n(n-1) of them per trial
(65 280 at n = 256), so an audit of 10^4 trials would take hours. privsim runs instead:

- **key agreement**: Diffie-Hellman in the multiplicative group of Z_p, p = 2^31 - 1 (a
  Mersenne prime; 7 generates the group): secret key a in [1, p-2], public key g^a, the
  shared key (g^b)^a = (g^a)^b. This is the protocol's algebra, not its security: a
  31-bit group falls to a laptop. The privacy claims therefore assume an *ideal* key
  agreement (a coalition learns s_uv only if it holds a_u or a_v, or reconstructs one of
  them from Shamir shares), exactly the assumption under which the papers' proofs are
  stated (their claims are computational; privsim's audit never attacks the group).
- **PRG**: :func:`prg` expands a key into a mask mod q with the SplitMix64 finalizer (a
  bijective 64-bit mixer) applied to (key, label): an ideal PRG in the same sense.
- **encryption of the shares**: the shares travel on a secure point-to-point channel
  u -> v (privsim's channels are the papers' private channels). In the deployed protocol
  the server relays an authenticated ciphertext; what it learns from it is only that u
  sent something to v, which the declared schedule says anyway.

Shamir shares are exact: polynomials over Z_p, evaluated at x = holder id + 1, and
reconstructed by Lagrange interpolation at 0 from any ``threshold`` of them.

>>> rng = np.random.default_rng(1)
>>> a, b = secret_keys(rng, 3), secret_keys(rng, 3)
>>> bool((agree(a, public_key(b)) == agree(b, public_key(a))).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.errors import ParameterError

__all__ = ["GENERATOR", "PRIME", "agree", "lagrange_at_zero", "modpow", "prg", "public_key", "secret_keys",
           "shamir_share", "shamir_reconstruct"]

#: The prime of the key-agreement group and of the Shamir field: 2^31 - 1.
PRIME = 2**31 - 1
#: A generator of the multiplicative group mod :data:`PRIME`.
GENERATOR = 7

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def modpow(base: Any, exp: Any, p: int = PRIME) -> np.ndarray:
    """``base ** exp mod p`` elementwise (p < 2^31, so every product fits in int64; exp >= 0).

    >>> modpow(np.array([3, 7]), np.array([4, 2]), 11).tolist()
    [4, 5]
    """
    base, exp = np.broadcast_arrays(np.asarray(base, dtype=np.int64) % p, np.asarray(exp, dtype=np.int64))
    if (exp < 0).any():  # the square-and-multiply loop below would never end (-1 >> 1 == -1)
        raise ParameterError(f"exp must be >= 0 (got {int(exp.min())})")
    out = np.ones_like(base)
    while exp.any():
        out = np.where(exp & 1, out * base % p, out)
        base = base * base % p
        exp = exp >> 1
    return out


def secret_keys(rng: Any, size: Any) -> np.ndarray:
    """Uniform secret keys in [1, p - 2] (``rng`` a Generator or a party's trial rng).

    >>> bool(((secret_keys(np.random.default_rng(0), 5) >= 1)).all())
    True
    """
    return rng.integers(1, PRIME - 1, size=size, dtype=np.int64)


def public_key(secret: Any) -> np.ndarray:
    """g^a mod p.

    >>> public_key(np.array([1, 2])).tolist()
    [7, 49]
    """
    return modpow(GENERATOR, secret)


def agree(secret: Any, other_public: Any) -> np.ndarray:
    """The shared key (g^b)^a mod p (symmetric: ``agree(a, g^b) == agree(b, g^a)``).

    >>> int(agree(2, public_key(3))) == int(agree(3, public_key(2))) == 7**6
    True
    """
    return modpow(other_public, secret)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def prg(key: Any, q: int, label: int = 0) -> np.ndarray:
    """A mask uniform mod q (q a power of two <= 2^62) from ``key``: SplitMix64 of (key, label).

    The top bits of the mixed word are taken, so the mask is uniform on [0, q) whenever the
    mixed word is uniform on 64 bits (the ideal-PRG assumption of the module docstring).

    >>> m = prg(np.arange(4), 256)
    >>> m.dtype, bool(((0 <= m) & (m < 256)).all()), len(set(m.tolist()))
    (dtype('int64'), True, 4)
    """
    bits = (int(q) - 1).bit_length()
    if q != 1 << bits:
        raise ValueError(f"prg: q must be a power of two (got {q})")
    with np.errstate(over="ignore"):
        z = np.asarray(key, dtype=np.int64).astype(np.uint64) * _GOLDEN + np.uint64(label) * _M2 + _GOLDEN
        z = _mix(_mix(z))
    return (z >> np.uint64(64 - bits)).astype(np.int64) if bits else np.zeros(np.shape(key), dtype=np.int64)


def shamir_share(rng: Any, secrets: Any, holders: Any, threshold: int, size: Any = ()) -> np.ndarray:
    """Shamir shares of ``secrets`` (in [0, p)) for the holders' ids, any ``threshold`` reconstruct.

    Draws ``threshold - 1`` uniform coefficients per secret (``rng.integers(0, p,
    size=(*size, threshold - 1))``, so with a trial rng the result has the trial axis first)
    and evaluates the polynomial at x = id + 1. Returns shape ``(*secrets.shape, holders.shape[-1])``;
    ``holders`` may also carry leading axes that broadcast against ``secrets`` (a cohort's
    members, each with its own holders: ``(k, h)`` for secrets ``(trials, k)``).

    >>> rng = np.random.default_rng(0)
    >>> s = shamir_share(rng, np.array([5, 9]), [0, 1, 2, 3], 3, size=(2,))
    >>> shamir_reconstruct(s[:, [0, 2, 3]], [0, 2, 3]).tolist()
    [5, 9]
    """
    secrets = np.asarray(secrets, dtype=np.int64)
    size = tuple(size)
    coeffs = rng.integers(0, PRIME, size=(*size, threshold - 1), dtype=np.int64)
    xs = np.asarray(holders, dtype=np.int64) + 1
    out = np.zeros((*secrets.shape, xs.shape[-1]), dtype=np.int64)
    for j in range(threshold - 2, -1, -1):  # Horner: ((c_{r-2} x + ...) x + c_0) x + secret
        out = (out + coeffs[..., j, None]) * xs % PRIME
    return (out + secrets[..., None]) % PRIME


def lagrange_at_zero(ids: Any) -> np.ndarray:
    """Lagrange weights at 0 for the points x = ids + 1 along the last axis (any leading shape).

    >>> lagrange_at_zero(np.array([0, 1])).tolist()  # x = 1, 2: weights 2 and -1 mod p
    [2, 2147483646]
    """
    xs = np.asarray(ids, dtype=np.int64) + 1
    r = xs.shape[-1]
    num = np.ones(xs.shape, dtype=np.int64)
    den = np.ones(xs.shape, dtype=np.int64)
    for j in range(r):
        xj = xs[..., j:j + 1]
        other = np.arange(r) != j
        num = np.where(other, num * xj % PRIME, num)
        den = np.where(other, den * ((xj - xs) % PRIME) % PRIME, den)
    return num * modpow(den, PRIME - 2) % PRIME


def shamir_reconstruct(shares: Any, ids: Any) -> np.ndarray:
    """The secret from shares (last axis) held by ``ids`` (the same last axis, or shared).

    >>> shamir_reconstruct(np.array([[3, 5]]), [0, 1]).tolist()  # the line 1 + 2x
    [1]
    """
    shares = np.asarray(shares, dtype=np.int64)
    w = lagrange_at_zero(np.broadcast_to(np.asarray(ids, dtype=np.int64), shares.shape))
    return (shares * w % PRIME).sum(axis=-1) % PRIME
