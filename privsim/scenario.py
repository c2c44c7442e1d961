"""Scenario files (``scenarios/*.toml``): a run's fields in a file, overridable by CLI flags.

A scenario names a protocol, its parameters, n, t, trials, seed and the inputs::

    protocol = "randomized-response"
    n = 1000
    trials = 2000
    seed = 1
    inputs = "half"          # zeros | ones | half | alternating | count:K | bernoulli:P | [0, 1, ...]
    [params]
    epsilon = 1.0

``protocol`` may also name a user's protocol: ``"my_protocols.py:RelaySum"`` (a path
relative to the scenario file's folder), ``"package.module:Class"`` or a plugin's name.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from privsim.errors import InputError, ParameterError
from privsim.protocols import get_protocol
from privsim.protocols.base import Protocol
from privsim.protocols.loading import absolute_reference

__all__ = ["RunSpec", "load_scenario", "make_inputs", "parse_params", "read_scenario_text"]

_FIELDS = {
    "protocol": str, "n": int, "t": int, "trials": int, "seed": int, "inputs": (str, list),
    "params": dict, "title": str, "description": str, "coalition": (str, list, int), "neighbor": int,
    "delta": float, "confidence": float, "plot": str, "executor": str, "ns": list, "selectors": (str, list),
}


@dataclass(frozen=True)
class RunSpec:
    """Everything needed to run a scenario (merged from a file and flags).

    >>> RunSpec(protocol="randomized-response", n=10).with_overrides(trials=5).trials
    5
    """

    protocol: str = ""
    n: int | None = None
    t: int | None = None
    trials: int = 1000
    seed: int | None = 0
    inputs: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def with_overrides(self, **kw: Any) -> RunSpec:
        """A copy with the given non-``None`` fields replaced (params are merged)."""
        kw = {k: v for k, v in kw.items() if v is not None}
        params = {**self.params, **kw.pop("params", {})}
        return replace(self, params=params, **kw)

    def build(self) -> Protocol:
        """The protocol instance, with a clear error if the protocol or a parameter is wrong."""
        if not self.protocol:
            raise ParameterError("protocol is required (--protocol NAME or FILE.py:Class, or protocol = \"...\" "
                                 "in the scenario)")
        return get_protocol(self.protocol, **self.params)


def load_scenario(path: str | Path) -> RunSpec:
    """Read a scenario TOML file; unknown keys and wrong types are reported with the file and key.

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    >>> _ = f.write('protocol = "randomized-response"\\nn = 8\\n[params]\\nepsilon = 2.0\\n'); f.close()
    >>> load_scenario(f.name).params
    {'epsilon': 2.0}
    >>> os.unlink(f.name)
    """
    p = Path(path)
    data = _read_toml(p)
    for key, value in data.items():
        if key not in _FIELDS:
            raise ParameterError(f"{p}: unknown key {key!r} (allowed: {', '.join(sorted(_FIELDS))})")
        want = _FIELDS[key]
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            names = " or ".join(w.__name__ for w in (want if isinstance(want, tuple) else (want,)))
            raise ParameterError(f"{p}: key {key!r} must be {names} (got {type(value).__name__})")
    core = {k: data[k] for k in ("protocol", "n", "t", "trials", "seed", "inputs") if k in data}
    if "protocol" in core:  # a protocol file is found next to the scenario, wherever privsim runs
        core["protocol"] = absolute_reference(core["protocol"], p.resolve().parent)
    extra = {k: v for k, v in data.items() if k not in core and k != "params"}
    return RunSpec(**core, params=dict(data.get("params", {})), extra=extra, source=str(p))


def read_scenario_text(p: Path) -> str:
    """The text of a scenario file; a missing file, a folder, a device or binary data is a
    :class:`ParameterError` naming the file and what it is.

    >>> read_scenario_text(Path("/dev/null"))
    Traceback (most recent call last):
    privsim.errors.ParameterError: scenario file '/dev/null' is not a regular file (give a .toml file)
    """
    if not p.exists():
        raise ParameterError(f"scenario file {str(p)!r} does not exist")
    if p.is_dir():
        raise ParameterError(f"scenario file {str(p)!r} is a folder (give a .toml file)")
    if not p.is_file():
        raise ParameterError(f"scenario file {str(p)!r} is not a regular file (give a .toml file)")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ParameterError(f"scenario file {str(p)!r} is not UTF-8 text (give a .toml file)") from None
    except OSError as exc:
        raise ParameterError(f"scenario file {str(p)!r} cannot be read: {exc.strerror}") from None


def _read_toml(p: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_scenario_text(p))
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ParameterError(f"{p}: arrays nested too deeply (a party's input has at most a few axes)") from None


def parse_params(items: list[str] | None) -> dict[str, str]:
    """Parse ``K=V`` strings from ``--param``.

    >>> parse_params(["epsilon=1", "noise=laplace"])
    {'epsilon': '1', 'noise': 'laplace'}
    """
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParameterError(f"--param must look like KEY=VALUE (got {item!r})")
        if key.strip() in out:
            raise ParameterError(f"--param {key.strip()} given twice ({key.strip()}={out[key.strip()]}, "
                                 f"{item.strip()}); give each parameter once")
        out[key.strip()] = value.strip()
    return out


def make_inputs(protocol: Protocol, spec: Any, n: int, seed: int | None) -> np.ndarray:
    """The parties' inputs from a scenario's ``inputs`` field.

    ``None`` takes the protocol's default; strings: ``zeros``, ``ones``, ``half`` (the first
    n//2 hold 1), ``alternating``, ``count:K`` (the first K hold 1), ``bernoulli:P``
    (independent bits, drawn from the run's seed on a stream of their own); or a list.

    >>> from privsim.protocols import RandomizedResponse
    >>> make_inputs(RandomizedResponse(), "count:2", 4, 0).tolist()
    [1, 1, 0, 0]
    """
    if n is None or n < 1:
        raise ParameterError(f"n must be >= 1 (got {n})")
    if spec is None:
        return protocol.default_inputs(n)
    if isinstance(spec, str) and spec.strip().startswith("["):  # --inputs '[0,1,1]': a JSON list
        spec = _json_list(spec)
    if isinstance(spec, list):
        try:
            arr = np.asarray(spec)
        except ValueError:
            raise InputError("inputs: the list is ragged (every party's input must have one shape)") from None
        if arr.ndim == 0 or arr.shape[0] != n:
            raise InputError(f"inputs: {arr.shape[0] if arr.ndim else 0} values given but n = {n}")
        return arr
    kind, _, arg = str(spec).partition(":")
    idx = np.arange(n)
    firsts = {"zeros": 0, "half": n // 2, "ones": n}  # count:K for these K
    if kind in firsts:
        return (idx < firsts[kind]).astype(np.int64)
    if kind == "alternating":
        return (idx % 2).astype(np.int64)
    try:
        if kind == "count":
            k = int(arg)
            if not 0 <= k <= n:
                raise ValueError
            return (idx < k).astype(np.int64)
        if kind == "bernoulli":
            prob = float(arg)
            if not 0 <= prob <= 1:
                raise ValueError
            rng = np.random.default_rng(np.random.SeedSequence(seed or 0, spawn_key=(99,)))
            return (rng.random(n) < prob).astype(np.int64)
    except ValueError:
        raise InputError(f"inputs: bad argument in {spec!r} (count:K with 0 <= K <= n, bernoulli:P with "
                         "0 <= P <= 1)") from None
    raise InputError(f"inputs: unknown spec {spec!r} (allowed: zeros, ones, half, alternating, count:K, "
                     "bernoulli:P, or a list of n values such as [0,1,1])")


def _json_list(text: str) -> list:
    import json

    try:
        value = json.loads(text)
    except RecursionError:
        raise InputError("inputs: the list is nested too deeply (a party's input has at most a few axes)") from None
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list):
        raise InputError(f"inputs: {text!r} is not a list of numbers such as [0,1,1]")
    return value
