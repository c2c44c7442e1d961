"""A module imported on first use (start-up of a party process: docs/architecture.md, "Where a message moves")."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["on_use"]


class _OnUse:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def on_use(name: str) -> Any:
    """The module ``name``, imported when one of its attributes is first read.

    >>> json = on_use("json")
    >>> json.dumps([1])
    '[1]'
    """
    return _OnUse(name)
