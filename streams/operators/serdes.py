"""Serdes the DSL uses inside topologies: windowed keys and table changes.

``windowed_json``: what windowed results look like on an output topic,
``{"key": …, "window": {"start": ms, "end": ms}}``. ``windowed_binary``: 8-byte start, 8-byte
end, then the key's bytes (stores and internal topics). ``change``: a table update through a
repartition topic, one byte of flags then the new and old values, each length-prefixed.

>>> from sluice.serde import STRING, JSON
>>> from sluice.streams.record import Change, Windowed
>>> windowed_json(STRING).serialize(Windowed("a", 0, 60000))
b'{"key":"a","window":{"start":0,"end":60000}}'
>>> windowed_binary(STRING).deserialize(windowed_binary(STRING).serialize(Windowed("a", 5, 9)))
Windowed(key='a', start=5, end=9)
>>> change(JSON).deserialize(change(JSON).serialize(Change({"n": 1}, None)))
Change(new={'n': 1}, old=None)
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

from sluice.serde import Serde
from sluice.streams.record import Change, Windowed

__all__ = ["change", "windowed_binary", "windowed_json"]

_BOUNDS = struct.Struct(">qq")
_LENGTH = struct.Struct(">i")
_JSON_TYPES = (str, int, float, bool, dict, list)
_WINDOWED_JSON = b'{"key":%b,"window":{"start":%d,"end":%d}}'


def windowed_json(key_serde: Serde) -> Serde:
    """Windowed keys as JSON; the inner key as JSON if it can be, else its serde's text."""

    dumps = orjson.dumps

    def serialize(key: Windowed) -> bytes:
        inner: Any = key.key
        if inner is not None and not isinstance(inner, _JSON_TYPES):
            inner = key_serde.serialize(inner).decode()
        # the bytes orjson.dumps({"key": inner, "window": {"start": …, "end": …}}) writes, made
        # by hand: once per windowed result, and half the time of building and dumping the dicts
        return _WINDOWED_JSON % (dumps(inner), key.start, key.end)

    def deserialize(data: bytes) -> Windowed:
        obj = orjson.loads(data)
        return Windowed(obj["key"], obj["window"]["start"], obj["window"]["end"])

    return Serde(serialize, deserialize, f"windowed-json({key_serde.name})")


def windowed_binary(key_serde: Serde) -> Serde:
    """Windowed keys as bounds then key bytes."""

    def serialize(key: Windowed) -> bytes:
        return _BOUNDS.pack(key.start, key.end) + key_serde.serialize(key.key)

    def deserialize(data: bytes) -> Windowed:
        start, end = _BOUNDS.unpack_from(data)
        return Windowed(key_serde.deserialize(data[_BOUNDS.size :]), start, end)

    return Serde(serialize, deserialize, f"windowed({key_serde.name})")


def change(value_serde: Serde) -> Serde:
    """Table changes: flags (1 = new present, 2 = old present), then each present value."""

    def serialize(update: Change) -> bytes:
        parts = [b""]
        flags = 0
        for bit, value in ((1, update.new), (2, update.old)):
            if value is not None:
                flags |= bit
                data = value_serde.serialize(value)
                parts.append(_LENGTH.pack(len(data)) + data)
        parts[0] = bytes([flags])
        return b"".join(parts)

    def deserialize(data: bytes) -> Change:
        flags = data[0]
        position = 1
        values: list[Any] = []
        for bit in (1, 2):
            if flags & bit:
                (length,) = _LENGTH.unpack_from(data, position)
                position += 4
                values.append(value_serde.deserialize(data[position : position + length]))
                position += length
            else:
                values.append(None)
        return Change(values[0], values[1])

    return Serde(serialize, deserialize, f"change({value_serde.name})")
