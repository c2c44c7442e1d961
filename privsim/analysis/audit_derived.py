"""Derived features for leaks a per-column view hides (issue 24): atoms, bits, parities, shares, magnitudes.

The ``"derived"`` selector of :mod:`privsim.analysis.audit_selectors` builds binary
features of the view that no column shows on its own, and proposes the best event
``feature == 1`` (or ``== 0``) among them. Every feature is the XOR of one or more
:class:`Term` (a term is a 0/1 function of one or two columns), so the event is one
readable rule, computed again on every estimation batch (:class:`DerivedEvent`). The
families (:data:`FAMILIES`, named in the audit's ``searched`` field):

- ``"atoms"``: values a column with many distinct values repeats far beyond what its
  neighbouring values' counts allow (:func:`_atom_values`; ``y in {1}``: a message that
  now and then carries its input without noise), the union of those favoured by one
  input, and two columns equal on a
  row (``y == z``: a value copied from another);
- ``"bits"``: each bit of an integer column of large domain (two's complement), and
  each bit of a float64 column's IEEE sign, exponent and mantissa (its ``uint64`` view);
  never of a binary or small column, whose values the other selectors see whole;
- ``"parities"``: the XOR of 2 to 4 base bits (binary columns, the two low bits of the
  integer columns, the sign of continuous columns, then every other bit of the large
  integer columns), exhaustive searches over capped sets of bases (:func:`_parities`),
  for a leak only a 3-way parity shows, of low bits or of bit k of three messages;
- ``"shares"``: ``(a + b) mod M`` and ``(a - b) mod M`` of two integer columns of large
  domain (two coalition members' additive shares), M the smallest power of 2 above
  their values (or a modulus the caller declares), and the atoms of that reconstruction;
  then sums of 3 and 4 such columns, ``(a + b + c) mod M``, and plain sums without
  reduction (``a + b``, ``a + b + c``): shares in [0, q) of a secret s sum to
  s + j q for j = 0, 1, 2, so the plain sum's atoms show s whatever the modulus q.
  Sums of 3 and 4 columns come from the first :data:`_MAX_MULTI_COLUMNS` columns and
  plain sums of pairs too are screened on a few thousand rows first (an atom of a
  percent or more shows there), so the family stays cheap on a wide view;
- ``"magnitudes"``: ``|x - c| >= cut`` of a continuous column, for c = 0 and c = the pooled median (``x^2``
  and ``(x - c)^2`` give the same events): a leak in a message's variance.

Soundness: the selection sample alone chooses the event (the proposal half is cut in
two: one part builds and ranks the candidates, the other picks among the top
:data:`_TOP` by the bound each forecasts at the estimation size, then the held-out pick of
:func:`~privsim.analysis.audit_selectors.choose_event` judges the proposal against
the other selectors'), so the final Clopper–Pearson bound on the estimation sample is
as sound as with any one fixed event. A family that finds nothing only says that no
event of its shape was seen on the selection sample: absence of evidence is not a proof.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from privsim.analysis.audit_select import _halves, _select_threshold, _selection_criterion

__all__ = ["FAMILIES", "DerivedEvent", "Term", "propose_derived"]

#: The families of derived features, in the order they are built.
FAMILIES = ("atoms", "bits", "parities", "shares", "magnitudes")

# A column is "of large domain" (atoms, bits, shares, magnitudes) with more distinct
# values than this in the fit part; smaller columns are seen whole by the other selectors.
_LARGE = 64
# Atoms: at most this many values per column, each seen at least _ATOM_MIN times and
# beyond what its _ATOM_WINDOW neighbours on each side allow (see _atom_values), at level
# _ATOM_LEVEL over the values of a column.
_ATOM_VALUES = 8
_ATOM_MIN = 3
_ATOM_WINDOW = 16
_ATOM_OVER = 3.0
_ATOM_LEVEL = 0.01
# Columns looked at per family (the first ones), so a wide view stays cheap.
_MAX_COLUMNS = 32
_MAX_SHARE_COLUMNS = 12
# Sums of 3 and 4 members' columns: of the first this many large integer columns (at most
# C(6, 3) + C(6, 4) = 35 sets), each screened for atoms on the first _SCREEN_ROWS rows.
_MAX_MULTI_COLUMNS = 6
_SCREEN_ROWS = 4096
# ... where a value must be seen this many times: a sum of uniform shares puts about 0.1
# rows of the screen on a value, so it repeats one 8 times with probability ~1e-12 a value.
_SCREEN_MIN = 8
# Magnitudes: continuous columns only (the first ones), each cut by a threshold search.
_MAX_MAGNITUDES = 8
_CENTRE_SAME = 1 / 64
# Parities: at most this many leading base bits (binary columns, low bits, signs); sets of
# 4 of them when there are at most _PARITY_QUADS; pairs and triples of the first
# _PARITY_TRIPLE_BASES bases (the leading ones, then the large integers' other bits); the
# search on the first _PARITY_ROWS rows per input.
_PARITY_BASES = 24
_PARITY_QUADS = 16
_PARITY_TRIPLE_BASES = 128
_PARITY_ROWS = 8192
# Candidates carried from the ranking part to the picking part.
_TOP = 8


@dataclass(frozen=True)
class Term:
    """A 0/1 function of a view's row: one bit of one column, or a test on one or two columns.

    Parameters
    ----------
    kind:
        ``"bit"`` (bit ``arg`` of the integer value), ``"fbit"`` (bit ``arg`` of the
        float64's IEEE representation), ``"in"`` (the value is one of the tuple
        ``arg``), ``"same"`` (equal to column ``arg``), ``"ge"`` (``>= arg``),
        ``"far"`` (``|value - arg[0]| >= arg[1]``), ``"share"`` (``(value + arg[2] *
        column arg[0]) mod arg[3]`` is one of the tuple ``arg[4]``; ``arg[1]`` names
        that column), ``"sum"`` (``value + columns arg[0]``, reduced mod ``arg[2]`` if it
        is not 0, is one of the tuple ``arg[3]``; ``arg[1]`` names those columns).
    column:
        The column's index in the view.
    name:
        The column's name (for :meth:`describe`).
    arg:
        As ``kind`` says.

    Examples
    --------
    >>> v = np.array([[5.0, 1.0], [6.0, 6.0]])
    >>> Term("bit", 0, "y", 0)(v).tolist(), Term("same", 0, "y", (1, "z"))(v).tolist()
    ([1, 0], [0, 1])
    >>> Term("share", 0, "y", (1, "z", 1, 8, (6,)))(v).tolist(), Term("share", 0, "y", (1, "z", 1, 8, (6,))).describe()
    ([1, 0], '(y + z) mod 8 in {6}')
    >>> plain = Term("sum", 0, "y", ((1,), ("z",), 0, (12,)))
    >>> plain(v).tolist(), plain.describe()
    ([0, 1], '(y + z) in {12}')
    """

    kind: str
    column: int
    name: str
    arg: object

    def __call__(self, views: np.ndarray) -> np.ndarray:
        """The term's 0/1 value (uint8) on every row of ``views``."""
        x = np.asarray(views[:, self.column], dtype=float)
        if self.kind == "bit":
            out = (x.astype(np.int64) >> int(self.arg)) & 1
        elif self.kind == "fbit":
            out = (np.ascontiguousarray(x).view(np.uint64) >> np.uint64(int(self.arg))) & np.uint64(1)
        elif self.kind == "in":
            out = np.isin(x, np.asarray(self.arg, dtype=float))
        elif self.kind == "same":
            out = x == np.asarray(views[:, self.arg[0]], dtype=float)
        elif self.kind == "ge":
            out = x >= float(self.arg)
        elif self.kind == "far":
            out = np.abs(x - self.arg[0]) >= self.arg[1]
        elif self.kind == "share":
            other, _, sign, modulus, values = self.arg
            total = x.astype(np.int64) + sign * np.asarray(views[:, other], dtype=float).astype(np.int64)
            out = np.isin(np.mod(total, modulus), np.asarray(values, dtype=np.int64))
        elif self.kind == "sum":
            others, _, modulus, values = self.arg
            out = np.isin(_column_sum(views, (self.column, *others), modulus), np.asarray(values, dtype=np.int64))
        else:  # pragma: no cover - terms are built here only
            raise ValueError(f"unknown term kind {self.kind!r}")
        return np.asarray(out, dtype=np.uint8)

    def describe(self) -> str:
        """The term in words: ``"bit 3 of y"``, ``"y in {1}"``, ``"|y - 0| >= 2.5"``."""
        if self.kind == "bit":
            return f"bit {self.arg} of {self.name}"
        if self.kind == "fbit":
            return f"IEEE bit {self.arg} of {self.name}"
        if self.kind == "in":
            return f"{self.name} in {{{', '.join(f'{v:g}' for v in self.arg)}}}"
        if self.kind == "same":
            return f"{self.name} == {self.arg[1]}"
        if self.kind == "ge":
            return f"{self.name} >= {self.arg:g}"
        if self.kind == "far":
            return f"|{self.name} - {self.arg[0]:g}| >= {self.arg[1]:g}"
        if self.kind == "sum":
            _, others, modulus, values = self.arg
            reduced = f" mod {modulus}" if modulus else ""
            return f"({' + '.join((self.name, *others))}){reduced} in {{{', '.join(str(v) for v in values)}}}"
        _, other, sign, modulus, values = self.arg
        return (f"({self.name} {'+' if sign > 0 else '-'} {other}) mod {modulus} in "
                f"{{{', '.join(str(v) for v in values)}}}")


