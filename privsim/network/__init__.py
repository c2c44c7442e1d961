"""The synchronous point-to-point network: schedules, the round barrier, counters, transcripts."""

from __future__ import annotations

from privsim.network.network import SyncNetwork, message_bits
from privsim.network.schedule import (
           CURATOR,
           Schedule,
           id_key,
           parse_coalition,
           parse_party,
           party_ids,
           sort_ids,
)

__all__ = ["CURATOR", "Schedule", "SyncNetwork", "id_key", "message_bits", "parse_coalition", "parse_party",
           "party_ids", "sort_ids"]
