"""Kafka's ``JsonConverter`` (``json``): Connect data as JSON, with or without the schema envelope.

With ``schemas.enable=true`` (the default) every message is ``{"schema": ..., "payload": ...}``,
the schema in Kafka's JSON form; logical types are written as Kafka writes them (see
:mod:`sluice.connect.api.logical`). Reached through
:func:`sluice.connect.converters.converter_from`.

This module holds the settings, the envelope and the per-schema caches of the hot path. What
:class:`JsonConverter` inherits lives beside it: the value walk (Connect values ↔ JSON nodes) in
:mod:`sluice.connect.converters.json_values`, schemas ↔ Kafka's JSON form in
:mod:`sluice.connect.converters.json_schemas`; the encoders compiled per schema in
:mod:`sluice.connect.converters.json_compiled`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast

import orjson

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.base import Converter, boolean_setting
from sluice.connect.converters.json_compiled import Encoder, compile_encoder, dumps, has_float
from sluice.connect.converters.json_schemas import JsonSchemas
from sluice.errors import ConfigError

__all__ = ["JsonConverter", "dumps_exact"]

_ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
    "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false "
    "in your converter configuration."
)


class JsonConverter(JsonSchemas, Converter):
    """Kafka's ``JsonConverter``.

    Settings: ``schemas.enable`` (default true: every message is ``{"schema", "payload"}`` with the
    schema in Kafka's JSON form), ``decimal.format`` (``BASE64``, the default, or ``NUMERIC``),
    ``replace.null.with.default`` (default true: a null field with a default is written as the
    default), ``schemas.cache.size`` (accepted). Bytes travel as base64 text; a map whose keys are
    not strings travels as an array of ``[key, value]`` pairs. Output is compact UTF-8 JSON, as
    Jackson writes it; NaN and infinities are written as the strings ``"NaN"``, ``"Infinity"``.
    """

    schemas_enable = True
    decimal_numeric = False
    replace_null_with_default = True

    def __init__(self) -> None:
        self._schema_json: dict[int, tuple[Schema, dict[str, Any]]] = {}
        # Hot path: the envelope's schema is most of a record's bytes (a Debezium event's is
        # ~2 KB of 2.6): written once per schema as text, and read once per distinct text.
        self._schema_text: dict[int, tuple[Schema, str]] = {}
        self._schema_bytes: dict[int, tuple[Schema, bytes]] = {}
        self._schema_of_text: dict[bytes, Schema] = {}
        # Hot path: a compiled encoder per schema (see json_compiled) and whether its values
        # may hold floats (then json.dumps writes them, else orjson).
        self._encoders: dict[int, tuple[Schema, Encoder | None, bool]] = {}
        self._cache_size = 1000

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        super().configure(config, is_key)
        self.schemas_enable = boolean_setting(config, "schemas.enable", True)
        self.replace_null_with_default = boolean_setting(config, "replace.null.with.default", True)
        fmt = str(config.get("decimal.format", "BASE64")).upper()
        if fmt not in ("BASE64", "NUMERIC"):
            raise ConfigError(f"must be BASE64 or NUMERIC, not {fmt!r}", key="decimal.format")
        self.decimal_numeric = fmt == "NUMERIC"
        try:
            self._cache_size = int(config.get("schemas.cache.size", 1000))
        except ValueError as error:
            raise ConfigError("must be an integer", key="schemas.cache.size") from error
        self._encoders.clear()  # compiled with the settings before

    # -- Connect → bytes

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        if schema is not None and not self.decimal_numeric:
            payload_bytes = self._compiled_payload(schema, value)
            if not self.schemas_enable:
                return payload_bytes
            schema_bytes = self._schema_bytes_of(schema)
            return b'{"schema":' + schema_bytes + b',"payload":' + payload_bytes + b"}"
        payload = self._to_json(schema, value)
        if self.decimal_numeric:
            payload_text = dumps_exact(payload)
        else:
            payload_text = json.dumps(
                payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            )
        if not self.schemas_enable:
            return payload_text.encode()
        schema_text = "null" if schema is None else self._schema_text_of(schema)
        return f'{{"schema":{schema_text},"payload":{payload_text}}}'.encode()

    def from_connect_all(
        self, topic: str, schema: Schema | None, values: list[Any]
    ) -> list[bytes | None]:
        """Bulk :meth:`from_connect` (the same bytes): the encoder and the schema's bytes are
        looked up once for all ``values``."""
        if schema is None or self.decimal_numeric or len(values) < 2:
            return super().from_connect_all(topic, schema, values)
        encoder, floats = self._encoder_of(schema)
        try:
            if floats:
                payloads = [dumps(encoder(value), True) for value in values]
            else:
                payloads = [orjson.dumps(encoder(value)) for value in values]
        except (orjson.JSONEncodeError, TypeError):  # a value orjson refuses: one by one
            return super().from_connect_all(topic, schema, values)
        if not self.schemas_enable:
            return cast(list[bytes | None], payloads)
        head = b'{"schema":' + self._schema_bytes_of(schema) + b',"payload":'
        return [head + payload + b"}" for payload in payloads]

    def _encoder_of(self, schema: Schema) -> tuple[Encoder, bool]:
        """The compiled encoder of ``schema`` (compiled now if need be), and its floats flag."""
        cached = self._encoders.get(id(schema))
        if cached is not None and cached[0] is schema and cached[1] is not None:
            return cached[1], cached[2]
        encoder = compile_encoder(schema, self._to_json, self.replace_null_with_default)
        if len(self._encoders) >= self._cache_size:
            self._encoders.clear()
        floats = has_float(schema)
        self._encoders[id(schema)] = (schema, encoder, floats)
        return encoder, floats

    def _compiled_payload(self, schema: Schema, value: Any) -> bytes:
        """The payload's bytes through the schema's compiled encoder: the same bytes as
        ``json.dumps(self._to_json(schema, value))`` writes (see :mod:`.json_compiled`)."""
        cached = self._encoders.get(id(schema))
        if cached is None or cached[0] is not schema:
            # First sight: the generic walk, and remember the schema. Compiled on the second,
            # so that schemas made anew for every record (by a transform) cost no compiling.
            if len(self._encoders) >= self._cache_size:
                self._encoders.clear()
            self._encoders[id(schema)] = (schema, None, has_float(schema))
            return dumps(self._to_json(schema, value), True)
        encoder = cached[1]
        if encoder is None:
            encoder = compile_encoder(schema, self._to_json, self.replace_null_with_default)
            self._encoders[id(schema)] = (schema, encoder, cached[2])
        return dumps(encoder(value), cached[2])

    def _schema_bytes_of(self, schema: Schema) -> bytes:
        cached = self._schema_bytes.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        data = self._schema_text_of(schema).encode()
        if len(self._schema_bytes) >= self._cache_size:
            self._schema_bytes.clear()
        self._schema_bytes[id(schema)] = (schema, data)
        return data

    def _schema_text_of(self, schema: Schema) -> str:
        cached = self._schema_text.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        node = self.schema_json(schema)
        if self.decimal_numeric:
            text = dumps_exact(node)
        else:
            text = json.dumps(node, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if len(self._schema_text) >= self._cache_size:
            self._schema_text.clear()
        self._schema_text[id(schema)] = (schema, text)
        return text

    def schema_json(self, schema: Schema) -> dict[str, Any]:
        """``schema`` in Kafka's JSON form (``type``, ``optional``, ``fields`` with ``field``)."""
        cached = self._schema_json.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        node = self._schema_to_json(schema)
        if len(self._schema_json) >= self._cache_size:
            self._schema_json.clear()
        self._schema_json[id(schema)] = (schema, node)
        return node

    # -- bytes → Connect

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return None, None
        if self.schemas_enable:
            found = self._cached_envelope(bytes(data))
            if found is not None:
                return found
        try:
            node = json.loads(
                bytes(data),
                parse_float=Decimal if self.schemas_enable else float,
                parse_constant=_reject_constant,
            )
        except (ValueError, UnicodeDecodeError) as error:
            message = "Converting byte[] to Kafka Connect data failed due to serialization error: "
            raise ConverterError(message + str(error)) from error
        if not self.schemas_enable:
            return None, self._to_connect(None, node)
        if not isinstance(node, dict) or node.keys() != {"schema", "payload"}:
            if node is None:
                return None, None
            raise ConverterError(_ENVELOPE_ERROR)
        schema = None if node["schema"] is None else self.schema_from_json(node["schema"])
        if schema is not None:
            self._remember_schema_text(bytes(data), schema)
        return schema, self._to_connect(schema, node["payload"])

    def _cached_envelope(self, data: bytes) -> tuple[Schema | None, Any] | None:
        """Hot path for ``{"schema":S,"payload":P}`` written compactly (as Kafka's converter and
        ours write it): S's text is looked up in a cache and only P is parsed. None: take the
        general path (another layout, a first sight of S, or anything unexpected)."""
        if not data.startswith(b'{"schema":') or not data.endswith(b"}"):
            return None
        middle = data.find(b',"payload":')
        if middle < 0 or data.find(b',"payload":', middle + 1) >= 0:
            return None  # also inside the schema: which one separates is unclear
        schema_text = data[10:middle]
        schema = self._schema_of_text.get(schema_text)
        if schema is None:
            return None
        try:
            payload = json.loads(
                data[middle + 11 : -1], parse_float=Decimal, parse_constant=_reject_constant
            )
        except (ValueError, UnicodeDecodeError):
            return None  # the general path reports it
        return schema, self._to_connect(schema, payload)

    def _remember_schema_text(self, data: bytes, schema: Schema) -> None:
        if not data.startswith(b'{"schema":'):
            return
        middle = data.find(b',"payload":')
        if middle < 0 or data.find(b',"payload":', middle + 1) >= 0:
            return
        if len(self._schema_of_text) >= self._cache_size:
            self._schema_of_text.clear()
        self._schema_of_text[data[10:middle]] = schema


def _reject_constant(name: str) -> Any:
    raise ConverterError(f"Invalid JSON token {name}")


def dumps_exact(node: Any) -> str:
    """Compact JSON like ``json.dumps``, but ``Decimal`` written as the exact number it is.

    >>> dumps_exact({"a": Decimal("1.10"), "b": [1, "x"]})
    '{"a":1.10,"b":[1,"x"]}'
    """
    return "".join(_write(node, []))


def _write(node: Any, out: list[str]) -> list[str]:
    if isinstance(node, dict):
        out.append("{")
        for i, (key, value) in enumerate(node.items()):
            out.append(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":")
            _write(value, out)
        out.append("}")
    elif isinstance(node, list | tuple):
        out.append("[")
        for i, item in enumerate(node):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif isinstance(node, Decimal):
        out.append(format(node, "f"))
    else:
        out.append(json.dumps(node, ensure_ascii=False, allow_nan=False))
    return out