def _column_sum(views: np.ndarray, columns: Sequence[int], modulus: int = 0) -> np.ndarray:
    """The integer sum of ``columns`` on every row (int64: exact below 2^52 per column), mod ``modulus`` if not 0."""
    total = np.sum([np.asarray(views[:, c], dtype=float).astype(np.int64) for c in columns], axis=0)
    return np.mod(total, modulus) if modulus else total


@dataclass(frozen=True, eq=False)
class DerivedEvent:
    """The event ``XOR of terms == value``: a derived binary feature's one side.

    Examples
    --------
    >>> e = DerivedEvent((Term("bit", 0, "a", 0), Term("bit", 0, "b", 1)), 1, "parities")
    >>> e.contains(np.array([[1.0, 0.0], [3.0, 2.0]])).tolist(), e.describe()
    ([True, False], 'bit 0 of a xor bit 1 of b == 1')
    >>> e.complement().describe()
    'bit 0 of a xor bit 1 of b == 0'
    """

    terms: tuple[Term, ...]
    value: int
    family: str

    def feature(self, views: np.ndarray) -> np.ndarray:
        """The XOR of the terms on every row (0/1)."""
        return np.bitwise_xor.reduce([term(views) for term in self.terms])

    def contains(self, views: np.ndarray) -> np.ndarray:
        """Is the row's feature equal to :attr:`value`?"""
        return self.feature(views) == self.value

    def complement(self) -> DerivedEvent:
        """The feature's other side."""
        return DerivedEvent(self.terms, 1 - self.value, self.family)

    def describe(self) -> str:
        """``"bit 3 of y == 1"``, ``"bit 0 of a xor bit 0 of b xor bit 0 of c == 0"``."""
        return f"{' xor '.join(t.describe() for t in self.terms)} == {self.value}"


