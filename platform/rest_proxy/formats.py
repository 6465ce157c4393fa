"""The embedded formats of Confluent REST Proxy: how a record's key or value travels in JSON.

======== ==================================== ============================================
format   in a request                         on the wire
======== ==================================== ============================================
BINARY   a base64 string                      its bytes
JSON     any JSON value                       its UTF-8 JSON text
STRING   a string (v3 only)                   its UTF-8 bytes
AVRO     JSON of the schema's shape           Confluent's wire format (magic, schema id)
JSONSCHEMA any JSON value the schema allows   Confluent's wire format
PROTOBUF JSON of the message (proto3 JSON)    Confluent's wire format (with message indexes)
======== ==================================== ============================================

The schema'd three go through the Schema Registry (:mod:`sluice.rest_proxy.schemas`); this
module converts the plain three.

>>> encode_plain(EmbeddedFormat.BINARY, "aGk=")
b'hi'
>>> encode_plain(EmbeddedFormat.JSON, {"a": 1})
b'{"a":1}'
>>> decode_plain(EmbeddedFormat.BINARY, b"hi")
'aGk='
>>> EmbeddedFormat.parse("avro").needs_schema
True
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from typing import Any

import orjson

from sluice.rest_proxy.errors import BAD_REQUEST, INVALID_PAYLOAD, RestError

__all__ = ["EmbeddedFormat", "decode_plain", "encode_plain"]


class EmbeddedFormat(enum.Enum):
    """An embedded format, named as Confluent's v3 ``type`` names it."""

    BINARY = "BINARY"
    JSON = "JSON"
    STRING = "STRING"
    AVRO = "AVRO"
    JSONSCHEMA = "JSONSCHEMA"
    PROTOBUF = "PROTOBUF"

    @property
    def needs_schema(self) -> bool:
        """Whether the format goes through the Schema Registry."""
        return self in (EmbeddedFormat.AVRO, EmbeddedFormat.JSONSCHEMA, EmbeddedFormat.PROTOBUF)

    @property
    def schema_type(self) -> str:
        """The Schema Registry's ``schemaType`` of a schema'd format."""
        return "JSON" if self is EmbeddedFormat.JSONSCHEMA else self.value

    @classmethod
    def parse(cls, name: str) -> EmbeddedFormat:
        """A format from its name in any case (``binary``, ``AVRO``…); ValueError otherwise."""
        try:
            return cls(name.upper())
        except ValueError:
            names = ", ".join(f.value for f in cls)
            raise ValueError(f"unknown embedded format {name!r} (one of {names})") from None

    @classmethod
    def of_schema_type(cls, schema_type: str | None) -> EmbeddedFormat:
        """The format of a registry ``schemaType`` (absent: AVRO, as the registry says)."""
        return {"JSON": cls.JSONSCHEMA, "PROTOBUF": cls.PROTOBUF}.get(schema_type or "", cls.AVRO)


def encode_plain(fmt: EmbeddedFormat, data: Any) -> bytes | None:
    """The bytes of ``data`` in a plain format (``None`` stays a null key or value)."""
    if data is None:
        return None
    if fmt is EmbeddedFormat.BINARY:
        if not isinstance(data, str):
            raise RestError(INVALID_PAYLOAD, "BINARY data must be a base64 string")
        try:
            return binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError) as error:
            raise RestError(INVALID_PAYLOAD, f"BINARY data is not valid base64: {error}") from None
    if fmt is EmbeddedFormat.STRING:
        if not isinstance(data, str):
            raise RestError(INVALID_PAYLOAD, "STRING data must be a JSON string")
        return data.encode("utf-8", "surrogatepass")
    if fmt is EmbeddedFormat.JSON:
        try:
            return orjson.dumps(data)
        except (TypeError, orjson.JSONEncodeError):  # integers past 64 bits, lone surrogates
            text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
            return text.encode("utf-8", "surrogatepass")
    raise RestError(BAD_REQUEST, f"{fmt.value} needs a schema")


def decode_plain(fmt: EmbeddedFormat, data: bytes | None) -> Any:
    """The JSON form of stored bytes in a plain format, as a v2 consumer returns them (JSON
    that does not parse is a :class:`ValueError`)."""
    if data is None:
        return None
    if fmt is EmbeddedFormat.BINARY:
        return base64.b64encode(data).decode("ascii")
    if fmt is EmbeddedFormat.STRING:
        return data.decode("utf-8", "replace")
    return json.loads(data)
