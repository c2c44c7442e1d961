"""Message-bound analysis: n(t+1)/4, n(t+1)/2, popular and lonely parties."""

from __future__ import annotations

import json

from privsim import Schedule
from privsim.analysis.bounds import analyze_schedule
from privsim.cli import main


def test_randomized_response_leaves_every_party_lonely():
    r = analyze_schedule(Schedule.star_to(10), t=3)
    assert r.messages == 10 and r.quarter_bound == 10 and r.half_bound == 20
    assert r.lonely == [*range(10)] and r.popular == ["C"]
    assert all(c == ["C"] for c in r.lonely_coalitions.values())


def test_below_quarter_bound_means_half_the_parties_are_lonely():
    # a ring: 2 channels per party, n messages; with t = 3, n(t+1)/4 = n
    n, t = 12, 3
    ring = Schedule(n, [[(i, (i + 1) % n) for i in range(n)][: n - 1]])
    r = analyze_schedule(ring, t)
    assert r.below_quarter
    assert len(r.lonely) >= n / 2
    for p, coalition in r.lonely_coalitions.items():
        assert len(coalition) <= t and p not in coalition
        assert set(coalition) == set(ring.neighbours(p))


def test_popular_threshold_is_t_plus_one_channels():
    s = Schedule(5, [[(0, 1), (0, 2), (0, 3)]])
    assert analyze_schedule(s, 2).popular == [0]
    assert analyze_schedule(s, 3).popular == []


def test_bounds_cli(capsys):
    main(["bounds", "--protocol", "randomized-response-distributed", "--n", "8", "--t", "2", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert d["messages"] == 14 and d["quarter_bound"] == 6 and d["popular"] == ["0"]
    assert d["lonely_coalitions"]["5"] == ["0"]
