"""Avro → Connect, Confluent's ``AvroData`` rules in that direction (listed in
:mod:`sluice.connect.converters.schema_registry.avro_data`): an Avro schema (its JSON form) becomes
the Connect schema Confluent builds, ``connect.*`` properties first; what fastavro read becomes
the Connect value (``Decimal``, ``date``, ``time``, aware UTC ``datetime``; a union's branch
told by the Python type of the datum, fastavro giving no branch index).

>>> reading = AvroToConnect(enhanced_schema_support=False)
>>> schema = reading.schema(["null", {"type": "int", "connect.type": "int8"}])
>>> schema.type, schema.optional
('int8', True)
>>> reading.data(schema, 7)
7
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import (
    DATE,
    DECIMAL,
    LOGICAL_NAMES,
    TIME,
    TIMESTAMP,
    raw_to_logical,
)
from sluice.connect.converters.schema_registry.avro_names import (
    AVRO_TYPE_ENUM,
    AVRO_TYPE_UNION,
    CONNECT_DEFAULT_VALUE_PROP,
    CONNECT_DOC_PROP,
    CONNECT_ENUM_DOC_PROP,
    CONNECT_NAME_PROP,
    CONNECT_PARAMETERS_PROP,
    CONNECT_RECORD_DOC_PROP,
    CONNECT_TYPE_PROP,
    CONNECT_VERSION_PROP,
    DECIMAL_PRECISION_DEFAULT,
    DECIMAL_PRECISION_PROP,
    DEFAULT_SCHEMA_FULL_NAME,
    MAP_ENTRY_TYPE_NAME,
    NAMESPACE,
    split_name,
)

__all__ = ["AvroToConnect"]

_CONNECT_OF = {
    "int": "int32",
    "long": "int64",
    "float": "float32",
    "double": "float64",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
_PRIMITIVE_NAMES = frozenset(["null", *_CONNECT_OF])


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


class AvroToConnect:
    """Avro schemas and fastavro's datums → Connect (with ``enhanced_schema_support``, a union
    branch of a named type is named by its full name)."""

    def __init__(self, *, enhanced_schema_support: bool) -> None:
        self.enhanced_schema_support = enhanced_schema_support

    # -- Avro schema → Connect schema

    def schema(self, avro: Any) -> Schema:
        """The Connect schema of an Avro schema (its JSON form), as Confluent builds it."""
        return _Reading(self.enhanced_schema_support).schema(avro, None, optional=False)

    # -- Avro datum → Connect value

    def data(self, schema: Schema, datum: Any) -> Any:
        """The Connect value of what fastavro read for ``schema``."""
        if datum is None:
            return None
        if schema.name in LOGICAL_NAMES:
            if isinstance(datum, int | bytes) and not isinstance(datum, bool):
                return raw_to_logical(schema, datum)
            return datum  # fastavro read the logical type already
        kind = schema.type
        if kind == "struct" and schema.name == AVRO_TYPE_UNION:
            for f in schema.fields:
                if _holds(f.schema, datum):
                    return Struct(schema, {f.name: self.data(f.schema, datum)})
            raise ConverterError(
                f"No branch of {AVRO_TYPE_UNION} ({', '.join(f.name for f in schema.fields)}) "
                f"holds a {type(datum).__name__}"
            )
        if kind == "struct":
            return Struct(
                schema,
                {f.name: self.data(f.schema, datum.get(f.name)) for f in schema.fields},
            )
        if kind == "array":
            assert schema.value_schema is not None
            return [self.data(schema.value_schema, v) for v in datum]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if isinstance(datum, list):  # MapEntry records
                return {
                    _hashable(self.data(key, e["key"])): self.data(item, e["value"]) for e in datum
                }
            return {k: self.data(item, v) for k, v in datum.items()}
        return datum


_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_LOGICAL_CLASS: dict[str, type] = {
    DECIMAL: Decimal,
    DATE: dt.date,
    TIME: dt.time,
    TIMESTAMP: dt.datetime,
}


def _holds(schema: Schema, datum: Any) -> bool:
    """Whether *datum* (as fastavro read it) is a value of the union branch *schema*."""
    if schema.name in _LOGICAL_CLASS:
        wanted = _LOGICAL_CLASS[schema.name]
        if schema.name == DATE and isinstance(datum, dt.datetime):
            return False
        return isinstance(datum, wanted)
    kind = schema.type
    if isinstance(datum, bool):
        return kind == "boolean"
    if isinstance(datum, int):
        bits = _INT_BITS.get(kind)
        return bits is not None and -(1 << (bits - 1)) <= datum < 1 << (bits - 1)
    if isinstance(datum, float):
        return kind in ("float32", "float64")
    if isinstance(datum, str):
        if kind != "string":
            return False
        params = dict(schema.parameters)
        if AVRO_TYPE_ENUM in params:
            return params.get(f"{AVRO_TYPE_ENUM}.{datum}") == datum
        return True
    if isinstance(datum, bytes | bytearray):
        return kind == "bytes"
    if isinstance(datum, list):
        if kind == "array":
            return True
        key = schema.key_schema
        return kind == "map" and not (key is not None and key.type == "string" and not key.optional)
    if isinstance(datum, dict):
        if kind == "struct" and schema.name != AVRO_TYPE_UNION:
            return set(datum) == {f.name for f in schema.fields}
        key = schema.key_schema
        return kind == "map" and key is not None and key.type == "string" and not key.optional
    return False


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    return value


class _Reading:
    """The state of one Avro → Connect conversion: named types seen so far, by full name."""

    def __init__(self, enhanced: bool = False) -> None:
        self.enhanced = enhanced
        self.named: dict[str, Any] = {}
        self.building: set[str] = set()

    def schema(
        self,
        avro: Any,
        namespace: str | None,
        *,
        optional: bool,
        field_default: Any = None,
        has_field_default: bool = False,
        field_doc: str | None = None,
    ) -> Schema:
        if isinstance(avro, str):
            if avro in _PRIMITIVE_NAMES:
                avro = {"type": avro}
            else:
                full = _full_name(avro, namespace)
                found = self.named.get(full) or self.named.get(avro)
                if found is None:
                    raise ConverterError(f"Avro schema refers to an unknown type {avro!r}")
                if found["_full"] in self.building:
                    raise ConverterError(f"Recursive Avro type {avro!r} has no Connect form")
                return self._from_node(
                    found, namespace, optional, field_default, has_field_default, field_doc
                )
        if isinstance(avro, list):
            members = [
                m
                for m in avro
                if m != "null" and not (isinstance(m, dict) and m.get("type") == "null")
            ]
            if len(avro) == 2 and len(members) == 1:
                return self.schema(
                    members[0], namespace, optional=True, field_default=field_default,
                    has_field_default=has_field_default, field_doc=field_doc,
                )  # fmt: skip
            return self._union(avro, members, namespace, field_default, has_field_default)
        if not isinstance(avro, dict) or "type" not in avro:
            raise ConverterError(f"Invalid Avro schema: {avro!r}")
        if isinstance(avro["type"], dict | list):
            return self.schema(
                avro["type"], namespace, optional=optional, field_default=field_default,
                has_field_default=has_field_default, field_doc=field_doc,
            )  # fmt: skip
        return self._from_node(
            avro, namespace, optional, field_default, has_field_default, field_doc
        )

    def _from_node(
        self,
        node: dict[str, Any],
        namespace: str | None,
        optional: bool,
        field_default: Any,
        has_field_default: bool,
        field_doc: str | None,
    ) -> Schema:
        kind = node["type"]
        connect_type = node.get(CONNECT_TYPE_PROP)
        logical = node.get("logicalType")
        params: dict[str, str] = {}
        name: str | None = None
        version: int | None = None
        fields: tuple[Field, ...] = ()
        key_schema = value_schema = None
        full: str | None = None
        if kind in ("record", "enum", "fixed"):
            if "_full" in node:  # a reference to a type defined before
                full = node["_full"]
            else:
                own = node.get("namespace", namespace) if "." not in node["name"] else None
                full = _full_name(node["name"], own)
                if full in self.named:
                    raise ConverterError(f"Avro type {full} is defined twice")
                node = {**node, "_full": full}
                self.named[full] = node
            namespace = split_name(full)[0]
        if kind in ("bytes", "fixed"):
            ctype = "bytes"
            if logical == "decimal":
                scale = node.get("scale", 0 if kind == "fixed" else None)
                if not isinstance(scale, int):
                    raise ConverterError("scale must be specified and must be a number.")
                name, version = DECIMAL, 1
                params["scale"] = str(scale)
                precision = node.get("precision")
                if precision is not None and not isinstance(precision, int):
                    raise ConverterError("precision property must be a JSON Integer.")
                if precision is not None and precision != DECIMAL_PRECISION_DEFAULT:
                    params[DECIMAL_PRECISION_PROP] = str(precision)
            elif kind == "fixed":
                params["connect.fixed.size"] = str(node["size"])
        elif kind == "int":
            if logical == "date":
                ctype, name, version = "int32", DATE, 1
            elif logical == "time-millis":
                ctype, name, version = "int32", TIME, 1
            elif connect_type in ("int8", "int16"):
                ctype = connect_type
            elif connect_type is not None:
                raise ConverterError(f"Connect type annotation for Avro int is {connect_type!r}")
            else:
                ctype = "int32"
        elif kind == "long":
            ctype = "int64"
            if logical == "timestamp-millis":
                name, version = TIMESTAMP, 1
        elif kind in _CONNECT_OF:
            ctype = _CONNECT_OF[kind]
        elif kind == "array":
            items = node["items"]
            entry = self._resolve(items, namespace)
            if (
                isinstance(entry, dict)
                and entry.get("type") == "record"
                and _full_name(entry["name"], entry.get("namespace", namespace)).startswith(
                    f"{NAMESPACE}.{MAP_ENTRY_TYPE_NAME}"
                )
            ):
                by_name = {f["name"]: f for f in entry.get("fields", [])}
                if set(by_name) != {"key", "value"}:
                    raise ConverterError(
                        "Found map encoded as array of key-value pairs, but array elements do "
                        "not match the expected format."
                    )
                ctype = "map"
                key_schema = self.schema(by_name["key"]["type"], NAMESPACE, optional=False)
                value_schema = self.schema(by_name["value"]["type"], NAMESPACE, optional=False)
            else:
                ctype = "array"
                value_schema = self.schema(items, namespace, optional=False)
        elif kind == "map":
            ctype = "map"
            key_schema = Schema("string")
            value_schema = self.schema(node["values"], namespace, optional=False)
        elif kind == "record":
            ctype = "struct"
            assert full is not None
            self.building.add(full)
            try:
                fields = tuple(
                    Field(
                        f["name"],
                        self.schema(
                            f["type"],
                            namespace,
                            optional=False,
                            field_default=f.get("default"),
                            has_field_default="default" in f,
                            field_doc=f.get("doc"),
                        ),
                    )
                    for f in node.get("fields", [])
                )
            finally:
                self.building.discard(full)
        elif kind == "enum":
            ctype = "string"
            assert full is not None
            if node.get("doc"):
                params[CONNECT_ENUM_DOC_PROP] = node["doc"]
            params[AVRO_TYPE_ENUM] = full
            for symbol in node.get("symbols", []):
                params[f"{AVRO_TYPE_ENUM}.{symbol}"] = symbol
        elif kind == "null":
            raise ConverterError("Standalone null schemas are not supported by this converter")
        else:
            raise ConverterError(f"Couldn't translate unsupported schema type {kind!r}.")

        doc = field_doc if field_doc is not None else node.get("doc") or node.get(CONNECT_DOC_PROP)
        if kind == "record" and node.get("doc"):
            params[CONNECT_RECORD_DOC_PROP] = node["doc"]
        raw_version = node.get(CONNECT_VERSION_PROP)
        if raw_version is not None:
            if not isinstance(raw_version, int) or isinstance(raw_version, bool):
                raise ConverterError(f"Invalid Connect version found: {raw_version!r}")
            if version is not None and version != raw_version:
                raise ConverterError(
                    f"Mismatched versions: {version} differs from version in source schema "
                    f"({raw_version})"
                )
            version = raw_version
        parameters = node.get(CONNECT_PARAMETERS_PROP)
        if parameters is not None:
            if not isinstance(parameters, dict):
                raise ConverterError(
                    f"Expected JSON object for schema parameters but found: {parameters!r}"
                )
            for key, value in parameters.items():
                if not isinstance(value, str):
                    raise ConverterError(
                        f"Expected schema parameter values to be strings but found: {value!r}"
                    )
                params[key] = value
        for key, value in node.items():
            if key.startswith("avro") and isinstance(value, str):
                params[key] = value
        connect_name = node.get(CONNECT_NAME_PROP)
        if connect_name is not None:
            if not isinstance(connect_name, str):
                raise ConverterError(f"Invalid schema name: {connect_name!r}")
            named: str | None = connect_name
        elif kind in ("record", "enum"):
            named = full
        else:
            named = None
        if named is not None and not named.startswith(DEFAULT_SCHEMA_FULL_NAME):
            if name is not None and named != name:
                raise ConverterError(
                    f"Mismatched names: {name} differs from name in source schema ({named})"
                )
            name = named
        schema = Schema(
            ctype,
            optional=optional,
            name=name,
            version=version,
            doc=doc,
            parameters=tuple(params.items()),
            fields=fields,
            key_schema=key_schema,
            value_schema=value_schema,
        )
        default = field_default if has_field_default else node.get(CONNECT_DEFAULT_VALUE_PROP)
        if default is not None:
            schema = Schema(
                ctype,
                optional=optional,
                name=name,
                version=version,
                doc=doc,
                default=_default_from_json(schema, default),
                parameters=schema.parameters,
                fields=fields,
                key_schema=key_schema,
                value_schema=value_schema,
            )
        return schema

    def _union(
        self,
        avro: list[Any],
        members: list[Any],
        namespace: str | None,
        field_default: Any,
        has_field_default: bool,
    ) -> Schema:
        """Confluent's ``io.confluent.connect.avro.Union`` struct of a union of several types."""
        fields: list[Field] = []
        for member in members:
            branch = self.schema(member, namespace, optional=True)
            node = self._resolve(member, namespace)
            kind = node if isinstance(node, str) else node.get("type")
            if isinstance(kind, dict | list):
                kind = kind.get("type") if isinstance(kind, dict) else "union"
            if kind in ("record", "enum", "fixed"):
                own = node.get("namespace", namespace) if "." not in node["name"] else None
                full = node.get("_full") or _full_name(node["name"], own)
                name = full if self.enhanced else split_name(full)[1]
            else:
                name = str(kind)
            if any(f.name == name for f in fields):
                raise ConverterError(f"Avro union {avro!r} has two branches named {name!r}")
            fields.append(Field(name, branch))
        schema = Schema(
            "struct",
            optional=len(members) < len(avro),
            name=AVRO_TYPE_UNION,
            fields=tuple(fields),
        )
        if has_field_default and field_default is not None and fields:
            first = fields[0]  # a union's default is a value of its first branch
            default = Struct(schema, {first.name: _default_from_json(first.schema, field_default)})
            schema = dataclasses.replace(schema, default=default)
        return schema

    def _resolve(self, avro: Any, namespace: str | None) -> Any:
        if isinstance(avro, str) and avro not in _PRIMITIVE_NAMES:
            return self.named.get(_full_name(avro, namespace)) or self.named.get(avro)
        return avro


def _default_from_json(schema: Schema, node: Any) -> Any:
    """A Connect default from Avro's JSON form of it (bytes as ISO-8859-1 text)."""
    if node is None:
        return None
    kind = schema.type
    if kind == "bytes":
        raw = node.encode("latin-1") if isinstance(node, str) else base64.b64decode(node)
        return raw_to_logical(schema, raw) if schema.name == DECIMAL else raw
    if schema.name in LOGICAL_NAMES and isinstance(node, int):
        return raw_to_logical(schema, node)
    if kind in ("float32", "float64"):
        return float(node)
    if kind == "array":
        assert schema.value_schema is not None
        return [_default_from_json(schema.value_schema, item) for item in node]
    if kind == "map":
        key, item = schema.key_schema, schema.value_schema
        assert key is not None and item is not None
        if isinstance(node, list):
            return {
                _hashable(_default_from_json(key, e["key"])): _default_from_json(item, e["value"])
                for e in node
            }
        return {k: _default_from_json(item, v) for k, v in node.items()}
    if kind == "struct":
        return Struct(
            schema, {f.name: _default_from_json(f.schema, node.get(f.name)) for f in schema.fields}
        )
    return node
