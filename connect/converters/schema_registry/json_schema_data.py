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
``connect.index``; an integer without ``connect.type`` is ``int64``, a number ``float64``; a
``$ref`` is followed: a local one (``#/definitions/…``, ``#/$defs/…``), or one naming a schema
reference of the registered schema (``"$ref": "address.json"``, ``"address.json#/$defs/X"``),
whose documents :func:`referenced_documents` fetches from the registry as confluent-kafka does.

Unions and combinations, as Confluent's ``JsonSchemaData`` maps them:

- ``oneOf`` / ``anyOf`` of several types → an optional-field struct named
  ``io.confluent.connect.json.OneOf`` whose fields ``io.confluent.connect.json.OneOf.field.0``,
  ``….field.1``… are the alternatives (a ``{"type": "null"}`` among them makes the struct
  optional); with ``generalized_sum_type_support`` (Confluent's
  ``generalized.sum.type.support``) the struct is named ``connect_union_0``, ``connect_union_1``…
  with the parameter ``org.apache.kafka.connect.data.Union``, its fields
  ``connect_union_field_0``…, and enums carry ``org.apache.kafka.connect.data.Enum``
  parameters (symbol → index). A value is read into the first alternative whose type it has
  (a JSON object: the struct alternative sharing most property names with it) and written as
  the union's one non-null field; a union struct is written back as ``oneOf``, each
  alternative with its ``connect.index``;
- ``allOf``: the properties of its object parts (followed through nested ``allOf`` and
  ``$ref``) make one unnamed struct; without properties, a ``oneOf``/``anyOf`` part wins, then a
  string or number part beside ``const``, ``enum`` or ``format``.

>>> union = JsonSchemaData().to_connect_schema({"oneOf": [{"type": "string"}, {"type": "integer"}]})
>>> union.name, [f.name for f in union.fields]
('io.confluent.connect.json.OneOf', ['io.confluent.connect.json.OneOf.field.0', \
'io.confluent.connect.json.OneOf.field.1'])
>>> JsonSchemaData().to_connect_data(union, 7).values
{'io.confluent.connect.json.OneOf.field.1': 7}

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
import dataclasses
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import DECIMAL, LOGICAL_NAMES, logical_to_raw, raw_to_logical

__all__ = ["JsonSchemaData", "dumps_exact", "referenced_documents"]

NAMESPACE = "io.confluent.connect.json"
JSON_TYPE_ENUM = f"{NAMESPACE}.Enum"
JSON_TYPE_ENUM_PREFIX = JSON_TYPE_ENUM + "."
JSON_TYPE_ONE_OF = f"{NAMESPACE}.OneOf"
GENERALIZED_TYPE_UNION = "org.apache.kafka.connect.data.Union"  # Confluent's ConnectUnion
GENERALIZED_TYPE_ENUM = "org.apache.kafka.connect.data.Enum"  # Confluent's ConnectEnum
GENERALIZED_TYPE_UNION_PREFIX = "connect_union_"
GENERALIZED_TYPE_UNION_FIELD_PREFIX = GENERALIZED_TYPE_UNION_PREFIX + "field_"
NULL_MARKER = "<NULL>"
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

    def __init__(
        self,
        *,
        decimal_numeric: bool = False,
        cache_size: int = 1000,
        generalized_sum_type_support: bool = False,
    ) -> None:
        self.decimal_numeric = decimal_numeric
        self.cache_size = cache_size
        self.generalized_sum_type_support = generalized_sum_type_support
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

    def _json_schema(
        self, schema: Schema, index: int | None, *, ignore_optional: bool = False
    ) -> dict[str, Any]:
        kind = schema.type
        params = dict(schema.parameters)
        node: dict[str, Any]
        extra: dict[str, Any] = {}
        if kind == "struct" and _is_union(schema):
            # Confluent writes a union back as oneOf: null first when optional, then each
            # alternative (not optional itself) with its connect.index; no title or parameters.
            alternatives = [{"type": "null"}] if schema.optional else []
            alternatives += [
                self._json_schema(_required(f.schema), i, ignore_optional=True)
                for i, f in enumerate(schema.fields)
            ]
            node = {"oneOf": alternatives}
            if index is not None:
                node[CONNECT_INDEX_PROP] = index
            return node
        if kind in _INTEGERS:
            node, extra[CONNECT_TYPE_PROP] = {"type": "integer"}, kind
        elif kind in _NUMBERS:
            node, extra[CONNECT_TYPE_PROP] = {"type": "number"}, kind
        elif kind == "boolean":
            node = {"type": "boolean"}
        elif kind == "string":
            if JSON_TYPE_ENUM in params or GENERALIZED_TYPE_ENUM in params:
                generalized = GENERALIZED_TYPE_ENUM in params and (
                    self.generalized_sum_type_support or JSON_TYPE_ENUM not in params
                )
                marker = GENERALIZED_TYPE_ENUM if generalized else JSON_TYPE_ENUM
                prefix = marker + "."
                symbols: list[str | None] = [
                    None if k[len(prefix) :] == NULL_MARKER else k[len(prefix) :]
                    for k in params
                    if k.startswith(prefix)
                ]
                node = {"enum": symbols} if None in symbols else {"type": "string", "enum": symbols}
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
        if schema.optional and not ignore_optional:
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
            if _is_union(schema):  # the one alternative set
                for f in schema.fields:
                    if values.get(f.name) is not None:
                        return self._value(f.schema, values[f.name], use_default=use_default)
                return self._value(schema, None, use_default=use_default)
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

    def to_connect_schema(
        self, document: Any, references: Mapping[str, Any] | None = None
    ) -> Schema:
        """The Connect schema of a JSON Schema document, as Confluent builds it;
        ``references`` are the documents of its schema references by name (see
        :func:`referenced_documents`)."""
        reading = _Reading(document, references or {}, self.generalized_sum_type_support)
        return reading.schema(document, optional=False)

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
            if _is_union(schema):
                return self._union(schema, node)
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

    def _union(self, schema: Schema, node: Any) -> Struct:
        """The union struct of a JSON value: the first alternative of its type, or the struct
        alternative sharing most property names with a JSON object (Confluent's rule)."""
        best: Field | None = None
        best_shared = -1
        for f in schema.fields:
            if _has_type_of(f.schema, node):
                return Struct(schema, {f.name: self.to_connect_data(f.schema, node)})
            if f.schema.type == "struct" and isinstance(node, dict):
                shared = len({g.name for g in f.schema.fields} & set(node))
                if shared > best_shared:
                    best, best_shared = f, shared
        if best is None:
            raise ConverterError(
                f"Did not find matching oneof field for data of type {type(node).__name__}"
            )
        return Struct(schema, {best.name: self.to_connect_data(best.schema, node)})


def _is_union(schema: Schema) -> bool:
    return schema.name == JSON_TYPE_ONE_OF or any(
        k == GENERALIZED_TYPE_UNION for k, _ in schema.parameters
    )


def _required(schema: Schema) -> Schema:
    return dataclasses.replace(schema, optional=False) if schema.optional else schema


def _has_type_of(schema: Schema, node: Any) -> bool:
    """Whether a JSON value has the JSON type of a non-struct Connect schema."""
    kind = schema.type
    if isinstance(node, bool):
        return kind == "boolean"
    if kind in _INTEGERS:
        return isinstance(node, int)
    if kind in _NUMBERS:
        return isinstance(node, int | float | Decimal)
    if kind == "string":
        return isinstance(node, str)
    if kind == "bytes":
        decimal_number = schema.name == DECIMAL and isinstance(node, int | float | Decimal)
        return isinstance(node, str) or decimal_number
    if kind == "array":
        return isinstance(node, list)
    if kind == "map":
        return isinstance(node, dict | list)
    return False


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def referenced_documents(client: Any, registered: Any) -> dict[str, Any]:
    """The documents of a registered JSON Schema's references (and theirs), by reference name,
    fetched from the registry as confluent-kafka's deserializer does
    (``get_version(subject, version)`` of each reference).

    ``client`` is confluent-kafka's ``SchemaRegistryClient``, ``registered`` its ``Schema``.
    """
    documents: dict[str, Any] = {}
    pending = list(registered.references or [])
    while pending:
        ref = pending.pop()
        if ref.name in documents:
            continue
        if ref.subject is None or ref.version is None:
            raise ConverterError(f"Schema reference {ref.name!r} has no subject or version")
        found = client.get_version(ref.subject, ref.version, True)
        try:
            documents[ref.name] = json.loads(found.schema.schema_str or "null")
        except ValueError as error:
            raise ConverterError(f"Schema reference {ref.name!r} is not JSON: {error}") from error
        pending.extend(found.schema.references or [])
    return documents


class _Reading:
    """One JSON Schema → Connect conversion: the document being read (for local ``$ref``,
    the referenced document while inside it), the documents of its schema references, the
    union counter of ``generalized.sum.type.support``."""

    def __init__(self, root: Any, references: Mapping[str, Any], generalized: bool) -> None:
        self.roots = [root]
        self.references = references
        self.generalized = generalized
        self.unions = 0
        self.following: set[tuple[int, str]] = set()

    def _resolve(self, ref: str) -> tuple[Any, Any]:
        """The document a ``$ref`` points into, and the node it names there."""
        name, _, fragment = ref.partition("#")
        if not name:
            document = self.roots[-1]
        elif name in self.references:
            document = self.references[name]
        else:
            by_id = [d for d in self.references.values() if _id_of(d) == name]
            if not by_id:
                known = ", ".join(sorted(self.references)) or "none"
                raise ConverterError(
                    f"JSON Schema reference {ref!r} is neither local (#/...) nor one of the "
                    f"schema's references (known: {known})"
                )
            document = by_id[0]
        node = document
        for raw in fragment.split("/")[1:] if fragment else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise ConverterError(f"JSON Schema reference {ref!r} does not resolve")
            node = node[part]
        return document, node

    def _follow(self, node: dict[str, Any], read: Any) -> Any:
        """``read(target)`` of the node a ``$ref`` names, inside the document holding it."""
        ref = str(node["$ref"])
        key = (id(self.roots[-1]), ref)
        if key in self.following:
            raise ConverterError(f"Recursive JSON Schema {ref!r} has no Connect form")
        document, target = self._resolve(ref)
        self.following.add(key)
        self.roots.append(document)
        try:
            return read(target)
        finally:
            self.roots.pop()
            self.following.discard(key)

    def schema(self, node: Any, *, optional: bool) -> Schema:
        if node is True or node == {}:
            raise ConverterError("A JSON Schema that allows anything has no Connect form")
        if not isinstance(node, dict):
            raise ConverterError(f"Invalid JSON Schema: {node!r}")
        if "$ref" in node:
            found: Schema = self._follow(node, lambda t: self.schema(t, optional=optional))
            return found
        for combiner in ("oneOf", "anyOf"):
            if combiner in node:
                return self._union(node, node[combiner], optional)
        if "allOf" in node:
            return self._all_of(node, optional)
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
            marker = GENERALIZED_TYPE_ENUM if self.generalized else JSON_TYPE_ENUM
            params[marker] = ""  # JSON enums have no name
            for position, symbol in enumerate(node["enum"]):
                text = NULL_MARKER if symbol is None else str(symbol)
                params[f"{marker}.{text}"] = str(position) if self.generalized else text
        elif kind == "boolean":
            ctype = "boolean"
        elif kind in ("integer", "number"):
            if connect_type is None:
                ctype = "int64" if kind == "integer" else "float64"
            elif connect_type in _INTEGERS | _NUMBERS | {"bytes"}:
                ctype = connect_type
            else:
                raise ConverterError(f"Unsupported type {connect_type}")
        elif kind == "string" or (kind is None and "format" in node):
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

    def _union(self, node: dict[str, Any], subs: Any, optional: bool) -> Schema:
        """``oneOf``/``anyOf``: ``[null, T]`` is an optional ``T``, more alternatives a union
        struct (see the module docstring)."""
        if not isinstance(subs, list) or not subs:
            raise ConverterError("oneOf/anyOf must be a non-empty array of schemas")
        nulls = [s for s in subs if isinstance(s, dict) and s.get("type") == "null"]
        if len(subs) == 2 and len(nulls) == 1:
            other = subs[0] if subs[1] is nulls[0] else subs[1]
            return self.schema(other, optional=True)
        if self.generalized:
            name = f"{GENERALIZED_TYPE_UNION_PREFIX}{self.unions}"
            self.unions += 1
            prefix = GENERALIZED_TYPE_UNION_FIELD_PREFIX
            params: tuple[tuple[str, str], ...] = ((GENERALIZED_TYPE_UNION, name),)
        else:
            name, prefix, params = JSON_TYPE_ONE_OF, f"{JSON_TYPE_ONE_OF}.field.", ()
        alternatives = [s for s in subs if not any(s is n for n in nulls)]
        fields = tuple(
            Field(f"{prefix}{i}", self.schema(sub, optional=True))
            for i, sub in enumerate(alternatives)
        )
        return Schema(
            "struct",
            optional=optional or bool(nulls),
            name=name,
            parameters=params,
            fields=fields,
        )

    def _all_of(self, node: dict[str, Any], optional: bool) -> Schema:
        """``allOf`` as Confluent's ``allOfToConnectSchema`` reads it (module docstring)."""
        subs = node["allOf"]
        if not isinstance(subs, list) or not subs:
            raise ConverterError("allOf must be a non-empty array of schemas")
        rest = {k: v for k, v in node.items() if k != "allOf"}
        parts = [*subs, rest] if set(rest) & _TYPE_KEYWORDS else list(subs)
        fields: dict[str, Schema] = {}
        self._collect_fields(parts, fields)
        if fields:
            return Schema(
                "struct",
                optional=optional,
                fields=tuple(Field(name, schema) for name, schema in fields.items()),
            )
        kinds: dict[str, tuple[Any, Any]] = {}
        for part in parts:
            target = self._target(part)
            kinds[_part_kind(target)] = (part, target)  # the last of each kind, as Confluent

        def read(kind: str) -> Schema:
            return self.schema(kinds[kind][0], optional=optional)

        if "combined" in kinds:
            return read("combined")
        text = "string" if "string" in kinds else None
        number = "number" if "number" in kinds else None
        if "const" in kinds and (text or number):
            return read(text or number or "")
        if "enum" in kinds and text:
            symbols = kinds["enum"][1]["enum"]
            return self.schema({**kinds["string"][1], "enum": symbols}, optional=optional)
        if "enum" in kinds and number:
            return read(number)
        if text and "format" in kinds["string"][1]:
            return read(number or text)
        raise ConverterError("Unsupported criterion allOf of these parts (no Connect form)")

    def _target(self, part: Any) -> Any:
        """A part with its ``$ref`` followed (for what kind of schema it is)."""
        if isinstance(part, dict) and "$ref" in part:
            return self._follow(part, self._target)
        return part

    def _collect_fields(self, parts: list[Any], fields: dict[str, Schema]) -> None:
        """The properties of the object parts of an ``allOf`` (through nested ``allOf`` and
        ``$ref``), read where they are (a later part's property of the same name wins)."""
        for part in parts:
            if not isinstance(part, dict):
                continue
            if "$ref" in part:
                self._follow(part, lambda t: self._collect_fields([t], fields))
            elif "allOf" in part and isinstance(part["allOf"], list):
                self._collect_fields(part["allOf"], fields)
            elif isinstance(part.get("properties"), dict):
                for name, sub in part["properties"].items():
                    fields[name] = self.schema(sub, optional=False)


_TYPE_KEYWORDS = frozenset(["type", "properties", "enum", "const", "format", "$ref", "oneOf"])


def _part_kind(part: Any) -> str:
    if not isinstance(part, dict):
        return "other"
    if "oneOf" in part or "anyOf" in part:
        return "combined"
    if "const" in part:
        return "const"
    if "enum" in part:
        return "enum"
    if "$ref" in part:
        return "ref"
    kind = part.get("type")
    if kind == "string" or (kind is None and "format" in part):
        return "string"
    if kind in ("integer", "number"):
        return "number"
    return "other"


def _id_of(document: Any) -> Any:
    return document.get("$id") if isinstance(document, dict) else None


def _index(node: Any, position: int) -> tuple[int, int]:
    index = node.get(CONNECT_INDEX_PROP) if isinstance(node, dict) else None
    return (index if isinstance(index, int) else position, position)
