"""Kafka's ``JsonConverter`` (``json``): Connect data as JSON, with or without the schema envelope.

With ``schemas.enable=true`` (the default) every message is ``{"schema": ..., "payload": ...}``,
the schema in Kafka's JSON form; logical types are written as Kafka writes them (see
:mod:`sluice.connect.logical`). Reached through :func:`sluice.connect.converters.converter_from`.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast

import orjson

from sluice.connect.converter_base import Converter, boolean_setting
from sluice.connect.data import Field, Schema, Struct
from sluice.connect.errors import ConverterError
from sluice.connect.json_compiled import Encoder, compile_encoder, dumps, has_float
from sluice.connect.logical import (
    DECIMAL,
    LOGICAL_NAMES,
    decimal_scaled,
    logical_to_raw,
    raw_to_logical,
)
from sluice.errors import ConfigError

__all__ = ["JsonConverter"]

_ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
    "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false "
    "in your converter configuration."
)
_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class JsonConverter(Converter):
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
            payload_text = "".join(_write(payload, []))
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
            text = "".join(_write(node, []))
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

    def _schema_to_json(self, schema: Schema) -> dict[str, Any]:
        node: dict[str, Any] = {"type": schema.type}
        if schema.type == "array":
            node["items"] = self._schema_to_json(_child(schema.value_schema, "array items"))
        elif schema.type == "map":
            node["keys"] = self._schema_to_json(_child(schema.key_schema, "map keys"))
            node["values"] = self._schema_to_json(_child(schema.value_schema, "map values"))
        elif schema.type == "struct":
            node["fields"] = [
                {**self._schema_to_json(f.schema), "field": f.name} for f in schema.fields
            ]
        node["optional"] = schema.optional
        if schema.name is not None:
            node["name"] = schema.name
        if schema.version is not None:
            node["version"] = schema.version
        if schema.doc is not None:
            node["doc"] = schema.doc
        if schema.parameters:
            node["parameters"] = dict(schema.parameters)
        if schema.default is not None:
            node["default"] = self._to_json(schema, schema.default)
        return node

    def _to_json(self, schema: Schema | None, value: Any) -> Any:
        if value is None:
            if schema is None:
                return None
            if schema.default is not None and self.replace_null_with_default:
                return self._to_json(schema, schema.default)
            if schema.optional:
                return None
            raise ConverterError(
                "Conversion error: null value for field that is required and has no default value"
            )
        if schema is None:
            kind = _infer_type(value)
            if kind == "struct":
                schema = value.schema
        else:
            kind = schema.type
            if schema.name in LOGICAL_NAMES:
                try:
                    numeric = schema.name == DECIMAL and self.decimal_numeric
                    if numeric and isinstance(value, Decimal):
                        return decimal_scaled(schema, value)
                    value = logical_to_raw(schema, value)
                except ValueError as error:
                    raise ConverterError(str(error)) from error
        if kind in _INTS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConverterError(f"Invalid type for {kind.upper()}: {type(value).__name__}")
            bits = _INTS[kind]
            if schema is not None and not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
                raise ConverterError(f"Value {value} is out of range for {kind.upper()}")
            return value
        if kind in ("float32", "float64"):
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConverterError(f"Invalid type for {kind.upper()}: {type(value).__name__}")
            number = float(value)
            if math.isfinite(number):
                return number
            return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        if kind == "boolean" and isinstance(value, bool):
            return value
        if kind == "string" and isinstance(value, str):
            return value
        if kind == "bytes" and isinstance(value, bytes | bytearray | memoryview):
            return base64.b64encode(value).decode("ascii")
        if kind == "array" and isinstance(value, list | tuple):
            items = None if schema is None else schema.value_schema
            return [self._to_json(items, item) for item in value]
        if kind == "map" and isinstance(value, Mapping):
            return self._map_to_json(schema, value)
        if kind == "struct" and isinstance(value, Struct):
            assert schema is not None
            if value.schema is not schema and value.schema != schema:
                raise ConverterError("Mismatching schema.")
            return {
                field.name: self._to_json(field.schema, value.values.get(field.name))
                for field in schema.fields
            }
        raise ConverterError(f"Invalid type for {kind.upper()}: {type(value).__name__}")

    def _map_to_json(self, schema: Schema | None, value: Mapping[Any, Any]) -> Any:
        keys = None if schema is None else schema.key_schema
        values = None if schema is None else schema.value_schema
        if schema is None:
            object_mode = all(isinstance(key, str) for key in value)
        else:
            object_mode = keys is not None and keys.type == "string"
        if object_mode:
            return {str(self._to_json(keys, k)): self._to_json(values, v) for k, v in value.items()}
        return [[self._to_json(keys, k), self._to_json(values, v)] for k, v in value.items()]

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

    def schema_from_json(self, node: Any) -> Schema:
        """A :class:`Schema` from Kafka's JSON form; :class:`ConverterError` when malformed."""
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise ConverterError("Schema must contain 'type' field")
        kind = node["type"]
        fields: list[Field] = []
        key_schema = value_schema = None
        if kind == "array":
            if "items" not in node:
                raise ConverterError("Array schema did not specify the element type")
            value_schema = self.schema_from_json(node["items"])
        elif kind == "map":
            if "keys" not in node:
                raise ConverterError("Map schema did not specify the key type")
            if "values" not in node:
                raise ConverterError("Map schema did not specify the value type")
            key_schema = self.schema_from_json(node["keys"])
            value_schema = self.schema_from_json(node["values"])
        elif kind == "struct":
            if not isinstance(node.get("fields"), list):
                raise ConverterError('Struct schema\'s "fields" argument is not an array.')
            for field in node["fields"]:
                if not isinstance(field, dict) or not isinstance(field.get("field"), str):
                    raise ConverterError("Struct schema's field name not specified properly")
                fields.append(Field(field["field"], self.schema_from_json(field)))
        version = node.get("version")
        parameters = node.get("parameters") or {}
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise ConverterError(f"Schema version must be an integer, not {version!r}")
        if not isinstance(parameters, dict) or not all(
            isinstance(v, str) for v in parameters.values()
        ):
            raise ConverterError("Schema parameters must be an object of strings")
        try:
            schema = Schema(
                kind,
                optional=node.get("optional") is True,
                name=_text(node, "name"),
                version=version,
                doc=_text(node, "doc"),
                parameters=tuple(parameters.items()),
                fields=tuple(fields),
                key_schema=key_schema,
                value_schema=value_schema,
            )
        except ValueError as error:
            raise ConverterError(f"Unknown schema type: {kind}") from error
        if node.get("default") is not None:
            default = self._to_connect(schema, node["default"])
            schema = dataclasses.replace(schema, default=default)
        return schema

    def _to_connect(self, schema: Schema | None, node: Any) -> Any:
        if schema is None:
            return _schemaless(node)
        if node is None:
            if schema.default is not None:
                return schema.default
            if schema.optional:
                return None
            raise ConverterError(f"Invalid null value for required {schema.type.upper()} field")
        kind = schema.type
        numeric = isinstance(node, int | Decimal) and not isinstance(node, bool)
        try:
            if schema.name == DECIMAL and numeric:
                return decimal_scaled(schema, Decimal(node))
            value = self._typed(schema, kind, node)
            return raw_to_logical(schema, value) if schema.name in LOGICAL_NAMES else value
        except ValueError as error:
            raise ConverterError(str(error)) from error

    def _typed(self, schema: Schema, kind: str, node: Any) -> Any:
        if kind in _INTS and isinstance(node, int) and not isinstance(node, bool):
            return node
        if kind in ("float32", "float64"):
            if isinstance(node, int | Decimal | float) and not isinstance(node, bool):
                return float(node)
            if node in _NON_FINITE:
                return _NON_FINITE[node]
        if kind == "boolean" and isinstance(node, bool):
            return node
        if kind == "string" and isinstance(node, str):
            return node
        if kind == "bytes" and isinstance(node, str):
            try:
                return base64.b64decode(node, validate=True)
            except binascii.Error as error:
                raise ConverterError(f"Invalid base64 for BYTES: {node[:40]!r}") from error
        if kind == "array" and isinstance(node, list):
            items = _child(schema.value_schema, "array items")
            return [self._to_connect(items, item) for item in node]
        if kind == "map":
            return self._map_to_connect(schema, node)
        if kind == "struct":
            if not isinstance(node, dict):
                raise ConverterError(
                    f"Structs should be encoded as JSON objects, but found {_json_type(node)}"
                )
            values = {f.name: self._to_connect(f.schema, node.get(f.name)) for f in schema.fields}
            return Struct(schema, values)
        raise ConverterError(f"Invalid JSON for {kind.upper()}: found {_json_type(node)}")

    def _map_to_connect(self, schema: Schema, node: Any) -> dict[Any, Any]:
        keys = _child(schema.key_schema, "map keys")
        values = _child(schema.value_schema, "map values")
        if keys.type == "string":
            if not isinstance(node, dict):
                raise ConverterError(
                    f"Maps with string fields should be encoded as JSON objects, but found "
                    f"{_json_type(node)}"
                )
            return {k: self._to_connect(values, v) for k, v in node.items()}
        if not isinstance(node, list):
            raise ConverterError(
                "Maps with non-string fields should be encoded as JSON array of tuples, but found "
                f"{_json_type(node)}"
            )
        result: dict[Any, Any] = {}
        for entry in node:
            if not isinstance(entry, list) or len(entry) != 2:
                raise ConverterError(f"Found invalid map entry instead of array tuple: {entry!r}")
            key = self._to_connect(keys, entry[0])
            try:
                result[key] = self._to_connect(values, entry[1])
            except TypeError as error:
                raise ConverterError(f"Map key {key!r} cannot be a Python dict key") from error
        return result


