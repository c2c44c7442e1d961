"""What the engine is handed to run a batch: a :class:`Transport`, and what it returns.

:func:`privsim.simulate` executes a :class:`~privsim.plan.RunPlan` by handing it to the
plan's transport: :class:`~privsim.transport.local.LocalTransport` (every party a task
of this process) or :class:`~privsim.transport.launcher.TcpTransport` (every party its
own process). Both return a :class:`TransportRun`, which the engine turns into a
:class:`~privsim.simulate.SimulationResult`; the results are the same for the same seed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privsim.network.messages import Inbox

if TYPE_CHECKING:
    from privsim.plan import RunPlan

__all__ = ["Transport", "TransportRun"]


@dataclass(frozen=True)
class TransportRun:
    """What one batch produced: outputs, the transcript (one ``receiver -> inbox`` dict per
    round; ``None`` when not recorded), random tapes, and the counts.

    ``done_rounds`` maps a party to the round its routine returned in (where known: a
    missing output is then named with its round). ``wire_bytes`` is ``None`` in process.

    >>> TransportRun({}, None, {}, 0, 0, 0).wire_bytes is None
    True
    """

    outputs: dict[int | str, Any]
    transcript: list[dict[int | str, Inbox]] | None
    draws: dict[int | str, list[np.ndarray]]
    messages: int
    bits: int
    rounds: int
    wire_bytes: int | None = None
    done_rounds: dict[int | str, int | None] = field(default_factory=dict, repr=False)


class Transport(ABC):
    """How the parties of one batch run and talk (``name`` is what ``--transport`` calls it).

    Examples
    --------
    ``resolve_transport("local").name`` is ``"local"``; ``simulate(..., transport=TcpTransport())``
    hands the run to a transport object.
    """

    name: ClassVar[str]

    @abstractmethod
    def execute(self, plan: RunPlan) -> TransportRun:
        """Run the single batch ``plan`` describes; raise the run's error, if any."""

    def cohort_members(self, plan: RunPlan) -> list[tuple[str, np.ndarray]]:
        """The cohorts this transport would run ``plan``'s parties in: ``(role, ids)`` per
        cohort (docs/architecture.md, "Cohorts"); none unless the transport has cohorts. The
        resource estimate (:mod:`privsim.resources`) reads it."""
        return []
