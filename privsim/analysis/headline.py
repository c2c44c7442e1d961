"""The headline comparison of Beimel–Nissim–Omri: error and messages versus n, for every SUM protocol.

For each n, these ways to estimate SUM(x) of n bits are simulated (:data:`PROTOCOLS`):

- ``rr``: randomized response (local model, n messages): error sqrt(n (1/4 - a^2))/(2a),
  about sqrt(n)/eps (Section 3); ``rr_distributed``: the same with p_1 as curator
  (2(n - 1) messages);
- ``secure_sum``: the natural paradigm, :class:`~privsim.protocols.secure_sum.SecureSum`
  with Laplace noise shares: error sqrt(2 n/(n-t))/eps = O(1/eps), with (t+1)(n-1) + t
  messages; ``secure_sum_skellam`` (not in :data:`DEFAULT_PROTOCOLS`: it costs as much as
  the secure sum and adds a noise option, not a protocol): the same with integer Skellam
  shares (Agarwal, Kairouz, Liu 2021) calibrated to (eps, 1e-6);
- ``ck_sum``: :class:`~privsim.protocols.ck_sum.CKSum`, the Laplace output with about
  n(t+1)/2 messages;
- ``central``: the trusted curator of :class:`~privsim.protocols.central.CentralLaplace`
  (n messages of raw bits, error sqrt(2)/eps), the reference the paper compares with;
- ``shuffle_rr``: randomized response through a trusted shuffler
  (:class:`~privsim.protocols.shuffle.ShuffleRR`, n messages), its local eps0 the largest
  one that Feldman, McMillan and Talwar's bound amplifies to (eps, 1e-6) towards the
  curator: error sqrt(n p(1-p))/(2p-1) ~ sqrt(ln(1/delta))/eps;
- ``shuffle_sum``: real summation through the same trusted shuffler
  (:class:`~privsim.protocols.shuffle_sum.ShuffleSum`, Balle, Bell, Gascon, Nissim):
  each user sends m additive shares of its input plus a 1/(n-t) Polya share of the
  discrete Laplace, (n - 1) m + 1 messages with m the fewest shares whose mixing adds at
  most delta = 1e-6 towards the curator (about 7 to 10 here): error about sqrt(2)/eps.

- ``secagg`` and ``secagg_plus``: the secure aggregation of federated learning
  (:class:`~privsim.protocols.secagg.SecAgg`, Bonawitz et al., on the complete graph,
  n(n - 1) + 7n messages; :class:`~privsim.protocols.secagg.SecAggPlus`, Bell et al., on
  a random Harary graph of degree k = O(log n), n(k + 5)), with discrete-Gaussian shares
  calibrated to (eps, 1e-6) by their sum's exact law; simulated up to n = 256 and
  2048 (:attr:`HeadlineProtocol.max_n`; above, the study records ``None``). Their error
  is that noise's at (eps, 1e-6), 4.29 at n = 64 falling to 3.79 at n = 2048 at eps = 1
  (the analytic Gaussian's is about 4.25; the Laplace secure sum's 1.4: another noise,
  not another protocol). SecAgg+'s k + 5
  messages per party (13 at n = 64, 21 at n = 2048) grow as log n, far below SecAgg's
  n + 6; they are not below (t + 1)/4 here, yet a coalition of the server and one client's
  k neighbours isolates that client (``privsim bounds`` names it): the graph, not the
  count, is what the lonely-party argument needs.

The message panel draws the lines n(t+1)/4 and n(t+1)/2: below n(t+1)/4 messages some
party is lonely and its neighbours see all it sends, so the protocol reduces to the
local model and its error is Omega(sqrt(n)) (Sections 5 and 6); randomized response sits
there. Chor–Kushilevitz: about n(t+1)/2 messages are needed for an exact t-private sum.
The third panel puts every protocol on one map, error against messages per party, with
those lines at (t+1)/4 and (t+1)/2: the central curator and shuffle-rr sit left of
the lonely line with bounded error, and shuffle-sum reaches O(1/eps) at m messages per
party, right of the Chor–Kushilevitz line only because m exceeds (t+1)/2, not because any
party holds t + 1 shares: each is a trusted party outside the paper's model (there every
party may be curious and channels are point to point; towards a coalition with the
shuffler, shuffle-sum's users are protected only by their own noise share).

Trials shrink at large n so that n x trials stays within ``max_party_trials`` (at least
``min_trials``): the default 2^21 keeps 200 trials up to n = 8192 and 128 at n = 16384.
The per-n trial counts are in the result.

Run it as ``python -m privsim.analysis.headline scenarios/headline.toml --plot headline.png``
(or ``privsim run scenarios/headline.toml --plot headline.png``).

Examples
--------
>>> data = headline_study([16, 64], epsilon=1.0, t=3, trials=60, seed=1, protocols=("rr", "secure_sum"))
>>> data["secure_sum"]["messages"], data["bound_half"], data["protocols"]
([63, 255], [32.0, 128.0], ['rr', 'secure_sum'])
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privsim.errors import ParameterError, PrivsimError
from privsim.mechanisms.shuffle_accounting import fmt_local_epsilon
from privsim.protocols.base import Protocol
from privsim.protocols.central import CentralLaplace
from privsim.protocols.ck_sum import CKSum
from privsim.protocols.randomized_response import RandomizedResponse, RandomizedResponseDistributed
from privsim.protocols.secagg import SecAgg, SecAggPlus
from privsim.protocols.secure_sum import SecureSum
from privsim.protocols.shuffle import ShuffleRR
from privsim.protocols.shuffle_sum import ShuffleSum
from privsim.simulate import simulate

__all__ = ["DEFAULT_PROTOCOLS", "PROTOCOLS", "HeadlineProtocol", "headline_estimate", "headline_study",
           "load_headline_scenario", "main", "plot_headline"]

#: Default n x trials budget per protocol and n.
MAX_PARTY_TRIALS = 2**21

#: The delta of the (eps, delta) calibrations (Skellam shares, the shuffler's amplification).
HEADLINE_DELTA = 1e-6


@dataclass(frozen=True)
class HeadlineProtocol:
    """One SUM protocol of the study: its label, colour and marker, and how to build it.

    ``build(epsilon, n)`` returns the protocol calibrated to central ``epsilon`` at n
    parties; ``sd(protocol, n, t)`` is the exact standard deviation of its error.

    Examples
    --------
    >>> spec = PROTOCOLS["secure_sum"]
    >>> proto = spec.build(1.0, 10)
    >>> proto.name, round(spec.sd(proto, 10, 2), 4)  # sqrt(2 b^2 n/(n-t)), b = 1
    ('secure-sum', 1.5811)
    """

    label: str
    color: str
    marker: str
    build: Callable[[float, int], Protocol]
    sd: Callable[[Any, int, int], float]
    #: The largest n simulated (None: every n); above it the study records None (not run).
    max_n: int | None = None


def _shuffle_rr(epsilon: float, n: int) -> ShuffleRR:
    # the largest local eps0 that FMT's numerical bound amplifies to (epsilon, delta) at the curator
    return ShuffleRR(epsilon=fmt_local_epsilon(epsilon, HEADLINE_DELTA, n), delta=HEADLINE_DELTA)


#: The SUM protocols of the study, by key (the order of the legend; the position, with n,
#: picks each simulation's independent seed).
PROTOCOLS: dict[str, HeadlineProtocol] = {
    "rr": HeadlineProtocol("randomized response", "#c44e52", "o",
                           lambda e, n: RandomizedResponse(epsilon=e), lambda p, n, t: math.sqrt(p.variance(n))),
    "secure_sum": HeadlineProtocol("secure sum (Laplace shares)", "#4c72b0", "s",
                                   lambda e, n: SecureSum(noise="laplace", epsilon=e),
                                   lambda p, n, t: math.sqrt(p.noise_variance(n, t))),
    "ck_sum": HeadlineProtocol("ck-sum (Laplace shares)", "#55a868", "^",
                               lambda e, n: CKSum(noise="laplace", epsilon=e),
                               lambda p, n, t: math.sqrt(p.noise_variance(n, t))),
    "rr_distributed": HeadlineProtocol("randomized response, p_1 as curator", "#dd8452", "v",
                                       lambda e, n: RandomizedResponseDistributed(epsilon=e),
                                       lambda p, n, t: math.sqrt(p.variance(n))),
    "secure_sum_skellam": HeadlineProtocol("secure sum (Skellam shares, delta 1e-6)", "#8172b3", "D",
                                           lambda e, n: SecureSum(noise="skellam", epsilon=e, delta=HEADLINE_DELTA),
                                           lambda p, n, t: math.sqrt(p.noise_variance(n, t))),
    "central": HeadlineProtocol("central Laplace (trusted curator)", "#7f7f7f", "x",
                                lambda e, n: CentralLaplace(epsilon=e, broadcast=False),
                                lambda p, n, t: math.sqrt(p.noise_variance())),
    "shuffle_rr": HeadlineProtocol("shuffle-rr (trusted shuffler, FMT to eps)", "#937860", "P",
                                   _shuffle_rr, lambda p, n, t: math.sqrt(p.variance(n))),
    "shuffle_sum": HeadlineProtocol("shuffle-sum (trusted shuffler, m shares, delta 1e-6)", "#da8bc3", "*",
                                    lambda e, n: ShuffleSum(epsilon=e, delta=HEADLINE_DELTA),
                                    lambda p, n, t: math.sqrt(p.noise_variance(n, t))),
    "secagg": HeadlineProtocol("secagg (discrete-Gaussian shares)", "#1f77b4", "h",
                               lambda e, n: SecAgg(noise="discrete-gaussian", epsilon=e, delta=HEADLINE_DELTA),
                               lambda p, n, t: math.sqrt(p.noise_variance(n, t)), max_n=256),
    "secagg_plus": HeadlineProtocol("secagg+ (discrete-Gaussian shares)", "#17becf", "p",
                                    lambda e, n: SecAggPlus(noise="discrete-gaussian", epsilon=e,
                                                            delta=HEADLINE_DELTA),
                                    lambda p, n, t: math.sqrt(p.noise_variance(n, t)), max_n=2048),
}


#: The protocols a study runs by default: every SUM protocol once.
DEFAULT_PROTOCOLS: tuple[str, ...] = tuple(k for k in PROTOCOLS if k != "secure_sum_skellam")


def headline_study(ns: Sequence[int], epsilon: float = 1.0, t: int = 5, trials: int = 200, seed: int = 0, *,
                   max_party_trials: int = MAX_PARTY_TRIALS, min_trials: int = 50, include_ck: bool = True,
                   protocols: Sequence[str] | None = None,
                   progress: Callable[[str], None] | None = None,
                   on_estimate: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Simulate every SUM protocol of :data:`DEFAULT_PROTOCOLS` (or ``protocols``) for every n in ``ns``.

    Parameters
    ----------
    ns:
        Numbers of parties (each >= 2).
    epsilon:
        The central privacy parameter of every protocol (see :data:`PROTOCOLS`).
    t:
        The coalition threshold of the secure sums (capped at n - 1 for small n).
    trials:
        Runs per n (fewer at large n, see the module docstring).
    seed:
        The root seed of every simulation.
    max_party_trials:
        The n x trials budget per protocol and n.
    min_trials:
        The fewest trials used at any n.
    include_ck:
        Keep :class:`~privsim.protocols.ck_sum.CKSum` (``False`` drops it from the selection).
    protocols:
        Keys of :data:`PROTOCOLS` to run; ``None``: :data:`DEFAULT_PROTOCOLS`.
    progress:
        Called with a short label before each simulation.
    on_estimate:
        Called once, before any simulation, with the study's
        :class:`~privsim.resources.Estimate` (:func:`headline_estimate`; ``batches`` counts
        the runs).

    Returns
    -------
    dict
        JSON-ready: ``ns``, ``t`` (per n), ``trials`` (per n), ``epsilon``, ``protocols``
        (the keys run), and per protocol key lists ``rmse``, ``rmse_theory``, ``messages``,
        ``messages_per_party``, ``rounds``; the lines ``bound_quarter`` = n(t+1)/4 and
        ``bound_half`` = n(t+1)/2; ``seconds``.

    Raises
    ------
    ParameterError
        For an empty ``ns``, an n < 2, t < 0, trials < 1 or an unknown protocol key.

    Examples
    --------
    >>> d = headline_study([32], epsilon=1.0, t=1, trials=50, seed=2, protocols=("rr", "secure_sum"))
    >>> d["rr"]["messages"], d["secure_sum"]["messages"], d["trials"]
    ([32], [63], [50])
    """
    ns, keys = _study_setting(ns, t, trials, min_trials, include_ck, protocols)
    start = time.perf_counter()
    out: dict[str, Any] = {"ns": ns, "epsilon": float(epsilon), "t": [], "trials": [], "protocols": keys,
                           "bound_quarter": [], "bound_half": [], "seed": int(seed),
                           **{k: {"rmse": [], "rmse_theory": [], "messages": [], "messages_per_party": [],
                                  "rounds": []} for k in keys}}
    runs = list(_study_runs(ns, epsilon, t, trials, keys, max_party_trials, min_trials))
    if on_estimate is not None:  # from the same protocols, whose schedules and checks the runs reuse
        on_estimate(_estimate_runs(runs, seed))
    current = None
    for n, tn, r, key, proto in runs:
        if n != current:
            current = n
            out["t"].append(tn)
            out["trials"].append(r)
            out["bound_quarter"].append(n * (tn + 1) / 4)
            out["bound_half"].append(n * (tn + 1) / 2)
        if proto is None:  # too costly to simulate here: not run
            row = dict.fromkeys(out[key])
        else:
            if progress is not None:
                progress(f"{proto.name} n={n} trials={r}")
            # independent randomness per protocol and n (a curator's stream does not depend on n:
            # with one seed, the central mechanism would add the same noise at every n)
            stream = np.random.SeedSequence(seed, spawn_key=(list(PROTOCOLS).index(key), n))
            sub_seed = int(stream.generate_state(1)[0])
            res = simulate(proto, _half(n), trials=r, seed=sub_seed, t=tn, record=False)
            row = {"rmse": float(np.sqrt(np.mean(np.square(res.error)))),
                   "rmse_theory": PROTOCOLS[key].sd(proto, n, tn), "messages": int(res.messages),
                   "messages_per_party": res.messages / n, "rounds": int(res.rounds)}
        for field, value in row.items():
            out[key][field].append(value)
    out["seconds"] = time.perf_counter() - start
    return out


