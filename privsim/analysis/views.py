"""Coalition views: kept here for imports written before views moved to the engine.

The view of a coalition is built by the engine that ran the protocol
(:mod:`privsim.views`, docs/architecture.md, "Layers"); import it from there or as
``privsim.View``.

>>> from privsim.analysis.views import View as Old
>>> from privsim.views import View
>>> Old is View
True
"""

from __future__ import annotations

from privsim.views import View, flatten_value

__all__ = ["View", "flatten_value"]
