"""Protocols: one module per protocol, each a short :class:`Protocol` subclass.

:data:`REGISTRY` maps CLI names to classes; :func:`get_protocol` builds one from
parameters (strings from the CLI are converted and checked).
"""

from __future__ import annotations

from typing import Any

from privsim.errors import ParameterError
from privsim.protocols.base import REQUIRED, Param, Privacy, Protocol
from privsim.protocols.randomized_response import RandomizedResponse, RandomizedResponseDistributed

__all__ = [
    "REGISTRY",
    "REQUIRED",
    "Param",
    "Privacy",
    "Protocol",
    "RandomizedResponse",
    "RandomizedResponseDistributed",
    "get_protocol",
    "register",
]

#: CLI name -> protocol class.
REGISTRY: dict[str, type[Protocol]] = {}


def register(cls: type[Protocol]) -> type[Protocol]:
    """Add a protocol class to :data:`REGISTRY` under its ``name`` (usable as a decorator)."""
    if not cls.name:
        raise ParameterError(f"{cls.__name__} has no name")
    REGISTRY[cls.name] = cls
    return cls


for _cls in (RandomizedResponse, RandomizedResponseDistributed):
    register(_cls)


def get_protocol(name: str, **params: Any) -> Protocol:
    """Build the protocol registered as ``name`` with ``params``.

    >>> get_protocol("randomized-response", epsilon="0.5").epsilon
    0.5
    """
    try:
        cls = REGISTRY[name]
    except KeyError:
        raise ParameterError(f"unknown protocol {name!r} (allowed: {', '.join(sorted(REGISTRY))})") from None
    return cls(**params)
