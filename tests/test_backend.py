"""The in-process engine on asyncio gives the trio engine's results, errors and JSON."""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest
from helpers_protocols import Gossip, Ring

import privsim
from privsim import DeadlockError, PartyFailure, Protocol, Schedule, ScheduleViolation
from privsim.cli import main
from privsim.errors import ParameterError
from privsim.network.backend import AsyncioParkingLot

SCENARIOS = [p for p in sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))
             if tomllib.loads(p.read_text())["protocol"] != "headline"]


def reduced(path):
    """Flags that shrink a scenario: 8 trials, at most 16 steps, and at most 16 parties unless
    its inputs or parameters are written for its n."""
    data = tomllib.loads(path.read_text())
    args = ["--trials", "8"]
    if not str(data.get("inputs", "")).startswith("count:") and not {"kappa", "tau"} & set(data.get("params", {})):
        args += ["--n", str(min(data["n"], 16))]
    if "T" in data.get("params", {}):
        args += ["--param", f"T={min(data['params']['T'], 16)}"]
    return args


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_asyncio_prints_the_same_json_as_trio(path, capsys):
    out = {}
    for backend in ("trio", "asyncio"):
        main(["run", str(path), *reduced(path), "--json", "--backend", backend])
        out[backend] = json.loads(capsys.readouterr().out)
    assert out["asyncio"] == out["trio"]


def test_transcript_and_views_are_identical():
    kw = dict(trials=5, seed=11)
    a = privsim.simulate(Gossip(), np.arange(6), **kw)
    b = privsim.simulate(Gossip(), np.arange(6), backend="asyncio", **kw)
    assert np.array_equal(a.view("C,1").to_array()[0], b.view("C,1").to_array()[0])
    assert [sorted(r) for r in a.transcript] == [sorted(r) for r in b.transcript]
    assert all(np.array_equal(a.outputs[p], b.outputs[p]) for p in a.outputs)


@pytest.mark.parametrize("mode, error, text", [
    ("skip", ScheduleViolation, "round 2: party 2 did not send its scheduled message to party 3"),
    ("extra", ScheduleViolation, "round 1: message off the schedule (round 1, sender 0, receiver 2)"),
    ("raise", PartyFailure, "party 3 failed in round 2: RuntimeError: boom"),
])
def test_errors_are_the_same_on_both_loops(mode, error, text):
    for backend in ("trio", "asyncio"):
        with pytest.raises(error) as info:
            privsim.simulate(Ring(mode=mode), np.arange(5), trials=2, seed=1, backend=backend)
        assert text in str(info.value), backend


class WaitsElsewhere(Protocol):
    """Party 1 waits on an asyncio event nobody sets: a deadlock the watchdog must name."""

    name = "test-waits-elsewhere"
    input_values = None

    def schedule(self, n, t):
        return Schedule(n, [[(i, (i + 1) % n) for i in range(n)]])

    async def party(self, ctx):
        if ctx.id == 1:
            await asyncio.Event().wait()
        ctx.send((ctx.id + 1) % ctx.n, ctx.input)
        await ctx.end_round()

    def estimate(self, outputs, n, t):
        return np.zeros(1)


def test_asyncio_watchdog_names_a_party_waiting_on_something_else():
    with pytest.raises(DeadlockError, match=r"round 1: party 1 never finished the round"):
        privsim.simulate(WaitsElsewhere(), np.arange(3), backend="asyncio")


def test_parking_lot_wakes_all_and_survives_a_cancelled_waiter():
    async def scenario():
        lot = AsyncioParkingLot()
        woken = []

        async def waiter(k):
            await lot.park()
            woken.append(k)

        tasks = [asyncio.ensure_future(waiter(k)) for k in range(3)]
        await asyncio.sleep(0)
        tasks[1].cancel()
        await asyncio.sleep(0)
        lot.unpark_all()
        await asyncio.gather(tasks[0], tasks[2])
        return sorted(woken), tasks[1].cancelled(), len(lot)

    assert asyncio.run(scenario()) == ([0, 2], True, 0)


def test_unknown_backend_is_refused():
    with pytest.raises(ParameterError, match="backend must be one of trio, asyncio"):
        privsim.simulate(Ring(), np.arange(3), backend="curio")
