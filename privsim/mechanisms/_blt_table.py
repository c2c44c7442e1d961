"""Placeholder until write_blt_table runs."""

from __future__ import annotations

__all__ = ["TABLE"]

TABLE: dict[tuple[int, int], tuple[tuple[float, ...], tuple[float, ...]]] = {}
