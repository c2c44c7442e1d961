"""privsim: a simulator for distributed differentially private protocols.

Run a protocol party by party (:func:`simulate`), count what it costs (messages, bits,
rounds), extract what any coalition of curious parties sees (:meth:`SimulationResult.view`),
and measure how much that view leaks.
"""

from __future__ import annotations

from privsim import display  # noqa: F401 - gives the results their reprs (privsim.display)
from privsim.errors import (
    DeadlockError,
    InputError,
    ParameterError,
    PartyFailure,
    PrivsimError,
    ScheduleViolation,
    ViewNotRecorded,
)
from privsim.network.schedule import CURATOR, Schedule
from privsim.parties.context import Inbox, PartyContext
from privsim.protocols.base import Param, Privacy, Protocol
from privsim.simulate import SimulationResult, simulate
from privsim.views import View

__version__ = "0.1.0"


def audit(*args, **kwargs):  # noqa: ANN002, ANN003 - a thin lazy alias
    """Audit a coalition's view: see :func:`privsim.analysis.audit.audit` (imported on first use).

    >>> from privsim.protocols import RandomizedResponse
    >>> audit(RandomizedResponse(), [0, 1], coalition="C", neighbor=1, trials=4096, seed=1).violated
    False
    """
    from privsim.analysis.audit import audit as _audit

    return _audit(*args, **kwargs)


__all__ = [
    "CURATOR",
    "DeadlockError",
    "Inbox",
    "InputError",
    "Param",
    "ParameterError",
    "PartyContext",
    "PartyFailure",
    "PrivsimError",
    "Privacy",
    "Protocol",
    "Schedule",
    "ScheduleViolation",
    "SimulationResult",
    "View",
    "ViewNotRecorded",
    "audit",
    "simulate",
]
