"""Parameter checks shared by the mechanism modules.

Each check raises :class:`~privsim.errors.ParameterError` (or, for data values,
:class:`~privsim.errors.InputError`) with one line that names the field and the allowed
range, and returns the value in the form the caller computes with.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privsim.errors import InputError, ParameterError

__all__ = ["positive", "probability", "integer", "shape", "integer_values"]


def _describe(value: Any) -> str:
    arr = np.asarray(value)
    if arr.ndim == 0:
        return repr(arr.item())
    return f"an array of shape {arr.shape}"


def positive(name: str, value: ArrayLike, *, scalar: bool = False) -> Any:
    """Return ``value`` as float(s) if every entry is finite and > 0, else raise.

    A scalar comes back as a Python float, an array as a float64 array (which the caller
    broadcasts against the draws); ``scalar=True`` refuses arrays.
    """
    if type(value) is float and 0.0 < value < math.inf:  # the common case, without numpy
        return value
    kind = "a finite number > 0" if scalar else "finite and > 0 (a number or an array)"
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be {kind} (got {value!r})") from None
    bad_shape = arr.size == 0 or (scalar and arr.ndim > 0)
    if bad_shape or not np.all(np.isfinite(arr) & (arr > 0)):
        raise ParameterError(f"{name} must be {kind} (got {_describe(value)})")
    return float(arr) if arr.ndim == 0 else arr


def probability(name: str, value: ArrayLike) -> float:
    """Return ``value`` as a float if it is a scalar in the open interval (0, 1), else raise."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number in (0, 1) (got {value!r})") from None
    if not 0.0 < v < 1.0:
        raise ParameterError(f"{name} must be a number in (0, 1) (got {v!r})")
    return v


def integer(name: str, value: Any, low: int, high: int | None = None) -> int:
    """Return ``value`` as a Python int if it is an integer in [low, high], else raise."""
    if type(value) is int and low <= value and (high is None or value <= high):
        return value  # the common case
    allowed = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
    if isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be {allowed} (got {value!r})")
    try:
        v = operator.index(value)
    except TypeError:
        raise ParameterError(f"{name} must be {allowed} (got {value!r})") from None
    if v < low or (high is not None and v > high):
        raise ParameterError(f"{name} must be {allowed} (got {v})")
    return v


def shape(name: str, value: Any) -> tuple[int, ...]:
    """Return ``value`` (an int or a sequence of ints >= 0) as a shape tuple, else raise."""
    if type(value) is tuple and not value:
        return ()  # one trial's scalar: the common case
    items = (value,) if np.ndim(value) == 0 else tuple(value)
    try:
        return tuple(integer(name, v, 0) for v in items)
    except ParameterError:
        raise ParameterError(f"{name} must be an int >= 0 or a tuple of them (got {value!r})") from None


def integer_values(name: str, value: ArrayLike, low: int, high: int) -> NDArray[np.int64]:
    """Return ``value`` as an int64 array if it is integer-valued with entries in [low, high]."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{name} must hold integers in [{low}, {high}] (got dtype {arr.dtype})")
    if arr.size and (arr.min() < low or arr.max() > high):
        raise InputError(
            f"{name} must hold integers in [{low}, {high}] (got values in [{arr.min()}, {arr.max()}])"
        )
    return arr.astype(np.int64, copy=False)
