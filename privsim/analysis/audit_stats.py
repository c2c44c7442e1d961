"""The statistics of a DP audit, under their historical import path.

The audit now lives in small modules by job; this module re-exports their public names
so that ``from privsim.analysis.audit_stats import ...`` keeps working:

- :mod:`privsim.analysis.audit_bounds`: Clopper–Pearson and the certified epsilon;
- :mod:`privsim.analysis.audit_events`: the events (sets of views) and their counts;
- :mod:`privsim.analysis.audit_select` and :mod:`privsim.analysis.audit_selectors`: how
  the event is chosen on the selection sample;
- :mod:`privsim.analysis.audit`: the one driver (:func:`~privsim.analysis.audit.audit`
  for protocols, :func:`~privsim.analysis.audit.audit_batches` for any batch sampler).

>>> from privsim.analysis.audit_stats import clopper_pearson
>>> round(clopper_pearson(50, 100, 0.025, "lower"), 4)
0.3983
"""

from __future__ import annotations

from privsim.analysis.audit import (
    DEFAULT_SELECT_FRACTION,
    AuditStatsResult,
    audit_batches,
    plan_split,
    result_from_counts,
)
from privsim.analysis.audit_bounds import Direction, EpsilonBound, clopper_pearson, epsilon_lower_bound
from privsim.analysis.audit_events import Event, EventCounts, LinearScore, OutcomeSetEvent, ThresholdEvent
from privsim.analysis.audit_select import SelectionKind, fit_logistic_score, select_event
from privsim.analysis.audit_selectors import choose_event

__all__ = [
    "DEFAULT_SELECT_FRACTION",
    "AuditStatsResult",
    "Direction",
    "EpsilonBound",
    "Event",
    "EventCounts",
    "LinearScore",
    "OutcomeSetEvent",
    "SelectionKind",
    "ThresholdEvent",
    "audit_batches",
    "choose_event",
    "clopper_pearson",
    "epsilon_lower_bound",
    "fit_logistic_score",
    "plan_split",
    "result_from_counts",
    "select_event",
]
