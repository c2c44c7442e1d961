"""What we learn from runs: coalition views as arrays, accuracy statistics, audits, message bounds."""

from __future__ import annotations

from privsim.analysis.accuracy import accuracy_summary
from privsim.analysis.views import View, flatten_value

__all__ = ["View", "accuracy_summary", "flatten_value"]
