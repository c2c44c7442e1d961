"""SecAgg (Bonawitz et al., CCS 2017) and SecAgg+ (Bell et al., CCS 2020), with dropouts.

The secure sum that federated learning runs: clients 0..n-1 and a server ``C`` (the
curator role). Client u holds an integer x_u in [0, max_input] and adds its share of the
distributed noise (``noise=``: none, discrete-gaussian, skellam, discrete-laplace: the
integer families, exact in Z_q). The server learns the sum over the clients that sent
their masked input, exactly in Z_q, and nothing else (semi-honest, up to t clients).

Stages, as published (r = t + 1 is the Shamir threshold)
--------------------------------------------------------
1. **advertise-keys** (round 1): u -> C its DH public key g^{a_u}.
2. (round 2) C -> u the public keys of u's neighbours (-1 for a key that never came).
3. **share-keys** (round 3): u -> v, for every neighbour v that advertised, Shamir shares
   (threshold r, among u and its neighbours) of its secret key a_u and of its self-mask
   seed b_u. The deployed protocol relays these encrypted through the server; privsim
   sends them on the papers' private channel u -> v (see
   :mod:`privsim.mechanisms.secagg_crypto` for the substitution), one message per share.
4. **masked-input** (round 4): u -> C y_u = x_u + N_u + PRG(b_u) + sum_{v in U2(u)}
   sign(u, v) PRG(s_uv) mod q, with s_uv = g^{a_u a_v}, sign +1 for u < v, -1 for u > v,
   U2(u) the neighbours whose shares u received; with y_u, the list U2(u) (which the
   relaying server sees in the deployed protocol).
5. **consistency-check** (SecAgg only, rounds 5-7): C -> u the set U3 of clients whose
   masked input came; u -> C its signature on U3 (an ideal signature: the value 1);
   C -> u the set U4 of clients that signed.
6. **unmasking** (last round): C -> u the set U3 (SecAgg+; SecAgg sent it in stage 5);
   u -> C, for each owner w among u and its neighbours, its share of b_w if w is in U3,
   else its share of a_w. The server reconstructs b_w for the survivors, a_w for those
   that shared keys but sent no masked input, and removes every mask.

SecAgg uses the complete graph; SecAgg+ the Harary graph H(n, k) (every client joined to
the k/2 nearest on each side of a ring), relabelled by a random permutation drawn from
``graph_seed``: a k-connected, k-regular graph, so removing fewer than k clients leaves
it connected. k comes from :func:`choose_k` (the paper's failure conditions).

Message count (n clients, SecAgg+ degree k; SecAgg: k = n - 1)
-------------------------------------------------------------
SecAgg: n (keys) + n (keys back) + n(n-1) (shares) + n (masked) + 3n (consistency) + n
(unmasking) = n(n-1) + 7n: 4480 at n = 64, 67072 at n = 256 (15x).
SecAgg+: n + n + nk + n + n + n = n(k + 5).

Dropouts: absences the network records
--------------------------------------
``dropout`` is ``"0"`` (none), a fraction f (each client independently, in each trial,
drops with probability f, at a stage drawn uniformly among the stages, from its own
random stream), or a fixed list ``"3@masked-input,5@unmasking"`` (a client and the stage
at which it stops, in every trial). A client that stops at a stage sends nothing from
that stage on: the schedule stays oblivious (the declared triples are unchanged) and
every message it would have sent travels as the absence marker -1 (all entries -1),
which the receiver, and a coalition's view, sees. The result's ``absent_messages`` is
the mean number of absent messages per run. A server that has fewer than r of what it
needs at any stage aborts with one line naming the stage and the trial, and the run
produces no output.

Privacy (the claim travels with the calibration: :meth:`SecAgg.privacy`)
------------------------------------------------------------------------
The server learns b_w for every surviving w (it must, to unmask), so what protects a
survivor's input is its pairwise masks with honest neighbours. A coalition T (the server
and some clients) *isolates* an honest client u when T holds every neighbour of u (it
then knows every s_uv and, with b_u, sees x_u + N_u) or at least r of u's share holders
(it reconstructs a_u itself). If T isolates nobody and holds fewer than k clients (so
the honest clients stay connected), its view depends on the honest inputs only through
the sum of the honest survivors' x_u + N_u (Bonawitz et al. Thm 6.3; Bell et al. Thm
3.6), and the claim is the noise family's for the honest survivors' shares. Noise is
calibrated for ``tolerate`` (a dropout rate): m = n - t - ceil(tolerate n) shares make
the central noise; the claim is stated for the noise that survives the declared pattern
(a fixed list: exactly; a fraction f: at most ceil(tolerate n) dropouts, an assumption
stated with its failure probability).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privsim.errors import ParameterError, PartyFailure
from privsim.mechanisms import secagg_crypto as crypto
from privsim.mechanisms.sharing import reconstruct
from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.cohort import CohortContext
from privsim.parties.context import PartyContext
from privsim.protocols.base import Param, Privacy
from privsim.protocols.secure_sum import DistributedNoiseSum

__all__ = ["ABSENT", "SecAgg", "SecAggPlus", "choose_k", "harary_neighbours", "parse_dropout"]

#: The value every entry of an absent message carries.
ABSENT = -1

_ALIASES = {"advertise": "advertise-keys", "share": "share-keys", "masked": "masked-input",
            "consistency": "consistency-check", "unmask": "unmasking"}


def parse_dropout(text: str, n: int, stages: Sequence[str]) -> tuple[float, dict[int, int]]:
    """``(fraction, {client: stage index})`` from a ``dropout`` parameter.

    >>> parse_dropout("0.1", 8, ["a", "b"])
    (0.1, {})
    >>> parse_dropout("3@masked-input, 5@unmask", 8, ["masked-input", "unmasking"])
    (0.0, {3: 0, 5: 1})
    """
    text = str(text).strip()
    try:
        f = float(text)
    except ValueError:
        f = None
    if f is not None:
        if not 0 <= f < 1:
            raise ParameterError(f"dropout must be a fraction in [0, 1) or a list like 3@masked-input (got {text})")
        return f, {}
    fixed: dict[int, int] = {}
    for item in text.split(","):
        who, _, stage = item.strip().partition("@")
        stage = _ALIASES.get(stage.strip(), stage.strip())
        if not who.strip().isdigit() or stage not in stages:
            raise ParameterError(f"dropout: {item.strip()!r} is not CLIENT@STAGE (stages: {', '.join(stages)}; "
                                 "or a fraction in [0, 1))")
        u = int(who)
        if not 0 <= u < n:
            raise ParameterError(f"dropout: client {u} does not exist (allowed: 0..{n - 1})")
        fixed[u] = list(stages).index(stage)
    return 0.0, fixed


def harary_neighbours(n: int, k: int, seed: int) -> list[list[int]]:
    """The neighbours of each client in the Harary graph H(n, k), relabelled by a random
    permutation from ``seed`` (k even; k >= n - 1 gives the complete graph).

    >>> nb = harary_neighbours(6, 2, 0)
    >>> sorted(len(v) for v in nb), all(u in nb[v] for u in range(6) for v in nb[u])
    ([2, 2, 2, 2, 2, 2], True)
    """
    if k >= n - 1:
        return [[v for v in range(n) if v != u] for u in range(n)]
    perm = np.random.default_rng(np.random.SeedSequence([seed, n, k])).permutation(n)
    steps = np.arange(1, k // 2 + 1)
    nb = np.empty((n, 2 * steps.size), dtype=np.int64)
    nb[perm] = perm[(np.arange(n)[:, None] + np.concatenate([steps, -steps])) % n]  # perm[i]: perm[i +- d], d <= k/2
    return np.sort(nb, axis=1).tolist()


def choose_k(n: int, gamma: float, tolerate: float, sigma: int = 40, eta: int = 20) -> tuple[int, int]:
    """``(k, r)``: the smallest even degree k and threshold r meeting SecAgg+'s failure conditions.

    Bell et al. (CCS 2020, Section 3, Thm 3.6) ask that, with at most gamma n corrupt and
    tolerate n dropped clients, (1) no honest client has r corrupt share holders or only
    corrupt neighbours, with probability >= 1 - 2^-sigma (security), and (2) every needed secret keeps r surviving
    holders, with probability >= 1 - 2^-eta (correctness). A randomly relabelled Harary
    graph gives each client a uniform k-subset of the others as neighbours, so the
    number of corrupt (dropped) holders is hypergeometric; the union bound over n
    clients gives the conditions (exact tails, scipy.stats.hypergeom). Connectivity is
    free: H(n, k) is k-connected. When no k < n - 1 works, the complete graph.

    >>> choose_k(64, 0.1, 0.1)
    (14, 7)
    """
    from scipy.stats import hypergeom

    corrupt, dropped = math.floor(gamma * n), math.ceil(tolerate * n)
    for k in range(2, n - 1, 2):
        sec = hypergeom(n - 1, corrupt, k)
        alone = sec.pmf(k)  # every neighbour corrupt: the honest graph loses u, its masks are all known
        r = next((r for r in range(1, k + 2) if n * (sec.sf(r - 1) + alone) <= 2.0**-sigma), None)
        if r is None:
            continue
        # k + 1 holders (u and its k neighbours); more than k + 1 - r of them dropped fails
        if n * hypergeom(n, dropped, k + 1).sf(k + 1 - r) <= 2.0**-eta:
            return k, r
    return n - 1, n // 2 + 1


class SecAgg(DistributedNoiseSum):
    """Bonawitz et al.'s SecAgg on the complete graph: see the module docstring.

    Examples
    --------
    >>> import privsim
    >>> res = privsim.simulate(SecAgg(dropout="2@masked-input"), [1, 0, 1, 1, 0, 1], trials=3, seed=1, t=2)
    >>> res.estimate.tolist(), res.true_value.tolist(), res.messages == 6 * 5 + 7 * 6
    ([3.0, 3.0, 3.0], [3, 3, 3], True)
    """

    name = "secagg"
    has_curator = True
    seconds_per_value = 1.1e-6  # measured: the headline study's runs at n = 64..256, 200 trials
    stages: tuple[str, ...] = ("advertise-keys", "share-keys", "masked-input", "consistency-check", "unmasking")

    noise = Param("none", type=str, choices=("none", "discrete-gaussian", "skellam", "discrete-laplace"),
                  doc="the clients' noise shares: none, discrete-gaussian, skellam, discrete-laplace")
    dropout = Param("0", type=str, doc="a fraction of clients dropping per trial, or a list CLIENT@STAGE,...")
    tolerate = Param(0.0, ge=0, lt=1, doc="the dropout rate the noise is calibrated for")

    def validate(self) -> None:
        super().validate()
        parse_dropout(self.dropout, 1 << 30, self.stages)
        if self.broadcast:
            raise ParameterError(f"broadcast: {self.name} releases the sum to the server only (got True)")
        if self.modulus and self.modulus & (self.modulus - 1):
            raise ParameterError(f"modulus must be 0 (automatic) or a power of two, as the masks' PRG needs "
                                 f"(got {self.modulus})")

    def default_t(self, n: int) -> int:
        """t = n // 2: the threshold r = t + 1 is a majority (Bonawitz et al., Section 6)."""
        return n // 2

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        if n < 2:
            raise ParameterError(f"n must be >= 2 for {self.name} (got {n})")
        parse_dropout(self.dropout, n, self.stages)
        if self.shares_count(n, t) < 1:
            raise ParameterError(f"tolerate = {self.tolerate} leaves no honest share to calibrate the noise: "
                                 f"n - t - ceil(tolerate n) must be >= 1 (n = {n}, t = {t})")

    # ------------------------------------------------------------------ graph and stages
    def degree(self, n: int) -> int:
        """The neighbours of each client (n - 1: the complete graph)."""
        return n - 1

    def neighbours(self, n: int) -> list[list[int]]:
        """Each client's neighbours (its share holders besides itself)."""
        return self._memo(("nb", n), lambda: harary_neighbours(n, self.degree(n), getattr(self, "graph_seed", 0)))

    def neighbour_array(self, n: int) -> np.ndarray | None:
        """:meth:`neighbours` as one ``(n, degree)`` int64 array (rows sorted), or None when the
        clients have different numbers of neighbours (the bundled graphs never do).

        >>> SecAggPlus(k=2).neighbour_array(5).shape
        (5, 2)
        """
        def compute() -> np.ndarray | None:
            nbs = self.neighbours(n)
            return np.array(nbs, dtype=np.int64) if len({len(v) for v in nbs}) == 1 else None
        return self._memo(("nb_array", n), compute)

    def schedule(self, n: int, t: int) -> Schedule:
        nb = self.neighbours(n)
        to_c = [(u, CURATOR) for u in range(n)]
        from_c = [(CURATOR, u) for u in range(n)]
        rounds = [to_c, from_c, [(u, v) for u in range(n) for v in nb[u]], to_c]
        if "consistency-check" in self.stages:
            rounds += [from_c, to_c]
        rounds += [from_c, to_c]
        return Schedule(n, rounds, curator=True)

    def round_stages(self, n: int, t: int) -> list[str]:
        """The published stage of each round (the rounds of :meth:`schedule`).

        >>> SecAggPlus().round_stages(8, 2)  # doctest: +NORMALIZE_WHITESPACE
        ['advertise-keys', 'advertise-keys (keys back)', 'share-keys', 'masked-input',
         'unmasking (survivors)', 'unmasking (shares)']
        """
        stages = ["advertise-keys", "advertise-keys (keys back)", "share-keys", "masked-input"]
        if "consistency-check" in self.stages:
            stages += ["consistency-check (survivors)", "consistency-check (signatures)"]
        return [*stages, "unmasking (survivors)", "unmasking (shares)"]

    def _drops(self, ctx: PartyContext | CohortContext) -> np.ndarray:
        # The stage index at which this client stops, per trial (len(stages): never); a
        # cohort's: (trials, members).
        fraction, fixed = parse_dropout(self.dropout, ctx.n, self.stages)
        never = len(self.stages)
        if fraction > 0:
            u = ctx.rng.random(size=())
            stage = ctx.rng.integers(0, never, size=())
            return np.where(u < fraction, stage, never)
        if isinstance(ctx, CohortContext):
            stops = np.array([fixed.get(u, never) for u in ctx.ids.tolist()], dtype=np.int64)
            return np.broadcast_to(stops, (ctx.trials, ctx.k)).copy()
        return np.full(ctx.trials, fixed.get(ctx.id, never), dtype=np.int64)

    # ------------------------------------------------------------------ noise
    def shares_count(self, n: int, t: int) -> int:
        """m: the shares that make the central noise (n - t - ceil(tolerate n))."""
        return n - t - math.ceil(self.tolerate * n)

    # ------------------------------------------------------------------ routines
    async def party(self, ctx: PartyContext) -> None:
        nb = self.neighbours(ctx.n)[ctx.id]
        await self._client(ctx, np.array([ctx.id, *nb], dtype=np.int64), lambda i, share: ctx.send(nb[i], share),
                           lambda inbox: np.stack([inbox[v] for v in nb], axis=1), lambda inbox: inbox[CURATOR])

    def cohorts(self, n: int, t: int) -> dict[str, Sequence[int]]:
        """Every client runs the same steps (the server runs alone); the cohort form needs
        every client to have as many neighbours (the Harary and the complete graph do).

        >>> SecAggPlus().cohorts(5, 1)
        {'clients': range(0, 5)}
        """
        return {"clients": range(n)} if self.neighbour_array(n) is not None else {}

    async def cohort(self, role: str, cctx: CohortContext) -> None:
        """:meth:`party` for many clients at once: each member's own draws, messages and
        absences, its neighbours a row of a ``(members, degree)`` array (the graph is regular)."""
        nb = self.neighbour_array(cctx.n)[cctx.ids]  # (k, degree)
        await self._client(cctx, np.concatenate([cctx.ids[:, None], nb], axis=1),
                           lambda i, share: cctx.send_each(nb[:, i], share),
                           lambda inbox: inbox.from_each(nb), lambda inbox: inbox.from_party(CURATOR))

    async def _client(self, ctx: PartyContext | CohortContext, holders: np.ndarray,
                      send_share: Callable[[int, np.ndarray], None], from_neighbours: Callable[[Any], np.ndarray],
                      from_server: Callable[[Any], np.ndarray]) -> None:
        # One client's stages (holders: itself and its neighbours, (1 + degree,)), or a cohort's
        # members' (a row each: (k, 1 + degree)); the callables do the I/O of the two forms. The
        # arrays below are (R, degree, ...) for one client, (R, k, degree, ...) for a cohort.
        n, r = ctx.n, ctx.t + 1
        q = self.modulus_for(n, ctx.t)
        nb = holders[..., 1:]
        drops = self._drops(ctx)
        alive = [drops > s for s in range(len(self.stages))]
        secret = crypto.secret_keys(ctx.rng, ())
        seed = ctx.rng.integers(0, crypto.PRIME, size=())
        units = self.units(n, ctx.t)  # the integer noises on a finer grid (DistributedNoiseSum.units)
        noise = self.family_for(n, ctx.t).share(ctx.rng, self.shares_count(n, ctx.t), size=())
        # advertise-keys (round 1); the neighbours' keys come back in round 2
        ctx.send(CURATOR, np.where(alive[0], crypto.public_key(secret), ABSENT))
        await ctx.end_round()
        pks = from_server(await ctx.end_round())
        # share-keys (round 3): shares of (a_u, b_u) for u and each neighbour that advertised
        shares = np.stack([crypto.shamir_share(ctx.rng, secret, holders, r),
                           crypto.shamir_share(ctx.rng, seed, holders, r)], axis=-1)  # (R, degree+1, 2)
        ok = alive[1][..., None] & (pks != ABSENT)
        for i in range(nb.shape[-1]):
            send_share(i, np.where(ok[..., i, None], shares[..., i + 1, :], ABSENT))
        received = from_neighbours(await ctx.end_round())  # (R, degree, 2): what each neighbour sent
        # masked-input (round 4), with U2 as u sees it (whose shares came)
        got = received[..., 0] != ABSENT
        masks = crypto.prg(crypto.agree(secret[..., None], np.maximum(pks, 1)), q)  # PRG(s_uv), (R, degree)
        pairwise = np.where(got, np.where(nb > holders[..., :1], masks, (q - masks) % q), 0)
        y = reconstruct(np.concatenate([((np.asarray(ctx.input, dtype=np.int64) * units + noise) % q)[..., None],
                                        crypto.prg(seed, q)[..., None], pairwise], axis=-1), q)
        masked = np.concatenate([y[..., None], got.astype(np.int64)], axis=-1)
        ctx.send(CURATOR, np.where(alive[2][..., None], masked, ABSENT))
        await ctx.end_round()
        if "consistency-check" in self.stages:  # rounds 5-7: U3, a signature on it, U3 and U4 back
            await ctx.end_round()
            ctx.send(CURATOR, np.where(alive[3], 1, ABSENT))  # an ideal signature on U3
            await ctx.end_round()
        u3 = from_server(await ctx.end_round())
        u3 = (u3[..., 0, :] if "consistency-check" in self.stages else u3).astype(bool)  # which owners survived
        # unmasking: b_w's share for a survivor w, a_w's share otherwise (-1 if never received)
        mine = np.concatenate([shares[..., :1, :], received], axis=-2)  # (R, degree+1, 2)
        reply = np.where(u3, mine[..., 1], mine[..., 0])
        reply = np.where(mine[..., 0] == ABSENT, ABSENT, reply)
        ctx.send(CURATOR, np.where(alive[-1][..., None], reply, ABSENT))
        await ctx.end_round()
        ctx.output(drops)

    async def curator(self, ctx: PartyContext) -> None:
        n, r, trials = ctx.n, ctx.t + 1, ctx.trials
        q = self.modulus_for(n, ctx.t)
        nbs = self.neighbours(n)
        inbox = await ctx.end_round()
        pks = np.stack([inbox[u] for u in range(n)], axis=1)
        self._need(pks != ABSENT, r, "advertise-keys", 1, "sent their public keys")
        for u in range(n):
            ctx.send(u, pks[:, nbs[u]])
        await ctx.end_round()
        await ctx.end_round()  # share-keys travel between clients
        inbox = await ctx.end_round()
        ys = np.stack([inbox[u] for u in range(n)], axis=1)  # (R, n, 1+k): y_u and the U2 list u sent
        u3 = ys[:, :, 0] != ABSENT
        self._need(u3, r, "masked-input", 4, "sent their masked input")
        holders = [[u, *nbs[u]] for u in range(n)]
        if "consistency-check" in self.stages:
            for u in range(n):
                ctx.send(u, u3.astype(np.int64))
            await ctx.end_round()
            inbox = await ctx.end_round()
            u4 = u3 & (np.stack([inbox[u] for u in range(n)], axis=1) != ABSENT)
            self._need(u4, r, "consistency-check", 6, "signed the set of survivors")
            for u in range(n):
                ctx.send(u, np.stack([u3[:, holders[u]], u4[:, holders[u]]], axis=1).astype(np.int64))
        else:
            for u in range(n):
                ctx.send(u, u3[:, holders[u]].astype(np.int64))
        await ctx.end_round()
        inbox = await ctx.end_round()
        total = self._unmask(inbox, pks, ys, u3, nbs, r, q, ctx.round - 1, trials)
        released = np.asarray(self.decode(total, q, self.units(n, ctx.t)))  # int64, or float on a finer grid
        ctx.output(np.concatenate([released[:, None], u3.astype(np.int64)], axis=1))

    def _need(self, have: np.ndarray, r: int, stage: str, rnd: int, what: str) -> None:
        count = have.sum(axis=1)
        if (count < r).any():
            trial = int(np.argmax(count < r))
            raise PartyFailure(f"{self.name} aborted at stage {stage} (round {rnd}): in trial {trial} only "
                               f"{int(count[trial])} of {have.shape[1]} clients {what} (threshold t + 1 = {r}); "
                               "the server releases nothing", CURATOR, rnd)

    def _unmask(self, inbox: Any, pks: np.ndarray, ys: np.ndarray, u3: np.ndarray, nbs: list[list[int]], r: int,
                q: int, rnd: int, trials: int) -> np.ndarray:
        """The sum of the survivors' inputs and noise: every client w's masks removed, all w at once
        (a client's holders are a row of one array: every client has as many neighbours)."""
        n = len(nbs)
        nb = self.neighbour_array(n)  # (n, k)
        if nb is None:  # pragma: no cover - the bundled graphs are regular
            raise ParameterError(f"{self.name}: every client needs as many neighbours")
        holders = np.concatenate([np.arange(n)[:, None], nb], axis=1)  # (n, k+1): w and its neighbours
        # slot[w, j]: where owner w stands in holder h = holders[w, j]'s own list [h, *nb[h]]: 0 for h = w,
        # else 1 + w's place in the sorted row nb[h] (read off the rows laid end to end, keys h n + v)
        ids = np.arange(n, dtype=np.int64)
        place = np.searchsorted((ids[:, None] * n + nb).ravel(), nb * n + ids[:, None]) - nb * nb.shape[1]
        slot = np.concatenate([np.zeros((n, 1), dtype=np.int64), 1 + place], axis=1)
        replies = np.stack([inbox[h] for h in range(n)], axis=1)  # (R, n, k+1): h's answer per owner in its list
        vals = replies[:, holders, slot]  # (R, n, k+1): the shares of w's secret that came
        present = vals != ABSENT
        # which surviving neighbours v of w masked with w (the U2 list v sent with y_v)
        with_w = u3[:, nb] & (ys[:, nb, slot[:, 1:]] == 1)  # (R, n, k)
        needed = u3 | with_w.any(axis=2)
        short = needed & (present.sum(axis=2) < r)
        if short.any():
            w = int(np.argmax(short.any(axis=0)))
            trial = int(np.argmax(short[:, w]))
            what = "self-mask seed" if u3[trial, w] else "secret key"
            raise PartyFailure(f"{self.name} aborted at stage unmasking (round {rnd}): in trial {trial} only "
                               f"{int(present[trial, w].sum())} of client {w}'s {holders.shape[1]} share holders "
                               f"answered (threshold t + 1 = {r}), too few to recover its {what}; the server "
                               "releases nothing", CURATOR, rnd)
        order = np.argsort(~present, axis=2, kind="stable")[:, :, :r]
        secret = crypto.shamir_reconstruct(np.take_along_axis(vals, order, axis=2),
                                           np.take_along_axis(np.broadcast_to(holders, vals.shape), order, axis=2))
        parts = [np.where(u3, ys[:, :, 0], 0),
                 np.where(u3, (q - crypto.prg(secret, q)) % q, 0)]  # survivors: y_w, less their self-masks
        lost = needed & ~u3
        gone = np.flatnonzero(lost.any(axis=0))  # the dropped clients whose pairwise masks stay in survivors' y_v
        if gone.size:
            nbg = nb[gone]
            masks = crypto.prg(crypto.agree(secret[:, gone, None], np.maximum(pks[:, nbg], 1)), q)  # (R, g, k)
            held = np.where(nbg < gone[:, None], masks, (q - masks) % q)  # y_v holds +mask if v < w
            parts.append(np.where(lost[:, gone, None] & with_w[:, gone], (q - held) % q, 0).reshape(trials, -1))
        return reconstruct(np.concatenate(parts, axis=1), q)

    # ------------------------------------------------------------------ results
    def estimate(self, outputs: dict, n: int, t: int) -> np.ndarray:
        return np.asarray(outputs[CURATOR][:, 0], dtype=float)

    def run_true_value(self, inputs: np.ndarray, outputs: dict) -> np.ndarray:
        """The survivors' sum: the inputs of the clients whose masked input reached the server."""
        survived = np.asarray(outputs[CURATOR][:, 1:], dtype=bool)
        return (np.asarray(inputs).reshape(inputs.shape[0], inputs.shape[1]) * survived).sum(axis=1)

    def run_counts(self, outputs: dict, n: int, t: int) -> dict[str, np.ndarray]:
        """``absent_messages`` per trial: what the dropped clients would have sent (see the module docstring)."""
        nb = self.neighbour_array(n)  # (n, k): the run itself needs a regular graph (_unmask)
        drops = np.stack([np.asarray(outputs[u]) for u in range(n)], axis=1)  # (R, n): stage index of the stop
        advertised = drops > 0
        # share-keys: n k shares, less those sent (by a client that shared, to each neighbour that advertised)
        absent = nb.size - np.count_nonzero((drops > 1)[:, :, None] & np.take(advertised, nb, axis=1), axis=(1, 2))
        others = np.delete(np.arange(len(self.stages)), 1)  # one message to the server at every other stage
        return {"absent_messages": absent + (drops[:, :, None] <= others).sum(axis=(1, 2))}

    def sees_output(self, coalition: Sequence[int | str], n: int, t: int) -> bool:
        return CURATOR in coalition

    def output_party(self, n: int, t: int) -> int | str:  # type: ignore[override]
        return CURATOR

    def privacy(self, coalition: Sequence[int | str], n: int, t: int) -> Privacy | None:
        """The claim for the honest survivors' noise, or ``None`` when the coalition isolates a client
        (or holds more than t clients); see the module docstring."""
        members = [p for p in coalition if p != CURATOR]
        if len(members) > t or self.isolated(coalition, n, t):
            return None
        if CURATOR not in coalition:
            return Privacy(0.0)  # clients alone see only masked values and shares below threshold
        fraction, fixed = parse_dropout(self.dropout, n, self.stages)
        before = sum(1 for u, s in fixed.items() if s <= self.stages.index("masked-input") and u not in members)
        lost = max(before, math.ceil(self.tolerate * n)) if fraction > 0 else before
        claim = self.family_for(n, t).privacy(n - len(members) - lost, self.shares_count(n, t))
        if claim is not None and fraction > 0:
            claim = claim.assuming(f"at most {lost} honest clients drop before their masked input (dropout "
                                   f"{fraction} per client: a binomial tail of the run)")
        return claim

    def isolated(self, coalition: Sequence[int | str], n: int, t: int) -> list[int]:
        """The honest clients whose input the coalition (with the server) sees: all their
        neighbours in it, or at least t + 1 of their share holders."""
        if CURATOR not in coalition:
            return []
        members = {p for p in coalition if p != CURATOR}
        nbs = self.neighbours(n)
        return [u for u in range(n) if u not in members
                and (set(nbs[u]) <= members or len(members & set(nbs[u])) >= t + 1)]

    def isolating_coalition(self, n: int, t: int) -> tuple[tuple[int | str, ...], int] | None:
        """The smallest coalition with the server whose view determines one client's input, and that client.

        For client u: the server and t + 1 of u's neighbours (they reconstruct a_u from their
        shares, hence every s_uv; the server learns b_u when it unmasks), or the server and
        all of u's neighbours (they hold every s_uv), whichever is smaller; the smallest over u.

        >>> SecAggPlus(k=4).isolating_coalition(10, 2)
        (('C', 1, 2, 6), 0)
        """
        nbs = self.neighbours(n)
        if not nbs:
            return None
        u = min(range(len(nbs)), key=lambda u: len(nbs[u][: t + 1]))  # the first of the smallest
        return (CURATOR, *nbs[u][: t + 1]), u

    def audit_score(self, ctx: Any, *legacy: Any) -> Any:
        """For a coalition that isolates the neighbour j (:meth:`isolated`): decode x_j + N_j from
        the view as the coalition would (its shares of a_j and b_j, or its own keys and the
        server's unmasking shares), and score v (towards x_j): every integer noise family is
        log-concave, so its likelihood ratio is monotone in v. Otherwise ``None``.
        """
        if ctx.x is None or ctx.x_prime is None or ctx.neighbor not in self.isolated(ctx.coalition, ctx.n, ctx.t):
            return None
        n, t, j = ctx.n, ctx.t, ctx.neighbor
        q, r, nb = self.modulus_for(n, t), t + 1, self.neighbours(n)[j]
        held = [v for v in nb if v in ctx.coalition]
        y_col = ctx.index("msg", round=4, sender=j, receiver=CURATOR, element=0)
        got_cols = [ctx.index("msg", round=4, sender=j, receiver=CURATOR, element=1 + i) for i in range(len(nb))]
        pk_cols = [ctx.index("msg", round=1, sender=v, receiver=CURATOR) for v in (j, *nb)]
        if len(held) >= r:  # the coalition's own shares of a_j and b_j
            share_cols = [[ctx.index("msg", round=3, sender=j, receiver=h, element=e) for h in held[:r]]
                          for e in (0, 1)]
        else:  # every neighbour: their own secret keys, and b_j from the server's unmasking shares
            first = 2 if parse_dropout(self.dropout, n, self.stages)[0] > 0 else 0
            key_cols = [ctx.index("rand", party=v, draw=first) for v in nb]
            last = self.cached_schedule(n, t).rounds
            holders = [j, *nb]
            b_cols = [ctx.index("msg", round=last, sender=h, receiver=CURATOR,
                                element=[h, *self.neighbours(n)[h]].index(j)) for h in holders]
        sign = np.where(np.asarray(nb) > j, 1, -1)
        xj, xpj = float(np.asarray(ctx.x)[j]), float(np.asarray(ctx.x_prime)[j])
        decode, units = self.decode, self.units(n, t)

        def score(views: np.ndarray) -> np.ndarray:
            ints = np.rint(views).astype(np.int64)
            pks, got = ints[:, pk_cols], ints[:, got_cols] == 1
            if len(held) >= r:
                ids = np.asarray(held[:r])
                a_j, b_j = (crypto.shamir_reconstruct(ints[:, c], ids) for c in share_cols)
                masks = crypto.prg(crypto.agree(a_j[:, None], np.maximum(pks[:, 1:], 1)), q)
            else:
                masks = crypto.prg(crypto.agree(ints[:, key_cols], np.maximum(pks[:, :1], 1)), q)
                vals = ints[:, b_cols]
                order = np.argsort(vals == ABSENT, axis=1, kind="stable")[:, :r]
                b_j = crypto.shamir_reconstruct(np.take_along_axis(vals, order, axis=1), np.asarray(holders)[order])
            pairwise = np.where(got, np.where(sign > 0, masks, (q - masks) % q), 0)
            total = reconstruct(np.concatenate([ints[:, y_col:y_col + 1] % q, ((q - crypto.prg(b_j, q)) % q)[:, None],
                                                (q - pairwise) % q], axis=1), q)
            v = np.asarray(decode(total, q, units), dtype=float)  # x_j + N_j
            return (v - (xj + xpj) / 2) * np.sign(xj - xpj)  # the integer families are log-concave: MLR in v

        return score


