"""The streaming protocols against the mechanisms they run: what the simulator adds per step.

Run ``python bench/bench_continual.py`` (prints JSON). Every figure is measured in this
process, best of ``repeats`` rounds, in ns of this thread's CPU time:

- continual-sum: the whole protocol (n = 16 parties, T = 1024 rounds, R = 1000 trials,
  trio tasks and the network included), per trial and step, against the mechanism alone:
  a scalar :class:`~privsim.mechanisms.ContinualCounter` (one update and one release
  per step, one run) and the curator's trial-vectorized tree noise
  (:class:`~privsim.protocols.continual_sum.TreeNoise`).
- continual-range / continual-join: the protocol per trial and step against the same
  mechanism (RangeCounter / JoinSizeEstimator) fed the same updates directly.

Figures (ratios are what to compare across machines):
- ``sum_protocol_ns_per_trial_step``, ``counter_ns_per_step``, ``tree_noise_ns_per_trial_step``;
- ``sum_protocol_vs_counter``: protocol time per trial-step over the counter's per step
  (below 1: the protocol's trial axis amortizes the per-step Python work over R runs);
- ``sum_noise_share``: the curator's noise as a share of the protocol's time;
- ``range_protocol_vs_mechanism``, ``join_protocol_vs_mechanism``: protocol over mechanism
  per trial-step (the mechanism vectorized over the same R trials; close to 1: the
  mechanisms' numpy work dominates).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

try:
    import privsim
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import privsim

from privsim.mechanisms import ContinualCounter
from privsim.parties.rng import StreamSeeder, block_range
from privsim.protocols.continual_sketch import ContinualJoin, ContinualRange
from privsim.protocols.continual_sum import ContinualSum, TreeNoise

_clock = time.thread_time_ns


def _best(fn: Callable[[], None], repeats: int) -> int:
    """Best CPU time (ns) of ``repeats`` calls, after one warm-up call."""
    fn()
    out = []
    for _ in range(repeats):
        start = _clock()
        fn()
        out.append(_clock() - start)
    return min(out)


def _continual_sum(repeats: int) -> dict[str, float]:
    T, n, R = 1024, 16, 1000
    proto = ContinualSum(T=T, rho=1.0)
    x = proto.default_inputs(n)
    protocol_ns = _best(lambda: privsim.simulate(proto, x, trials=R, seed=1, record=False), repeats) / (R * T)

    totals = x.sum(axis=0)

    def counter() -> None:
        c = ContinualCounter(T, 1.0, sensitivity=float(n), seed=1)  # one step's total is one update
        for s in range(T):
            c.update(s + 1, float(totals[s]))
            c.query(s + 1)

    counter_ns = _best(counter, repeats) / T

    def tree() -> None:
        noise = TreeNoise(T, proto.sigma2, StreamSeeder(1, 1, block_range(R)).rng("C", R, record=False))
        for s in range(1, T + 1):
            noise.step(s)

    tree_ns = _best(tree, repeats) / (R * T)
    return {
        "sum_protocol_ns_per_trial_step": protocol_ns,
        "counter_ns_per_step": counter_ns,
        "tree_noise_ns_per_trial_step": tree_ns,
        "sum_protocol_vs_counter": protocol_ns / counter_ns,
        "sum_noise_share": tree_ns / protocol_ns,
    }


def _sketch(proto: ContinualRange | ContinualJoin, n: int, R: int, repeats: int) -> tuple[float, float]:
    """(protocol, mechanism) ns per trial-step on the protocol's default inputs."""
    x = proto.default_inputs(n)
    protocol_ns = _best(lambda: privsim.simulate(proto, x, trials=R, seed=1, record=False), repeats) / (R * proto.T)

    updates = np.repeat(x[None], R, axis=0)  # (R, n, T, ...): every trial gets the default inputs

    def direct() -> None:
        mech = proto.mechanism(1, trials=R)  # the mechanism vectorized over the R trials
        for s in range(proto.T):
            proto.step(mech, updates[:, :, s], n)

    return protocol_ns, _best(direct, repeats) / (R * proto.T)


def main(repeats: int = 3) -> dict[str, float]:
    """Measure the figures; returns them as a dict (see the module docstring).

    Examples
    --------
    >>> figures = main(repeats=1)  # doctest: +SKIP
    >>> figures["sum_protocol_vs_counter"] < 1  # doctest: +SKIP
    True
    """
    figures = _continual_sum(repeats)
    rng_protocol, rng_mech = _sketch(ContinualRange(T=16, B=16, d=2, rows=3, width=64), 16, 20, repeats)
    join_protocol, join_mech = _sketch(ContinualJoin(T=16, rows=3, width=64), 16, 20, repeats)
    figures.update({
        "range_protocol_ns_per_trial_step": rng_protocol,
        "range_mechanism_ns_per_trial_step": rng_mech,
        "range_protocol_vs_mechanism": rng_protocol / rng_mech,
        "join_protocol_ns_per_trial_step": join_protocol,
        "join_mechanism_ns_per_trial_step": join_mech,
        "join_protocol_vs_mechanism": join_protocol / join_mech,
    })
    return {k: round(v, 3) for k, v in figures.items()}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
