"""The peers file: everything one party process needs to join a run, as JSON.

``privsim party --id I --peers FILE`` reads it. It names the protocol and its
parameters, the run (n, t, trials, seed, seeding block), the inputs, every party's
``host:port``, the timeout, what every party would otherwise derive from the parameters
before its first round (:meth:`~privsim.protocols.base.Protocol.precomputed`, e.g.
secure-sum's modulus: computed once by whoever writes the file), and the run's secret key
(hex), from which every frame's HMAC is computed. The key makes the file a secret: it is written readable by its owner
only, and whoever holds it can speak for any party.

Nothing in it is executable: the protocol is named (a registered name or an importable
``module:Class``) and rebuilt from its parameters; the inputs are encoded by
:func:`privsim.transport.framing.encode_value` (base64).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privsim.errors import ParameterError, PrivsimError
from privsim.network.schedule import CURATOR
from privsim.protocols import REGISTRY, Protocol, get_protocol
from privsim.protocols.loading import file_of, load_reference
from privsim.transport.framing import MAX_PAYLOAD, decode_value, encode_value

__all__ = ["DEFAULT_TIMEOUT", "PeersConfig", "load_peers", "protocol_spec", "build_protocol"]

#: Seconds a party waits for a scheduled message (or a peer's connection to complete) before
#: it gives up and names the silent party.
DEFAULT_TIMEOUT = 5.0


def protocol_spec(protocol: Protocol) -> str:
    """How a party process finds ``protocol``'s class: its registered name, else ``module:Class``.

    >>> from privsim.protocols import RandomizedResponse
    >>> protocol_spec(RandomizedResponse())
    'randomized-response'
    """
    cls = type(protocol)
    if protocol.name and REGISTRY.get(protocol.name) is cls:
        return protocol.name
    source = file_of(cls)
    if source is not None:  # loaded from FILE.py: the party loads the same file (on its host, same path)
        return f"{source}:{cls.__qualname__}"
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        raise ParameterError(f"transport: protocol class {cls.__qualname__} must be importable by its module "
                             f"(defined at the top level of a module, not in {cls.__module__})")
    return f"{cls.__module__}:{cls.__qualname__}"


def build_protocol(spec: str, params: dict[str, Any]) -> Protocol:
    """Rebuild a protocol from :func:`protocol_spec` and its parameters.

    >>> build_protocol("randomized-response", {"epsilon": 0.5}).epsilon
    0.5
    """
    if ":" not in spec:
        return get_protocol(spec, **params)
    module, _, name = spec.rpartition(":")
    if module.endswith(".py"):
        return load_reference(spec)(**params)
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ParameterError(f"peers file: protocol {spec!r} cannot be imported ({exc})") from None
    if not (isinstance(cls, type) and issubclass(cls, Protocol)):
        raise ParameterError(f"peers file: {spec!r} is not a Protocol class")
    return cls(**params)


@dataclass(frozen=True)
class PeersConfig:
    """One run over TCP, as written to (and read from) the peers file.

    ``inputs`` is ``(n, ...)`` (shared by all trials) or ``(trials, n, ...)``;
    ``addresses`` maps every party id to ``(host, port)``.

    >>> from privsim.protocols import RandomizedResponse
    >>> cfg = PeersConfig.create(RandomizedResponse(), np.array([0, 1]), t=1, trials=4, seed=3,
    ...                          addresses={0: ("127.0.0.1", 4000), 1: ("127.0.0.1", 4001), "C": ("::1", 4002)})
    >>> PeersConfig.from_json(cfg.to_json()) == cfg
    True
    """

    protocol: str
    params: dict[str, Any]
    n: int
    t: int
    trials: int
    seed: int
    inputs: np.ndarray = field(compare=False)
    addresses: dict[int | str, tuple[str, int]]
    key: bytes = field(repr=False)
    block_offset: int = 0
    timeout: float = DEFAULT_TIMEOUT
    record: bool = True
    max_payload: int = MAX_PAYLOAD
    precomputed: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, protocol: Protocol, inputs: np.ndarray, *, t: int, trials: int, seed: int,
               addresses: dict[int | str, tuple[str, int]], **kw: Any) -> PeersConfig:
        """A configuration with a fresh random key (``secrets.token_bytes(32)``)."""
        n = inputs.shape[inputs.ndim - 1 - len(protocol.input_shape())]
        # None stands for "derived from the others" (e.g. dist-alpha's sigma2): left out, it is derived again.
        params = {k: v for k, v in protocol.parameters.items() if v is not None}
        return cls(protocol=protocol_spec(protocol), params=params, n=int(n), t=int(t),
                   trials=int(trials), seed=int(seed), inputs=np.asarray(inputs), addresses=dict(addresses),
                   key=secrets.token_bytes(32), precomputed=protocol.precomputed(int(n), int(t)), **kw)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PeersConfig):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def build(self) -> Protocol:
        """The protocol of the run, holding the file's precomputed values for (n, t)."""
        protocol = build_protocol(self.protocol, self.params)
        try:
            protocol.adopt_precomputed(self.n, self.t, self.precomputed)
        except ParameterError as exc:
            raise ParameterError(f"peers file: {exc}") from None
        return protocol

    def to_json(self) -> str:
        """The peers file's text."""
        return json.dumps({
            "protocol": self.protocol, "params": self.params, "n": self.n, "t": self.t, "trials": self.trials,
            "seed": self.seed, "block_offset": self.block_offset, "timeout": self.timeout, "record": self.record,
            "max_payload": self.max_payload, "precomputed": self.precomputed, "key": self.key.hex(),
            "inputs": base64.b64encode(encode_value(np.ascontiguousarray(self.inputs))).decode(),
            "addresses": {str(k): f"{h}:{p}" for k, (h, p) in self.addresses.items()},
        }, indent=1)

    @classmethod
    def from_json(cls, text: str, source: str = "peers file") -> PeersConfig:
        """Parse a peers file; every problem is a :class:`ParameterError` naming the field."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParameterError(f"{source}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ParameterError(f"{source}: expected a JSON object")
        get = _Fields(data, source)
        n = get.number("n", int, 1)
        addresses: dict[int | str, tuple[str, int]] = {}
        for k, v in get.typed("addresses", dict).items():
            if k != CURATOR and not (k.isdigit() and int(k) < n):
                raise ParameterError(f"{source}: addresses key {k!r} is not a party id (allowed: 0..{n - 1} or C)")
            pid: int | str = CURATOR if k == CURATOR else int(k)
            host, sep, port = str(v).rpartition(":")
            if not sep or not port.isdigit() or not 0 < int(port) < 65536:
                raise ParameterError(f"{source}: addresses[{k!r}] must be HOST:PORT with 0 < PORT < 65536 "
                                     f"(got {v!r})")
            addresses[pid] = (host.strip("[]"), int(port))
        key = get.typed("key", str)
        try:
            key_bytes = bytes.fromhex(key)
            inputs = decode_value(base64.b64decode(get.typed("inputs", str), validate=True))
        except (ValueError, PrivsimError) as exc:
            raise ParameterError(f"{source}: key must be hex and inputs base64 of an encoded array ({exc})") from None
        if len(key_bytes) < 16 or not isinstance(inputs, np.ndarray):
            raise ParameterError(f"{source}: key must have >= 16 bytes and inputs must be an array")
        return cls(protocol=get.typed("protocol", str), params=get.typed("params", dict), n=n,
                   t=get.number("t", int, 0), trials=get.number("trials", int, 1), seed=get.number("seed", int, 0),
                   inputs=inputs, addresses=addresses, key=key_bytes,
                   block_offset=get.number("block_offset", int, 0),
                   timeout=get.number("timeout", float, 0.001), record=get.typed("record", bool),
                   max_payload=get.number("max_payload", int, 1024),
                   precomputed=get.typed("precomputed", dict) if "precomputed" in data else {})

    def write(self, path: str | Path) -> Path:
        """Write the peers file, readable by its owner only (it holds the run's key)."""
        p = Path(path)
        with os.fdopen(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
            fh.write(self.to_json())
        return p


def load_peers(path: str | Path) -> PeersConfig:
    """Read a peers file (see :class:`PeersConfig`).

    >>> load_peers("/nonexistent/peers.json")
    Traceback (most recent call last):
    privsim.errors.ParameterError: peers file '/nonexistent/peers.json' cannot be read (No such file or directory)
    """
    p = Path(path)
    try:
        text = p.read_text()
        mode = p.stat().st_mode
    except OSError as exc:
        raise ParameterError(f"peers file {str(p)!r} cannot be read ({exc.strerror})") from None
    cfg = PeersConfig.from_json(text, source=str(p))
    if mode & 0o077:  # checked after parsing, so a malformed file reports what is wrong with it first
        raise ParameterError(f"{p}: the peers file holds the run's key but is readable by others (mode "
                             f"{oct(mode & 0o777)[2:]}); run chmod 600 {p}")
    return cfg


class _Fields:
    """Typed access to the peers file's fields, with errors naming the field."""

    def __init__(self, data: dict[str, Any], source: str) -> None:
        self.data, self.source = data, source

    def typed(self, name: str, kind: type) -> Any:
        value = self.data.get(name)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise ParameterError(f"{self.source}: field {name!r} must be {kind.__name__} (got {value!r})")
        return value

    def number(self, name: str, kind: type, low: float) -> Any:
        value = self.data.get(name)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (kind is float or
                                                                                  isinstance(value, int))
        if not ok or value < low:
            raise ParameterError(f"{self.source}: field {name!r} must be {kind.__name__} >= {low:g} (got {value!r})")
        return kind(value)
