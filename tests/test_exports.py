"""Pin the public surface (as trio's test_exports does)."""

from __future__ import annotations

import privsim


def test_public_names():
    assert sorted(privsim.__all__) == sorted([
        "CURATOR", "DeadlockError", "Inbox", "InputError", "Param", "ParameterError", "PartyContext",
        "PartyFailure", "PrivsimError", "Privacy", "Protocol", "Schedule", "ScheduleViolation",
        "SimulationResult", "View", "ViewNotRecorded", "audit", "simulate",
    ])
    for name in privsim.__all__:
        obj = getattr(privsim, name)
        assert obj.__doc__, f"{name} has no docstring"


def test_errors_are_one_family():
    for name in ("DeadlockError", "InputError", "ParameterError", "PartyFailure", "ScheduleViolation",
                 "ViewNotRecorded"):
        assert issubclass(getattr(privsim, name), privsim.PrivsimError)
