"""A protocol's inputs, checked and given their trial axis (the engine's and every party process's copy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.errors import InputError, ParameterError
from privsim.protocols.base import Protocol

__all__ = ["prepare_inputs"]


def prepare_inputs(protocol: Protocol, inputs: Any, trials: int, n: int | None = None) -> np.ndarray:
    """Inputs as a ``(trials, n, *input_shape)`` array (a broadcast view when shared by all trials).

    ``inputs`` may be ``(n, *input_shape)`` (the same in every trial) or
    ``(trials, n, *input_shape)``; ``None`` takes the protocol's default inputs for ``n``.

    >>> from privsim.protocols import RandomizedResponse
    >>> prepare_inputs(RandomizedResponse(), [0, 1, 1], trials=2).shape
    (2, 3)
    """
    if inputs is None:
        if n is None:
            raise ParameterError("n is required when no inputs are given")
        inputs = protocol.default_inputs(n)
    try:
        arr = np.asarray(inputs)
    except ValueError as exc:  # ragged lists
        raise InputError(f"inputs: not a rectangular array of numbers ({exc})") from None
    shape = protocol.input_shape()
    target = np.dtype(protocol.input_dtype)
    if arr.dtype.kind not in "biuf":
        raise InputError(f"inputs: expected numbers (got dtype {arr.dtype})")
    if target.kind in "iu" and arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.round(arr)):
            bad = np.argwhere(~np.isfinite(arr) | (arr != np.round(arr)))[0]
            raise InputError(f"inputs: {protocol.name} takes integer inputs; got {arr[tuple(bad)].item()!r} "
                             f"at index {tuple(int(i) for i in bad)}")
        info = np.iinfo(target)
        if arr.size and not (info.min <= arr.min() and arr.max() < 2.0 ** (info.bits - (target.kind == "i"))):
            bad = np.argwhere((arr < info.min) | (arr >= 2.0 ** (info.bits - (target.kind == "i"))))[0]
            raise InputError(f"inputs: {arr[tuple(bad)].item()!r} at index {tuple(int(i) for i in bad)} does not "
                             f"fit {target} (allowed: {info.min} .. {info.max})")
    arr = arr.astype(target)
    if arr.ndim == len(shape) + 1:
        if tuple(arr.shape[1:]) != tuple(shape):
            raise InputError(f"inputs: each party's input must have shape {shape} (got {arr.shape[1:]})")
        protocol.validate_inputs(arr[None])
        arr = np.broadcast_to(arr, (trials, *arr.shape))
    elif arr.ndim == len(shape) + 2:
        if arr.shape[0] != trials or tuple(arr.shape[2:]) != tuple(shape):
            raise InputError(f"inputs: expected shape (trials={trials}, n, *{shape}) (got {arr.shape})")
        protocol.validate_inputs(arr)
    else:
        raise InputError(f"inputs: expected an array of shape (n, *{shape}) or (trials, n, *{shape}) "
                         f"(got {arr.shape})")
    if n is not None and arr.shape[1] != n:
        raise InputError(f"inputs: {arr.shape[1]} parties given but n = {n}")
    if arr.shape[1] < 1:
        raise InputError("inputs: at least one party is needed")
    return arr
