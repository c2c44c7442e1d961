"""The headline comparison of Beimel–Nissim–Omri: error and messages versus n.

For each n, three t-private ways to estimate SUM(x) of n bits are simulated:

- randomized response (local model, n messages): error sqrt(n (1/4 - a^2))/(2a), about
  sqrt(n)/eps (Section 3);
- the natural paradigm, :class:`~privsim.protocols.secure_sum.SecureSum` with Laplace
  noise shares: error sqrt(2 n/(n-t))/eps = O(1/eps), with (t+1)(n-1) + t messages;
- :class:`~privsim.protocols.ck_sum.CKSum`, the same output with about n(t+1)/2 messages.

The message panel draws the lines n(t+1)/4 and n(t+1)/2: below n(t+1)/4 messages some
party is lonely and its neighbours see all it sends, so the protocol reduces to the
local model and its error is Omega(sqrt(n)) (Sections 5 and 6); randomized response sits
there. Chor–Kushilevitz: about n(t+1)/2 messages are needed for an exact t-private sum.

Trials shrink at large n so that n x trials stays within ``max_party_trials`` (at least
``min_trials``): the default 2^21 keeps 200 trials up to n = 8192 and 128 at n = 16384.
The per-n trial counts are in the result.

Run it as ``python -m privsim.analysis.headline scenarios/headline.toml --plot headline.png``
(or, once wired, ``privsim run scenarios/headline.toml --plot headline.png``).

Examples
--------
>>> data = headline_study([16, 64], epsilon=1.0, t=3, trials=60, seed=1)
>>> data["secure_sum"]["messages"], data["bound_half"]
([63, 255], [32.0, 128.0])
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privsim.errors import ParameterError, PrivsimError
from privsim.protocols.ck_sum import CKSum
from privsim.protocols.randomized_response import RandomizedResponse
from privsim.protocols.secure_sum import SecureSum
from privsim.simulate import simulate

__all__ = ["headline_study", "plot_headline", "load_headline_scenario", "main"]

#: Default n x trials budget per protocol and n.
MAX_PARTY_TRIALS = 2**21


def _rmse(err: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(err))))


def headline_study(ns: Sequence[int], epsilon: float = 1.0, t: int = 5, trials: int = 200, seed: int = 0, *,
                   max_party_trials: int = MAX_PARTY_TRIALS, min_trials: int = 50, include_ck: bool = True,
                   progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Simulate randomized response, secure sum (Laplace) and ck-sum for every n in ``ns``.

    Args:
        ns: numbers of parties (each >= 2).
        epsilon: the privacy parameter of every protocol.
        t: the coalition threshold of the secure sums (capped at n - 1 for small n).
        trials: runs per n (fewer at large n, see the module docstring).
        seed: the root seed of every simulation.
        max_party_trials: the n x trials budget per protocol and n.
        min_trials: the fewest trials used at any n.
        include_ck: also simulate :class:`~privsim.protocols.ck_sum.CKSum`.
        progress: called with a short label before each simulation.

    Returns:
        A JSON-ready dict: ``ns``, ``t`` (per n), ``trials`` (per n), ``epsilon``, and per
        protocol (``rr``, ``secure_sum``, ``ck_sum``) lists ``rmse``, ``rmse_theory``,
        ``messages``, ``rounds``; the lines ``bound_quarter`` = n(t+1)/4 and
        ``bound_half`` = n(t+1)/2; ``seconds``.

    Raises:
        ParameterError: for an empty ``ns``, an n < 2, t < 0 or trials < 1.

    >>> d = headline_study([32], epsilon=1.0, t=1, trials=50, seed=2, include_ck=False)
    >>> d["rr"]["messages"], d["secure_sum"]["messages"], d["trials"]
    ([32], [63], [50])
    """
    ns = [int(n) for n in ns]
    if not ns or min(ns) < 2:
        raise ParameterError(f"ns must be a non-empty list of party counts >= 2 (got {ns})")
    if t < 0:
        raise ParameterError(f"t must be >= 0 (got {t})")
    if trials < 1 or min_trials < 1:
        raise ParameterError(f"trials must be >= 1 (got {trials})")
    start = time.perf_counter()
    names = ["rr", "secure_sum"] + (["ck_sum"] if include_ck else [])
    out: dict[str, Any] = {"ns": ns, "epsilon": float(epsilon), "t": [], "trials": [],
                           "bound_quarter": [], "bound_half": [], "seed": int(seed),
                           **{k: {"rmse": [], "rmse_theory": [], "messages": [], "rounds": []} for k in names}}
    rr = RandomizedResponse(epsilon=epsilon)
    ss = SecureSum(noise="laplace", epsilon=epsilon)
    ck = CKSum(noise="laplace", epsilon=epsilon)
    for n in ns:
        tn = min(t, n - 1)
        r = max(min_trials, min(trials, max_party_trials // n))
        x = (np.arange(n) < n // 2).astype(np.int64)  # "half": the true sum is n/2
        out["t"].append(tn)
        out["trials"].append(r)
        out["bound_quarter"].append(n * (tn + 1) / 4)
        out["bound_half"].append(n * (tn + 1) / 2)
        runs = [("rr", rr, math.sqrt(rr.variance(n))), ("secure_sum", ss, math.sqrt(ss.noise_variance(n, tn)))]
        if include_ck:
            runs.append(("ck_sum", ck, math.sqrt(ck.noise_variance(n, tn))))
        for k, (key, proto, sd) in enumerate(runs):
            if progress is not None:
                progress(f"{proto.name} n={n} trials={r}")
            # independent randomness per protocol (the secure sums would otherwise draw the same noise)
            sub_seed = int(np.random.SeedSequence(seed, spawn_key=(k,)).generate_state(1)[0])
            res = simulate(proto, x, trials=r, seed=sub_seed, t=tn, record=False)
            entry = out[key]
            entry["rmse"].append(_rmse(res.error))
            entry["rmse_theory"].append(sd)
            entry["messages"].append(int(res.messages))
            entry["rounds"].append(int(res.rounds))
    out["seconds"] = time.perf_counter() - start
    return out


def plot_headline(path: str | Path, data: dict[str, Any]) -> None:
    """Write the two-panel headline figure (matplotlib, Agg backend) to ``path``.

    Left: rmse versus n (log-log) with the sqrt(n)/eps reference; right: messages versus
    n with the lines n(t+1)/4 and n(t+1)/2.

    >>> import tempfile, os
    >>> d = headline_study([16, 32], t=1, trials=50, include_ck=False)
    >>> f = os.path.join(tempfile.mkdtemp(), "h.png"); plot_headline(f, d); os.path.getsize(f) > 0
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = np.asarray(data["ns"], dtype=float)
    eps = data["epsilon"]
    ts = sorted(set(data["t"]))
    t_label = f"t={ts[0]}" if len(ts) == 1 else f"t={ts[0]}..{ts[-1]}"
    style = {"rr": ("randomized response", "#c44e52", "o"),
             "secure_sum": ("secure sum (Laplace shares)", "#4c72b0", "s"),
             "ck_sum": ("ck-sum (Laplace shares)", "#55a868", "^")}
    fig, (ax_err, ax_msg) = plt.subplots(1, 2, figsize=(12, 4.8))
    for key, (label, color, marker) in style.items():
        if key not in data:
            continue
        d = data[key]
        ax_err.plot(ns, d["rmse"], marker=marker, ls="none", color=color, label=f"{label}: measured")
        ax_err.plot(ns, d["rmse_theory"], ls="-", lw=1, color=color, alpha=0.6)
        ax_msg.plot(ns, d["messages"], marker=marker, ls="-", lw=1, color=color, label=label)
    ax_err.plot(ns, np.sqrt(ns) / eps, ls="--", color="k", lw=1, label=r"$\sqrt{n}/\varepsilon$")
    ax_msg.plot(ns, data["bound_quarter"], ls=":", color="k", label="n(t+1)/4: below, lonely parties")
    ax_msg.plot(ns, data["bound_half"], ls="--", color="k", label="n(t+1)/2: Chor–Kushilevitz")
    for ax, ylabel, title in ((ax_err, "rmse of the estimate of SUM",
                               f"error (eps={eps:g}, {t_label}); lines: exact sd"),
                              (ax_msg, "messages per run", f"messages ({t_label})")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (parties)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    data = {"ns": spec.extra.get("ns"), "params": spec.params, "t": spec.t, "trials": spec.trials,
            "seed": spec.seed}
    ns = data.get("ns")
    if not isinstance(ns, list) or not ns or not all(isinstance(v, int) and v >= 2 for v in ns):
        raise ParameterError(f"{p}: ns must be a non-empty list of integers >= 2 (got {ns!r})")
    params = dict(data.get("params", {}))
    unknown = set(params) - {"epsilon"}
    if unknown:
        raise ParameterError(f"{p}: unknown parameter {sorted(unknown)[0]!r} in [params] (allowed: epsilon)")
    return {"ns": ns, "t": 5 if data["t"] is None else int(data["t"]), "trials": int(data["trials"]),
            "seed": int(data["seed"] or 0), "epsilon": float(params.get("epsilon", 1.0))}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m privsim.analysis.headline SCENARIO [--plot FILE.png] [--json]``.

    Example: ``python -m privsim.analysis.headline scenarios/headline.toml --plot headline.png``
    (the same as ``privsim run scenarios/headline.toml --plot headline.png``).
    """
    parser = argparse.ArgumentParser(prog="python -m privsim.analysis.headline",
                                     description="The headline comparison: error and messages versus n.")
    parser.add_argument("scenario", help="a headline scenario (scenarios/headline.toml)")
    parser.add_argument("--plot", help="write the two-panel figure to this PNG")
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
            for key in ("rr", "secure_sum", "ck_sum"):
                if key in data:
                    row.append(f"{key}: rmse={data[key]['rmse'][i]:8.3f} msgs={data[key]['messages'][i]:7d}")
            print("  ".join(row))
        print(f"({data['seconds']:.1f} s)" + (f"; figure: {args.plot}" if args.plot else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