class SecAggPlus(SecAgg):
    """Bell et al.'s SecAgg+: SecAgg on a random Harary graph of degree k (no consistency check).

    ``k = 0`` takes :func:`choose_k` for n, ``gamma`` and ``tolerate``; the default t is
    the threshold it chooses minus one.

    >>> import privsim
    >>> p = SecAggPlus(k=4)
    >>> res = privsim.simulate(p, [1] * 10, trials=2, seed=3, t=2)
    >>> res.estimate.tolist(), res.messages == 10 * (4 + 5)
    ([10.0, 10.0], True)
    """

    name = "secagg-plus"
    stages = ("advertise-keys", "share-keys", "masked-input", "unmasking")
    seconds_per_value = 1.9e-6  # measured: n = 256 and 1024, 200 trials (more key agreements per message)

    k = Param(0, type=int, ge=0, doc="neighbours per client (even); 0 = from the failure conditions")
    gamma = Param(0.1, ge=0, lt=1, doc="the fraction of corrupt clients k is chosen for")
    graph_seed = Param(0, type=int, ge=0, doc="seed of the random relabelling of the Harary graph")

    def validate(self) -> None:
        super().validate()
        if self.k % 2:
            raise ParameterError(f"k must be even (the Harary graph H(n, k) joins k/2 clients on each side; "
                                 f"got {self.k})")

    def degree(self, n: int) -> int:
        """k, or :func:`choose_k`'s (capped at n - 1: the complete graph)."""
        k = self.k or choose_k(n, self.gamma, max(self.tolerate, parse_dropout(self.dropout, n, self.stages)[0]))[0]
        return min(k, n - 1)

    def default_t(self, n: int) -> int:
        """The threshold of :func:`choose_k` minus one (with ``k`` given: k // 2)."""
        if self.k:
            return min(self.k // 2, n - 1)
        return choose_k(n, self.gamma, max(self.tolerate, parse_dropout(self.dropout, n, self.stages)[0]))[1] - 1

    def check_setting(self, n: int, t: int) -> None:
        super().check_setting(n, t)
        if t + 1 > self.degree(n) + 1:
            raise ParameterError(f"t must be <= k = {self.degree(n)}: t + 1 of a client's k + 1 share holders "
                                 f"must reconstruct its secrets (got t = {t})")
