"""A growable map from coordinate (an int in [0, k)) to a dense slot number, in numpy.

Mechanisms with k coordinates (k up to billions) keep per-coordinate state only for
coordinates that were touched. The map is an open-addressing hash table with linear
probing whose lookups and inserts are vectorized over a batch of keys, so a query of
10^5 coordinates costs a handful of numpy passes, not 10^5 dict operations; memory is
proportional to the number of keys stored, never to k. Keys are never deleted, which is
what keeps linear probing correct under batched inserts.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["SlotTable"]

_EMPTY = -1
_FIB = 0x9E3779B97F4A7C15  # 2^64 / golden ratio: Fibonacci (multiplicative) hashing
_MASK64 = (1 << 64) - 1


class SlotTable:
    """Map non-negative int64 keys to slots 0, 1, 2, ... in order of first insertion.

    Examples
    --------
    >>> table = SlotTable()
    >>> table.get_or_insert(np.array([40, 7, 40_000_000_000]))
    array([0, 1, 2])
    >>> table.lookup(np.array([7, 8])), table.lookup_one(40_000_000_000), len(table)
    (array([ 1, -1]), 2, 3)
    """

    __slots__ = ("_bits", "_keys", "_slots", "_size")

    def __init__(self) -> None:
        self._bits = 4
        self._keys = np.full(1 << self._bits, _EMPTY, dtype=np.int64)
        self._slots = np.empty(1 << self._bits, dtype=np.int64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """Bytes held by the table's arrays."""
        return int(self._keys.nbytes + self._slots.nbytes)

    # -- hashing ---------------------------------------------------------------------
    def _home(self, keys: NDArray[np.int64]) -> NDArray[np.int64]:
        prod = keys.astype(np.uint64) * np.uint64(_FIB)  # wraps mod 2^64, as intended
        return (prod >> np.uint64(64 - self._bits)).astype(np.int64)

    # -- vectorized ------------------------------------------------------------------
    def lookup(self, keys: NDArray[np.int64]) -> NDArray[np.int64]:
        """Slots of ``keys`` (-1 where a key is absent)."""
        out = np.full(keys.shape[0], -1, dtype=np.int64)
        idx = np.arange(keys.shape[0])
        pos = self._home(keys)
        wrap = (1 << self._bits) - 1
        while idx.size:
            found = self._keys[pos]
            hit = found == keys[idx]
            out[idx[hit]] = self._slots[pos[hit]]
            go_on = ~hit & (found != _EMPTY)
            idx, pos = idx[go_on], (pos[go_on] + 1) & wrap
        return out

    def get_or_insert(self, keys: NDArray[np.int64]) -> NDArray[np.int64]:
        """Slots of ``keys`` (distinct), giving absent keys the next free slot numbers."""
        slots = self.lookup(keys)
        missing = np.flatnonzero(slots < 0)
        if missing.size:
            slots[missing] = self._insert(keys[missing])
        return slots

    def _insert(self, keys: NDArray[np.int64]) -> NDArray[np.int64]:
        n = keys.shape[0]
        while 2 * (self._size + n) > (1 << self._bits):  # keep the load factor <= 1/2
            self._rehash(self._bits + 1)
        new = np.arange(self._size, self._size + n, dtype=np.int64)
        self._place(keys, new)
        self._size += n
        return new

    def _place(self, keys: NDArray[np.int64], slots: NDArray[np.int64]) -> None:
        idx = np.arange(keys.shape[0])
        pos = self._home(keys)
        wrap = (1 << self._bits) - 1
        while idx.size:
            free = np.flatnonzero(self._keys[pos] == _EMPTY)
            placed = np.zeros(idx.size, dtype=bool)
            if free.size:
                # Several keys may reach the same empty cell: the first one takes it and
                # the others probe on, exactly as if they had been inserted one by one.
                _, first = np.unique(pos[free], return_index=True)
                win = free[first]
                self._keys[pos[win]] = keys[idx[win]]
                self._slots[pos[win]] = slots[idx[win]]
                placed[win] = True
            idx, pos = idx[~placed], (pos[~placed] + 1) & wrap

    def _rehash(self, bits: int) -> None:
        used = self._keys != _EMPTY
        keys, slots = self._keys[used], self._slots[used]
        self._bits = bits
        self._keys = np.full(1 << bits, _EMPTY, dtype=np.int64)
        self._slots = np.empty(1 << bits, dtype=np.int64)
        self._place(keys, slots)

    # -- one key at a time (plain Python, for the scalar fast path) -------------------
    def lookup_one(self, key: int) -> int:
        """Slot of ``key`` or -1."""
        pos = ((key * _FIB) & _MASK64) >> (64 - self._bits)  # _home in Python ints
        wrap = (1 << self._bits) - 1
        while True:
            found = int(self._keys[pos])
            if found == key:
                return int(self._slots[pos])
            if found == _EMPTY:
                return -1
            pos = (pos + 1) & wrap

    def get_or_insert_one(self, key: int) -> int:
        """Slot of ``key``, inserting it if absent."""
        slot = self.lookup_one(key)
        if slot < 0:
            slot = int(self._insert(np.array([key], dtype=np.int64))[0])
        return slot
