"""Small protocols used by the tests to exercise the network and the simulator."""

from __future__ import annotations

import numpy as np
import trio

from privsim import CURATOR, Param, Privacy, Protocol, Schedule


class Ring(Protocol):
    """Each party sends its input to the next one around a ring, for `laps` rounds;
    then everyone outputs the sum of what it received plus a random draw."""

    name = "test-ring"
    input_values = None
    laps = Param(2, type=int, ge=1, doc="rounds")
    mode = Param("ok", type=str, choices=["ok", "skip", "extra", "twice", "raise", "hang", "early-exit"])

    def schedule(self, n, t):
        return Schedule(n, [[(i, (i + 1) % n) for i in range(n)] for _ in range(self.laps)])

    async def party(self, ctx):
        total = np.zeros(ctx.trials)
        noise = ctx.rng.normal(size=())
        for r in range(1, self.laps + 1):
            if self.mode == "early-exit" and ctx.id == 1 and r == 2:
                return
            if not (self.mode == "skip" and ctx.id == 2 and r == 2):
                ctx.send((ctx.id + 1) % ctx.n, ctx.input + r)
            if self.mode == "extra" and ctx.id == 0 and r == 1:
                ctx.send(2, ctx.input)
            if self.mode == "twice" and ctx.id == 3 and r == 1:
                ctx.send(4 % ctx.n, ctx.input)
            if self.mode == "raise" and ctx.id == 3 and r == 2:
                raise RuntimeError("boom")
            if self.mode == "hang" and ctx.id == 1 and r == 2:
                await trio.sleep_forever()
            inbox = await ctx.end_round()
            total = total + inbox[(ctx.id - 1) % ctx.n]
        ctx.output(total + noise)

    def estimate(self, outputs, n, t):
        return sum(outputs.get(i, 0) for i in range(n))

    def privacy(self, coalition, n, t):
        return Privacy(1.0) if len(coalition) <= t else None


class Gossip(Protocol):
    """All-to-all exchange among n parties for one round, plus a curator collecting sums."""

    name = "test-gossip"
    has_curator = True
    input_values = None

    def schedule(self, n, t):
        r1 = [(i, j) for i in range(n) for j in range(n) if i != j]
        r2 = [(i, CURATOR) for i in range(n)]
        return Schedule(n, [r1, r2], curator=True)

    async def party(self, ctx):
        for j in range(ctx.n):
            if j != ctx.id:
                ctx.send(j, ctx.input)
        inbox = await ctx.end_round()
        ctx.send(CURATOR, inbox.total() + ctx.input if inbox else ctx.input)
        await ctx.end_round()

    async def curator(self, ctx):
        await ctx.end_round()
        inbox = await ctx.end_round()
        ctx.output(inbox.total())

    def estimate(self, outputs, n, t):
        return outputs[CURATOR] / n
