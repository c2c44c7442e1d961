"""Message-bound analysis of a protocol's schedule (Beimel–Nissim–Omri, Section 4).

A party adjacent to at most t active channels is *lonely*: its neighbours form a
coalition of size <= t that sees every message it sends and receives, so against that
coalition the party is in the local model, where SUM needs error Omega(sqrt(n)/eps).
A protocol with fewer than n(t+1)/4 messages has at least n/2 lonely parties (each
message touches two parties, so fewer than n(t+1)/2 channel ends are shared by n
parties). Chor and Kushilevitz show that a t-private modular sum needs about n(t+1)/2
messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privsim.network.schedule import CURATOR, Schedule

__all__ = ["BoundsReport", "analyze_schedule"]


@dataclass(frozen=True)
class BoundsReport:
    """What a schedule implies for coalitions of size t.

    Attributes
    ----------
    n, t, messages, rounds:
        The setting and the schedule's counts per run.
    quarter_bound, half_bound:
        n(t+1)/4 (below it, at least n/2 parties are lonely) and n(t+1)/2 (the
        Chor–Kushilevitz message count of a t-private sum).
    popular, lonely:
        Parties with >= t+1 active channels, and the rest (the curator is listed too).
    lonely_coalitions:
        For each lonely party among 0..n-1, the coalition of its neighbours (size <= t):
        it sees everything the party sends and receives.

    Examples
    --------
    >>> analyze_schedule(Schedule.star_to(4), t=1).to_dict()["lonely_count"]
    4
    """

    n: int
    t: int
    messages: int
    rounds: int
    quarter_bound: float
    half_bound: float
    popular: list[int | str]
    lonely: list[int | str]
    lonely_coalitions: dict[int, list[int | str]]

    @property
    def below_quarter(self) -> bool:
        """Whether the schedule sends fewer than n(t+1)/4 messages."""
        return self.messages < self.quarter_bound

    def to_dict(self, limit: int = 20) -> dict[str, Any]:
        """JSON-ready summary (lists cut to ``limit`` entries; counts are complete)."""
        return {
            "n": self.n, "t": self.t, "messages": self.messages, "rounds": self.rounds,
            "quarter_bound": self.quarter_bound, "half_bound": self.half_bound,
            "below_quarter_bound": self.below_quarter,
            "messages_over_half_bound": self.messages / self.half_bound,
            "popular_count": len(self.popular), "lonely_count": len(self.lonely),
            "popular": [str(p) for p in self.popular[:limit]],
            "lonely": [str(p) for p in self.lonely[:limit]],
            "lonely_coalitions": {str(p): [str(m) for m in c]
                                  for p, c in list(self.lonely_coalitions.items())[:limit]},
        }


def analyze_schedule(schedule: Schedule, t: int) -> BoundsReport:
    """Popular and lonely parties of ``schedule`` for coalitions of size ``t``.

    >>> s = Schedule.star_to(8)          # randomized response: everyone -> C
    >>> r = analyze_schedule(s, t=2)
    >>> r.messages, r.quarter_bound, r.below_quarter, r.lonely_coalitions[0]
    (8, 6.0, False, ['C'])
    """
    n = schedule.n
    lonely = schedule.lonely(t)
    return BoundsReport(
        n=n, t=t, messages=schedule.messages, rounds=schedule.rounds,
        quarter_bound=n * (t + 1) / 4, half_bound=n * (t + 1) / 2,
        popular=schedule.popular(t), lonely=lonely,
        lonely_coalitions={p: schedule.neighbours(p) for p in lonely if p != CURATOR},  # type: ignore[misc]
    )