# --------------------------------------------------------------------------------------
# The candidates of each family, built from the rows of the ranking part


@dataclass(frozen=True)
class _Columns:
    """The columns of the ranking part by shape: large integer, continuous, binary, small integer."""

    large_int: tuple[int, ...]
    continuous: tuple[int, ...]
    binary: tuple[tuple[int, float], ...]
    small_int: tuple[int, ...]

    @classmethod
    def of(cls, pooled: np.ndarray, distinct: Sequence[int]) -> _Columns:
        large_int, continuous, binary, small_int = [], [], [], []
        for c in distinct:
            x = pooled[:, c]
            values = np.unique(x)
            integral = bool(np.all(np.abs(x) < 2.0 ** 52) and np.array_equal(x, np.round(x)))
            if values.size == 2:
                binary.append((int(c), float(values[1])))
            elif integral and values.size > _LARGE:
                large_int.append(int(c))
            elif integral:
                small_int.append(int(c))
            elif values.size > _LARGE:
                continuous.append(int(c))
        return cls(tuple(large_int), tuple(continuous), tuple(binary), tuple(small_int))


def _atom_values(x: np.ndarray, support: int | None = None, minimum: int = _ATOM_MIN) -> np.ndarray:
    """The values ``x`` repeats far beyond a continuous law (most repeated first, at most
    :data:`_ATOM_VALUES`).

    A value is an atom if it is seen at least ``minimum`` times and more often than its
    neighbourhood allows: its count less 1 (every value seen has 1) is at least
    :data:`_ATOM_OVER` times its neighbours' mean count less 1, and the count is beyond
    what a Poisson law of their rate reaches with probability :data:`_ATOM_LEVEL` over
    all the values tested. The mean count is the larger of the column's and the local
    one (of the :data:`_ATOM_WINDOW` values seen on each side, their largest left out),
    read as the mean of a zero-truncated Poisson law (only values seen are counted). A
    continuous column's values are seen once each, a rate of 0, so 3 repeats are an
    atom; a uniform 16-bit column at 0.6 rows a value (a rate of 0.6 however its few
    neighbours fall) needs 8 or more; a rounded Gaussian's dense middle is judged
    against its own density. With ``support`` (a law uniform over that many cells, as a
    sum of shares mod M is), the rate is ``x.size / support`` everywhere. (Not twice
    the mean: a sum of three bytes whose parity leaks is a comb, its odd values 1.8
    times their neighbours' mean under one input, and a union of a few such teeth,
    chosen for their noise, would compete with the parity itself.)
    """
    values, counts = np.unique(x, return_counts=True)
    if values.size == 0:
        return values
    if support is None:
        near = np.lib.stride_tricks.sliding_window_view(np.pad(counts, _ATOM_WINDOW, mode="reflect"),
                                                        2 * _ATOM_WINDOW + 1).astype(float)
        near[:, _ATOM_WINDOW] = 0.0  # not the value itself
        mean = np.maximum((near.sum(axis=1) - near.max(axis=1)) / (2 * _ATOM_WINDOW - 1), counts.mean())
        tests = values.size
    else:
        mean = np.full(values.size, x.size / support)
        tests = support
    # Few pass this: their rate and Poisson floor are computed for them alone.
    seen = np.flatnonzero(counts >= np.maximum(minimum, 1.0 + _ATOM_OVER * (mean - 1.0)))
    rate = mean[seen] if support is not None else _truncated_poisson_rate(mean[seen])
    seen = seen[counts[seen] >= stats.poisson.isf(_ATOM_LEVEL / tests, rate) + 1]
    return values[seen[np.argsort(-counts[seen], kind="stable")][:_ATOM_VALUES]]


