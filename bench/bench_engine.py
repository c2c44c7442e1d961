"""Engine benchmarks (issue 2): message delivery rate and randomized response vs plain numpy.

Every figure is measured in this process; ratios compare against a baseline run here too,
so they hold on any machine. Run: ``python bench/bench_engine.py`` (prints JSON).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import numpy as np

import privsim
from privsim import Protocol, Schedule
from privsim.protocols import RandomizedResponse


class AllToAll(Protocol):
    """One round in which each of n parties sends a small integer to every other party."""

    name = "bench-all-to-all"
    input_values = None

    def schedule(self, n: int, t: int) -> Schedule:
        return Schedule(n, [[(i, j) for i in range(n) for j in range(n) if i != j]])

    async def party(self, ctx: privsim.PartyContext) -> None:
        send, me, value = ctx.send, ctx.id, ctx.input
        for j in range(ctx.n):
            if j != me:
                send(j, value)
        await ctx.end_round()

    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return np.zeros(1)


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def message_rate(n: int = 1000) -> dict[str, float]:
    """All-to-all among n parties, one trial: messages per second through the whole engine."""
    proto = AllToAll()
    x = np.arange(n)
    proto.cached_schedule(n, n - 1)  # declared once per protocol and n, outside the timing
    msgs = n * (n - 1)
    engine = best_of(lambda: privsim.simulate(proto, x, trials=1, seed=1, record=False))

    def plain() -> None:  # the least a Python loop can do per message: append and file it
        boxes: list[dict] = [{} for _ in range(n)]
        for i in range(n):
            out = []
            for j in range(n):
                if j != i:
                    out.append((j, i))
            for j, v in out:
                boxes[j][i] = v

    base = best_of(plain)
    return {"messages_per_second": msgs / engine, "engine_vs_plain_python_loop": engine / base,
            "all_to_all_parties": n}


def rr_vs_numpy(n: int = 10_000, trials: int = 1000) -> dict[str, float]:
    """Randomized response through the engine vs plain numpy computing the same outputs."""
    eps = 1.0
    proto = RandomizedResponse(epsilon=eps)
    a = proto.a
    x = (np.arange(n) % 2).astype(np.int64)
    engine = best_of(lambda: privsim.simulate(proto, x, trials=trials, seed=1, record=False))

    def bulk() -> np.ndarray:  # one stream, one (trials, n) draw: the fastest numpy can do
        rng = np.random.default_rng(1)
        keep = rng.random((trials, n)) < 0.5 + a
        return (keep == (x == 1)).sum(axis=1)

    def per_party() -> np.ndarray:  # the engine's exact outputs, computed with numpy directly
        from privsim.parties.rng import StreamSeeder, block_range

        seeder = StreamSeeder(1, n, block_range(trials))
        k = np.zeros(trials, dtype=np.int64)
        for i in range(n):
            keep = seeder.rng(i, trials, record=False).random() < 0.5 + a
            k += keep == (x[i] == 1)
        return k

    same = np.array_equal(per_party(), privsim.simulate(proto, x, trials=trials, seed=1, record=False).outputs["C"])
    t_bulk, t_pp = best_of(bulk), best_of(per_party)
    return {"rr_engine_seconds": engine, "rr_engine_vs_numpy_bulk": engine / t_bulk,
            "rr_engine_vs_numpy_same_outputs": engine / t_pp, "rr_same_outputs_bit_for_bit": float(same),
            "rr_parties": n, "rr_trials": trials}


def main() -> dict[str, float]:
    """Run the engine benchmarks; returns named figures."""
    return {**message_rate(), **rr_vs_numpy()}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
