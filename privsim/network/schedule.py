"""The oblivious communication pattern of a protocol: which channels carry a message in which round.

A protocol declares its :class:`Schedule` from its parameters alone, before it runs
(Beimel–Nissim–Omri, Section 2: oblivious protocols). The network then enforces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from privsim.errors import ParameterError

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["CURATOR", "PUBLIC", "PUBLIC_COALITION", "id_key", "Schedule", "party_ids", "parse_party",
           "parse_coalition", "sort_ids"]

#: The id of the curator role (the paper's C); parties are the ints 0..n-1 (p_1 is party 0).
CURATOR = "C"
#: The outside observer: a coalition that sees exactly what the protocol publishes.
PUBLIC = "public"
#: How :func:`parse_coalition` returns it.
PUBLIC_COALITION: tuple[str] = (PUBLIC,)

def id_key(p: int | str) -> tuple[int, int]:
    """Sort key of party ids: parties in increasing order, the curator last.

    >>> sorted(["C", 1, 0], key=id_key)
    [0, 1, 'C']
    """
    return (1, 0) if p == CURATOR else (0, p)  # type: ignore[return-value]


def sort_ids(ids: Iterable[int | str]) -> list[int | str]:
    """Sort party ids canonically: 0, 1, ..., n-1, then ``"C"``.

    >>> sort_ids(["C", 2, 0])
    [0, 2, 'C']
    """
    return sorted(ids, key=id_key)


def party_ids(n: int, curator: bool) -> list[int | str]:
    """All party ids of a protocol with ``n`` parties (and the curator if it has one).

    >>> party_ids(3, curator=True)
    [0, 1, 2, 'C']
    """
    return [*range(n), CURATOR] if curator else list(range(n))


def parse_party(text: str | int, n: int, curator: bool, field: str = "coalition") -> int | str:
    """Parse one party id (``"3"``, ``3`` or ``"C"``) and check that it exists.

    Errors name ``field`` (the option the id came from).

    >>> parse_party("C", 4, curator=True)
    'C'
    >>> parse_party("2", 4, curator=False)
    2
    """
    allowed = f"allowed: 0..{n - 1}" + (" or C" if curator else "")
    if isinstance(text, str):
        text = text.strip()
        if text.upper() == CURATOR:
            if not curator:
                raise ParameterError(f"{field}: this protocol has no curator C; party ids are 0..n-1")
            return CURATOR
        try:
            value = int(text)
        except ValueError:
            raise ParameterError(f"{field}: {text!r} is not a party id ({allowed})") from None
    else:
        value = int(text)
    if not 0 <= value < n:
        raise ParameterError(f"{field}: party {value} does not exist ({allowed})")
    return value


def parse_coalition(text: str | Iterable[int | str] | None, n: int, curator: bool) -> tuple[int | str, ...]:
    """Parse a coalition written ``"0,1,2"``, ``"C"`` or ``"C,0"`` (or given as ids).

    Returns the members in canonical order, without duplicates; ``"public"`` (the outside
    observer, who sees only what the protocol publishes) is :data:`PUBLIC_COALITION`.

    >>> parse_coalition("C,1,0", 4, curator=True), parse_coalition("public", 4, curator=True)
    ((0, 1, 'C'), ('public',))
    """
    if text is None:
        return ()
    items = [s for s in text.split(",") if s.strip()] if isinstance(text, str) else list(text)
    if any(isinstance(s, str) and s.strip().lower() == PUBLIC for s in items):
        if len(items) > 1:
            raise ParameterError("coalition: public (the outside observer) cannot be combined with party ids")
        return PUBLIC_COALITION
    return tuple(sort_ids({parse_party(s, n, curator) for s in items}))


#: :meth:`Schedule.receivers` reads a round given as arrays off its codes for this many
#: senders, then builds the round's sender -> receivers map (every party asking, per party).
_LOOKUPS = 256


class Schedule:
    """The exact set of (round, sender, receiver) triples of an oblivious protocol.

    Rounds are numbered from 1. In each round a sender sends at most one message to each
    receiver; the network rejects anything else.

    Parameters
    ----------
    n:
        Number of parties (ids 0..n-1).
    rounds:
        One sequence of ``(sender, receiver)`` pairs per round, or a pair of int arrays
        ``(senders, receivers)`` of party ids (the fast form for large n). A round may be empty.
    curator:
        Whether the curator ``"C"`` takes part.

    Examples
    --------
    >>> s = Schedule(3, [[(0, "C"), (1, "C"), (2, "C")]], curator=True)
    >>> s.messages, s.rounds
    (3, 1)
    >>> s.lonely(t=1)
    [0, 1, 2]
    """

    def __init__(self, n: int, rounds: Sequence[Iterable[tuple[int | str, int | str]]], *,
                 curator: bool = False) -> None:
        self.n = int(n)
        self.curator = bool(curator)
        ids = set(party_ids(self.n, self.curator))
        # Per round sender -> receivers; None for a round given as arrays until it is asked
        # for (its codes are enough to check a cohort, and the map is 10^5 lists at n = 10^5).
        self._rounds: list[dict[int | str, list[int | str]] | None] = []
        self._codes: dict[int, np.ndarray] = {}  # round -> sorted sender (n + 1) + receiver codes
        self._member_codes: dict[tuple, np.ndarray] = {}
        self._lookups: dict[int, int] = {}  # round -> receivers() read off its codes
        for r, pairs in enumerate(rounds, start=1):
            if isinstance(pairs, tuple) and len(pairs) == 2 and all(isinstance(a, np.ndarray) for a in pairs):
                self._codes[r] = self._from_arrays(r, *pairs)
                self._rounds.append(None)
                continue
            out: dict[int | str, set[int | str]] = {}
            for s, d in pairs:
                if s not in ids or d not in ids:
                    raise ParameterError(f"schedule: round {r} names a party that does not exist ({s} -> {d})")
                if s == d:
                    raise ParameterError(f"schedule: round {r} has a message from party {s} to itself")
                out.setdefault(s, set()).add(d)
            self._rounds.append({s: sort_ids(out[s]) for s in sort_ids(out)})

    def _from_arrays(self, r: int, senders: np.ndarray, receivers: np.ndarray) -> np.ndarray:
        """Round ``r``'s pairs checked, as sorted distinct codes ``sender * (n + 1) + receiver``."""
        n = self.n
        s, d = np.asarray(senders, dtype=np.int64).ravel(), np.asarray(receivers, dtype=np.int64).ravel()
        if s.shape != d.shape:
            raise ParameterError(f"schedule: round {r} has {s.size} senders and {d.size} receivers")
        bad = (s < 0) | (s >= n) | (d < 0) | (d >= n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ParameterError(f"schedule: round {r} names a party that does not exist ({s[i]} -> {d[i]})")
        if (s == d).any():
            raise ParameterError(f"schedule: round {r} has a message from party {s[s == d][0]} to itself")
        codes = np.sort(s * (n + 1) + d)  # already sorted when built in order: the sort is then one pass
        return codes[np.concatenate(([True], np.diff(codes) != 0))] if codes.size else codes  # a pair once

    def _round_map(self, r: int) -> dict[int | str, list[int | str]]:
        """Round ``r``'s sender -> receivers (built from its codes on first use)."""
        out = self._rounds[r - 1]
        if out is None:
            out = self._rounds[r - 1] = self._map_of_codes(self._codes[r])
        return out

    def _round_size(self, r: int) -> int:
        """The number of messages of round ``r``."""
        out = self._rounds[r - 1]
        return int(self._codes[r].size) if out is None else sum(len(v) for v in out.values())

    def _map_of_codes(self, codes: np.ndarray) -> dict[int | str, list[int | str]]:
        """Sender -> receivers of sorted codes (senders ascending, each one's receivers ascending)."""
        n = self.n
        if not codes.size:
            return {}
        first, last = codes // (n + 1), (codes % (n + 1)).tolist()
        starts = [0, *(np.flatnonzero(np.diff(first)) + 1).tolist(), len(last)]
        return {p: last[a:b] for p, a, b in zip(first[starts[:-1]].tolist(), starts[:-1], starts[1:])}

    def pair_codes(self, round: int, senders: np.ndarray) -> np.ndarray:
        """The scheduled messages of ``senders`` (party ids, ascending) in ``round``, as sorted
        codes ``sender * (n + 1) + receiver`` (the curator's code is ``n``); cached.

        >>> Schedule(3, [[(0, 1), (0, 2), (1, 2), (2, 0)]]).pair_codes(1, np.array([0, 1])).tolist()
        [1, 2, 6]
        """
        key = (round, senders.tobytes())
        got = self._member_codes.get(key)
        if got is None:
            codes = self._codes.get(round)
            if codes is None:
                n = self.n
                codes = self._codes[round] = np.sort(np.array(
                    [p * (n + 1) + (n if d == CURATOR else d) for p, ds in self.senders_in(round).items()
                     if p != CURATOR for d in ds], dtype=np.int64))
            got = self._member_codes[key] = codes[np.isin(codes // (self.n + 1), senders)]
        return got

    @classmethod
    def star_to(cls, n: int, hub: int | str = CURATOR, *, round: int = 1,
                curator: bool | None = None) -> Schedule:
        """Every party other than ``hub`` sends one message to ``hub`` in ``round``.

        >>> Schedule.star_to(4).messages
        4
        """
        curator = (hub == CURATOR) if curator is None else curator
        pairs = [(p, hub) for p in party_ids(n, curator) if p != hub]
        return cls(n, [[] for _ in range(round - 1)] + [pairs], curator=curator)

    # ------------------------------------------------------------------ queries
    @cached_property
    def rounds(self) -> int:
        """Number of rounds (the last round with a message)."""
        return max((r for r in range(1, len(self._rounds) + 1) if self._round_size(r)), default=0)

    @cached_property
    def messages(self) -> int:
        """Messages per run."""
        return sum(self._round_size(r) for r in range(1, len(self._rounds) + 1))

    def receivers(self, round: int, sender: int | str) -> list[int | str]:
        """The receivers ``sender`` must send to in ``round``, in canonical order."""
        if not 1 <= round <= len(self._rounds):
            return []
        asked = self._lookups.get(round, 0)
        if self._rounds[round - 1] is None and asked < _LOOKUPS:
            # A few senders asked (the own-task parties beside cohorts): read off the codes.
            self._lookups[round] = asked + 1
            if isinstance(sender, str):
                return []  # a round given as arrays has no curator
            codes, base = self._codes[round], sender * (self.n + 1)
            lo, hi = np.searchsorted(codes, (base, base + self.n + 1)).tolist()
            return (codes[lo:hi] - base).tolist()
        return self._round_map(round).get(sender, [])

    def senders_in(self, round: int) -> dict[int | str, list[int | str]]:
        """Mapping sender -> receivers for one round (canonical order)."""
        if not 1 <= round <= len(self._rounds):
            return {}
        return self._round_map(round)

    def triples(self) -> Iterator[tuple[int, int | str, int | str]]:
        """All (round, sender, receiver) triples, in round, sender, receiver order."""
        for r in range(1, len(self._rounds) + 1):
            for s, ds in self._round_map(r).items():
                for d in ds:
                    yield (r, s, d)

    def messages_per_round(self) -> list[int]:
        """Message count of each round 1..rounds."""
        return [self._round_size(r) for r in range(1, self.rounds + 1)]

    @cached_property
    def _graph(self) -> nx.Graph:
        import networkx as nx  # on use: a party process never builds the graph (see neighbours)

        g = nx.Graph()
        g.add_nodes_from(party_ids(self.n, self.curator))
        g.add_edges_from((s, d) for _, s, d in self.triples())
        return g

    def graph(self) -> nx.Graph:
        """The undirected graph of active channels (a copy; nodes are all party ids)."""
        return self._graph.copy()

    def degree(self, party: int | str) -> int:
        """Number of active channels adjacent to ``party``."""
        return int(self._graph.degree(party))

    def popular(self, t: int) -> list[int | str]:
        """Parties adjacent to at least t+1 active channels (Beimel–Nissim–Omri, Section 2)."""
        return [p for p in sort_ids(self._graph.nodes) if self._graph.degree(p) >= t + 1]

    def lonely(self, t: int) -> list[int | str]:
        """Parties adjacent to at most t active channels: their neighbours, a coalition of
        size <= t, see everything they send and receive."""
        return [p for p in sort_ids(self._graph.nodes) if self._graph.degree(p) <= t]

    def neighbours(self, party: int | str) -> list[int | str]:
        """The parties sharing an active channel with ``party``, in canonical order.

        Read off the rounds unless the graph is built already: a party process asks this
        before its first round, and need not import networkx for it.

        >>> s = Schedule(3, [[(0, 1)], [(2, 0), (1, 2)]])
        >>> s.neighbours(0), s.neighbours(1), s.neighbours(2)
        ([1, 2], [0, 2], [0, 1])
        """
        if "_graph" in self.__dict__:
            return sort_ids(self._graph.neighbors(party))
        if party not in party_ids(self.n, self.curator):
            raise ParameterError(f"schedule: party {party!r} does not exist")
        return sort_ids({d if s == party else s for _, s, d in self.triples() if party in (s, d)})

    def __repr__(self) -> str:
        return (f"Schedule(n={self.n}, curator={self.curator}, rounds={self.rounds}, "
                f"messages={self.messages})")