def _truncated_poisson_rate(mean: np.ndarray) -> np.ndarray:
    """The rate lambda whose Poisson law, given at least one, has this mean:
    lambda / (1 - exp(-lambda)) = mean (0 at mean 1), by Newton's method from lambda = mean.

    >>> np.round(_truncated_poisson_rate(np.array([1.0, 1.2, 2.0, 50.0])), 3).tolist()
    [0.0, 0.376, 1.594, 50.0]
    """
    rate = np.asarray(mean, dtype=float).copy()
    for _ in range(60):  # f(l) = l - m (1 - e^-l) is convex: Newton from the right falls monotonically to the root
        slope = 1.0 - mean * np.exp(-rate)
        step = np.where(slope > 1e-12, (rate - mean * (1.0 - np.exp(-rate))) / np.maximum(slope, 1e-12), rate)
        rate = np.maximum(rate - step, 0.0)
    return np.where(mean <= 1.0 + 1e-9, 0.0, rate)


def _atom_terms(name: str, column: int, values: np.ndarray, sx: np.ndarray, sxp: np.ndarray,
                make) -> list[tuple[Term, ...]]:
    """One candidate per atom, and the unions of the atoms favoured by x and by x' (more
    often in ``sx`` than in ``sxp``, the values on the rows of x and x', or the reverse)."""
    fx, fxp = (np.array([np.count_nonzero(s == v) for v in values]) for s in (sx, sxp))
    out: list[tuple[Term, ...]] = [(make(column, name, (float(v),)),) for v in values]
    if values.size > 1:
        for favoured in (fx > fxp, fx < fxp):
            chosen = tuple(float(v) for v in values[favoured])
            if len(chosen) > 1:
                out.append((make(column, name, chosen),))
    return out


def _atoms(x: np.ndarray, xp: np.ndarray, names: Sequence[str], cols: _Columns) -> list[tuple[Term, ...]]:
    out: list[tuple[Term, ...]] = []
    wide = (cols.continuous + cols.large_int)[:_MAX_COLUMNS]
    for c in wide:
        values = _atom_values(np.concatenate([x[:, c], xp[:, c]]))
        out += _atom_terms(names[c], c, values, x[:, c], xp[:, c], lambda col, nm, vals: Term("in", col, nm, vals))
    for a, b in itertools.combinations(wide, 2):
        if np.count_nonzero(x[:, a] == x[:, b]) + np.count_nonzero(xp[:, a] == xp[:, b]) >= _ATOM_MIN:
            out.append((Term("same", a, names[a], (b, names[b])),))
    return out


