"""privsim: a simulator for distributed differentially private protocols.

Run a protocol party by party (:func:`simulate`), count what it costs (messages, bits,
rounds), extract what any coalition of curious parties sees (:meth:`SimulationResult.view`),
and measure how much that view leaks.
"""

from __future__ import annotations

from privsim.analysis.views import View
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

__version__ = "0.1.0"

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
    "simulate",
]
