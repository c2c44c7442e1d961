"""Protocols: one module per protocol, each a short :class:`Protocol` subclass.

:data:`REGISTRY` maps CLI names to classes; :func:`get_protocol` builds one from
parameters (strings from the CLI are converted and checked). Built-in protocols are
imported on first use, so ``import privsim`` stays fast. :func:`resolve_protocol` also
finds users' protocols: ``FILE.py:Class``, ``package.module:Class`` and installed plugins
(see :mod:`privsim.protocols.loading`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from privsim.errors import ParameterError, ProtocolError
from privsim.protocols.base import REQUIRED, AuditScoreContext, Param, Privacy, Protocol
from privsim.protocols.randomized_response import RandomizedResponse, RandomizedResponseDistributed

__all__ = [
    "REGISTRY",
    "REQUIRED",
    "AuditScoreContext",
    "Param",
    "Privacy",
    "Protocol",
    "RandomizedResponse",
    "RandomizedResponseDistributed",
    "get_protocol",
    "register",
    "resolve_protocol",
]

# CLI name -> "module:Class" of the built-in protocols, imported lazily.
_BUILTIN = {
    "randomized-response": "privsim.protocols.randomized_response:RandomizedResponse",
    "randomized-response-distributed": "privsim.protocols.randomized_response:RandomizedResponseDistributed",
    "secure-sum": "privsim.protocols.secure_sum:SecureSum",
    "ck-sum": "privsim.protocols.ck_sum:CKSum",
    "dist-alpha": "privsim.protocols.dist_alpha:DistAlpha",
    "gap-threshold": "privsim.protocols.gap_threshold:GapThreshold",
    "interactive-rr": "privsim.protocols.interactive:InteractiveRR",
    "central-laplace": "privsim.protocols.central:CentralLaplace",
    "central-gaussian": "privsim.protocols.central:CentralGaussian",
    "continual-sum": "privsim.protocols.continual_sum:ContinualSum",
    "continual-range": "privsim.protocols.continual_sketch:ContinualRange",
    "continual-join": "privsim.protocols.continual_sketch:ContinualJoin",
    "leaky-rr": "privsim.protocols.leaky:LeakyRR",
    "shuffle-rr": "privsim.protocols.shuffle:ShuffleRR",
    "shuffle-sum": "privsim.protocols.shuffle_sum:ShuffleSum",
    "secagg": "privsim.protocols.secagg:SecAgg",
    "secagg-plus": "privsim.protocols.secagg:SecAggPlus",
}


class _Registry(Mapping):
    """CLI name -> protocol class; built-ins load on first access, :func:`register` adds more."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Protocol]] = {}

    def _load(self, name: str) -> type[Protocol] | None:
        # A built-in that fails to import is privsim's own bug: the error propagates.
        if name in self._classes:
            return self._classes[name]
        target = _BUILTIN.get(name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        cls = getattr(importlib.import_module(module), attr, None)
        if not (isinstance(cls, type) and issubclass(cls, Protocol)):  # a mistake in _BUILTIN: say so
            raise ProtocolError(f"built-in protocol {name!r}: {target} is not a Protocol class (got {cls!r})")
        self._classes[name] = cls
        return cls

    def __getitem__(self, name: str) -> type[Protocol]:
        cls = self._load(name)
        if cls is None:
            raise KeyError(name)
        return cls

    def __iter__(self) -> Iterator[str]:
        names = [n for n in _BUILTIN if self._load(n) is not None]
        return iter(names + [n for n in self._classes if n not in _BUILTIN])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def names(self) -> list[str]:
        """All protocol names, without importing any protocol module (for help texts)."""
        return sorted({*_BUILTIN, *self._classes})

    def add(self, cls: type[Protocol]) -> None:
        self._classes[cls.name] = cls


#: CLI name -> protocol class.
REGISTRY = _Registry()


def register(cls: type[Protocol]) -> type[Protocol]:
    """Add a protocol class to :data:`REGISTRY` under its ``name`` (usable as a decorator).

    >>> @register
    ... class Silent(Protocol):
    ...     name = "silent"
    >>> "silent" in REGISTRY
    True
    """
    if not cls.name:
        raise ParameterError(f"{cls.__name__} has no name")
    if cls.name in _BUILTIN and REGISTRY.get(cls.name) is not cls:
        raise ParameterError(f"register: the name {cls.name!r} of {cls.__name__} is a built-in protocol's "
                             "(expected a name of its own)")
    REGISTRY.add(cls)
    return cls


def resolve_protocol(name: str) -> type[Protocol]:
    """The protocol class ``name`` stands for: a registered name, ``FILE.py:Class``,
    ``package.module:Class`` or an installed plugin's name (in that order).

    >>> resolve_protocol("secure-sum").__name__
    'SecureSum'

    Raises
    ------
    ParameterError
        No protocol of that name; :class:`~privsim.protocols.loading.ProtocolLoadError`
        when a file, module or plugin fails to load.
    """
    from privsim.protocols import loading

    if name in REGISTRY:
        return REGISTRY[name]
    if loading.is_reference(name):
        return loading.load_reference(name)
    found = {p.name: p for p in loading.plugins()}
    if name in found:
        return loading.plugin_class(found[name])
    names = sorted({*REGISTRY, *found})
    raise ParameterError(f"unknown protocol {name!r} (allowed: {', '.join(names)}; or FILE.py:Class, "
                         "package.module:Class)")


def get_protocol(name: str, **params: Any) -> Protocol:
    """Build the protocol ``name`` stands for (see :func:`resolve_protocol`) with ``params``.

    >>> get_protocol("randomized-response", epsilon="0.5").epsilon
    0.5
    """
    return resolve_protocol(name)(**params)