def _child(schema: Schema | None, what: str) -> Schema:
    if schema is None:
        raise ConverterError(f"Schema has no schema for its {what}")
    return schema


def _text(node: dict[str, Any], key: str) -> str | None:
    value = node.get(key)
    if value is not None and not isinstance(value, str):
        raise ConverterError(f"Schema {key} must be a string, not {value!r}")
    return value


def _reject_constant(name: str) -> Any:
    raise ConverterError(f"Invalid JSON token {name}")


def _infer_type(value: Any) -> str:
    """Kafka's ``ConnectSchema.schemaType`` for a schemaless value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, Struct):
        return "struct"
    raise ConverterError(f"Python type {type(value).__name__} has no corresponding schema type")


def _schemaless(node: Any) -> Any:
    if isinstance(node, Decimal):
        return float(node)
    if isinstance(node, list):
        return [_schemaless(item) for item in node]
    if isinstance(node, dict):
        return {k: _schemaless(v) for k, v in node.items()}
    return node


def _json_type(node: Any) -> str:
    for kinds, name in (
        (bool, "BOOLEAN"),
        (int | float | Decimal, "NUMBER"),
        (str, "STRING"),
        (list, "ARRAY"),
        (dict, "OBJECT"),
    ):
        if isinstance(node, kinds):
            return name
    return "NULL"


def _write(node: Any, out: list[str]) -> list[str]:
    """Compact JSON like ``json.dumps``, but ``Decimal`` written as a plain number."""
    if isinstance(node, dict):
        out.append("{")
        for i, (key, value) in enumerate(node.items()):
            out.append(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":")
            _write(value, out)
        out.append("}")
    elif isinstance(node, list):
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
