"""What we learn from runs: coalition views as arrays, accuracy statistics, audits, message bounds."""

from __future__ import annotations

from privsim.accuracy import accuracy_summary
from privsim.views import View, flatten_value

__all__ = ["View", "accuracy_summary", "flatten_value"]