def _bit_terms(pooled: np.ndarray, names: Sequence[str], cols: _Columns) -> list[Term]:
    """Every bit that varies, of the large integer and the float columns."""
    out: list[Term] = []
    for kind, group in (("bit", cols.large_int), ("fbit", cols.continuous)):
        for c in group[:_MAX_COLUMNS]:
            x = pooled[:, c]
            words = x.astype(np.int64).view(np.uint64) if kind == "bit" else np.ascontiguousarray(x).view(np.uint64)
            varying = np.bitwise_or.reduce(words ^ words[0])
            out += [Term(kind, c, names[c], k) for k in range(64) if (int(varying) >> k) & 1]
    return out


def _parity_bases(pooled: np.ndarray, names: Sequence[str], cols: _Columns) -> tuple[list[Term], int]:
    """The bits a parity is built of, and how many of them lead.

    First (the leading ones): binary columns, the two low bits of the integer columns
    and the signs of continuous columns; then every other varying bit of the large
    integer columns, column by column (a value serialized with one of its bits replaced).
    """
    low = [Term("in", c, names[c], (v,)) for c, v in cols.binary]
    for c in cols.small_int + cols.large_int:
        low += [Term("bit", c, names[c], k) for k in (0, 1)
                if np.unique((pooled[:, c].astype(np.int64) >> k) & 1).size == 2]
    low += [Term("ge", c, names[c], 0.0) for c in cols.continuous
            if pooled[:, c].min() < 0.0 <= pooled[:, c].max()]
    low = low[:_PARITY_BASES]
    high = [t for t in _bit_terms(pooled, names, _Columns(cols.large_int[:_MAX_MULTI_COLUMNS], (), (), ()))
            if int(t.arg) > 1]
    return low + high, len(low)


def _parities(bases: list[Term], leading: int, x: np.ndarray, xp: np.ndarray) -> list[tuple[Term, ...]]:
    """Sets of 2 to 4 bases ranked by how far their parity's rate moves.

    Three searches, each exhaustive over its sets: pairs and triples of the first
    :data:`_PARITY_TRIPLE_BASES` bases (the leading ones, then the other bits of the large
    integer columns: a leak only in the XOR of bit 3 of three messages); quadruples of the
    ``leading`` bases when there are at most :data:`_PARITY_QUADS` of them; and triples
    and quadruples of one bit position across the large integer columns (bit k of each of
    3 or 4 messages, whatever k). On the first :data:`_PARITY_ROWS` rows per input, the
    bits packed 64 to a word, a parity costs a few XORs of words and a bit count, and a
    triple reuses its pair's XOR. The top :data:`_TOP` per size are kept; the caller's
    ranking then judges them with the other candidates.
    """
    if len(bases) < 2:
        return []
    words, n_x, n_xp, split = _packed_bits(bases, x, xp, _PARITY_ROWS)

    def spread(block: np.ndarray) -> np.ndarray:  # |rate difference| in standard errors, per row of words
        ones = np.bitwise_count(block)
        rate_x = ones[:, :split].sum(axis=1, dtype=np.int64) / n_x
        rate_xp = ones[:, split:].sum(axis=1, dtype=np.int64) / n_xp
        pooled = (rate_x * n_x + rate_xp * n_xp) / (n_x + n_xp)
        return np.abs(rate_x - rate_xp) / np.sqrt(np.maximum(pooled * (1 - pooled), 1e-12) * (1 / n_x + 1 / n_xp))

    scores: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {2: [], 3: [], 4: []}
    wide = min(len(bases), _PARITY_TRIPLE_BASES)
    for i in range(wide - 1):
        pairs = words[i] ^ words[i + 1:wide]
        scores[2].append((spread(pairs), np.array([(i, j) for j in range(i + 1, wide)])))
        for j in range(i + 1, wide - 1):
            rest = np.arange(j + 1, wide)
            scores[3].append((spread(pairs[j - i - 1] ^ words[j + 1:wide]),
                              np.column_stack([np.full(rest.size, i), np.full(rest.size, j), rest])))
    sets: list[tuple[int, ...]] = []
    if leading <= _PARITY_QUADS:
        sets += list(itertools.combinations(range(leading), 4))
    by_position: dict[int, list[int]] = {}
    for k, t in enumerate(bases):
        if t.kind == "bit":
            by_position.setdefault(int(t.arg), []).append(k)
    for members in by_position.values():
        sets += [s for size in (3, 4) for s in itertools.combinations(members, size) if size == 4 or s[-1] >= wide]
    sets = list(dict.fromkeys(sets))  # bit 0 or 1 of four columns is also a set of four leading bases
    for size in (3, 4):
        chosen = np.array([s for s in sets if len(s) == size], dtype=np.int64).reshape(-1, size)
        for start in range(0, len(chosen), 4096):
            block = chosen[start:start + 4096]
            acc = words[block[:, 0]]
            for m in range(1, size):
                acc = acc ^ words[block[:, m]]
            scores[size].append((spread(acc), block))
    out: list[tuple[Term, ...]] = []
    for size in (2, 3, 4):
        if not scores[size]:
            continue
        z = np.concatenate([s for s, _ in scores[size]])
        index = np.concatenate([k for _, k in scores[size]])
        order = np.argsort(-z, kind="stable")[:_TOP]
        out += [tuple(bases[k] for k in index[o]) for o in order]
    return out


