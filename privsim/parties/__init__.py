"""What a party can do: its context (input, rng, send, end_round, output) and its random streams."""

from __future__ import annotations

from privsim.parties.context import Inbox, PartyContext
from privsim.parties.rng import TRIAL_BLOCK, StreamSeeder, TrialRNG, block_range

__all__ = ["Inbox", "PartyContext", "StreamSeeder", "TRIAL_BLOCK", "TrialRNG", "block_range"]
