"""Accuracy statistics: kept here for imports written before they moved to the engine.

:func:`accuracy_summary` now lives in :mod:`privsim.accuracy`, beside the results whose
summary it makes (docs/architecture.md, "Layers").

>>> from privsim.analysis.accuracy import accuracy_summary as old
>>> from privsim.accuracy import accuracy_summary
>>> old is accuracy_summary
True
"""

from __future__ import annotations

from privsim.accuracy import accuracy_summary

__all__ = ["accuracy_summary"]
