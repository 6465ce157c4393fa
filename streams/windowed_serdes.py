"""Kafka's windowed key formats: the bytes Kafka Streams' ``TimeWindowedSerde`` and
``SessionWindowedSerde`` write, so that a Java Kafka Streams application or Kafka's tools can
read Sluice's windowed results (and Sluice theirs).

Byte layouts (all integers signed, 8-byte, big-endian, as Java's ``ByteBuffer.putLong``):

- time windows (``TimeWindowedSerializer``, Kafka's ``WindowKeySchema.toBinary``)::

      | inner key, serialized (n bytes) | window start (8) |

  The end is not written: ``TimeWindowedDeserializer`` is told the window size and reads
  ``end = start + size`` (``Long.MAX_VALUE`` when the size is not known, or on overflow).
  Hopping and sliding window results use it too (a sliding window that starts at 0 because it
  would start before it reads back with ``end = size``, as in Kafka).
- session windows (``SessionWindowedSerializer``, Kafka's ``SessionKeySchema.toBinary``)::

      | inner key, serialized (n bytes) | session end (8) | session start (8) |

>>> from sluice.serde import STRING
>>> from sluice.streams.record import Windowed
>>> time_windowed(STRING, 60_000).serialize(Windowed("a", 60_000, 120_000)).hex()
'61000000000000ea60'
>>> time_windowed(STRING, 60_000).deserialize(bytes.fromhex("61000000000000ea60"))
Windowed(key='a', start=60000, end=120000)
>>> session_windowed(STRING).deserialize(session_windowed(STRING).serialize(Windowed("u", 5, 9)))
Windowed(key='u', start=5, end=9)
"""

from __future__ import annotations

import struct
from typing import Literal

from sluice.serde import Serde, SerdeError
from sluice.streams.record import Windowed

__all__ = ["WindowedKeyFormat", "session_windowed", "time_windowed"]

WindowedKeyFormat = Literal["json", "kafka"]
"""How windowed results' keys are written to topics: Sluice's JSON
(``{"key": …, "window": {"start": …, "end": …}}``) or Kafka's bytes (this module)."""

_LONG = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")
_MAX = 2**63 - 1


def time_windowed(inner: Serde, window_size_ms: int | None = None) -> Serde:
    """Kafka's ``TimeWindowedSerde``: the inner key then the 8-byte window start; read back with
    ``end = start + window_size_ms`` (``Long.MAX_VALUE`` without a size, as Kafka)."""
    serialize_inner = inner.serialize
    deserialize_inner = inner.deserialize

    def serialize(key: Windowed) -> bytes:
        return serialize_inner(key.key) + _LONG.pack(key.start)

    def deserialize(data: bytes) -> Windowed:
        if len(data) < _LONG.size:
            raise SerdeError(
                f"a time-windowed key is at least {_LONG.size} bytes (a key, then the window "
                f"start), got {len(data)}"
            )
        (start,) = _LONG.unpack_from(data, len(data) - _LONG.size)
        end = _MAX if window_size_ms is None else min(start + window_size_ms, _MAX)
        return Windowed(deserialize_inner(bytes(data[: len(data) - _LONG.size])), start, end)

    return Serde(serialize, deserialize, f"time-windowed({inner.name})")


def session_windowed(inner: Serde) -> Serde:
    """Kafka's ``SessionWindowedSerde``: the inner key, then the 8-byte session end and the
    8-byte session start."""
    serialize_inner = inner.serialize
    deserialize_inner = inner.deserialize

    def serialize(key: Windowed) -> bytes:
        return serialize_inner(key.key) + _TWO_LONGS.pack(key.end, key.start)

    def deserialize(data: bytes) -> Windowed:
        if len(data) < _TWO_LONGS.size:
            raise SerdeError(
                f"a session-windowed key is at least {_TWO_LONGS.size} bytes (a key, then the "
                f"session end and start), got {len(data)}"
            )
        end, start = _TWO_LONGS.unpack_from(data, len(data) - _TWO_LONGS.size)
        inner_key = bytes(data[: len(data) - _TWO_LONGS.size])
        return Windowed(deserialize_inner(inner_key), start, end)

    return Serde(serialize, deserialize, f"session-windowed({inner.name})")
