"""Connect schemas and values ↔ JSON Schema and JSON, the way Confluent's ``JsonSchemaData`` maps
them.

The rules (Confluent's ``io.confluent.connect.json.JsonSchemaData``):

- ``int8`` … ``int64`` → ``{"type": "integer", "connect.type": "int8"}`` (and so on);
  ``float32`` / ``float64`` → ``{"type": "number", "connect.type": ...}``; ``boolean`` → the
  same; ``string`` → ``string`` (an ``enum`` with the ``io.confluent.connect.json.Enum``
  parameters); ``bytes`` → ``{"type": "string", "connect.type": "bytes"}`` (base64 text);
- ``Decimal`` → ``{"type": "number", "connect.type": "bytes"}`` titled
  ``org.apache.kafka.connect.data.Decimal``, the value base64 of the unscaled bytes
  (``decimal.format=BASE64``, the default) or a JSON number (``NUMERIC``); ``Date``, ``Time``,
  ``Timestamp`` → integers (days, milliseconds) titled with their logical name;
- ``array`` → ``array``; a map with non-optional string keys → ``object`` with
  ``additionalProperties`` and ``"connect.type": "map"``; any other map → an ``array`` of
  ``{key, value}`` objects with ``"connect.type": "map"``;
- ``struct`` → ``object`` with ``properties`` in order, each with its ``connect.index``;
- an optional schema → ``{"oneOf": [{"type": "null"}, T]}``;
- the schema's name is the ``title``, its doc the ``description``, its version
  ``connect.version``, its parameters ``connect.parameters``, its default ``default``.

Reading (:meth:`JsonSchemaData.to_connect_schema`) goes back, fields ordered by
``connect.index``; an integer without ``connect.type`` is ``int64``, a number ``float64``; a local
``$ref`` (``#/definitions/…``, ``#/$defs/…``) is followed. ``oneOf``/``anyOf`` of several non-null
types and ``allOf`` have no Connect form here and are refused with
:class:`~sluice.connect.ConverterError` (Confluent makes a struct named
``io.confluent.connect.json.OneOf``).

>>> from sluice.connect.api.data import Field, Schema
>>> point = Schema.struct([Field("x", Schema("int32")), Field("y", Schema("int32", optional=True))])
>>> data = JsonSchemaData()
>>> data.from_connect_schema(point)["properties"]["y"]
{'oneOf': [{'type': 'null'}, {'type': 'integer', 'connect.type': 'int32'}], 'connect.index': 1}
>>> data.to_connect_schema(data.from_connect_schema(point)) == point
True
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import DECIMAL, LOGICAL_NAMES, logical_to_raw, raw_to_logical

__all__ = ["JsonSchemaData", "dumps_exact"]

NAMESPACE = "io.confluent.connect.json"
JSON_TYPE_ENUM = f"{NAMESPACE}.Enum"
JSON_TYPE_ENUM_PREFIX = JSON_TYPE_ENUM + "."
CONNECT_TYPE_PROP = "connect.type"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_INDEX_PROP = "connect.index"
_INTEGERS = frozenset(["int8", "int16", "int32", "int64"])
_NUMBERS = frozenset(["float32", "float64"])


def dumps_exact(node: Any) -> str:
    """Compact JSON, ``Decimal`` written as the exact number it is.

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