def _study_setting(ns: Sequence[int], t: int, trials: int, min_trials: int, include_ck: bool,
                   protocols: Sequence[str] | None) -> tuple[list[int], list[str]]:
    """The study's n values and protocol keys, checked (:func:`headline_study`'s arguments)."""
    ns = [int(n) for n in ns]
    keys = list(DEFAULT_PROTOCOLS) if protocols is None else [str(k) for k in protocols]
    if not include_ck:
        keys = [k for k in keys if k != "ck_sum"]
    if not ns or min(ns) < 2:
        raise ParameterError(f"ns must be a non-empty list of party counts >= 2 (got {ns})")
    if t < 0:
        raise ParameterError(f"t must be >= 0 (got {t})")
    if trials < 1 or min_trials < 1:
        raise ParameterError(f"trials must be >= 1 (got {trials})")
    if not keys or any(k not in PROTOCOLS for k in keys):
        raise ParameterError(f"protocols must be a non-empty selection of {', '.join(PROTOCOLS)} (got {keys})")
    return ns, keys


def _half(n: int) -> np.ndarray:
    """The study's inputs: the first half of the parties hold 1 (the true sum is n/2)."""
    return (np.arange(n) < n // 2).astype(np.int64)


def _study_runs(ns: list[int], epsilon: float, t: int, trials: int, keys: list[str], max_party_trials: int,
                min_trials: int) -> Iterator[tuple[int, int, int, str, Protocol | None]]:
    """Every run of the study in order: ``(n, t, trials, key, protocol)``, the protocol ``None``
    where n is above the protocol's ``max_n`` (not run). The study and its estimate read these."""
    for n in ns:
        tn = min(t, n - 1)
        r = max(min_trials, min(trials, max_party_trials // n))
        for key in keys:
            spec = PROTOCOLS[key]
            yield n, tn, r, key, None if spec.max_n is not None and n > spec.max_n else spec.build(epsilon, n)


def headline_estimate(ns: Sequence[int], epsilon: float = 1.0, t: int = 5, trials: int = 200, seed: int = 0, *,
                      max_party_trials: int = MAX_PARTY_TRIALS, min_trials: int = 50, include_ck: bool = True,
                      protocols: Sequence[str] | None = None) -> Any:
    """The peak memory and time :func:`headline_study` with the same arguments is estimated to
    take (:mod:`privsim.resources`: the largest run's memory, the runs' times summed), before
    it starts; the CLI says so when it expects over a minute and refuses beyond ``--max-time``.

    >>> e = headline_estimate([32, 64], t=1, trials=50, protocols=("rr", "secure_sum"))
    >>> e.batches, e.seconds < 60
    (4, True)
    """
    ns, keys = _study_setting(ns, t, trials, min_trials, include_ck, protocols)
    return _estimate_runs(list(_study_runs(ns, epsilon, t, trials, keys, max_party_trials, min_trials)), seed)


def _estimate_runs(runs: list[tuple[int, int, int, str, Protocol | None]], seed: int) -> Any:
    from privsim.plan import plan_run
    from privsim.resources import Estimate, estimate

    memory, seconds, count = 0, 0.0, 0
    for n, tn, r, _, proto in runs:
        if proto is not None:
            e = estimate(plan_run(proto, _half(n), trials=r, seed=seed, t=tn, record=False))
            memory, seconds, count = max(memory, e.memory), seconds + e.seconds, count + 1
    return Estimate(memory=memory, seconds=seconds, batches=count)


def _lines_per_party(ax: Any, data: dict[str, Any]) -> None:
    """Vertical lines at (t+1)/4 and (t+1)/2 messages per party, for each t of the study."""
    for k, tn in enumerate(sorted(set(data["t"]))):
        suffix = f" (t={tn})" if len(set(data["t"])) > 1 else ""
        for share, ls, label in ((4, ":", "(t+1)/4: below, lonely parties"), (2, "--", "(t+1)/2: Chor–Kushilevitz")):
            ax.axvline((tn + 1) / share, ls=ls, color="k", lw=1, label=label + suffix if k == 0 else None)


def _format(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)


def plot_headline(path: str | Path, data: dict[str, Any]) -> None:
    """Write the three-panel headline figure (matplotlib, Agg backend) to ``path``.

    Left: rmse versus n (log-log) with the sqrt(n)/eps reference; middle: messages versus
    n with the lines n(t+1)/4 and n(t+1)/2; right: rmse against messages per party for
    every protocol and n, with the lines (t+1)/4 and (t+1)/2.

    Parameters
    ----------
    path:
        The PNG to write.
    data:
        A result of :func:`headline_study`.

    Examples
    --------
    >>> import tempfile, os
    >>> d = headline_study([16, 32], t=1, trials=50, protocols=("rr", "secure_sum"))
    >>> f = os.path.join(tempfile.mkdtemp(), "h.png"); plot_headline(f, d); os.path.getsize(f) > 0
    True
    """
    from privsim.analysis.plots import _save
    from privsim.display import new_figure

    ns = np.asarray(data["ns"], dtype=float)
    eps = data["epsilon"]
    ts = sorted(set(data["t"]))
    t_label = f"t={ts[0]}" if len(ts) == 1 else f"t={ts[0]}..{ts[-1]}"
    fig = new_figure(18, 5.2)
    ax_err, ax_msg, ax_map = fig.subplots(1, 3)
    for key in data.get("protocols", [k for k in PROTOCOLS if k in data]):
        spec = PROTOCOLS[key]
        d = {k: np.asarray(v, dtype=float) for k, v in data[key].items()}  # None (not run): a gap
        ax_err.plot(ns, d["rmse"], marker=spec.marker, ls="none", color=spec.color, label=f"{spec.label}: measured")
        ax_err.plot(ns, d["rmse_theory"], ls="-", lw=1, color=spec.color, alpha=0.6)
        ax_msg.plot(ns, d["messages"], marker=spec.marker, ls="-", lw=1, color=spec.color, label=spec.label)
        per_party = d.get("messages_per_party", list(np.asarray(d["messages"]) / ns))
        ax_map.plot(per_party, d["rmse"], marker=spec.marker, ls="-", lw=0.8, color=spec.color, label=spec.label)
    ax_err.plot(ns, np.sqrt(ns) / eps, ls="--", color="k", lw=1, label=r"$\sqrt{n}/\varepsilon$")
    ax_msg.plot(ns, data["bound_quarter"], ls=":", color="k", label="n(t+1)/4: below, lonely parties")
    ax_msg.plot(ns, data["bound_half"], ls="--", color="k", label="n(t+1)/2: Chor–Kushilevitz")
    _lines_per_party(ax_map, data)
    _format(ax_err, "n (parties)", "rmse of the estimate of SUM", f"error (eps={eps:g}, {t_label}); lines: exact sd")
    _format(ax_msg, "n (parties)", "messages per run", f"messages ({t_label})")
    _format(ax_map, "messages per party", "rmse of the estimate of SUM",
            f"error against messages per party ({t_label}; each line runs over n)")
    _save(fig, str(path), dpi=110)


def load_headline_scenario(path: str | Path) -> dict[str, Any]:
    """Read a headline scenario (``protocol = "headline"``, ``ns``, ``t``, ``trials``, ``seed``,
    ``[params] epsilon``) into keyword arguments of :func:`headline_study`.

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    >>> _ = f.write('protocol = "headline"\\nns = [16, 32]\\nt = 2\\ntrials = 50\\n[params]\\nepsilon = 0.5\\n')
    >>> f.close()
    >>> load_headline_scenario(f.name)
    {'ns': [16, 32], 't': 2, 'trials': 50, 'seed': 0, 'epsilon': 0.5}
    >>> os.unlink(f.name)
    """
    from privsim.scenario import load_scenario

    spec = load_scenario(path)  # unknown keys and wrong types are reported there
    p = spec.source
    if spec.protocol != "headline":
        raise ParameterError(f"{p}: protocol must be \"headline\" (got {spec.protocol!r})")
    ns = spec.extra.get("ns")
    if not isinstance(ns, list) or not ns or not all(isinstance(v, int) and v >= 2 for v in ns):
        raise ParameterError(f"{p}: ns must be a non-empty list of integers >= 2 (got {ns!r})")
    unknown = set(spec.params) - {"epsilon"}
    if unknown:
        raise ParameterError(f"{p}: unknown parameter {sorted(unknown)[0]!r} in [params] (allowed: epsilon)")
    return {"ns": ns, "t": 5 if spec.t is None else int(spec.t), "trials": int(spec.trials),
            "seed": int(spec.seed or 0), "epsilon": float(spec.params.get("epsilon", 1.0))}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m privsim.analysis.headline SCENARIO [--plot FILE.png] [--json]``.

    Example: ``python -m privsim.analysis.headline scenarios/headline.toml --plot headline.png``
    (the same as ``privsim run scenarios/headline.toml --plot headline.png``).
    """
    parser = argparse.ArgumentParser(prog="python -m privsim.analysis.headline",
                                     description="The headline comparison: error and messages versus n, "
                                                 "and error against messages per party.")
    parser.add_argument("scenario", help="a headline scenario (scenarios/headline.toml)")
    parser.add_argument("--plot", help="write the three-panel figure to this PNG")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args(argv)
    try:
        kwargs = load_headline_scenario(args.scenario)
        data = headline_study(**kwargs, progress=lambda s: print(s, file=sys.stderr, flush=True))
        if args.plot:
            plot_headline(args.plot, data)
            data["plot"] = args.plot
    except PrivsimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(data))
    else:
        for i, n in enumerate(data["ns"]):
            row = [f"n={n:6d}", f"trials={data['trials'][i]:4d}"]
            for key in data["protocols"]:
                rmse, msgs = data[key]["rmse"][i], data[key]["messages"][i]
                if rmse is None:  # above the protocol's max_n: not simulated
                    row.append(f"{key}: {'-':>14} {'-':>12}")
                else:
                    row.append(f"{key}: rmse={rmse:8.3f} msgs={msgs:7d}")
            print("  ".join(row))
        print(f"({data['seconds']:.1f} s)" + (f"; figure: {args.plot}" if args.plot else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
