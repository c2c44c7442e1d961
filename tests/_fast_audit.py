"""The audit of a test, in fewer batches, with a result identical to the default's.

A party's draws depend only on (seed, party, block of 1024 trials) (docs/architecture.md,
"Trials and seeds"), and the audit chooses its event on its first batches and counts it on
the rest. So batches as large as the default selection sample (4 x 1024 trials at 2 x 10^4)
select on the same trials and estimate on the same trials: the same event, the same counts,
the same bound, bit for bit, in a quarter of the event-loop runs. ``fast_audit`` checks that
the two splits cover the same trials and falls back to the default batches otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import privsim
from privsim.plan import audit_split


def same_split_batch(trials: int, n: int) -> int | None:
    """A batch size whose audit selects on exactly the default's selection trials, or None."""
    default = audit_split(trials, n)
    chosen = sum(size for _, size in default.batches[:default.n_select])
    bigger = audit_split(trials, n, chosen)
    same = sum(size for _, size in bigger.batches[:bigger.n_select]) == chosen
    if not same or len(bigger.batches) >= len(default.batches):
        return None
    return chosen


def fast_audit(protocol: Any, inputs: Any, **kw: Any) -> Any:
    """``privsim.audit(protocol, inputs, **kw)`` with the batch size of :func:`same_split_batch`."""
    n = kw.get("n") if inputs is None else np.asarray(inputs).shape[0]
    batch = same_split_batch(kw["trials"], n)
    return privsim.audit(protocol, inputs, batch_trials=batch, **kw)