def _packed_bits(bases: list[Term], x: np.ndarray, xp: np.ndarray, rows: int) -> tuple[np.ndarray, int, int, int]:
    """Each base's bits on the first ``rows`` rows of x, then of x', packed 64 to a word.

    Returns the words (one row per base: x's words, then x''s), the rows counted per
    input and the number of x's words. Padding bits are 0 in every base, so an XOR of
    bases counts no padding.
    """
    def pack(v: np.ndarray) -> np.ndarray:
        packed = np.packbits(np.stack([t(v) for t in bases]), axis=1)
        return np.pad(packed, ((0, 0), (0, -packed.shape[1] % 8))).view(np.uint64)

    wx, wxp = pack(x[:rows]), pack(xp[:rows])
    return np.concatenate([wx, wxp], axis=1), min(len(x), rows), min(len(xp), rows), wx.shape[1]


def _share_moduli(x: np.ndarray, xp: np.ndarray, members: Sequence[int], declared: Sequence[int]) -> list[int]:
    """The declared moduli, then the smallest power of 2 above every value of the ``members``."""
    top = max(float(x[:, list(members)].max()), float(xp[:, list(members)].max()), 1.0)
    return list(dict.fromkeys([*declared, 1 << int(math.ceil(math.log2(top + 1)))]))


def _shares(x: np.ndarray, xp: np.ndarray, names: Sequence[str], cols: _Columns,
            declared: Sequence[int]) -> list[tuple[Term, ...]]:
    """Atoms of ``(a +- b) mod M`` over pairs of large integer columns, then :func:`_sums`."""
    out: list[tuple[Term, ...]] = []
    found: set[tuple[int, ...]] = set()  # the pairs whose reduced sums show atoms
    group = [c for c in cols.large_int[:_MAX_SHARE_COLUMNS] if min(x[:, c].min(), xp[:, c].min()) >= 0]
    for a, b in itertools.combinations(group, 2):
        for modulus in _share_moduli(x, xp, (a, b), declared):
            for sign in (1, -1):
                sx, sxp = (np.mod(v[:, a].astype(np.int64) + sign * v[:, b].astype(np.int64), modulus)
                           for v in (x, xp))
                values = _atom_values(np.concatenate([sx, sxp]).astype(float), modulus)
                if values.size:
                    found.add((a, b))
                out += _atom_terms(names[a], a, values, sx, sxp,
                                   lambda col, nm, vals, b=b, m=modulus, s=sign: Term(
                                       "share", col, nm, (b, names[b], s, m, tuple(int(v) for v in vals))))
    return out + _sums(x, xp, names, group, declared, found)


