"""A running sum passed from party to party, each adding its bit and Laplace noise."""

from privsim import CURATOR, Param, Privacy, Protocol, Schedule


class RelaySum(Protocol):
    """Party i receives the running sum in round i, adds x_i + Lap(1/eps) and passes it on."""

    name = "relay-sum"
    has_curator = True  # the curator "C" takes part (it has no input)
    epsilon = Param(1.0, gt=0, doc="privacy of each party's contribution")

    def schedule(self, n, t):
        # round i + 1: party i -> party i + 1; the last party sends to the curator
        return Schedule(n, [[(i, i + 1 if i + 1 < n else CURATOR)] for i in range(n)], curator=True)

    async def party(self, ctx):
        total = ctx.zeros()  # shape (trials,): every value carries the trial axis
        if ctx.id > 0:
            await ctx.idle(ctx.id - 1)  # rounds 1 .. i-1: nothing to send or receive
            total = (await ctx.end_round())[ctx.id - 1]  # round i: the running sum arrives
        to = ctx.id + 1 if ctx.id + 1 < ctx.n else CURATOR
        ctx.send(to, total + ctx.input + ctx.rng.laplace(0.0, 1.0 / self.epsilon))
        await ctx.end_round()  # the message goes out when this round ends

    async def curator(self, ctx):
        await ctx.idle(ctx.n - 1)
        ctx.output((await ctx.end_round())[ctx.n - 1])

    def estimate(self, outputs, n, t):
        return outputs[CURATOR]  # true_value defaults to the sum of the inputs

    def privacy(self, coalition, n, t):
        # x_j enters every later sum only as x_j + N_j: eps-DP towards any coalition
        return Privacy(self.epsilon)
