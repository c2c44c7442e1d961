"""Per-party random streams with a leading trial axis, reproducible under any batch split.

Seeding (docs/architecture.md, "Trials and seeds"): trials are grouped in blocks of :data:`TRIAL_BLOCK`. For
block ``b`` the root seed gives one :class:`numpy.random.SeedSequence` per role family,
``SeedSequence(seed, spawn_key=(family, b))`` (family 0: parties, 1: curator), whose
``generate_state`` output is cut into four 64-bit words per party: the words of party
``p`` seed its PCG64 stream for block ``b``. ``generate_state`` is prefix-stable, so a
party's stream depends only on (seed, family, party, block) -- not on n, not on the
number of trials, not on how trials are split into batches, and not on which party task
trio happens to run first. Seeding from precomputed words costs about 7 µs per stream
instead of about 28 µs for a SeedSequence per stream, which matters at n = 10^5.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

__all__ = ["SUCCESSIVE", "TRIAL_BLOCK", "NamedDraws", "StreamSeeder", "TrialRNG", "block_range", "generate_state",
           "generator_call", "generator_calls"]

#: Trials per seeding block. Batches of a split simulation are whole blocks.
TRIAL_BLOCK = 1024

_PARTY_FAMILY = 0
_CURATOR_FAMILY = 1


def block_range(trials: int, block_offset: int = 0) -> list[tuple[int, int, int]]:
    """The blocks covering ``trials`` trials from block ``block_offset``.

    Returns ``(block index, start, stop)`` with start/stop local to this batch.

    >>> block_range(2500)
    [(0, 0, 1024), (1, 1024, 2048), (2, 2048, 2500)]
    """
    starts = range(0, trials, TRIAL_BLOCK)
    return [(block_offset + i, lo, min(trials, lo + TRIAL_BLOCK)) for i, lo in enumerate(starts)]


# numpy's SeedSequence output mixing (numpy/random/bit_generator.pyx; O'Neill's seed_seq alternative).
_INIT_B, _MULT_B, _XSHIFT = 0x8B51F9DD, 0x58F38DED, 16


def generate_state(seq: np.random.SeedSequence, n_words: int) -> np.ndarray:
    """``seq.generate_state(n_words, np.uint64)``, the same words, in whole-array numpy.

    numpy's loop costs about 0.4 µs a word in Python (0.16 s for the 4 x 10^5 words of 10^5
    parties). Word ``i`` (of 32 bits) is ``pool[i % 4] ^ h_i``, times ``h_{i+1}``, xor-shifted
    by 16, with ``h_i = INIT_B MULT_B^i`` mod 2^32; pairs of them, little-endian, make the
    64-bit words. A test compares it with numpy's for many sizes and keys.

    >>> seq = np.random.SeedSequence(7, spawn_key=(0, 3))
    >>> bool((generate_state(seq, 9) == seq.generate_state(9, np.uint64)).all())
    True
    """
    count = 2 * n_words
    pool = np.asarray(seq.pool, dtype=np.uint32)
    hashes = np.full(count + 1, _MULT_B, dtype=np.uint32)
    hashes[0] = _INIT_B
    np.multiply.accumulate(hashes, out=hashes)  # wraps mod 2^32: h_0 .. h_count
    words = np.tile(pool, -(-count // pool.size))[:count] ^ hashes[:-1]
    words *= hashes[1:]
    words ^= words >> np.uint32(_XSHIFT)
    return words.astype("<u4").view("<u8").astype(np.uint64)


class _Words(ISeedSequence):
    """Four precomputed 64-bit words, handed to PCG64 in place of a SeedSequence."""

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray) -> None:
        self.words = words

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words == 4 and dtype is np.uint64:  # what PCG64 asks for; it only reads the words
            return self.words
        view = self.words.view(dtype)
        if n_words > view.size:  # PCG64 asks for 4 uint64 words; nothing else is used here
            raise ValueError("not enough seed words")
        return view[:n_words].copy()


class StreamSeeder:
    """Derives the per-party, per-block PCG64 streams of one simulation batch.

    Parameters
    ----------
    entropy:
        The root seed's entropy (an int, as recorded in results).
    n:
        Number of parties.
    blocks:
        ``block_range(...)`` of the batch.

    >>> s = StreamSeeder(1, 3, block_range(10))
    >>> s.seed_words(0, curator=False)[0].shape
    (4,)
    """

    def __init__(self, entropy: int, n: int, blocks: Sequence[tuple[int, int, int]]) -> None:
        self.entropy = entropy
        self.n = n
        self.blocks = list(blocks)
        self._spans = [(lo, hi) for _, lo, hi in self.blocks]  # shared by every TrialRNG, never changed
        self._party_words = [
            generate_state(np.random.SeedSequence(entropy, spawn_key=(_PARTY_FAMILY, b)), 4 * n).reshape(n, 4)
            for b, _, _ in self.blocks
        ]

    def seed_words(self, party: int, *, curator: bool) -> list[np.ndarray]:
        """The seed words of ``party`` (or the curator) for every block of the batch."""
        if curator:
            return [np.random.SeedSequence(self.entropy, spawn_key=(_CURATOR_FAMILY, b))
                    .generate_state(4, np.uint64) for b, _, _ in self.blocks]
        return [w[party] for w in self._party_words]

    def generators(self, parties: Sequence[int]) -> list[np.random.Generator]:
        """The Generators of ``parties`` (not the curator) when the batch is one block: each
        what :meth:`rng`'s TrialRNG draws from, without the TrialRNG (a cohort's unrecorded members)."""
        if len(self.blocks) != 1:
            raise ValueError("one Generator per party only for a batch of one block")
        words = self._party_words[0]
        return [np.random.Generator(np.random.PCG64(_Words(words[p]))) for p in parties]

    def rng(self, party: int | str, trials: int, record: bool) -> TrialRNG:
        """The :class:`TrialRNG` of ``party`` for this batch."""
        words = self.seed_words(0 if party == "C" else int(party), curator=party == "C")
        return TrialRNG([np.random.Generator(np.random.PCG64(_Words(w))) for w in words], self._spans, trials, record)


def generator_call(gen: np.random.Generator, name: str, args: tuple, kwargs: dict, size: tuple) -> np.ndarray:
    """``gen.<name>(*args, size=size, **kwargs)``, the same values, int64 ``integers`` on a
    span of 2^k (32 < k <= 63, scalar bounds) read straight from the bit generator.

    numpy draws such integers by Lemire's method on one 64-bit word per value: the top k
    bits of the word times 2^k, with no rejection when the span is a power of two (the
    threshold ``(2^64 - 2^k) mod 2^k`` is 0). Those are the words' top k bits, which this
    reads without ``integers``' Python-level work (about 7 µs a call against 1.5 µs: most
    of a secure-sum party's cost at n = 10^5). A test compares the two for every k.

    >>> a = generator_call(np.random.default_rng(3), "integers", (0, 2**40), {"dtype": np.int64}, (2, 3))
    >>> bool((a == np.random.default_rng(3).integers(0, 2**40, size=(2, 3))).all())
    True
    """
    plan = _word_span(name, args, kwargs)
    if plan is None:
        return getattr(gen, name)(*args, size=size, **kwargs)
    return _top_bits(gen.bit_generator.random_raw(math.prod(size)), plan, size)


def generator_calls(gens: Sequence[np.random.Generator], name: str, args: tuple, kwargs: dict,
                    size: tuple) -> np.ndarray:
    """:func:`generator_call` on each of ``gens`` with the same arguments, stacked: ``(len(gens), *size)``.

    What a cohort draws (one call per member's stream): the arguments are read once, and the
    words of a power-of-two integer span are shifted once for every member.

    >>> gens = [np.random.default_rng(s) for s in (1, 2)]
    >>> got = generator_calls(gens, "gamma", (0.5,), {}, (3,))
    >>> bool((got[1] == np.random.default_rng(2).gamma(0.5, size=3)).all()), got.shape
    (True, (2, 3))
    """
    plan = _word_span(name, args, kwargs)
    if plan is not None:
        count = math.prod(size)
        return _top_bits(np.concatenate([g.bit_generator.random_raw(count) for g in gens]), plan, (len(gens), *size))
    method = getattr(np.random.Generator, name)
    draws = [method(g, *args, size=size, **kwargs) for g in gens]
    # one concatenation (np.stack costs twice as much at 10^5 members)
    return np.concatenate(draws).reshape(len(gens), *draws[0].shape) if size else np.array(draws)


def _top_bits(words: np.ndarray, plan: tuple[int, int], shape: tuple) -> np.ndarray:
    """The integers of :func:`_word_span`'s ``plan`` from raw 64-bit ``words`` (changed in place)."""
    shift, low = plan
    words >>= np.uint64(shift)
    out = words.view(np.int64).reshape(shape)
    return out + low if low else out


def _word_span(name: str, args: tuple, kwargs: dict) -> tuple[int, int] | None:
    """``(shift, low)`` when ``integers(*args, **kwargs)`` is the top bits of one word per value
    (int64, scalar bounds, a span of 2^k with 32 < k <= 63 inside int64), else None."""
    if name == "integers" and kwargs.get("dtype") is np.int64 and len(args) in (1, 2) and "high" not in kwargs:
        low, high = args if len(args) == 2 and args[1] is not None else (0, args[0])
        if type(low) in _SCALAR_INTS and type(high) in _SCALAR_INTS:
            span = int(high) - int(low) + bool(kwargs.get("endpoint"))
            if 2**32 < span <= 2**63 and span & (span - 1) == 0 and -(2**63) <= low and low + span <= 2**63:
                return 65 - span.bit_length(), int(low)
    return None


_SCALAR_INTS = (int, np.int64)


def _shape(size: Any) -> tuple:
    """A ``size`` argument as a shape tuple (None: a scalar per trial)."""
    if size is None:
        return ()
    if type(size) is tuple:  # the common forms first: np.ndim costs more than the draw
        return size
    if type(size) is int:
        return (size,)
    return (int(size),) if np.ndim(size) == 0 else tuple(size)


# Methods whose first positional parameter is the size.
_SIZE_FIRST = {"random", "standard_normal", "standard_exponential", "standard_cauchy"}
#: Generator methods whose one call of size ``(r, *s)`` draws what ``r`` calls of size ``s`` draw:
#: one value after another, nothing buffered within a call (``integers`` below 2^32 buffers).
SUCCESSIVE = frozenset({"exponential", "gamma", "laplace", "normal", "random", "standard_exponential",
                        "standard_gamma", "standard_normal"})
# Methods whose array arguments are never per-trial.
_NO_SLICE = {"choice"}


class NamedDraws:
    """numpy's Generator methods by name, each one ``_draw(name, args, kwargs, size)`` of the
    subclass (:class:`TrialRNG`: one party; :class:`~privsim.parties.cohort.CohortRNG`: a cohort).

    >>> class Echo(NamedDraws):
    ...     def _draw(self, name, args, kwargs, size):
    ...         return name, args, size
    >>> Echo().normal(0.0, 2.0, size=3), Echo().standard_normal(4)
    (('normal', (0.0, 2.0), 3), ('standard_normal', (), 4))
    """

    __slots__ = ()

    def _draw(self, name: str, args: tuple, kwargs: dict, size: Any, repeat: int = 0) -> np.ndarray:
        """``name``'s draw of shape ``size`` per trial (and per member), ``repeat`` of them
        stacked on a new leading axis when ``repeat`` > 0 (:meth:`successive`)."""
        raise NotImplementedError

    def successive(self, count: int, name: str, *args: Any, size: Any = None, **kwargs: Any) -> np.ndarray:
        """``count`` successive calls ``<name>(*args, size=size, **kwargs)`` made as one:
        ``out[i]`` is what the i-th call draws, and every stream ends where the calls leave it.

        For the methods that draw one value after another from the stream (:data:`SUCCESSIVE`);
        one call instead of two halves a cohort's per-member cost of a Laplace share.

        >>> a = StreamSeeder(3, 2, block_range(4)).rng(1, 4, record=False)
        >>> b = StreamSeeder(3, 2, block_range(4)).rng(1, 4, record=False)
        >>> pair = a.successive(2, "gamma", 0.5, 2.0, size=3)
        >>> bool((pair[0] == b.gamma(0.5, 2.0, size=3)).all() and (pair[1] == b.gamma(0.5, 2.0, size=3)).all())
        True
        """
        if name not in SUCCESSIVE:
            raise ValueError(f"successive() draws only {sorted(SUCCESSIVE)}, not {name!r}: numpy's other methods "
                             "may buffer within a call (32-bit integers take two values from one word)")
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        return self._draw(name, args, kwargs, size, count)

    # The common methods, spelled out for readability; any other Generator method with a
    # ``size`` keyword works through __getattr__.
    def random(self, size: Any = None) -> np.ndarray:
        """Uniform floats in [0, 1)."""
        return self._draw("random", (), {}, size)

    def bernoulli(self, p: Any, size: Any = None) -> np.ndarray:
        """Booleans, True with probability ``p`` (one uniform per value)."""
        return self._draw("random", (), {}, size) < p

    def integers(self, low: Any, high: Any = None, size: Any = None, dtype: Any = np.int64,
                 endpoint: bool = False) -> np.ndarray:
        """Uniform integers in [low, high) (or [low, high] with ``endpoint``)."""
        return self._draw("integers", (low, high), {"dtype": dtype, "endpoint": endpoint}, size)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> np.ndarray:
        """Gaussian draws."""
        return self._draw("normal", (loc, scale), {}, size)

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> np.ndarray:
        """Laplace draws."""
        return self._draw("laplace", (loc, scale), {}, size)

    def gamma(self, shape: Any, scale: Any = 1.0, size: Any = None) -> np.ndarray:
        """Gamma draws."""
        return self._draw("gamma", (shape, scale), {}, size)

    def __getattr__(self, name: str) -> Callable[..., np.ndarray]:
        if name.startswith("_") or not hasattr(np.random.Generator, name):
            raise AttributeError(name)

        def method(*args: Any, size: Any = None, **kwargs: Any) -> np.ndarray:
            if name in _SIZE_FIRST and args:
                size, args = args[0], args[1:]
            return self._draw(name, args, kwargs, size)

        method.__name__ = name
        return method


class TrialRNG(NamedDraws):
    """A party's random generator: numpy's Generator API with a leading trial axis.

    Every draw has shape ``(trials, *size)``: ``size`` is the shape *per trial*.
    Parameters may be scalars, arrays broadcasting against ``size``, or per-trial arrays
    of shape ``(trials, *size)``.

    Examples
    --------
    >>> rng = StreamSeeder(7, 1, block_range(5)).rng(0, 5, record=False)
    >>> rng.random().shape, rng.normal(0.0, 1.0, size=3).shape
    ((5,), (5, 3))
    """

    __slots__ = ("_gens", "_spans", "trials", "draws")

    def __init__(self, gens: list[np.random.Generator], spans: list[tuple[int, int]], trials: int,
                 record: bool) -> None:
        self._gens = gens
        self._spans = spans
        self.trials = trials
        #: Every array drawn, in order, when the party's randomness is recorded for a view.
        self.draws: list[np.ndarray] | None = [] if record else None

    def _draw(self, name: str, args: tuple, kwargs: dict, size: Any, repeat: int = 0) -> np.ndarray:
        shape = _shape(size)
        lead = (repeat,) if repeat else ()
        if len(self._gens) == 1:
            out = generator_call(self._gens[0], name, args, kwargs, (*lead, self.trials, *shape))
        else:
            per_trial = name not in _NO_SLICE
            parts = []
            for gen, (lo, hi) in zip(self._gens, self._spans):
                a = [self._slice(x, lo, hi, shape) if per_trial else x for x in args]
                kw = {k: (self._slice(v, lo, hi, shape) if per_trial else v) for k, v in kwargs.items()}
                parts.append(generator_call(gen, name, tuple(a), kw, (*lead, hi - lo, *shape)))
            out = np.concatenate(parts, axis=len(lead))
        if self.draws is not None:
            # A copy: the party may go on to change its draw in place, and the view must
            # hold the random tape as drawn (one array per call, as the calls made one at a time).
            self.draws.extend(d.copy() for d in (out if repeat else (out,)))
        return out

    def _slice(self, x: Any, lo: int, hi: int, shape: tuple) -> Any:
        if isinstance(x, np.ndarray) and x.ndim == len(shape) + 1 and x.shape[0] == self.trials:
            return x[lo:hi]
        return x
