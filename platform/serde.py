"""Serdes: how keys and values become bytes on a topic and come back.

A :class:`Serde` is two plain functions, ``serialize(obj) -> bytes`` and
``deserialize(bytes) -> obj``; ``None`` always maps to ``None`` (a missing key, a tombstone) and the
functions are never called with it. The built-in serdes use Kafka's encodings, so that Java and
Python clients read the same bytes:

===========  ====================================================
``BYTES``    bytes as they are
``STRING``   UTF-8
``INT64``    8-byte big-endian signed (Kafka's ``LongSerializer``)
``FLOAT64``  8-byte big-endian IEEE 754 (Kafka's ``DoubleSerializer``)
``JSON``     compact UTF-8 JSON (orjson)
===========  ====================================================

>>> STRING.deserialize(STRING.serialize("café"))
'café'
>>> INT64.serialize(1)
b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01'
>>> JSON.serialize({"amount": 2.5})
b'{"amount":2.5}'
>>> upper = Serde(lambda s: s.upper().encode(), lambda b: b.decode().lower())
>>> upper.deserialize(upper.serialize("Hi"))
'hi'
>>> serde_from("json") is JSON
True

Anywhere a serde is taken (the Streams DSL, ``sluice produce``…), it may be given by name,
as Kafka Streams' ``default.key.serde`` names its serde classes: ``bytes``, ``string``,
``int64`` (or ``long``), ``float64`` (or ``double``), ``json``, and the schema-registry formats
``avro`` and ``json-schema``. A schema format by name is the serde of the subject's registered
schema (:mod:`sluice.schemas.serdes` with Confluent's ``use.latest.version=true`` and
``auto.register.schemas=false``): it writes with the latest version registered under the
subject and reads with the writer's schema, values as dicts. ``protobuf`` is known but needs
the message: give ``ProtobufSerde(proto_text)`` or ``ProtobufSerde(message_type=Cls)``.

>>> serde_from("long") is INT64
True
>>> serde_from("avro").name
'avro'
>>> serde_from("protobuf")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sluice.serde.SerdeError: the protobuf serde needs its message: ...
>>> serde_from("yaml")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sluice.serde.SerdeError: unknown serde 'yaml' (known: avro, bytes, double, float64, int64, ...)
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

from sluice.errors import SluiceError

__all__ = [
    "BYTES",
    "FLOAT64",
    "INT64",
    "JSON",
    "STRING",
    "Serde",
    "SerdeError",
    "SerdeSpec",
    "serde_from",
]


class SerdeError(SluiceError):
    """A value could not be serialized or deserialized."""


@dataclass(frozen=True, slots=True)
class Serde:
    """A pair of functions between objects and bytes; ``name`` is for messages only."""

    serialize: Callable[[Any], bytes]
    deserialize: Callable[[bytes], Any]
    name: str = "custom"


_LONG = struct.Struct(">q")
_DOUBLE = struct.Struct(">d")


def _identity(data: bytes) -> bytes:
    return bytes(data)


def _encode_long(value: int) -> bytes:
    return _LONG.pack(value)


def _decode_long(data: bytes) -> int:
    return int(_LONG.unpack(data)[0])


def _encode_double(value: float) -> bytes:
    return _DOUBLE.pack(value)


def _decode_double(data: bytes) -> float:
    return float(_DOUBLE.unpack(data)[0])


_dumps = orjson.dumps
_NON_STR_KEYS = orjson.OPT_NON_STR_KEYS


def _encode_json(value: Any) -> bytes:
    # orjson is slower with OPT_NON_STR_KEYS (0.54 against 0.34 µs for a small dict here), and
    # without it writes the same bytes whenever it succeeds: try that first
    try:
        return _dumps(value)
    except TypeError:
        return _dumps(value, option=_NON_STR_KEYS)


BYTES = Serde(_identity, _identity, "bytes")
# the str and bytes methods themselves: no Python frame per key (they run for every record)
STRING = Serde(str.encode, bytes.decode, "string")
INT64 = Serde(_encode_long, _decode_long, "int64")
FLOAT64 = Serde(_encode_double, _decode_double, "float64")
JSON = Serde(_encode_json, orjson.loads, "json")

SerdeSpec: TypeAlias = "Serde | str"
"""A serde, or its name (see :func:`serde_from`)."""


def _registered(fmt: str) -> Callable[[], Serde]:
    """The named serde of a schema format: the subject's registered schema (made per use: each
    is bound to its own topic and registry)."""

    def make() -> Serde:
        from sluice.schemas import serdes

        if fmt == "protobuf":
            raise SerdeError(
                "the protobuf serde needs its message: pass "
                "sluice.schemas.serdes.ProtobufSerde(proto_text) or "
                "ProtobufSerde(message_type=YourMessage) instead of the name 'protobuf'"
            )
        options = {"use.latest.version": True, "auto.register.schemas": False}
        if fmt == "avro":
            return serdes.AvroSerde(None, options)
        return serdes.JsonSchemaSerde(None, options)

    return make


_BY_NAME: dict[str, Serde | Callable[[], Serde]] = {
    **{serde.name: serde for serde in (BYTES, STRING, INT64, FLOAT64, JSON)},
    "long": INT64,  # Kafka's Serdes.Long()
    "double": FLOAT64,  # Kafka's Serdes.Double()
    **{fmt: _registered(fmt) for fmt in ("avro", "json-schema", "protobuf")},
}


def serde_from(spec: SerdeSpec) -> Serde:
    """A serde given itself or by name (see the module docstring for the names)."""
    if isinstance(spec, Serde):
        return spec
    if not isinstance(spec, str):
        raise SerdeError(f"a serde is a Serde or its name, not {type(spec).__name__}")
    try:
        found = _BY_NAME[spec]
    except KeyError:
        known = ", ".join(sorted(_BY_NAME))
        raise SerdeError(f"unknown serde {spec!r} (known: {known})") from None
    return found if isinstance(found, Serde) else found()
