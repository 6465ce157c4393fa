"""JSON Schema and JSON → Connect, Confluent's ``JsonSchemaData`` rules in that direction
(listed in :mod:`sluice.connect.converters.schema_registry.json_schema_data`): a JSON Schema
document becomes the Connect schema Confluent builds (``$ref`` followed, ``oneOf`` / ``anyOf`` /
``allOf`` combined), a JSON value the Connect value of it; :func:`referenced_documents` fetches
the documents of a registered schema's references.

>>> reading = JsonSchemaToConnect(generalized_sum_type_support=False)
>>> schema = reading.schema({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"})
>>> schema.type, reading.data(schema, 7)
('int64', 7)
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
from sluice.connect.api.logical import DECIMAL, LOGICAL_NAMES, raw_to_logical
from sluice.connect.converters.schema_registry.json_schema_names import (
    CONNECT_INDEX_PROP,
    CONNECT_PARAMETERS_PROP,
    CONNECT_TYPE_PROP,
    CONNECT_VERSION_PROP,
    GENERALIZED_TYPE_ENUM,
    GENERALIZED_TYPE_UNION,
    GENERALIZED_TYPE_UNION_FIELD_PREFIX,
    GENERALIZED_TYPE_UNION_PREFIX,
    INTEGERS,
    JSON_TYPE_ENUM,
    JSON_TYPE_ONE_OF,
    NULL_MARKER,
    NUMBERS,
    is_union,
)

__all__ = ["JsonSchemaToConnect", "referenced_documents"]


class JsonSchemaToConnect:
    """JSON Schema documents and JSON values → Connect (with ``generalized_sum_type_support``,
    unions and enums take the generalized names)."""

    def __init__(self, *, generalized_sum_type_support: bool) -> None:
        self.generalized_sum_type_support = generalized_sum_type_support

    # -- JSON Schema → Connect schema

    def schema(self, document: Any, references: Mapping[str, Any] | None = None) -> Schema:
        """The Connect schema of a JSON Schema document, as Confluent builds it;
        ``references`` are the documents of its schema references by name (see
        :func:`referenced_documents`)."""
        reading = _Reading(document, references or {}, self.generalized_sum_type_support, self)
        return reading.schema(document, optional=False)

    # -- JSON → Connect value

    def data(self, schema: Schema, node: Any) -> Any:
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
        if kind in INTEGERS:
            if isinstance(node, bool) or not isinstance(node, int | Decimal):
                raise ConverterError(f"Expected an integer for {kind}, got {node!r}")
            return int(node)
        if kind in NUMBERS:
            return float(node)
        if kind == "bytes":
            try:
                return base64.b64decode(node, validate=True)
            except (binascii.Error, TypeError) as error:
                raise ConverterError(f"Invalid bytes field: {error}") from error
        if kind == "struct":
            if is_union(schema):
                return self._union(schema, node)
            if not isinstance(node, dict):
                raise ConverterError(
                    f"Structs should be encoded as JSON objects, but found {type(node).__name__}"
                )
            return Struct(
                schema,
                {f.name: self.data(f.schema, node.get(f.name)) for f in schema.fields},
            )
        if kind == "array":
            assert schema.value_schema is not None
            return [self.data(schema.value_schema, v) for v in node]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if isinstance(node, list):
                return {
                    _hashable(self.data(key, e.get("key"))): self.data(item, e.get("value"))
                    for e in node
                }
            return {k: self.data(item, v) for k, v in node.items()}
        return node

    def _union(self, schema: Schema, node: Any) -> Struct:
        """The union struct of a JSON value: the first alternative of its type, or the struct
        alternative sharing most property names with a JSON object (Confluent's rule)."""
        best: Field | None = None
        best_shared = -1
        for f in schema.fields:
            if _has_type_of(f.schema, node):
                return Struct(schema, {f.name: self.data(f.schema, node)})
            if f.schema.type == "struct" and isinstance(node, dict):
                shared = len({g.name for g in f.schema.fields} & set(node))
                if shared > best_shared:
                    best, best_shared = f, shared
        if best is None:
            raise ConverterError(
                f"Did not find matching oneof field for data of type {type(node).__name__}"
            )
        return Struct(schema, {best.name: self.data(best.schema, node)})


def _has_type_of(schema: Schema, node: Any) -> bool:
    """Whether a JSON value has the JSON type of a non-struct Connect schema."""
    kind = schema.type
    if isinstance(node, bool):
        return kind == "boolean"
    if kind in INTEGERS:
        return isinstance(node, int)
    if kind in NUMBERS:
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

    def __init__(
        self,
        root: Any,
        references: Mapping[str, Any],
        generalized: bool,
        values: JsonSchemaToConnect,
    ) -> None:
        self.roots = [root]
        self.references = references
        self.generalized = generalized
        self.unions = 0
        self.following: set[tuple[int, str]] = set()
        self.values = values  # reads the schema's defaults

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
            elif connect_type in INTEGERS | NUMBERS | {"bytes"}:
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
            default = self.values.data(schema, node["default"])
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