def _sums(x: np.ndarray, xp: np.ndarray, names: Sequence[str], group: Sequence[int],
          declared: Sequence[int], found: set[tuple[int, ...]]) -> list[tuple[Term, ...]]:
    """Atoms of the plain sums of pairs, and of sums of 3 and 4 columns, mod M and plain.

    A plain sum's atoms are judged against the width of its range (a sum of uniform
    shares spreads over it), a reduced one's against M. A plain sum is searched only
    where no reduced sum of the same members (``found``, for pairs) shows an atom: its
    atoms then only split the reduced ones' cells in parts, each rarer. Each sum is
    first screened on the first :data:`_SCREEN_ROWS` rows per input: only one that
    repeats a value there is counted on every row.
    """
    sets = list(itertools.combinations(group, 2))
    for size in (3, 4):
        sets += list(itertools.combinations(group[:_MAX_MULTI_COLUMNS], size))
    out: list[tuple[Term, ...]] = []
    for members in sets:
        # The reduced sums first (see above: a plain one then runs only where they find nothing).
        moduli = [0] if len(members) == 2 else [*_share_moduli(x, xp, members, declared), 0]
        first, others = members[0], tuple(members[1:])
        for modulus in moduli:
            if not modulus and members in found:
                continue
            # A plain sum's range from the columns' own (uniform shares spread over all of it).
            support = modulus or int(sum(max(x[:, c].max(), xp[:, c].max()) - min(x[:, c].min(), xp[:, c].min())
                                         for c in members) + 1)
            screen = np.concatenate([_column_sum(v[:_SCREEN_ROWS], members, modulus) for v in (x, xp)]).astype(float)
            if _atom_values(screen, support, _SCREEN_MIN).size == 0:
                continue
            sx, sxp = _column_sum(x, members, modulus), _column_sum(xp, members, modulus)
            values = _atom_values(np.concatenate([sx, sxp]).astype(float), support).astype(np.int64)
            if values.size:
                found.add(members)
            out += _atom_terms(names[first], first, values, sx, sxp,
                               lambda col, nm, vals, o=others, m=modulus: Term(
                                   "sum", col, nm, (o, tuple(names[c] for c in o), m, tuple(int(v) for v in vals))))
    return out


def _magnitudes(x: np.ndarray, xp: np.ndarray, names: Sequence[str], cols: _Columns, delta: float,
                confidence: float, n_estimate: int) -> list[tuple[Term, ...]]:
    """``|x - c| >= cut`` for c = 0 and the median, the cut chosen on these rows.

    A median within :data:`_CENTRE_SAME` interquartile ranges of 0 is not searched
    again: its events are those of c = 0 but for a sliver of rows (the search is the
    family's main cost, some 0.1 s a column).
    """
    out: list[tuple[Term, ...]] = []
    for c in cols.continuous[:_MAX_MAGNITUDES]:
        pooled = np.concatenate([x[:, c], xp[:, c]])
        low, median, high = (float(v) for v in np.quantile(pooled, (0.25, 0.5, 0.75)))
        for centre in [0.0] + ([median] if abs(median) > _CENTRE_SAME * (high - low) else []):
            cut, _ = _select_threshold(np.abs(x[:, c] - centre), np.abs(xp[:, c] - centre), delta, confidence,
                                       n_estimate)
            out.append((Term("far", c, names[c], (centre, cut)),))
    return out


# --------------------------------------------------------------------------------------
# The proposal


def _forecast(hits_x: np.ndarray, n_x: int, hits_xp: np.ndarray, n_xp: int, delta: float, confidence: float,
              n_estimate: int) -> np.ndarray:
    """The bound each event would give on ``n_estimate`` trials, its rates taken one standard
    error against it (and the denominator's count one more): a rare event (an atom no x'
    row shows) is judged at the size where its bound will be computed, not at the few
    rows that rank it, yet an event of a handful of rows does not win on them. (Arrays of
    counts, one bound each: every candidate's forecast in one call.)"""
    hits_x, hits_xp = np.asarray(hits_x, dtype=float), np.asarray(hits_xp, dtype=float)
    p = np.maximum(hits_x - np.sqrt(hits_x), 0.0) / n_x
    q = (hits_xp + np.sqrt(hits_xp) + 1.0) / n_xp
    return _selection_criterion(np.minimum(p, 1.0) * n_estimate, n_estimate, np.minimum(q, 1.0) * n_estimate,
                                n_estimate, delta, (1.0 - confidence) / 2)


