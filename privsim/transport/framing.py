"""Frames on the wire: a fixed header, a value encoded without pickle, an HMAC-SHA256 tag.

A frame is ``header | payload | tag`` (docs/architecture.md, "Runtimes"):

- header (30 bytes, network byte order): magic ``b"PSM1"``, kind (1 hello, 2 message,
  3 bye), a reserved byte, round (u32), sender and receiver (i32; the curator is -1),
  sequence number (u64, per connection and direction, from 0), payload length (u32);
- payload: one value encoded by :func:`encode_value` (numbers only: numpy arrays of a
  numeric or boolean dtype, numpy and Python scalars, tuples and lists of those);
- tag: HMAC-SHA256 under the run's key of ``session | header | payload``, where the
  session is the two 16-byte nonces the ends exchanged when the connection opened. A
  frame replayed on another connection, or reordered on its own, fails the tag or the
  sequence number.

Decoding never evaluates or unpickles anything: arrays are rebuilt from a dtype drawn
from a fixed list, a shape and exactly the right number of bytes (read-only views of the
received bytes: a received message cannot be written to).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsim.errors import ParameterError, PrivsimError
from privsim.network.schedule import CURATOR

__all__ = ["BYE", "HEADER", "HELLO", "MAGIC", "MAX_PAYLOAD", "MESSAGE", "TAG_BYTES", "FrameError", "Header",
           "decode_id", "decode_value", "encode_id", "encode_value", "frame", "parse_header", "verify"]

MAGIC = b"PSM1"
HELLO, MESSAGE, BYE = 1, 2, 3
HEADER = struct.Struct("!4sBBIiiQI")
TAG_BYTES = 32
#: Default bound on one frame's payload (bytes): a declared length above it is refused unread.
MAX_PAYLOAD = 1 << 28

# Value tags of the payload encoding.
_ARRAY, _NPSCALAR, _BOOL, _INT, _FLOAT, _TUPLE, _LIST, _NONE = range(8)
# The dtypes a message may carry, by code (little-endian on the wire).
_DTYPES = [np.dtype(s) for s in ("?", "<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8",
                                 "<f2", "<f4", "<f8", "<c8", "<c16")]
_DTYPE_CODE = {d: k for k, d in enumerate(_DTYPES)}
_MAX_NDIM = 32
_MAX_DEPTH = 8
_U8, _U32, _I64, _F64, _U64 = (struct.Struct(f) for f in ("!B", "!I", "!q", "!d", "!Q"))


class FrameError(PrivsimError):
    """Bytes that are not a well-formed privsim frame (or value); the message says what is wrong.

    >>> decode_value(b"\\x09")
    Traceback (most recent call last):
    privsim.transport.framing.FrameError: payload: unknown value tag 9
    """


@dataclass(frozen=True)
class Header:
    """The fields of a frame header (see the module docstring).

    >>> parse_header(HEADER.pack(MAGIC, MESSAGE, 0, 2, -1, 0, 7, 0))
    Header(kind=2, round=2, sender='C', receiver=0, seq=7, length=0)
    """

    kind: int
    round: int
    sender: int | str
    receiver: int | str
    seq: int
    length: int


def encode_id(pid: int | str) -> int:
    """A party id on the wire: the party's number, -1 for the curator.

    >>> encode_id("C"), encode_id(3)
    (-1, 3)
    """
    return -1 if pid == CURATOR else int(pid)


def decode_id(value: int) -> int | str:
    """The inverse of :func:`encode_id`.

    >>> decode_id(-1), decode_id(2)
    ('C', 2)
    """
    return CURATOR if value == -1 else value


def frame(key: bytes, session: bytes, kind: int, round: int, sender: int | str, receiver: int | str,
          seq: int, payload: bytes = b"") -> bytes:
    """One authenticated frame.

    >>> f = frame(b"k" * 32, b"s" * 32, MESSAGE, 1, 0, "C", 5, b"")
    >>> len(f) == HEADER.size + TAG_BYTES, parse_header(f[:HEADER.size]).receiver
    (True, 'C')
    """
    head = HEADER.pack(MAGIC, kind, 0, round, encode_id(sender), encode_id(receiver), seq, len(payload))
    return head + payload + hmac.digest(key, session + head + payload, hashlib.sha256)


def parse_header(data: bytes, max_payload: int = MAX_PAYLOAD) -> Header:
    """Parse and check a frame header; raises :class:`FrameError` on anything malformed.

    >>> parse_header(b"XXXX" + bytes(26))
    Traceback (most recent call last):
    privsim.transport.framing.FrameError: header: bad magic b'XXXX' (expected b'PSM1')
    """
    if len(data) != HEADER.size:
        raise FrameError(f"header: {len(data)} bytes (expected {HEADER.size})")
    magic, kind, _, rnd, s, d, seq, length = HEADER.unpack(data)
    if magic != MAGIC:
        raise FrameError(f"header: bad magic {magic!r} (expected {MAGIC!r})")
    if kind not in (HELLO, MESSAGE, BYE):
        raise FrameError(f"header: unknown frame kind {kind} (allowed: 1 hello, 2 message, 3 bye)")
    if s < -1 or d < -1:
        raise FrameError(f"header: party ids must be >= -1 (got sender {s}, receiver {d})")
    if length > max_payload:
        raise FrameError(f"header: payload of {length} bytes exceeds the limit of {max_payload}")
    return Header(kind, rnd, decode_id(s), decode_id(d), seq, length)


def verify(key: bytes, session: bytes, head: bytes, payload: bytes, tag: bytes) -> bool:
    """Whether ``tag`` is the frame's HMAC (compared in constant time).

    >>> f = frame(b"k" * 32, b"s", BYE, 0, 1, 0, 3)
    >>> head, tag = f[:HEADER.size], f[HEADER.size:]
    >>> verify(b"k" * 32, b"s", head, b"", tag), verify(b"other key", b"s", head, b"", tag)
    (True, False)
    """
    return hmac.compare_digest(hmac.digest(key, session + head + payload, hashlib.sha256), tag)


# ---------------------------------------------------------------------- values
def encode_value(value: Any) -> bytes:
    """Encode a message value (numbers only; see the module docstring).

    >>> v = np.arange(6, dtype=np.int32).reshape(2, 3)
    >>> decode_value(encode_value(v)).tolist()
    [[0, 1, 2], [3, 4, 5]]
    >>> decode_value(encode_value((1, 2.5, np.float32(3))))
    (1, 2.5, np.float32(3.0))
    >>> encode_value({"a": 1})
    Traceback (most recent call last):
    privsim.errors.ParameterError: transport: cannot send a dict over the wire (allowed: numeric numpy arrays, \
numbers, tuples and lists of them)
    """
    parts: list[bytes] = []
    _encode(value, parts, 0)
    return b"".join(parts)


def _encode(value: Any, parts: list[bytes], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ParameterError(f"transport: values nest deeper than {_MAX_DEPTH} tuples/lists")
    if isinstance(value, (np.ndarray, np.generic)):
        parts.append(_U8.pack(_ARRAY if isinstance(value, np.ndarray) else _NPSCALAR))
        _encode_array(np.asarray(value), parts)
    elif isinstance(value, bool):
        parts.append(_U8.pack(_BOOL) + _U8.pack(int(value)))
    elif isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise ParameterError(f"transport: integer {value} does not fit in 64 bits")
        parts.append(_U8.pack(_INT) + _I64.pack(value))
    elif isinstance(value, float):
        parts.append(_U8.pack(_FLOAT) + _F64.pack(value))
    elif isinstance(value, (tuple, list)):
        parts.append(_U8.pack(_TUPLE if isinstance(value, tuple) else _LIST) + _U32.pack(len(value)))
        for v in value:
            _encode(v, parts, depth + 1)
    elif value is None:
        parts.append(_U8.pack(_NONE))
    else:
        raise ParameterError(f"transport: cannot send a {type(value).__name__} over the wire (allowed: numeric "
                             "numpy arrays, numbers, tuples and lists of them)")


def _encode_array(arr: np.ndarray, parts: list[bytes]) -> None:
    dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
    code = _DTYPE_CODE.get(dtype)
    if code is None:
        raise ParameterError(f"transport: cannot send an array of dtype {arr.dtype} (allowed: bool, "
                             "(u)int8-64, float16-64, complex64/128)")
    if arr.ndim > _MAX_NDIM:
        raise ParameterError(f"transport: arrays may have at most {_MAX_NDIM} dimensions (got {arr.ndim})")
    parts.append(_U8.pack(code) + _U8.pack(arr.ndim) + b"".join(_U64.pack(s) for s in arr.shape))
    parts.append(np.ascontiguousarray(arr, dtype=dtype).tobytes())


def decode_value(data: bytes | memoryview) -> Any:
    """Decode a payload made by :func:`encode_value`; raises :class:`FrameError` if malformed.

    Arrays are read-only views of ``data``.

    >>> decode_value(encode_value(np.zeros(3, dtype=bool))).flags.writeable
    False
    >>> decode_value(encode_value(np.zeros(3))[:-1])
    Traceback (most recent call last):
    privsim.transport.framing.FrameError: payload: array data needs 24 bytes, 23 left
    """
    buf = memoryview(data).toreadonly()
    value, end = _decode(buf, 0, 0)
    if end != len(buf):
        raise FrameError(f"payload: {len(buf) - end} bytes after the value")
    return value


def _take(buf: memoryview, pos: int, size: int, what: str) -> int:
    if pos + size > len(buf):
        raise FrameError(f"payload: {what} needs {size} bytes, {len(buf) - pos} left")
    return pos + size


def _decode(buf: memoryview, pos: int, depth: int) -> tuple[Any, int]:
    if depth > _MAX_DEPTH:
        raise FrameError(f"payload: values nest deeper than {_MAX_DEPTH}")
    end = _take(buf, pos, 1, "value tag")
    tag = buf[pos]
    if tag == _ARRAY or tag == _NPSCALAR:
        arr, end = _decode_array(buf, end)
        return (arr if tag == _ARRAY else arr[()]), end
    if tag == _BOOL:
        stop = _take(buf, end, 1, "bool")
        if buf[end] > 1:
            raise FrameError(f"payload: bool byte {buf[end]} (allowed: 0, 1)")
        return bool(buf[end]), stop
    if tag == _INT or tag == _FLOAT:
        stop = _take(buf, end, 8, "number")
        return (_I64 if tag == _INT else _F64).unpack_from(buf, end)[0], stop
    if tag == _TUPLE or tag == _LIST:
        stop = _take(buf, end, 4, "sequence length")
        count = _U32.unpack_from(buf, end)[0]
        if count > len(buf) - stop:  # every item takes at least one byte
            raise FrameError(f"payload: a sequence of {count} items in {len(buf) - stop} bytes")
        items = []
        for _ in range(count):
            item, stop = _decode(buf, stop, depth + 1)
            items.append(item)
        return (tuple(items) if tag == _TUPLE else items), stop
    if tag == _NONE:
        return None, end
    raise FrameError(f"payload: unknown value tag {tag}")


def _decode_array(buf: memoryview, pos: int) -> tuple[np.ndarray, int]:
    end = _take(buf, pos, 2, "array dtype and rank")
    code, ndim = buf[pos], buf[pos + 1]
    if code >= len(_DTYPES):
        raise FrameError(f"payload: unknown dtype code {code}")
    if ndim > _MAX_NDIM:
        raise FrameError(f"payload: array rank {ndim} exceeds {_MAX_NDIM}")
    stop = _take(buf, end, 8 * ndim, "array shape")
    shape = tuple(_U64.unpack_from(buf, end + 8 * k)[0] for k in range(ndim))
    dtype = _DTYPES[code]
    count = math.prod(shape)  # an exact int, bounded by the frame's bytes: no huge allocation
    if shape and count * dtype.itemsize > len(buf):
        raise FrameError(f"payload: array shape {shape} needs more bytes than the frame holds")
    end = _take(buf, stop, count * dtype.itemsize, "array data")
    if count == 0:  # frombuffer refuses an offset at the very end of the buffer
        try:
            arr = np.empty(shape, dtype=dtype)
        except ValueError:  # e.g. (0, 2^60): empty, yet beyond what numpy can index
            raise FrameError(f"payload: array shape {shape} is beyond numpy's index range") from None
        arr.flags.writeable = False
        return arr, end
    return np.frombuffer(buf, dtype=dtype, count=count, offset=stop).reshape(shape), end
