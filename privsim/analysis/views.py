"""Coalition views, under the import path the README once gave (deprecated).

The view of a coalition is built by the engine that ran the protocol
(:mod:`privsim.views`, docs/architecture.md, "Layers"); import it from there or as
``privsim.View``. Importing this module warns (:class:`DeprecationWarning`).

>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", DeprecationWarning)
...     from privsim.analysis.views import View as Old
>>> from privsim.views import View
>>> Old is View
True
"""

from __future__ import annotations

import warnings

from privsim.views import View, flatten_value

__all__ = ["View", "flatten_value"]

warnings.warn("privsim.analysis.views is deprecated: import View from privsim (or privsim.views)",
              DeprecationWarning, stacklevel=2)