def _bit_counts(candidates: list[tuple[str, tuple[Term, ...]]], x: np.ndarray,
                xp: np.ndarray) -> dict[int, list[int]]:
    """The rows with each single-bit candidate's bit set, under x and x', keyed by its index:
    all 64 bits of a column are counted in one pass (its words unpacked to bits), not one
    pass per bit.

    >>> v = np.array([[5.0], [4.0]])
    >>> _bit_counts([("bits", (Term("bit", 0, "y", 0),)), ("bits", (Term("bit", 0, "y", 2),))], v, v)
    {0: [1, 1], 1: [2, 2]}
    """
    wanted: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for k, (_, terms) in enumerate(candidates):
        if len(terms) == 1 and terms[0].kind in ("bit", "fbit"):
            wanted.setdefault((terms[0].kind, terms[0].column), []).append((k, int(terms[0].arg)))
    out: dict[int, list[int]] = {}
    for (kind, column), bits in wanted.items():
        per_side = []
        for v in (x, xp):
            c = np.ascontiguousarray(v[:, column], dtype=float)
            words = c.astype(np.int64).view(np.uint64) if kind == "bit" else c.view(np.uint64)
            # Little-endian bit order: bit j of the word is bit (j % 8) of byte j // 8.
            per_side.append(np.unpackbits(words.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1,
                                          bitorder="little").sum(axis=0, dtype=np.int64))
        for k, bit in bits:
            out[k] = [int(per_side[0][bit]), int(per_side[1][bit])]
    return out


def _best(candidates: list[tuple[str, tuple[Term, ...]]], x: np.ndarray, xp: np.ndarray, delta: float,
          confidence: float, n_estimate: int, keep: int) -> list[tuple[float, DerivedEvent]]:
    """The ``keep`` best oriented events of the candidates on these rows, by :func:`_forecast`
    (the first of equals: the order the families are built in)."""
    if not candidates:
        return []
    ones = _bit_counts(candidates, x, xp)
    counts = np.array([ones[k] if k in ones else
                       [np.count_nonzero(DerivedEvent(terms, 1, family).feature(v)) for v in (x, xp)]
                       for k, (family, terms) in enumerate(candidates)])
    # Each candidate's two sides, feature == 1 then feature == 0.
    hits_x, hits_xp = (np.column_stack([counts[:, k], len(v) - counts[:, k]]).ravel() for k, v in enumerate((x, xp)))
    scores = _forecast(hits_x, len(x), hits_xp, len(xp), delta, confidence, n_estimate)
    order = np.argsort(-scores, kind="stable")[:keep]
    return [(float(scores[k]), DerivedEvent(candidates[k // 2][1], 1 - k % 2, candidates[k // 2][0])) for k in order]


def propose_derived(x: np.ndarray, xp: np.ndarray, columns: Sequence[str], distinct: Sequence[int], *,
                    delta: float, confidence: float, n_estimate: int, moduli: Sequence[int] = (),
                    families: Sequence[str] = FAMILIES) -> DerivedEvent | None:
    """The best derived event of the proposal half (``x``, ``xp``), or None if there is no candidate.

    The first part of each input's rows builds the candidates of ``families`` and ranks
    them; the second picks among the top :data:`_TOP` by :func:`_forecast`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> def draw(bit, n=4000):
    ...     y = rng.integers(0, 1 << 16, n)
    ...     y = np.where(rng.random(n) < 0.8, (y & ~8) | (bit << 3), y)
    ...     return y[:, None].astype(float)
    >>> e = propose_derived(draw(1), draw(0), ["y"], [0], delta=0.0, confidence=0.95, n_estimate=8000)
    >>> e.describe(), e.family
    ('bit 3 of y == 1', 'bits')
    """
    # Column by column from here on: each column contiguous (a view's rows are; a column of
    # them is a strided walk through every row's cache line).
    (fit_x, cut_x), (fit_xp, cut_xp) = _halves(np.asfortranarray(x)), _halves(np.asfortranarray(xp))
    pooled = np.concatenate([fit_x.T, fit_xp.T], axis=1).T  # (column-major, in one copy)
    cols = _Columns.of(pooled, distinct)
    names = list(columns)
    build = {"atoms": lambda: _atoms(fit_x, fit_xp, names, cols),
             "bits": lambda: [(t,) for t in _bit_terms(pooled, names, cols)],
             "parities": lambda: _parities(*_parity_bases(pooled, names, cols), fit_x, fit_xp),
             "shares": lambda: _shares(fit_x, fit_xp, names, cols, moduli),
             "magnitudes": lambda: _magnitudes(fit_x, fit_xp, names, cols, delta, confidence, n_estimate)}
    candidates = [(family, terms) for family in FAMILIES if family in families for terms in build[family]()]
    if not candidates:
        return None
    top = _best(candidates, fit_x, fit_xp, delta, confidence, n_estimate, _TOP)
    final = _best([(e.family, e.terms) for _, e in top], cut_x, cut_xp, delta, confidence, n_estimate, 1)
    return final[0][1] if final and math.isfinite(final[0][0]) else None
