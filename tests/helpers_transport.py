"""A protocol whose party 1 fails in round 2 on request: it dies, hangs or raises (transport tests)."""

from __future__ import annotations

import os
import signal

import trio

from privsim import Param, Protocol, Schedule


class Relay(Protocol):
    """Three rounds around a ring of n parties; each party outputs the sum of what it received."""

    name = "test-relay"
    input_values = None
    fault = Param("none", type=str, choices=["none", "die", "hang", "raise", "no-output"],
                  doc="what party 1 does in round 2 (no-output: it returns without ctx.output)")

    def schedule(self, n, t):
        return Schedule(n, [[(i, (i + 1) % n) for i in range(n)] for _ in range(3)])

    async def party(self, ctx):
        total = ctx.input * 0
        for r in range(1, 4):
            if ctx.id == 1 and r == 2:
                if self.fault == "die":
                    os.kill(os.getpid(), signal.SIGKILL)
                elif self.fault == "hang":
                    await trio.sleep_forever()
                elif self.fault == "raise":
                    raise RuntimeError("boom")
            ctx.send((ctx.id + 1) % ctx.n, ctx.input + r)
            total = total + (await ctx.end_round())[(ctx.id - 1) % ctx.n]
        if not (ctx.id == 1 and self.fault == "no-output"):
            ctx.output(total)

    def estimate(self, outputs, n, t):
        return sum(outputs[i] for i in range(n))