class JsonSchemaData:
    """Confluent's ``JsonSchemaData`` (see the module docstring)."""

    def __init__(self, *, decimal_numeric: bool = False, cache_size: int = 1000) -> None:
        self.decimal_numeric = decimal_numeric
        self.cache_size = cache_size
        self._to_json: dict[int, tuple[Schema, dict[str, Any]]] = {}

    # -- Connect schema → JSON Schema

    def from_connect_schema(self, schema: Schema) -> dict[str, Any]:
        """The JSON Schema document of a Connect schema."""
        cached = self._to_json.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        node = self._json_schema(schema, None)
        if len(self._to_json) >= self.cache_size:
            self._to_json.clear()
        self._to_json[id(schema)] = (schema, node)
        return node

    def _json_schema(self, schema: Schema, index: int | None) -> dict[str, Any]:
        kind = schema.type
        params = dict(schema.parameters)
        node: dict[str, Any]
        extra: dict[str, Any] = {}
        if kind in _INTEGERS:
            node, extra[CONNECT_TYPE_PROP] = {"type": "integer"}, kind
        elif kind in _NUMBERS:
            node, extra[CONNECT_TYPE_PROP] = {"type": "number"}, kind
        elif kind == "boolean":
            node = {"type": "boolean"}
        elif kind == "string":
            if JSON_TYPE_ENUM in params:
                symbols = [v for k, v in params.items() if k.startswith(JSON_TYPE_ENUM_PREFIX)]
                node = {"type": "string", "enum": symbols}
            else:
                node = {"type": "string"}
        elif kind == "bytes":
            node = {"type": "number" if schema.name == DECIMAL else "string"}
            extra[CONNECT_TYPE_PROP] = "bytes"
        elif kind == "array":
            assert schema.value_schema is not None
            node = {"type": "array", "items": self._json_schema(schema.value_schema, None)}
        elif kind == "map":
            key, value = schema.key_schema, schema.value_schema
            assert key is not None and value is not None
            if key.type == "string" and not key.optional:
                node = {"type": "object", "additionalProperties": self._json_schema(value, None)}
            else:
                entry = {
                    "type": "object",
                    "properties": {
                        "key": self._json_schema(key, 0),
                        "value": self._json_schema(value, 1),
                    },
                }
                node = {"type": "array", "items": entry}
            extra[CONNECT_TYPE_PROP] = "map"
        else:  # struct
            node = {
                "type": "object",
                "properties": {
                    f.name: self._json_schema(f.schema, i) for i, f in enumerate(schema.fields)
                },
            }
        if schema.name is not None:
            node["title"] = schema.name
        if schema.version is not None:
            extra[CONNECT_VERSION_PROP] = schema.version
        if schema.doc is not None:
            node["description"] = schema.doc
        parameters = {k: v for k, v in params.items() if not k.startswith(NAMESPACE)}
        if parameters:
            extra[CONNECT_PARAMETERS_PROP] = parameters
        if schema.default is not None:
            node["default"] = self._value(schema, schema.default, use_default=False)
        node.update(extra)
        if schema.optional:
            node = {"oneOf": [{"type": "null"}, node]}
        if index is not None:
            node[CONNECT_INDEX_PROP] = index
        return node

    # -- Connect value → JSON

    def from_connect_data(self, schema: Schema, value: Any) -> Any:
        """The JSON value (dicts, lists, numbers…) of a Connect value of ``schema``."""
        return self._value(schema, value, use_default=True)

    def _value(self, schema: Schema, value: Any, *, use_default: bool) -> Any:
        if value is None:
            if use_default and schema.default is not None:
                return self._value(schema, schema.default, use_default=False)
            if schema.optional or not use_default:
                return None
            raise ConverterError(
                "Conversion error: null value for field that is required and has no default value"
            )
        if schema.name in LOGICAL_NAMES and not isinstance(value, int | bytes):
            if schema.name == DECIMAL and self.decimal_numeric:
                if not isinstance(value, Decimal):
                    raise ConverterError(f"Invalid type for Decimal: {type(value).__name__}")
                return value
            try:
                value = logical_to_raw(schema, value)
            except ValueError as error:
                raise ConverterError(str(error)) from error
        kind = schema.type
        if kind == "bytes":
            if not isinstance(value, bytes | bytearray | memoryview):
                raise ConverterError(f"Invalid type for bytes type: {type(value).__name__}")
            return base64.b64encode(bytes(value)).decode("ascii")
        if kind == "struct":
            values: Mapping[str, Any]
            if isinstance(value, Struct):
                values = value.values
            elif isinstance(value, Mapping):
                values = value
            else:
                raise ConverterError(f"Expected a Struct, got {type(value).__name__}")
            out = {}
            for f in schema.fields:
                try:
                    out[f.name] = self._value(f.schema, values.get(f.name), use_default=use_default)
                except ConverterError as error:
                    raise ConverterError(f"{f.name}: {error}") from error
            return out
        if kind == "array":
            assert schema.value_schema is not None
            items = schema.value_schema
            return [self._value(items, v, use_default=use_default) for v in value]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if key.type == "string" and not key.optional:
                return {k: self._value(item, v, use_default=use_default) for k, v in value.items()}
            return [
                {
                    "key": self._value(key, k, use_default=use_default),
                    "value": self._value(item, v, use_default=use_default),
                }
                for k, v in value.items()
            ]
        return value

    # -- JSON Schema → Connect schema

    def to_connect_schema(self, document: Any) -> Schema:
        """The Connect schema of a JSON Schema document, as Confluent builds it."""
        return _Reading(document).schema(document, optional=False)

    # -- JSON → Connect value

    def to_connect_data(self, schema: Schema, node: Any) -> Any:
        """The Connect value of a JSON value read for ``schema``."""
        if node is None:
            if schema.default is not None:
                return schema.default
            if schema.optional:
                return None
            raise ConverterError(f"Invalid null value for required {schema.type} field")
        name, kind = schema.name, schema.type
        try:
            if name == DECIMAL:
                if isinstance(node, str):
                    return raw_to_logical(schema, base64.b64decode(node, validate=True))
                if isinstance(node, int | float | Decimal) and not isinstance(node, bool):
                    number = Decimal(str(node)) if isinstance(node, float) else Decimal(node)
                    scale = int(dict(schema.parameters).get("scale", "0"))
                    return number.quantize(Decimal(1).scaleb(-scale))
                raise ConverterError(f"Invalid type for Decimal: {type(node).__name__}")
            if name in LOGICAL_NAMES:
                return raw_to_logical(schema, node)
        except (ValueError, binascii.Error) as error:
            raise ConverterError(f"Invalid value for {name}: {error}") from error
        if kind in _INTEGERS:
            if isinstance(node, bool) or not isinstance(node, int | Decimal):
                raise ConverterError(f"Expected an integer for {kind}, got {node!r}")
            return int(node)
        if kind in _NUMBERS:
            return float(node)
        if kind == "bytes":
            try:
                return base64.b64decode(node, validate=True)
            except (binascii.Error, TypeError) as error:
                raise ConverterError(f"Invalid bytes field: {error}") from error
        if kind == "struct":
            if not isinstance(node, dict):
                raise ConverterError(
                    f"Structs should be encoded as JSON objects, but found {type(node).__name__}"
                )
            return Struct(
                schema,
                {f.name: self.to_connect_data(f.schema, node.get(f.name)) for f in schema.fields},
            )
        if kind == "array":
            assert schema.value_schema is not None
            return [self.to_connect_data(schema.value_schema, v) for v in node]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if isinstance(node, list):
                return {
                    _hashable(self.to_connect_data(key, e.get("key"))): self.to_connect_data(
                        item, e.get("value")
                    )
                    for e in node
                }
            return {k: self.to_connect_data(item, v) for k, v in node.items()}
        return node


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class _Reading:
    """One JSON Schema → Connect conversion (the root document, for local ``$ref``)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.following: set[str] = set()

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise ConverterError(f"JSON Schema reference {ref!r} is not local (#/...)")
        node = self.root
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise ConverterError(f"JSON Schema reference {ref!r} does not resolve")
            node = node[part]
        return node

    def schema(self, node: Any, *, optional: bool) -> Schema:
        if node is True or node == {}:
            raise ConverterError("A JSON Schema that allows anything has no Connect form")
        if not isinstance(node, dict):
            raise ConverterError(f"Invalid JSON Schema: {node!r}")
        if "$ref" in node:
            ref = str(node["$ref"])
            if ref in self.following:
                raise ConverterError(f"Recursive JSON Schema {ref!r} has no Connect form")
            self.following.add(ref)
            try:
                return self.schema(self._resolve(ref), optional=optional)
            finally:
                self.following.discard(ref)
        for combiner in ("oneOf", "anyOf"):
            if combiner in node:
                subs = node[combiner]
                others = [s for s in subs if not (isinstance(s, dict) and s.get("type") == "null")]
                if len(subs) == 2 and len(others) == 1:
                    return self.schema(others[0], optional=True)
                raise ConverterError(
                    f"JSON Schema {combiner} of several types has no Connect form here"
                )
        if "allOf" in node:
            raise ConverterError("JSON Schema allOf has no Connect form here")
        kind = node.get("type")
        if isinstance(kind, list):
            others = [t for t in kind if t != "null"]
            if len(others) == 1:
                return self.schema({**node, "type": others[0]}, optional=len(kind) == 2)
            raise ConverterError(f"JSON Schema with types {kind} has no Connect form here")
        connect_type = node.get(CONNECT_TYPE_PROP)
        params: dict[str, str] = {}
        fields: tuple[Field, ...] = ()
        key_schema = value_schema = None
        if "enum" in node and kind in (None, "string"):
            ctype = "string"
            params[JSON_TYPE_ENUM] = ""
            for symbol in node["enum"]:
                params[JSON_TYPE_ENUM_PREFIX + str(symbol)] = str(symbol)
        elif kind == "boolean":
            ctype = "boolean"
        elif kind in ("integer", "number"):
            if connect_type is None:
                ctype = "int64" if kind == "integer" else "float64"
            elif connect_type in _INTEGERS | _NUMBERS | {"bytes"}:
                ctype = connect_type
            else:
                raise ConverterError(f"Unsupported type {connect_type}")
        elif kind == "string":
            ctype = "bytes" if connect_type == "bytes" else "string"
        elif kind == "array":
            items = node.get("items")
            if not isinstance(items, dict):
                raise ConverterError("Array schema did not specify the items type")
            if connect_type == "map" and items.get("type") == "object":
                props = items.get("properties", {})
                if set(props) != {"key", "value"}:
                    raise ConverterError("Map entries must have exactly the properties key, value")
                ctype = "map"
                key_schema = self.schema(props["key"], optional=False)
                value_schema = self.schema(props["value"], optional=False)
            else:
                ctype = "array"
                value_schema = self.schema(items, optional=False)
        elif kind == "object":
            if connect_type == "map":
                ctype = "map"
                key_schema = Schema("string")
                value_schema = self.schema(node.get("additionalProperties", {}), optional=False)
            else:
                ctype = "struct"
                properties = node.get("properties", {})
                order = sorted(
                    enumerate(properties.items()),
                    key=lambda p: _index(p[1][1], p[0]),
                )
                fields = tuple(
                    Field(name, self.schema(sub, optional=False)) for _, (name, sub) in order
                )
        elif kind == "null":
            raise ConverterError("Standalone null schemas have no Connect form")
        else:
            raise ConverterError(f"Unsupported JSON Schema type {kind!r}")
        parameters = node.get(CONNECT_PARAMETERS_PROP)
        if parameters is not None:
            if not isinstance(parameters, dict) or not all(
                isinstance(v, str) for v in parameters.values()
            ):
                raise ConverterError("connect.parameters must be an object of strings")
            params.update(parameters)
        version = node.get(CONNECT_VERSION_PROP)
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise ConverterError(f"Invalid Connect version found: {version!r}")
        schema = Schema(
            ctype,
            optional=optional,
            name=node.get("title"),
            version=version,
            doc=node.get("description"),
            parameters=tuple(params.items()),
            fields=fields,
            key_schema=key_schema,
            value_schema=value_schema,
        )
        if node.get("default") is not None:
            default = JsonSchemaData().to_connect_data(schema, node["default"])
            schema = Schema(
                ctype,
                optional=optional,
                name=schema.name,
                version=version,
                doc=schema.doc,
                default=default,
                parameters=schema.parameters,
                fields=fields,
                key_schema=key_schema,
                value_schema=value_schema,
            )
        return schema


def _index(node: Any, position: int) -> tuple[int, int]:
    index = node.get(CONNECT_INDEX_PROP) if isinstance(node, dict) else None
    return (index if isinstance(index, int) else position, position)
